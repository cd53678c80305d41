#include "wh_reaper.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "k8s_time.h"

#define TICK_NS (K8S_NSEC_PER_SEC / 4)

struct wh_reaper {
    int64_t timeout_ns;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct wh_reaper_entry *head, *tail; /* deadline order */
    bool stop;
    uint64_t reaped; /* atomic */
    pthread_t thread;
};

static void unlink_entry(struct wh_reaper *r, struct wh_reaper_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        r->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        r->tail = e->prev;
    e->prev = e->next = NULL;
    /* last: a remover that reads false without the lock may free e */
    __atomic_store_n(&e->listed, false, __ATOMIC_RELEASE);
}

/* Shut down entries from the oldest while they are due (at most max). */
static int reap(struct wh_reaper *r, int64_t now_ns, int max)
{
    int n = 0;
    pthread_mutex_lock(&r->mu);
    while (n < max && r->head && r->head->deadline_ns <= now_ns) {
        struct wh_reaper_entry *e = r->head;
        /* before the unlink: once e reads unlisted its owner may close fd */
        (void)shutdown(e->fd, SHUT_RDWR); /* the event loop reads the end and closes */
        unlink_entry(r, e);
        n++;
    }
    pthread_mutex_unlock(&r->mu);
    __atomic_add_fetch(&r->reaped, (uint64_t)n, __ATOMIC_RELAXED);
    return n;
}

int wh_reaper_sweep(struct wh_reaper *r, int64_t now_ns)
{
    return reap(r, now_ns, INT_MAX);
}

bool wh_reaper_evict_oldest(struct wh_reaper *r, int64_t now_ns)
{
    /* due: accepted at least WH_REAPER_MIN_WAIT_NS ago */
    return r && reap(r, now_ns + r->timeout_ns - WH_REAPER_MIN_WAIT_NS, 1) == 1;
}

static void *reaper_main(void *arg)
{
    struct wh_reaper *r = arg;
    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += TICK_NS;
        if (until.tv_nsec >= K8S_NSEC_PER_SEC) {
            until.tv_sec++;
            until.tv_nsec -= K8S_NSEC_PER_SEC;
        }
        pthread_cond_timedwait(&r->cv, &r->mu, &until);
        if (r->stop)
            break;
        pthread_mutex_unlock(&r->mu);
        (void)wh_reaper_sweep(r, k8s_mono_ns());
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

int wh_reaper_new(int64_t timeout_ns, struct wh_reaper **ret)
{
    struct wh_reaper *r = calloc(1, sizeof(*r));
    if (!r)
        return -K8S_ENOMEM;
    r->timeout_ns = timeout_ns;
    pthread_mutex_init(&r->mu, NULL);
    k8s_cond_init_mono(&r->cv);
    if (pthread_create(&r->thread, NULL, reaper_main, r) != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        free(r);
        return -K8S_EIO;
    }
    *ret = r;
    return 0;
}

void wh_reaper_free(struct wh_reaper *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

void wh_reaper_add(struct wh_reaper *r, struct wh_reaper_entry *e, int fd)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    e->fd = fd;
    e->deadline_ns = k8s_mono_ns() + r->timeout_ns; /* under the lock: the list stays sorted */
    e->next = NULL;
    e->prev = r->tail;
    if (r->tail)
        r->tail->next = e;
    else
        r->head = e;
    r->tail = e;
    __atomic_store_n(&e->listed, true, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&r->mu);
}

void wh_reaper_remove(struct wh_reaper *r, struct wh_reaper_entry *e)
{
    if (!r || !__atomic_load_n(&e->listed, __ATOMIC_ACQUIRE))
        return; /* the common case, once per request after the first: no lock */
    pthread_mutex_lock(&r->mu);
    if (__atomic_load_n(&e->listed, __ATOMIC_RELAXED))
        unlink_entry(r, e);
    pthread_mutex_unlock(&r->mu);
}

uint64_t wh_reaper_reaped(const struct wh_reaper *r)
{
    return r ? __atomic_load_n(&r->reaped, __ATOMIC_RELAXED) : 0;
}
