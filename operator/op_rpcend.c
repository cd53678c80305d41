#include "op_rpcend.h"

#include <stdio.h>
#include <string.h>

#include "k8s_time.h"
#include "op_proto.h"

#define RETRY_FIRST_MS 1000

static int http_to_grpc(long status)
{
    switch (status) {
    case 400:
        return OP_GRPC_INTERNAL;
    case 401:
        return OP_GRPC_UNAUTHENTICATED;
    case 403:
        return OP_GRPC_PERMISSION_DENIED;
    case 404:
        return OP_GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
        return OP_GRPC_UNAVAILABLE;
    default:
        return OP_GRPC_UNKNOWN;
    }
}

/* gRPC's HTTP/2 transport mapping of RST_STREAM codes. */
static int reset_to_grpc(uint32_t code)
{
    switch (code) {
    case OP_H2_REFUSED_STREAM:
        return OP_GRPC_UNAVAILABLE; /* never processed: safe to retry */
    case OP_H2_CANCEL:
        return OP_GRPC_CANCELLED;
    case OP_H2_ENHANCE_YOUR_CALM:
        return OP_GRPC_RESOURCE_EXHAUSTED;
    case OP_H2_INADEQUATE_SECURITY:
        return OP_GRPC_PERMISSION_DENIED;
    default:
        return OP_GRPC_INTERNAL;
    }
}

/* The stream's end as the server's HTTP/2 said it; true when retryable. */
static bool protocol_end(const struct op_rpc_end *e, struct op_host_result *res)
{
    const struct op_h2 *c = e->h2;
    if (c->state == OP_H2_RESET) {
        res->code = reset_to_grpc(c->reset_code);
        snprintf(res->message, sizeof(res->message), "stream reset by the profiler (%s)",
                 op_h2_error_name(c->reset_code));
    } else if (c->state == OP_H2_REFUSED) {
        res->code = OP_GRPC_UNAVAILABLE;
        snprintf(res->message, sizeof(res->message),
                 "the profiler closed the connection before taking the request (GOAWAY %s)",
                 op_h2_error_name(c->reset_code));
    } else {
        res->code = OP_GRPC_UNAVAILABLE;
        snprintf(res->message, sizeof(res->message), "HTTP/2: %s",
                 c->state == OP_H2_FAILED ? c->why : "the stream did not end");
    }
    return res->code == OP_GRPC_UNAVAILABLE;
}

/* An attempt that ended before a gRPC status: true when retryable. */
static bool transport_end(const struct op_rpc_end *e, struct op_host_result *res)
{
    enum op_rpc_failure f =
        e->failure == OP_RPC_TIMEOUT && !e->connected ? OP_RPC_CONNECT_TIMEOUT : e->failure;
    char *m = res->message;
    size_t cap = sizeof(res->message);
    bool retry = true;
    res->code = OP_GRPC_UNAVAILABLE;
    switch (f) {
    case OP_RPC_NONE:
        return protocol_end(e, res);
    case OP_RPC_ADDRESS:
        snprintf(m, cap, "cannot connect to %s: not an IP address", e->authority);
        return false;
    case OP_RPC_CONNECT:
        snprintf(m, cap, "cannot connect to %s: %s", e->authority, strerror(e->err));
        break;
    case OP_RPC_CONNECT_TIMEOUT:
        snprintf(m, cap, "connection to %s timed out", e->authority);
        break;
    case OP_RPC_CLOSED:
        snprintf(m, cap, "connection to %s closed by the profiler%s%s", e->authority,
                 e->err ? ": " : "", e->err ? strerror(e->err) : "");
        break;
    case OP_RPC_TIMEOUT:
        res->code = OP_GRPC_DEADLINE_EXCEEDED;
        snprintf(m, cap, "no reply before the deadline");
        retry = false;
        break;
    case OP_RPC_TOO_BIG:
    case OP_RPC_NOMEM:
        res->code = OP_GRPC_INTERNAL;
        snprintf(m, cap, "%s", f == OP_RPC_TOO_BIG ? "reply larger than 4 MiB" : "out of memory");
        retry = false;
        break;
    }
    return retry;
}

bool op_rpc_classify(const struct op_rpc_end *e, struct op_host_result *res)
{
    res->empty_trace = false;
    if (e->grpc_status < 0 && (e->failure || e->h2->state != OP_H2_DONE))
        return transport_end(e, res);
    if (e->grpc_status < 0 && e->h2->status != 200) {
        res->code = http_to_grpc(e->h2->status);
        snprintf(res->message, sizeof(res->message), "HTTP status %d from the profiler",
                 e->h2->status);
        return res->code == OP_GRPC_UNAVAILABLE;
    }
    if (e->grpc_status < 0) {
        res->code = OP_GRPC_INTERNAL;
        snprintf(res->message, sizeof(res->message), "reply without grpc-status");
        return false;
    }
    res->code = e->grpc_status;
    snprintf(res->message, sizeof(res->message), "%s", e->grpc_message ? e->grpc_message : "");
    if (res->code != OP_GRPC_OK)
        return res->code == OP_GRPC_UNAVAILABLE;
    const uint8_t *msg;
    size_t len;
    struct op_profile_response pr;
    struct k8s_error err;
    if (op_grpc_unframe(e->reply, e->reply_len, &msg, &len, &err) < 0 ||
        op_proto_decode_response(msg, len, &pr, &err) < 0) {
        res->code = OP_GRPC_INTERNAL;
        snprintf(res->message, sizeof(res->message), "malformed reply: %s", err.message);
        return false;
    }
    res->empty_trace = pr.empty_trace;
    return false;
}

int64_t op_rpc_backoff_ns(int attempts)
{
    int shift = attempts - 1 < 12 ? (attempts > 1 ? attempts - 1 : 0) : 12;
    return (int64_t)RETRY_FIRST_MS * K8S_NSEC_PER_MSEC << shift;
}
