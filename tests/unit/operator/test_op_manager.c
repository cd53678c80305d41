/* op_manager: workers take keys from the queue and call the reconciler;
 * a key is never reconciled by two workers at once, and the reconciler's
 * answer decides whether and when the key comes back. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "k8s_time.h"
#include "op_manager.h"

static struct {
    pthread_mutex_t lock;
    int calls, in_flight, max_in_flight;
    enum op_result answer;
    int answer_times; /* then OP_DONE */
} rc;

static enum op_result reconcile(void *ud, const char *key, int64_t *after, struct k8s_error *err)
{
    (void)ud, (void)key;
    pthread_mutex_lock(&rc.lock);
    rc.calls++;
    if (++rc.in_flight > rc.max_in_flight)
        rc.max_in_flight = rc.in_flight;
    enum op_result a = rc.answer_times > 0 ? rc.answer : OP_DONE;
    rc.answer_times--;
    pthread_mutex_unlock(&rc.lock);
    usleep(2000); /* long enough for a second worker to try the same key */
    pthread_mutex_lock(&rc.lock);
    rc.in_flight--;
    pthread_mutex_unlock(&rc.lock);
    *after = 10 * K8S_NSEC_PER_MSEC;
    if (a == OP_RETRY)
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

static struct op_queue *q;
static struct op_manager m;

static void setup(void)
{
    memset(&rc, 0, sizeof(rc));
    memset(&m, 0, sizeof(m));
    pthread_mutex_init(&rc.lock, NULL);
    struct op_queue_opts o = {.base_delay_ns = K8S_NSEC_PER_MSEC};
    q = op_queue_new(&o);
    struct op_reconciler r = {reconcile, NULL};
    cr_assert_eq(op_manager_start(&m, q, &r, 4), 4);
}

static void teardown(void)
{
    op_manager_stop(&m);
    op_queue_free(q);
}

TestSuite(op_manager, .init = setup, .fini = teardown, .timeout = 30);

Test(op_manager, one_key_is_never_reconciled_twice_at_once)
{
    for (int i = 0; i < 200; i++) {
        op_queue_add(q, "ml/x");
        usleep(100);
    }
    cr_assert(called(2));
    usleep(50000);
    cr_assert_eq(max_in_flight(), 1, "four workers, one key");
}

Test(op_manager, different_keys_run_side_by_side)
{
    const char *keys[] = {"ml/a", "ml/b", "ml/c", "ml/d"};
    for (int i = 0; i < 4; i++)
        op_queue_add(q, keys[i]);
    cr_assert(called(4));
    cr_assert_gt(max_in_flight(), 1);
}

Test(op_manager, a_failure_comes_back_rate_limited)
{
    rc.answer = OP_RETRY;
    rc.answer_times = 2;
    op_queue_add(q, "ml/x");
    cr_assert(called(3), "two failures, then the retry that succeeds");
    usleep(50000);
    cr_assert_eq(calls(), 3, "done: not again");
    cr_assert_eq(op_queue_failures(q, "ml/x"), 0, "success forgets the backoff");
}

Test(op_manager, requeue_after_comes_back_after_the_delay)
{
    rc.answer = OP_REQUEUE_AFTER;
    rc.answer_times = 1;
    op_queue_add(q, "ml/x");
    cr_assert(called(2));
}

Test(op_manager, stop_joins_every_worker)
{
    op_manager_stop(&m);
    cr_assert_eq(m.n, 0);
    op_queue_add(q, "ml/x"); /* ignored after the shutdown */
    usleep(20000);
    cr_assert_eq(calls(), 0);
}
