/*
 * op_manager — runs a reconciler the way controller-runtime's manager
 * does: worker threads take keys from the work queue (which never hands
 * one key to two workers at once) and call the reconciler; its answer
 * decides what happens to the key: OP_DONE forgets its backoff,
 * OP_REQUEUE_AFTER queues it again after the delay it gave, OP_RETRY
 * queues it again rate-limited (and logs the failure once, here at the
 * edge).
 *
 * Thread-safety: start and stop from one thread; the reconciler is called
 * from the workers, never twice with the same key at once.
 * Ownership: the queue and the reconciler's ud are borrowed.
 */
#ifndef OP_MANAGER_H
#define OP_MANAGER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"
#include "op_plan.h"
#include "op_queue.h"

struct op_reconciler {
    /* Reconcile key; *after for OP_REQUEUE_AFTER, *err for OP_RETRY. */
    enum op_result (*reconcile)(void *ud, const char *key, int64_t *after, struct k8s_error *err);
    void *ud;
};

#define OP_MANAGER_MAX_WORKERS 64

struct op_manager {
    struct op_queue *queue;
    struct op_reconciler rec;
    pthread_t workers[OP_MANAGER_MAX_WORKERS];
    int n;
};

/* Start n workers (at most OP_MANAGER_MAX_WORKERS) on m, which must be
 * zeroed or stopped; the number started. */
int op_manager_start(struct op_manager *m, struct op_queue *q, const struct op_reconciler *rec,
                     int n);

/* Shut the queue down (for good) and join the workers. */
void op_manager_stop(struct op_manager *m);

#endif
