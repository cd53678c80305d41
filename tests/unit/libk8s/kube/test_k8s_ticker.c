/* k8s_ticker: a job every period on its own thread, told whether this
 * replica leads; an at_once job also runs at the start and when leading
 * begins. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <unistd.h>

#include "k8s_time.h"
#include "k8s_ticker.h"

struct record {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int runs, leading_runs;
    int64_t hold_ns; /* a run takes this long */
    bool ended;      /* the last run returned */
};

static void job(void *ud, bool leading)
{
    struct record *r = ud;
    pthread_mutex_lock(&r->lock);
    r->ended = false;
    r->runs++;
    r->leading_runs += leading;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    if (r->hold_ns)
        usleep((useconds_t)(r->hold_ns / 1000));
    pthread_mutex_lock(&r->lock);
    r->ended = true;
    pthread_mutex_unlock(&r->lock);
}

static struct record r;

static void setup(void)
{
    r = (struct record){.runs = 0};
    pthread_mutex_init(&r.lock, NULL);
    k8s_cond_init_mono(&r.cond);
}

TestSuite(k8s_ticker, .init = setup);

/* Wait (at most 10 s, a liveness bound) until the job ran n times. */
static int wait_runs(int n)
{
    int64_t until = k8s_mono_ns() + 10 * K8S_NSEC_PER_SEC;
    struct timespec ts = {until / K8S_NSEC_PER_SEC, until % K8S_NSEC_PER_SEC};
    pthread_mutex_lock(&r.lock);
    while (r.runs < n && pthread_cond_timedwait(&r.cond, &r.lock, &ts) == 0)
        ;
    int runs = r.runs;
    pthread_mutex_unlock(&r.lock);
    return runs;
}

#define HOUR (3600 * K8S_NSEC_PER_SEC)

/* The job on a ticker of this period. */
static struct k8s_ticker *start(int64_t period_ns, bool at_once)
{
    struct k8s_ticker *t = NULL;
    struct k8s_ticker_job j = {job, &r, period_ns, at_once};
    cr_assert_eq(k8s_ticker_start(&j, &t), 0);
    return t;
}

Test(k8s_ticker, an_at_once_job_runs_at_the_start_and_when_leading_begins)
{
    struct k8s_ticker *t = start(HOUR, true);
    cr_assert_eq(wait_runs(1), 1);
    cr_expect_eq(r.leading_runs, 0, "not leading yet");
    k8s_ticker_lead(t, true);
    cr_assert_eq(wait_runs(2), 2, "leading began: a run at once, not after the hour");
    k8s_ticker_lead(t, true); /* still leading: no new run */
    k8s_ticker_lead(t, false);
    k8s_ticker_free(t);
    cr_expect_eq(r.runs, 2);
    cr_expect_eq(r.leading_runs, 1);
}

Test(k8s_ticker, a_periodic_job_waits_a_period_first_and_leading_does_not_run_it)
{
    struct k8s_ticker *t = start(HOUR, false);
    k8s_ticker_lead(t, true);
    k8s_ticker_free(t);
    cr_expect_eq(r.runs, 0);
}

Test(k8s_ticker, a_periodic_job_runs_every_period_told_whether_it_leads)
{
    struct k8s_ticker *t = start(K8S_NSEC_PER_MSEC, false);
    k8s_ticker_lead(t, true);
    pthread_mutex_lock(&r.lock);
    int before = r.runs; /* one more may have read "not leading" */
    pthread_mutex_unlock(&r.lock);
    cr_assert_geq(wait_runs(before + 2), before + 2);
    k8s_ticker_free(t);
    cr_expect_geq(r.leading_runs, 1);
}

Test(k8s_ticker, free_waits_for_the_run_in_progress)
{
    r.hold_ns = 50 * K8S_NSEC_PER_MSEC;
    struct k8s_ticker *t = start(HOUR, true);
    cr_assert_eq(wait_runs(1), 1);
    k8s_ticker_free(t);
    cr_expect(r.ended);
    k8s_ticker_free(NULL);
}

Test(k8s_ticker, a_period_that_is_not_positive_is_refused)
{
    struct k8s_ticker *t = NULL;
    struct k8s_ticker_job j = {job, &r, 0};
    cr_expect_eq(k8s_ticker_start(&j, &t), -K8S_EINVAL);
    cr_expect_null(t);
}
