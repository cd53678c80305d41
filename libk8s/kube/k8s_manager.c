#include "k8s_manager.h"

#include <pthread.h>
#include <stdlib.h>

static void handle(struct k8s_manager *m, const char *key)
{
    int64_t after = 0;
    struct k8s_error err = {0};
    enum k8s_result r = m->rec.reconcile(m->rec.ud, key, &after, &err);
    if (r == K8S_RETRY) {
        if (m->rec.failed)
            m->rec.failed(m->rec.ud, key, &err, k8s_queue_failures(m->queue, key));
        k8s_queue_add_rate_limited(m->queue, key);
        return;
    }
    k8s_queue_forget(m->queue, key);
    if (r == K8S_REQUEUE_AFTER)
        k8s_queue_add_after(m->queue, key, after);
}

static void *worker(void *arg)
{
    struct k8s_manager *m = arg;
    char *key;
    while ((key = k8s_queue_get(m->queue))) {
        handle(m, key);
        k8s_queue_done(m->queue, key);
        free(key);
    }
    return NULL;
}

int k8s_manager_start(struct k8s_manager *m, struct k8s_queue *q, const struct k8s_reconciler *rec,
                      int n)
{
    m->queue = q;
    m->rec = *rec;
    m->n = 0;
    for (int i = 0; i < n && i < K8S_MANAGER_MAX_WORKERS; i++)
        if (pthread_create(&m->workers[m->n], NULL, worker, m) == 0)
            m->n++;
    return m->n;
}

void k8s_manager_stop(struct k8s_manager *m)
{
    if (m->queue)
        k8s_queue_shutdown(m->queue);
    for (int i = 0; i < m->n; i++)
        pthread_join(m->workers[i], NULL);
    m->n = 0;
}
