/* op_queue: the work queue guarantees the reconcilers rely on. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_time.h"
#include "op_queue.h"

#define MS K8S_NSEC_PER_MSEC

static char *get_now(struct op_queue *q)
{
    cr_assert_gt(op_queue_len(q), 0, "a key is ready");
    return op_queue_get(q);
}

Test(op_queue, a_queued_key_waits_once)
{
    struct op_queue *q = op_queue_new(NULL);
    op_queue_add(q, "ml/a");
    op_queue_add(q, "ml/b");
    op_queue_add(q, "ml/a");
    cr_assert_eq(op_queue_len(q), 2);
    char *k = get_now(q);
    cr_assert_str_eq(k, "ml/a", "first in, first out");
    op_queue_done(q, k);
    free(k);
    k = get_now(q);
    cr_assert_str_eq(k, "ml/b");
    op_queue_done(q, k);
    free(k);
    cr_assert_eq(op_queue_len(q), 0);
    op_queue_free(q);
}

Test(op_queue, a_key_in_process_is_not_handed_out_again)
{
    struct op_queue *q = op_queue_new(NULL);
    op_queue_add(q, "ml/a");
    char *k = get_now(q);
    op_queue_add(q, "ml/a"); /* changed while being reconciled */
    op_queue_add(q, "ml/a");
    cr_assert_eq(op_queue_len(q), 0, "dirty, not ready, while in process");
    op_queue_done(q, k);
    cr_assert_eq(op_queue_len(q), 1, "queued again once done");
    free(k);
    k = get_now(q);
    op_queue_done(q, k);
    free(k);
    cr_assert_eq(op_queue_len(q), 0);
    op_queue_free(q);
}

Test(op_queue, delays_and_the_earliest_wins)
{
    struct op_queue *q = op_queue_new(NULL);
    op_queue_add_after(q, "ml/late", 400 * MS);
    op_queue_add_after(q, "ml/soon", 30 * MS);
    op_queue_add_after(q, "ml/late", 60 * MS); /* earlier: wins */
    cr_assert_eq(op_queue_len(q), 0);
    cr_assert_eq(op_queue_waiting(q), 2);
    int64_t t0 = k8s_mono_ns();
    char *a = op_queue_get(q), *b = op_queue_get(q);
    int64_t took = k8s_mono_ns() - t0;
    cr_assert_str_eq(a, "ml/soon");
    cr_assert_str_eq(b, "ml/late");
    cr_assert_lt(took, 350 * MS, "the earlier delay of ml/late applied");
    cr_assert_geq(took, 55 * MS);
    op_queue_done(q, a);
    op_queue_done(q, b);
    free(a);
    free(b);
    op_queue_free(q);
}

Test(op_queue, per_key_backoff_doubles_and_forget_resets)
{
    struct op_queue_opts o = {
        .base_delay_ns = 20 * MS, .max_delay_ns = 80 * MS, .qps = 1000, .burst = 1000};
    struct op_queue *q = op_queue_new(&o);
    int64_t want[] = {20, 40, 80, 80}; /* capped at max */
    for (int i = 0; i < 4; i++) {
        int64_t t0 = k8s_mono_ns();
        op_queue_add_rate_limited(q, "ml/x");
        cr_assert_eq(op_queue_failures(q, "ml/x"), i + 1);
        char *k = op_queue_get(q);
        int64_t took = (k8s_mono_ns() - t0) / MS;
        cr_assert_geq(took, want[i] - 1, "failure %d waited %lld ms", i + 1, (long long)took);
        op_queue_done(q, k);
        free(k);
    }
    op_queue_forget(q, "ml/x");
    cr_assert_eq(op_queue_failures(q, "ml/x"), 0);
    op_queue_free(q);
}

Test(op_queue, overall_token_bucket)
{
    struct op_queue_opts o = {.base_delay_ns = 1, .qps = 10, .burst = 2};
    struct op_queue *q = op_queue_new(&o);
    op_queue_add_rate_limited(q, "ml/1");
    op_queue_add_rate_limited(q, "ml/2");
    op_queue_add_rate_limited(q, "ml/3"); /* the bucket is empty: ~100 ms */
    int64_t t0 = k8s_mono_ns();
    for (int i = 0; i < 3; i++) {
        char *k = op_queue_get(q);
        op_queue_done(q, k);
        free(k);
    }
    cr_assert_geq(k8s_mono_ns() - t0, 80 * MS, "the third waited for a token");
    op_queue_free(q);
}

static void *getter(void *q)
{
    return op_queue_get(q);
}

Test(op_queue, shutdown_wakes_waiting_workers)
{
    struct op_queue *q = op_queue_new(NULL);
    pthread_t t;
    pthread_create(&t, NULL, getter, q);
    op_queue_add_after(q, "ml/never", 60 * K8S_NSEC_PER_SEC);
    op_queue_shutdown(q);
    void *got = (void *)1;
    pthread_join(t, &got);
    cr_assert_null(got);
    op_queue_add(q, "ml/after");
    cr_assert_null(op_queue_get(q), "closed for good");
    op_queue_free(q);
}

/* Many adders and workers: a key is never processed by two at once. */
struct stress {
    struct op_queue *q;
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
        op_queue_add(s->q, key);
    }
    return NULL;
}

static void *worker(void *arg)
{
    struct stress *s = arg;
    char *k;
    while ((k = op_queue_get(s->q))) {
        int i = atoi(k + 3);
        if (__atomic_fetch_add(&s->busy[i], 1, __ATOMIC_SEQ_CST) != 0)
            __atomic_fetch_add(&s->overlap, 1, __ATOMIC_SEQ_CST);
        for (volatile int spin = 0; spin < 2000; spin++) {
        }
        __atomic_fetch_sub(&s->busy[i], 1, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&s->processed, 1, __ATOMIC_SEQ_CST);
        op_queue_done(s->q, k);
        free(k);
    }
    return NULL;
}

Test(op_queue, never_two_workers_on_one_key, .timeout = 60)
{
    struct stress s = {.q = op_queue_new(NULL)};
    pthread_t a[3], w[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&w[i], NULL, worker, &s);
    for (int i = 0; i < 3; i++)
        pthread_create(&a[i], NULL, adder, &s);
    for (int i = 0; i < 3; i++)
        pthread_join(a[i], NULL);
    while (op_queue_len(s.q))
        usleep(1000);
    usleep(20000);
    op_queue_shutdown(s.q);
    for (int i = 0; i < 4; i++)
        pthread_join(w[i], NULL);
    cr_assert_eq(s.overlap, 0, "a key was processed by two workers at once");
    cr_assert_geq(s.processed, 8, "every key was processed");
    cr_assert_lt(s.processed, 12000, "adds of a waiting key were merged");
    op_queue_free(s.q);
}
