/*
 * op_queue — a rate-limited work queue with controller-runtime's (client-go
 * workqueue's) guarantees:
 *
 *   - a key waits at most once: adding a key that is already queued is a
 *     no-op;
 *   - a key is never handed to two workers at once: adding a key that is
 *     being processed marks it dirty, and op_queue_done queues it again;
 *   - op_queue_add_after delays a key (of several delays the earliest wins);
 *   - op_queue_add_rate_limited delays a key by the larger of its own
 *     exponential backoff (base doubling to max per failure, reset by
 *     op_queue_forget) and an overall token bucket (qps, burst).
 *
 * Keys are strings ("namespace/name"), copied in.
 * Thread-safety: every function may be called from any thread.
 */
#ifndef OP_QUEUE_H
#define OP_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"

struct op_queue_opts {
    int64_t base_delay_ns; /* 0: 5 ms */
    int64_t max_delay_ns;  /* 0: 1000 s */
    double qps;            /* 0: 10 */
    int burst;             /* 0: 100 */
};

struct op_queue;

/* opts may be NULL (defaults). NULL on out of memory. */
struct op_queue *op_queue_new(const struct op_queue_opts *opts);
/* NULL-safe; no thread may be inside op_queue_get. */
void op_queue_free(struct op_queue *q);

void op_queue_add(struct op_queue *q, const char *key);
void op_queue_add_after(struct op_queue *q, const char *key, int64_t delay_ns);
void op_queue_add_rate_limited(struct op_queue *q, const char *key);
/* Stop backing off key: its next failure waits the base delay again. */
void op_queue_forget(struct op_queue *q, const char *key);
/* Failures recorded for key since the last forget. */
int op_queue_failures(struct op_queue *q, const char *key);

/* Block until a key is ready. Returns a new string (free()) that the
 * caller must pass to op_queue_done, or NULL once the queue is shut down. */
char *op_queue_get(struct op_queue *q);
void op_queue_done(struct op_queue *q, const char *key);

/* Wake every op_queue_get with NULL; later adds are ignored. */
void op_queue_shutdown(struct op_queue *q);

/* Keys ready to be handed out (the depth metric), and keys waiting for a
 * delay to pass. */
size_t op_queue_len(struct op_queue *q);
size_t op_queue_waiting(struct op_queue *q);

#endif
