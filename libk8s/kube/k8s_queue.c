#include "k8s_queue.h"

#include <pthread.h>
#include <search.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_time.h"

struct item {
    char *key;
    bool queued;      /* in the ready FIFO */
    bool processing;  /* handed to a worker, not done yet */
    bool dirty;       /* added while processing: queue again on done */
    int64_t ready_at; /* > 0: waiting in the delay heap until then */
    size_t heap_at;   /* index in the heap while waiting */
    int failures;
    struct item *next; /* FIFO link */
};

struct k8s_queue {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    void *index; /* tsearch tree of entries by key */
    struct item *head, *tail;
    size_t len;
    struct item **heap; /* min-heap by ready_at */
    size_t nheap, heap_cap;
    bool shutdown;
    struct k8s_queue_opts opts;
    double tokens;
    int64_t tokens_at; /* monotonic ns of the last refill */
};

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct item *)a)->key, ((const struct item *)b)->key);
}

struct k8s_queue *k8s_queue_new(const struct k8s_queue_opts *opts)
{
    struct k8s_queue *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->opts = opts ? *opts : (struct k8s_queue_opts){0};
    if (q->opts.base_delay_ns <= 0)
        q->opts.base_delay_ns = 5 * K8S_NSEC_PER_SEC / 1000;
    if (q->opts.max_delay_ns <= 0)
        q->opts.max_delay_ns = 1000 * K8S_NSEC_PER_SEC;
    if (q->opts.qps <= 0)
        q->opts.qps = 10;
    if (q->opts.burst <= 0)
        q->opts.burst = 100;
    q->tokens = q->opts.burst;
    q->tokens_at = k8s_mono_ns();
    pthread_mutex_init(&q->lock, NULL);
    k8s_cond_init_mono(&q->cond);
    return q;
}

static void free_entry(void *p)
{
    struct item *e = p;
    free(e->key);
    free(e);
}

void k8s_queue_free(struct k8s_queue *q)
{
    if (!q)
        return;
    tdestroy(q->index, free_entry);
    free(q->heap);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

/* ---------- entries (lock held) ---------- */

static struct item *find(struct k8s_queue *q, const char *key, bool create)
{
    struct item probe = {.key = (char *)key};
    struct item **at = tfind(&probe, &q->index, cmp_entry);
    if (at || !create)
        return at ? *at : NULL;
    struct item *e = calloc(1, sizeof(*e));
    if (!e || !(e->key = strdup(key)) || !tsearch(e, &q->index, cmp_entry)) {
        if (e)
            free(e->key);
        free(e);
        return NULL;
    }
    return e;
}

/* Drop an entry nothing refers to any more. */
static void maybe_drop(struct k8s_queue *q, struct item *e)
{
    if (e->queued || e->processing || e->dirty || e->ready_at || e->failures)
        return;
    tdelete(e, &q->index, cmp_entry);
    free_entry(e);
}

static void push_ready(struct k8s_queue *q, struct item *e)
{
    e->queued = true;
    e->next = NULL;
    if (q->tail)
        q->tail->next = e;
    else
        q->head = e;
    q->tail = e;
    q->len++;
    pthread_cond_signal(&q->cond);
}

/* Add now: the no-op/dirty rules. */
static void add_locked(struct k8s_queue *q, struct item *e)
{
    if (e->queued)
        return;
    if (e->processing) {
        e->dirty = true;
        return;
    }
    push_ready(q, e);
}

/* ---------- the delay heap (lock held) ---------- */

static void heap_swap(struct k8s_queue *q, size_t a, size_t b)
{
    struct item *t = q->heap[a];
    q->heap[a] = q->heap[b];
    q->heap[b] = t;
    q->heap[a]->heap_at = a;
    q->heap[b]->heap_at = b;
}

static void heap_up(struct k8s_queue *q, size_t i)
{
    while (i > 0 && q->heap[(i - 1) / 2]->ready_at > q->heap[i]->ready_at) {
        heap_swap(q, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(struct k8s_queue *q, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->nheap && q->heap[l]->ready_at < q->heap[m]->ready_at)
            m = l;
        if (r < q->nheap && q->heap[r]->ready_at < q->heap[m]->ready_at)
            m = r;
        if (m == i)
            return;
        heap_swap(q, i, m);
        i = m;
    }
}

static void heap_remove(struct k8s_queue *q, struct item *e)
{
    size_t i = e->heap_at;
    heap_swap(q, i, --q->nheap);
    if (i < q->nheap) {
        heap_down(q, i);
        heap_up(q, i);
    }
    e->ready_at = 0;
}

static bool delay_locked(struct k8s_queue *q, struct item *e, int64_t at)
{
    if (e->ready_at) { /* already waiting: the earliest wins */
        if (at < e->ready_at) {
            e->ready_at = at;
            heap_up(q, e->heap_at);
        }
        return true;
    }
    if (q->nheap == q->heap_cap) {
        size_t cap = q->heap_cap ? 2 * q->heap_cap : 64;
        struct item **h = realloc(q->heap, cap * sizeof(*h));
        if (!h)
            return false;
        q->heap = h;
        q->heap_cap = cap;
    }
    e->ready_at = at;
    e->heap_at = q->nheap;
    q->heap[q->nheap++] = e;
    heap_up(q, e->heap_at);
    pthread_cond_broadcast(&q->cond); /* a sleeper may need to wake earlier */
    return true;
}

/* Move every due entry to the ready FIFO; returns the next due time or 0. */
static int64_t release_due(struct k8s_queue *q, int64_t now)
{
    while (q->nheap && q->heap[0]->ready_at <= now) {
        struct item *e = q->heap[0];
        heap_remove(q, e);
        add_locked(q, e);
    }
    return q->nheap ? q->heap[0]->ready_at : 0;
}

/* ---------- public ---------- */

void k8s_queue_add(struct k8s_queue *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct item *e = q->shutdown ? NULL : find(q, key, true);
    if (e)
        add_locked(q, e);
    pthread_mutex_unlock(&q->lock);
}

static void add_at(struct k8s_queue *q, struct item *e, int64_t delay_ns)
{
    if (delay_ns <= 0 || !delay_locked(q, e, k8s_mono_ns() + delay_ns))
        add_locked(q, e);
}

void k8s_queue_add_after(struct k8s_queue *q, const char *key, int64_t delay_ns)
{
    pthread_mutex_lock(&q->lock);
    struct item *e = q->shutdown ? NULL : find(q, key, true);
    if (e)
        add_at(q, e, delay_ns);
    pthread_mutex_unlock(&q->lock);
}

/* The token bucket's delay for one more item (reserving it). */
static int64_t bucket_delay(struct k8s_queue *q, int64_t now)
{
    q->tokens += (double)(now - q->tokens_at) / K8S_NSEC_PER_SEC * q->opts.qps;
    if (q->tokens > q->opts.burst)
        q->tokens = q->opts.burst;
    q->tokens_at = now;
    q->tokens -= 1;
    return q->tokens >= 0 ? 0 : (int64_t)(-q->tokens / q->opts.qps * K8S_NSEC_PER_SEC);
}

void k8s_queue_add_rate_limited(struct k8s_queue *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct item *e = q->shutdown ? NULL : find(q, key, true);
    if (e) {
        int64_t d = q->opts.base_delay_ns;
        for (int i = 0; i < e->failures && d < q->opts.max_delay_ns; i++)
            d *= 2;
        if (d > q->opts.max_delay_ns)
            d = q->opts.max_delay_ns;
        e->failures++;
        int64_t b = bucket_delay(q, k8s_mono_ns());
        add_at(q, e, d > b ? d : b);
    }
    pthread_mutex_unlock(&q->lock);
}

void k8s_queue_forget(struct k8s_queue *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct item *e = find(q, key, false);
    if (e) {
        e->failures = 0;
        maybe_drop(q, e);
    }
    pthread_mutex_unlock(&q->lock);
}

int k8s_queue_failures(struct k8s_queue *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct item *e = find(q, key, false);
    int n = e ? e->failures : 0;
    pthread_mutex_unlock(&q->lock);
    return n;
}

char *k8s_queue_get(struct k8s_queue *q)
{
    char *key = NULL;
    pthread_mutex_lock(&q->lock);
    while (!q->shutdown) {
        int64_t next = release_due(q, k8s_mono_ns());
        if (q->head) {
            struct item *e = q->head;
            q->head = e->next;
            if (!q->head)
                q->tail = NULL;
            q->len--;
            e->queued = false;
            e->processing = true;
            e->dirty = false;
            key = strdup(e->key);
            if (!key) { /* keep the key for another try */
                e->processing = false;
                push_ready(q, e);
            }
            break;
        }
        if (next) {
            struct timespec ts = {next / K8S_NSEC_PER_SEC, next % K8S_NSEC_PER_SEC};
            pthread_cond_timedwait(&q->cond, &q->lock, &ts);
        } else {
            pthread_cond_wait(&q->cond, &q->lock);
        }
    }
    pthread_mutex_unlock(&q->lock);
    return key;
}

void k8s_queue_done(struct k8s_queue *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct item *e = find(q, key, false);
    if (e) {
        e->processing = false;
        if (e->dirty && !q->shutdown) {
            e->dirty = false;
            push_ready(q, e);
        }
        e->dirty = false;
        maybe_drop(q, e);
    }
    pthread_mutex_unlock(&q->lock);
}

void k8s_queue_shutdown(struct k8s_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->shutdown = true;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

size_t k8s_queue_len(struct k8s_queue *q)
{
    pthread_mutex_lock(&q->lock);
    size_t n = q->len;
    pthread_mutex_unlock(&q->lock);
    return n;
}

size_t k8s_queue_waiting(struct k8s_queue *q)
{
    pthread_mutex_lock(&q->lock);
    size_t n = q->nheap;
    pthread_mutex_unlock(&q->lock);
    return n;
}
