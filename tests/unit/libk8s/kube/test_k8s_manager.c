/* k8s_manager: workers take keys from the queue and call the reconciler;
 * a key is never reconciled by two workers at once, and the reconciler's
 * answer decides whether and when the key comes back. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "k8s_time.h"
#include "k8s_manager.h"

static struct {
    pthread_mutex_t lock;
    int calls, in_flight, max_in_flight;
    enum k8s_result answer;
    int answer_times; /* then K8S_DONE */
    int told[4];      /* the failed hook's failure counts, in order */
    int n_told;
    char told_error[64];
} rc;

static void failed(void *ud, const char *key, const struct k8s_error *err, int failures)
{
    (void)ud, (void)key;
    pthread_mutex_lock(&rc.lock);
    if (rc.n_told < 4)
        rc.told[rc.n_told++] = failures;
    snprintf(rc.told_error, sizeof(rc.told_error), "%s", err->message);
    pthread_mutex_unlock(&rc.lock);
}

static enum k8s_result reconcile(void *ud, const char *key, int64_t *after, struct k8s_error *err)
{
    (void)ud, (void)key;
    pthread_mutex_lock(&rc.lock);
    rc.calls++;
    if (++rc.in_flight > rc.max_in_flight)
        rc.max_in_flight = rc.in_flight;
    enum k8s_result a = rc.answer_times > 0 ? rc.answer : K8S_DONE;
    rc.answer_times--;
    pthread_mutex_unlock(&rc.lock);
    usleep(2000); /* long enough for a second worker to try the same key */
    pthread_mutex_lock(&rc.lock);
    rc.in_flight--;
    pthread_mutex_unlock(&rc.lock);
    *after = 10 * K8S_NSEC_PER_MSEC;
    if (a == K8S_RETRY)
        k8s_error_set(err, -K8S_EIO, "the API server is away");
    return a;
}

static int calls(void)
{
    pthread_mutex_lock(&rc.lock);
    int n = rc.calls;
    pthread_mutex_unlock(&rc.lock);
    return n;
}

static int max_in_flight(void)
{
    pthread_mutex_lock(&rc.lock);
    int n = rc.max_in_flight;
    pthread_mutex_unlock(&rc.lock);
    return n;
}

/* Wait until the reconciler was called n times (or 5 s passed). */
static bool called(int n)
{
    for (int i = 0; i < 1000 && calls() < n; i++)
        usleep(5000);
    return calls() >= n;
}

static struct k8s_queue *q;
static struct k8s_manager m;

static void setup(void)
{
    memset(&rc, 0, sizeof(rc));
    memset(&m, 0, sizeof(m));
    pthread_mutex_init(&rc.lock, NULL);
    struct k8s_queue_opts o = {.base_delay_ns = K8S_NSEC_PER_MSEC};
    q = k8s_queue_new(&o);
    struct k8s_reconciler r = {reconcile, failed, NULL};
    cr_assert_eq(k8s_manager_start(&m, q, &r, 4), 4);
}

static void teardown(void)
{
    k8s_manager_stop(&m);
    k8s_queue_free(q);
}

TestSuite(k8s_manager, .init = setup, .fini = teardown, .timeout = 30);

Test(k8s_manager, one_key_is_never_reconciled_twice_at_once)
{
    for (int i = 0; i < 200; i++) {
        k8s_queue_add(q, "ml/x");
        usleep(100);
    }
    cr_assert(called(2));
    usleep(50000);
    cr_assert_eq(max_in_flight(), 1, "four workers, one key");
}

Test(k8s_manager, different_keys_run_side_by_side)
{
    const char *keys[] = {"ml/a", "ml/b", "ml/c", "ml/d"};
    for (int i = 0; i < 4; i++)
        k8s_queue_add(q, keys[i]);
    cr_assert(called(4));
    cr_assert_gt(max_in_flight(), 1);
}

Test(k8s_manager, a_failure_comes_back_rate_limited)
{
    rc.answer = K8S_RETRY;
    rc.answer_times = 2;
    k8s_queue_add(q, "ml/x");
    cr_assert(called(3), "two failures, then the retry that succeeds");
    usleep(50000);
    cr_assert_eq(calls(), 3, "done: not again");
    cr_assert_eq(k8s_queue_failures(q, "ml/x"), 0, "success forgets the backoff");
    pthread_mutex_lock(&rc.lock);
    cr_assert_eq(rc.n_told, 2, "the hook hears of each failure, once");
    cr_assert_eq(rc.told[0], 0, "before the first retry is counted");
    cr_assert_eq(rc.told[1], 1);
    cr_assert_str_eq(rc.told_error, "the API server is away");
    pthread_mutex_unlock(&rc.lock);
}

Test(k8s_manager, requeue_after_comes_back_after_the_delay)
{
    rc.answer = K8S_REQUEUE_AFTER;
    rc.answer_times = 1;
    k8s_queue_add(q, "ml/x");
    cr_assert(called(2));
}

Test(k8s_manager, stop_joins_every_worker)
{
    k8s_manager_stop(&m);
    cr_assert_eq(m.n, 0);
    k8s_queue_add(q, "ml/x"); /* ignored after the shutdown */
    usleep(20000);
    cr_assert_eq(calls(), 0);
}
