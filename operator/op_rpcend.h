/*
 * op_rpcend — how one Profile RPC attempt ended, as a gRPC outcome
 * (DESIGN §4.3): the server's grpc-status and message when it sent them;
 * else its HTTP status (gRPC's HTTP-to-gRPC mapping), its stream reset
 * (the HTTP/2 transport's RST_STREAM mapping) or GOAWAY; else what went
 * wrong on our side of the connection. It also says whether the outcome
 * may be retried (UNAVAILABLE: the request was not processed) and when.
 * op_relay's event loop records the facts; this module judges them.
 *
 * Thread-safety: reentrant; no state. Ownership: everything borrowed.
 */
#ifndef OP_RPCEND_H
#define OP_RPCEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "op_h2.h"
#include "op_relay.h"

/* Why an attempt ended on our side of the protocol. */
enum op_rpc_failure {
    OP_RPC_NONE,            /* the protocol decides (op_h2's state) */
    OP_RPC_ADDRESS,         /* the pod IP does not parse */
    OP_RPC_CONNECT,         /* connect(2) failed: err */
    OP_RPC_CONNECT_TIMEOUT, /* not connected in time */
    OP_RPC_TIMEOUT,         /* no reply before the deadline (a connected attempt) */
    OP_RPC_CLOSED,          /* the profiler closed the connection: err, or 0 */
    OP_RPC_TOO_BIG,         /* the reply exceeded its cap */
    OP_RPC_NOMEM
};

/* The facts of one ended attempt. */
struct op_rpc_end {
    enum op_rpc_failure failure;
    int err;               /* errno of OP_RPC_CONNECT / OP_RPC_CLOSED */
    bool connected;        /* a timeout before the connection is a connect timeout */
    const char *authority; /* "<ip>:<port>", for messages */
    int grpc_status;       /* -1 when the server sent none */
    const char *grpc_message;
    const struct op_h2 *h2; /* the stream: its state, HTTP status, reset code */
    const uint8_t *reply;   /* the gRPC-framed response message, reply_len bytes */
    size_t reply_len;
};

/* The outcome into res (code, message, empty_trace); true when it may be
 * retried. */
bool op_rpc_classify(const struct op_rpc_end *e, struct op_host_result *res);

/* The wait before retrying after `attempts` attempts: 1 s doubling (the
 * shift capped at 12), in ns. */
int64_t op_rpc_backoff_ns(int attempts);

#endif
