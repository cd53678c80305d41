/*
 * k8s_manager — runs a reconciler the way controller-runtime's manager
 * does: worker threads take keys from the work queue (which never hands
 * one key to two workers at once) and call the reconciler; its answer
 * decides what happens to the key: K8S_DONE forgets its backoff,
 * K8S_REQUEUE_AFTER queues it again after the delay it gave, K8S_RETRY
 * queues it again rate-limited, after telling the reconciler's failed
 * hook (where the program logs it, once, at its edge: this module never
 * logs).
 *
 * Thread-safety: start and stop from one thread; the reconciler and its
 * hook are called from the workers, never twice with the same key at once.
 * Ownership: the queue and the reconciler's ud are borrowed.
 */
#ifndef K8S_MANAGER_H
#define K8S_MANAGER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"
#include "k8s_queue.h"

/* What a reconcile asks for its key. */
enum k8s_result {
    K8S_DONE,          /* nothing more until an event */
    K8S_REQUEUE_AFTER, /* look again after the delay given */
    K8S_RETRY          /* failed: back off and retry */
};

struct k8s_reconciler {
    /* Reconcile key; *after for K8S_REQUEUE_AFTER, *err for K8S_RETRY. */
    enum k8s_result (*reconcile)(void *ud, const char *key, int64_t *after, struct k8s_error *err);
    /* K8S_RETRY: key failed with err, after `failures` earlier failures
     * since it last succeeded (0 on the first), before it is queued again;
     * NULL: nothing to tell. */
    void (*failed)(void *ud, const char *key, const struct k8s_error *err, int failures);
    void *ud;
};

#define K8S_MANAGER_MAX_WORKERS 64

struct k8s_manager {
    struct k8s_queue *queue;
    struct k8s_reconciler rec;
    pthread_t workers[K8S_MANAGER_MAX_WORKERS];
    int n;
};

/* Start n workers (at most K8S_MANAGER_MAX_WORKERS) on m, which must be
 * zeroed or stopped; the number started. */
int k8s_manager_start(struct k8s_manager *m, struct k8s_queue *q, const struct k8s_reconciler *rec,
                      int n);

/* Shut the queue down (for good) and join the workers. */
void k8s_manager_stop(struct k8s_manager *m);

#endif
