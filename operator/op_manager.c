#include "op_manager.h"

#include <pthread.h>
#include <stdlib.h>

#include "k8s_log.h"

static void handle(struct op_manager *m, const char *key)
{
    int64_t after = 0;
    struct k8s_error err = {0};
    enum op_result r = m->rec.reconcile(m->rec.ud, key, &after, &err);
    if (r == OP_RETRY) {
        k8s_log_json(K8S_LOG_WARN, "reconcile failed; retrying",
                     json_pack("{s:s, s:s, s:i}", "resource", key, "error", err.message, "failures",
                               op_queue_failures(m->queue, key)));
        op_queue_add_rate_limited(m->queue, key);
        return;
    }
    op_queue_forget(m->queue, key);
    if (r == OP_REQUEUE_AFTER)
        op_queue_add_after(m->queue, key, after);
}

static void *worker(void *arg)
{
    struct op_manager *m = arg;
    char *key;
    while ((key = op_queue_get(m->queue))) {
        handle(m, key);
        op_queue_done(m->queue, key);
        free(key);
    }
    return NULL;
}

int op_manager_start(struct op_manager *m, struct op_queue *q, const struct op_reconciler *rec,
                     int n)
{
    m->queue = q;
    m->rec = *rec;
    m->n = 0;
    for (int i = 0; i < n && i < OP_MANAGER_MAX_WORKERS; i++)
        if (pthread_create(&m->workers[m->n], NULL, worker, m) == 0)
            m->n++;
    return m->n;
}

void op_manager_stop(struct op_manager *m)
{
    if (m->queue)
        op_queue_shutdown(m->queue);
    for (int i = 0; i < m->n; i++)
        pthread_join(m->workers[i], NULL);
    m->n = 0;
}
