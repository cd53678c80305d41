/* op_rpcend: an ended Profile RPC attempt as a gRPC outcome, and whether
 * (and when) it is retried. Table-driven: each row is the facts op_relay
 * records and the outcome they mean. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "op_proto.h"
#include "op_rpcend.h"

/* An empty ProfileResponse, gRPC-framed: uncompressed, length 0. */
static const uint8_t EMPTY_REPLY[5] = {0, 0, 0, 0, 0};
/* empty_trace = true (field 7, varint 1). */
static const uint8_t EMPTY_TRACE_REPLY[7] = {0, 0, 0, 0, 2, 0x38, 1};

struct row {
    const char *name;
    enum op_rpc_failure failure;
    int err;
    bool connected;
    int grpc_status;
    const char *grpc_message;
    enum op_h2_state h2_state;
    int http_status;
    uint32_t reset_code;
    const uint8_t *reply;
    size_t reply_len;
    /* want */
    int code;
    const char *message;
    bool retry;
    bool empty_trace;
};

static const struct row rows[] = {
    {"ok", OP_RPC_NONE, 0, true, 0, "", OP_H2_DONE, 200, 0, EMPTY_REPLY, 5, OP_GRPC_OK, "", false,
     false},
    {"ok, empty trace", OP_RPC_NONE, 0, true, 0, "", OP_H2_DONE, 200, 0, EMPTY_TRACE_REPLY, 7,
     OP_GRPC_OK, "", false, true},
    {"busy profiler", OP_RPC_NONE, 0, true, OP_GRPC_INTERNAL, "Another profiling session active.",
     OP_H2_DONE, 200, 0, NULL, 0, OP_GRPC_INTERNAL, "Another profiling session active.", false,
     false},
    {"unavailable is retried", OP_RPC_NONE, 0, true, OP_GRPC_UNAVAILABLE, "starting", OP_H2_DONE,
     200, 0, NULL, 0, OP_GRPC_UNAVAILABLE, "starting", true, false},
    {"malformed reply", OP_RPC_NONE, 0, true, 0, "", OP_H2_DONE, 200, 0, EMPTY_REPLY, 3,
     OP_GRPC_INTERNAL, "malformed reply: ", false, false},
    {"no grpc-status", OP_RPC_NONE, 0, true, -1, "", OP_H2_DONE, 200, 0, NULL, 0, OP_GRPC_INTERNAL,
     "reply without grpc-status", false, false},
    {"HTTP 503", OP_RPC_NONE, 0, true, -1, "", OP_H2_DONE, 503, 0, NULL, 0, OP_GRPC_UNAVAILABLE,
     "HTTP status 503 from the profiler", true, false},
    {"HTTP 404", OP_RPC_NONE, 0, true, -1, "", OP_H2_DONE, 404, 0, NULL, 0, OP_GRPC_UNIMPLEMENTED,
     "HTTP status 404 from the profiler", false, false},
    {"refused stream", OP_RPC_NONE, 0, true, -1, "", OP_H2_RESET, 0, OP_H2_REFUSED_STREAM, NULL, 0,
     OP_GRPC_UNAVAILABLE, "stream reset by the profiler", true, false},
    {"cancel reset", OP_RPC_NONE, 0, true, -1, "", OP_H2_RESET, 0, OP_H2_CANCEL, NULL, 0,
     OP_GRPC_CANCELLED, "stream reset by the profiler", false, false},
    {"goaway", OP_RPC_NONE, 0, true, -1, "", OP_H2_REFUSED, 0, 0, NULL, 0, OP_GRPC_UNAVAILABLE,
     "the profiler closed the connection before taking the request", true, false},
    {"bad address", OP_RPC_ADDRESS, 0, false, -1, "", OP_H2_OPEN, 0, 0, NULL, 0,
     OP_GRPC_UNAVAILABLE, "cannot connect to 10.0.0.1:9999: not an IP address", false, false},
    {"refused", OP_RPC_CONNECT, ECONNREFUSED, false, -1, "", OP_H2_OPEN, 0, 0, NULL, 0,
     OP_GRPC_UNAVAILABLE, "cannot connect to 10.0.0.1:9999: Connection refused", true, false},
    {"timeout before connecting", OP_RPC_TIMEOUT, 0, false, -1, "", OP_H2_OPEN, 0, 0, NULL, 0,
     OP_GRPC_UNAVAILABLE, "connection to 10.0.0.1:9999 timed out", true, false},
    {"deadline", OP_RPC_TIMEOUT, 0, true, -1, "", OP_H2_OPEN, 0, 0, NULL, 0,
     OP_GRPC_DEADLINE_EXCEEDED, "no reply before the deadline", false, false},
    {"closed", OP_RPC_CLOSED, ECONNRESET, true, -1, "", OP_H2_OPEN, 0, 0, NULL, 0,
     OP_GRPC_UNAVAILABLE, "connection to 10.0.0.1:9999 closed by the profiler: Connection reset",
     true, false},
    {"too big", OP_RPC_TOO_BIG, 0, true, -1, "", OP_H2_OPEN, 0, 0, NULL, 0, OP_GRPC_INTERNAL,
     "reply larger than 4 MiB", false, false},
};

static void check(const struct row *r)
{
    struct op_h2 h2 = {.state = r->h2_state, .status = r->http_status, .reset_code = r->reset_code};
    struct op_rpc_end e = {.failure = r->failure,
                           .err = r->err,
                           .connected = r->connected,
                           .authority = "10.0.0.1:9999",
                           .grpc_status = r->grpc_status,
                           .grpc_message = r->grpc_message,
                           .h2 = &h2,
                           .reply = r->reply,
                           .reply_len = r->reply_len};
    struct op_host_result res;
    memset(&res, 0xA5, sizeof(res));
    cr_expect_eq(op_rpc_classify(&e, &res), r->retry, "%s: retry", r->name);
    cr_expect_eq(res.code, r->code, "%s: code %d", r->name, res.code);
    cr_expect(!strncmp(res.message, r->message, strlen(r->message)), "%s: message \"%s\"", r->name,
              res.message);
    cr_expect_eq(res.empty_trace, r->empty_trace, "%s: empty_trace", r->name);
}

Test(op_rpcend, every_ending)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        check(&rows[i]);
}

Test(op_rpcend, backoff_doubles_from_a_second_and_stops_doubling)
{
    cr_expect_eq(op_rpc_backoff_ns(1), 1000000000LL);
    cr_expect_eq(op_rpc_backoff_ns(2), 2000000000LL);
    cr_expect_eq(op_rpc_backoff_ns(4), 8000000000LL);
    cr_expect_eq(op_rpc_backoff_ns(13), 4096000000000LL);
    cr_expect_eq(op_rpc_backoff_ns(40), 4096000000000LL, "the shift is capped at 12");
}
