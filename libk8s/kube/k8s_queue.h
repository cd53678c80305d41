/*
 * k8s_queue — a rate-limited work queue with controller-runtime's (client-go
 * workqueue's) guarantees:
 *
 *   - a key waits at most once: adding a key that is already queued is a
 *     no-op;
 *   - a key is never handed to two workers at once: adding a key that is
 *     being processed marks it dirty, and k8s_queue_done queues it again;
 *   - k8s_queue_add_after delays a key (of several delays the earliest wins);
 *   - k8s_queue_add_rate_limited delays a key by the larger of its own
 *     exponential backoff (base doubling to max per failure, reset by
 *     k8s_queue_forget) and an overall token bucket (qps, burst).
 *
 * Keys are strings ("namespace/name"), copied in.
 * Thread-safety: every function may be called from any thread.
 */
#ifndef K8S_QUEUE_H
#define K8S_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"

struct k8s_queue_opts {
    int64_t base_delay_ns; /* 0: 5 ms */
    int64_t max_delay_ns;  /* 0: 1000 s */
    double qps;            /* 0: 10 */
    int burst;             /* 0: 100 */
};

struct k8s_queue;

/* opts may be NULL (defaults). NULL on out of memory. */
struct k8s_queue *k8s_queue_new(const struct k8s_queue_opts *opts);
/* NULL-safe; no thread may be inside k8s_queue_get. */
void k8s_queue_free(struct k8s_queue *q);

void k8s_queue_add(struct k8s_queue *q, const char *key);
void k8s_queue_add_after(struct k8s_queue *q, const char *key, int64_t delay_ns);
void k8s_queue_add_rate_limited(struct k8s_queue *q, const char *key);
/* Stop backing off key: its next failure waits the base delay again. */
void k8s_queue_forget(struct k8s_queue *q, const char *key);
/* Failures recorded for key since the last forget. */
int k8s_queue_failures(struct k8s_queue *q, const char *key);

/* Block until a key is ready. Returns a new string (free()) that the
 * caller must pass to k8s_queue_done, or NULL once the queue is shut down. */
char *k8s_queue_get(struct k8s_queue *q);
void k8s_queue_done(struct k8s_queue *q, const char *key);

/* Wake every k8s_queue_get with NULL; later adds are ignored. */
void k8s_queue_shutdown(struct k8s_queue *q);

/* Keys ready to be handed out (the depth metric), and keys waiting for a
 * delay to pass. */
size_t k8s_queue_len(struct k8s_queue *q);
size_t k8s_queue_waiting(struct k8s_queue *q);

#endif
