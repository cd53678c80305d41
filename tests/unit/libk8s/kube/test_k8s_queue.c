/* k8s_queue: the work queue guarantees the reconcilers rely on. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_time.h"
#include "k8s_queue.h"

#define MS K8S_NSEC_PER_MSEC

static char *get_now(struct k8s_queue *q)
{
    cr_assert_gt(k8s_queue_len(q), 0, "a key is ready");
    return k8s_queue_get(q);
}

Test(k8s_queue, a_queued_key_waits_once)
{
    struct k8s_queue *q = k8s_queue_new(NULL);
    k8s_queue_add(q, "ml/a");
    k8s_queue_add(q, "ml/b");
    k8s_queue_add(q, "ml/a");
    cr_assert_eq(k8s_queue_len(q), 2);
    char *k = get_now(q);
    cr_assert_str_eq(k, "ml/a", "first in, first out");
    k8s_queue_done(q, k);
    free(k);
    k = get_now(q);
    cr_assert_str_eq(k, "ml/b");
    k8s_queue_done(q, k);
    free(k);
    cr_assert_eq(k8s_queue_len(q), 0);
    k8s_queue_free(q);
}

Test(k8s_queue, a_key_in_process_is_not_handed_out_again)
{
    struct k8s_queue *q = k8s_queue_new(NULL);
    k8s_queue_add(q, "ml/a");
    char *k = get_now(q);
    k8s_queue_add(q, "ml/a"); /* changed while being reconciled */
    k8s_queue_add(q, "ml/a");
    cr_assert_eq(k8s_queue_len(q), 0, "dirty, not ready, while in process");
    k8s_queue_done(q, k);
    cr_assert_eq(k8s_queue_len(q), 1, "queued again once done");
    free(k);
    k = get_now(q);
    k8s_queue_done(q, k);
    free(k);
    cr_assert_eq(k8s_queue_len(q), 0);
    k8s_queue_free(q);
}

Test(k8s_queue, delays_and_the_earliest_wins)
{
    struct k8s_queue *q = k8s_queue_new(NULL);
    k8s_queue_add_after(q, "ml/late", 400 * MS);
    k8s_queue_add_after(q, "ml/soon", 30 * MS);
    k8s_queue_add_after(q, "ml/late", 60 * MS); /* earlier: wins */
    cr_assert_eq(k8s_queue_len(q), 0);
    cr_assert_eq(k8s_queue_waiting(q), 2);
    int64_t t0 = k8s_mono_ns();
    char *a = k8s_queue_get(q), *b = k8s_queue_get(q);
    int64_t took = k8s_mono_ns() - t0;
    cr_assert_str_eq(a, "ml/soon");
    cr_assert_str_eq(b, "ml/late");
    cr_assert_lt(took, 350 * MS, "the earlier delay of ml/late applied");
    cr_assert_geq(took, 55 * MS);
    k8s_queue_done(q, a);
    k8s_queue_done(q, b);
    free(a);
    free(b);
    k8s_queue_free(q);
}

Test(k8s_queue, per_key_backoff_doubles_and_forget_resets)
{
    struct k8s_queue_opts o = {
        .base_delay_ns = 20 * MS, .max_delay_ns = 80 * MS, .qps = 1000, .burst = 1000};
    struct k8s_queue *q = k8s_queue_new(&o);
    int64_t want[] = {20, 40, 80, 80}; /* capped at max */
    for (int i = 0; i < 4; i++) {
        int64_t t0 = k8s_mono_ns();
        k8s_queue_add_rate_limited(q, "ml/x");
        cr_assert_eq(k8s_queue_failures(q, "ml/x"), i + 1);
        char *k = k8s_queue_get(q);
        int64_t took = (k8s_mono_ns() - t0) / MS;
        cr_assert_geq(took, want[i] - 1, "failure %d waited %lld ms", i + 1, (long long)took);
        k8s_queue_done(q, k);
        free(k);
    }
    k8s_queue_forget(q, "ml/x");
    cr_assert_eq(k8s_queue_failures(q, "ml/x"), 0);
    k8s_queue_free(q);
}

Test(k8s_queue, overall_token_bucket)
{
    struct k8s_queue_opts o = {.base_delay_ns = 1, .qps = 10, .burst = 2};
    struct k8s_queue *q = k8s_queue_new(&o);
    k8s_queue_add_rate_limited(q, "ml/1");
    k8s_queue_add_rate_limited(q, "ml/2");
    k8s_queue_add_rate_limited(q, "ml/3"); /* the bucket is empty: ~100 ms */
    int64_t t0 = k8s_mono_ns();
    for (int i = 0; i < 3; i++) {
        char *k = k8s_queue_get(q);
        k8s_queue_done(q, k);
        free(k);
    }
    cr_assert_geq(k8s_mono_ns() - t0, 80 * MS, "the third waited for a token");
    k8s_queue_free(q);
}

static void *getter(void *q)
{
    return k8s_queue_get(q);
}

Test(k8s_queue, shutdown_wakes_waiting_workers)
{
    struct k8s_queue *q = k8s_queue_new(NULL);
    pthread_t t;
    pthread_create(&t, NULL, getter, q);
    k8s_queue_add_after(q, "ml/never", 60 * K8S_NSEC_PER_SEC);
    k8s_queue_shutdown(q);
    void *got = (void *)1;
    pthread_join(t, &got);
    cr_assert_null(got);
    k8s_queue_add(q, "ml/after");
    cr_assert_null(k8s_queue_get(q), "closed for good");
    k8s_queue_free(q);
}

/* Many adders and workers: a key is never processed by two at once. */
struct stress {
    struct k8s_queue *q;
    int busy[8];
    int overlap, processed;
    pthread_mutex_t lock;
};

static void *adder(void *arg)
{
    struct stress *s = arg;
    char key[16];
    for (int i = 0; i < 4000; i++) {
        snprintf(key, sizeof(key), "ml/%d", i % 8);
        k8s_queue_add(s->q, key);
    }
    return NULL;
}

static void *worker(void *arg)
{
    struct stress *s = arg;
    char *k;
    while ((k = k8s_queue_get(s->q))) {
        int i = atoi(k + 3);
        if (__atomic_fetch_add(&s->busy[i], 1, __ATOMIC_SEQ_CST) != 0)
            __atomic_fetch_add(&s->overlap, 1, __ATOMIC_SEQ_CST);
        for (volatile int spin = 0; spin < 2000; spin++) {
        }
        __atomic_fetch_sub(&s->busy[i], 1, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&s->processed, 1, __ATOMIC_SEQ_CST);
        k8s_queue_done(s->q, k);
        free(k);
    }
    return NULL;
}

Test(k8s_queue, never_two_workers_on_one_key, .timeout = 60)
{
    struct stress s = {.q = k8s_queue_new(NULL)};
    pthread_t a[3], w[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&w[i], NULL, worker, &s);
    for (int i = 0; i < 3; i++)
        pthread_create(&a[i], NULL, adder, &s);
    for (int i = 0; i < 3; i++)
        pthread_join(a[i], NULL);
    while (k8s_queue_len(s.q))
        usleep(1000);
    usleep(20000);
    k8s_queue_shutdown(s.q);
    for (int i = 0; i < 4; i++)
        pthread_join(w[i], NULL);
    cr_assert_eq(s.overlap, 0, "a key was processed by two workers at once");
    cr_assert_geq(s.processed, 8, "every key was processed");
    cr_assert_lt(s.processed, 12000, "adds of a waiting key were merged");
    k8s_queue_free(s.q);
}
