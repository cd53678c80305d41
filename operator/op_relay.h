/*
 * op_relay — sends Profile RPCs to profiler servers: one thread drives
 * non-blocking sockets on epoll, so every host of every capture is in
 * flight at once over cleartext HTTP/2 with prior knowledge (no thread per
 * pod), one connection per RPC, each an op_h2 state machine of a few
 * hundred bytes: 1,536 hosts cost ~1.5 MiB, where libcurl kept ~40 KiB
 * resident per connection (tests/bench/README.md, "Where the memory goes").
 *
 * A batch is one capture attempt: one unary
 * POST /tensorflow.ProfilerService/Profile per target, sharing the session
 * id, repository root, duration and start time. Each RPC carries
 * grpc-timeout = the batch deadline; UNAVAILABLE replies and connection
 * failures are retried (1 s doubling, at most max_retries times, never
 * past the deadline); any other outcome is final. The requests leave
 * together: each connection opens and sends its HEADERS frame, then its
 * message waits until every host of the batch is connected (or has
 * failed, or 500 ms have passed), and all messages go out in one burst,
 * so the profilers receive complete requests within milliseconds of each
 * other however long 1,536 connections take to open. When every host has an
 * outcome, the batch's done callback runs once, on the relay thread, with
 * the results (borrowed for the call); op_relay_cancel finishes the
 * unfinished hosts as CANCELLED with the given reason (the server sees a
 * stream reset and saves nothing).
 *
 * Thread-safety: submit/cancel/live from any thread; done callbacks run on
 * the relay thread and must not call op_relay_free.
 */
#ifndef OP_RELAY_H
#define OP_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"
#include "op_proto.h"

struct op_relay_target {
    /* the host_name the request carries (op_plan names it: the pod name, or
     * "<ip>:<port>"); the profiler names its file after it, so never empty */
    const char *host_name;
    const char *ip; /* pod IP, IPv4 or IPv6 */
};

struct op_batch_spec {
    const struct op_relay_target *targets; /* borrowed for the call */
    size_t n;
    int port;
    uint64_t duration_ms;
    struct op_tracer_levels levels;
    uint64_t start_timestamp_ns; /* common start, unix ns; 0 = at once */
    const char *repository_root;
    const char *session_id;
    int64_t deadline_ms; /* grpc-timeout of the first attempt; the batch's budget */
    int max_retries;
};

struct op_host_result {
    int code;          /* enum op_grpc_code */
    char message[320]; /* grpc-message, or what went wrong locally */
    int attempts;      /* RPCs sent (1 + retries) */
    int64_t sent_ns;   /* unix ns the first attempt started */
    int64_t wire_ns;   /* unix ns the last attempt's request left (0: never) */
    int64_t done_ns;   /* unix ns of the outcome */
    bool empty_trace;  /* OK replies: the profiler collected nothing */
};

typedef void (*op_batch_done_fn)(void *ud, uint64_t id, const struct op_host_result *results,
                                 size_t n);

struct op_relay;

/* Start the relay thread. -K8S_EIO / -K8S_ENOMEM. */
int op_relay_new(struct op_relay **ret, struct k8s_error *reterr) K8S_MUST_CHECK;

/* Cancel every batch (done callbacks run, with CANCELLED), stop, free.
 * NULL-safe. */
void op_relay_free(struct op_relay *r);

/* Queue a batch; *ret_id identifies it for op_relay_cancel. The spec and
 * its strings are copied. -K8S_ENOMEM, -K8S_EINVAL (no targets). */
int op_relay_submit(struct op_relay *r, const struct op_batch_spec *spec, op_batch_done_fn done,
                    void *ud, uint64_t *ret_id) K8S_MUST_CHECK;

/* Finish the batch's unfinished hosts as CANCELLED with reason (copied);
 * asynchronous: its done callback follows on the relay thread. Unknown or
 * finished ids are ignored. */
void op_relay_cancel(struct op_relay *r, uint64_t id, const char *reason);

/* Batches not finished yet. */
size_t op_relay_live(struct op_relay *r);

#endif
