#include "k8s_ticker.h"

#include <pthread.h>
#include <stdlib.h>

#include "k8s_time.h"

struct k8s_ticker {
    struct k8s_ticker_job job;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* leading began, or stop */
    bool leading, kick, stop;
};

static void wait_until(struct k8s_ticker *t, int64_t deadline)
{
    struct timespec ts = {deadline / K8S_NSEC_PER_SEC, deadline % K8S_NSEC_PER_SEC};
    pthread_cond_timedwait(&t->cond, &t->lock, &ts);
}

static void *loop(void *arg)
{
    struct k8s_ticker *t = arg;
    int64_t next = k8s_mono_ns() + (t->job.at_once ? 0 : t->job.period_ns);
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        if (!t->kick && k8s_mono_ns() < next) {
            wait_until(t, next); /* woken for another reason: the same deadline */
            continue;
        }
        t->kick = false;
        bool lead = t->leading;
        pthread_mutex_unlock(&t->lock);
        t->job.run(t->job.ud, lead);
        next = k8s_mono_ns() + t->job.period_ns;
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int k8s_ticker_start(const struct k8s_ticker_job *job, struct k8s_ticker **ret)
{
    if (job->period_ns <= 0 || !job->run)
        return -K8S_EINVAL;
    struct k8s_ticker *t = calloc(1, sizeof(*t));
    if (!t)
        return -K8S_ENOMEM;
    t->job = *job;
    pthread_mutex_init(&t->lock, NULL);
    k8s_cond_init_mono(&t->cond);
    if (pthread_create(&t->thread, NULL, loop, t) != 0) {
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return -K8S_EIO;
    }
    *ret = t;
    return 0;
}

void k8s_ticker_lead(struct k8s_ticker *t, bool leading)
{
    pthread_mutex_lock(&t->lock);
    if (leading && !t->leading && t->job.at_once) {
        t->kick = true;
        pthread_cond_signal(&t->cond);
    }
    t->leading = leading;
    pthread_mutex_unlock(&t->lock);
}

void k8s_ticker_free(struct k8s_ticker *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
}
