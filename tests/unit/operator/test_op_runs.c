/* op_runs: the record per resource — claims all-or-nothing, the batch's
 * life (live → finished, queued again), forgetting a live record, stale
 * caches read through, adoption, and stopping. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_time.h"
#include "op_runs.h"

/* A relay that keeps what it was given; the test ends the batches. */
static struct {
    op_batch_done_fn done;
    void *done_ud;
    uint64_t next_id, last_id;
    int submits, cancels, fail_submit;
    char reason[128];
} relay;

static int submit(void *ud, const struct op_batch_spec *spec, op_batch_done_fn done, void *done_ud,
                  uint64_t *ret_id)
{
    (void)ud, (void)spec;
    if (relay.fail_submit)
        return relay.fail_submit;
    relay.submits++;
    relay.done = done;
    relay.done_ud = done_ud;
    *ret_id = relay.last_id = ++relay.next_id;
    return 0;
}

static void cancel(void *ud, uint64_t id, const char *reason)
{
    (void)ud, (void)id;
    relay.cancels++;
    snprintf(relay.reason, sizeof(relay.reason), "%s", reason);
}

static struct k8s_queue *queue;
static struct op_runs *rs;

static void setup(void)
{
    memset(&relay, 0, sizeof(relay));
    struct k8s_queue_opts qo = {0};
    queue = k8s_queue_new(&qo);
    struct op_api api = {.submit = submit, .cancel = cancel};
    rs = op_runs_new(&api, queue);
    cr_assert_not_null(rs);
}

static void teardown(void)
{
    op_runs_abandon(rs, "test over");
    op_runs_free(rs);
    k8s_queue_free(queue);
}

TestSuite(op_runs, .init = setup, .fini = teardown);

static char **strs(const char *a, const char *b)
{
    char **v = calloc(2, sizeof(*v));
    v[0] = strdup(a);
    v[1] = b ? strdup(b) : NULL;
    return v;
}

/* A dispatch of pods a (and b) of namespace ns. */
static struct op_plan_dispatch dispatch(const char *a, const char *b, bool resumed)
{
    struct op_plan_dispatch d = {.attempt = 1, .resumed = resumed, .n = b ? 2 : 1};
    snprintf(d.session, sizeof(d.session), "2026_12_01_00_00_00");
    snprintf(d.location, sizeof(d.location), "gs://b/plugins/profile/%s", d.session);
    d.pods = strs(a, b);
    d.files = strs("f1", b ? "f2" : NULL);
    return d;
}

static void dispatch_free(struct op_plan_dispatch *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->pods[i]), free(d->files[i]);
    free(d->pods);
    free(d->files);
}

static void end_batch(int code)
{
    struct op_host_result res[2] = {{.code = code}, {.code = code}};
    relay.done(relay.done_ud, relay.last_id, res, 2);
}

Test(op_runs, a_claim_is_all_or_nothing_and_names_the_holder)
{
    struct op_plan_dispatch d1 = dispatch("ns/p0", "ns/p1", false);
    char busy[200] = "";
    cr_assert_eq(op_runs_claim(rs, "ns/a", "u1", &d1, busy, sizeof(busy)), 0);
    cr_expect_null(d1.pods, "the record took the pods");
    struct op_plan_dispatch d2 = dispatch("ns/p2", "ns/p1", false);
    cr_expect_eq(op_runs_claim(rs, "ns/b", "u2", &d2, busy, sizeof(busy)), 1);
    cr_expect_str_eq(busy, "pod p1 is busy with capture ns/a");
    cr_expect_not_null(d2.pods, "nothing taken");
    bool stopping = true;
    struct op_run_view v = op_runs_view(rs, "ns/a", &stopping);
    cr_expect_not(stopping);
    cr_expect_eq(v.state, OP_RUN_NONE);
    cr_expect_eq(v.n, 2);
    cr_expect_str_eq(v.pods[1], "ns/p1");
    cr_expect_str_eq(v.session, "2026_12_01_00_00_00");
    op_runs_release(rs, "ns/a");
    cr_expect_eq(op_runs_claim(rs, "ns/b", "u2", &d2, busy, sizeof(busy)), 0, "released");
}

Test(op_runs, a_batch_is_live_then_finished_and_queues_its_key)
{
    struct op_plan_dispatch d = dispatch("ns/p0", "ns/p1", false);
    char busy[200];
    bool stopping;
    cr_assert_eq(op_runs_claim(rs, "ns/a", "u1", &d, busy, sizeof(busy)), 0);
    cr_assert_eq(op_runs_submit(rs, "ns/a", &d), 0);
    cr_expect_eq(op_runs_view(rs, "ns/a", &stopping).state, OP_RUN_LIVE);
    cr_expect_eq(op_runs_live(rs), 1);
    end_batch(0);
    struct op_run_view v = op_runs_view(rs, "ns/a", &stopping);
    cr_expect_eq(v.state, OP_RUN_FINISHED);
    cr_expect_eq(v.results[1].code, 0);
    cr_expect_eq(v.attempt, 1);
    cr_expect_eq(op_runs_live(rs), 0);
    cr_expect_eq(k8s_queue_len(queue), 1);
    char *key = op_runs_next_finished(rs);
    cr_expect_str_eq(key, "ns/a");
    free(key);
    op_runs_drop_finished(rs, "ns/a");
    cr_expect_null(op_runs_next_finished(rs));
}

Test(op_runs, a_failed_submit_gives_up_the_pods_but_a_resumed_one_keeps_its_holds)
{
    char busy[200];
    struct op_plan_dispatch d = dispatch("ns/p0", NULL, true);
    cr_assert_eq(op_runs_claim(rs, "ns/a", "u1", &d, busy, sizeof(busy)), 0);
    relay.fail_submit = -K8S_ENOMEM;
    cr_expect_eq(op_runs_submit(rs, "ns/a", &d), -K8S_ENOMEM);
    struct op_plan_dispatch other = dispatch("ns/p0", NULL, false);
    cr_expect_eq(op_runs_claim(rs, "ns/b", "u2", &other, busy, sizeof(busy)), 1, "still held");
    op_runs_unclaim(rs, "ns/a", false);
    cr_expect_eq(op_runs_claim(rs, "ns/b", "u2", &other, busy, sizeof(busy)), 0, "given up");
}

Test(op_runs, forgetting_a_live_record_cancels_it_and_its_results_are_dropped)
{
    char busy[200];
    bool stopping;
    struct op_plan_dispatch d = dispatch("ns/p0", NULL, false);
    cr_assert_eq(op_runs_claim(rs, "ns/a", "u1", &d, busy, sizeof(busy)), 0);
    cr_assert_eq(op_runs_submit(rs, "ns/a", &d), 0);
    op_runs_forget(rs, "ns/a", "deleted");
    cr_expect_eq(relay.cancels, 1);
    cr_expect_str_eq(relay.reason, "deleted");
    cr_expect_eq(op_runs_view(rs, "ns/a", &stopping).state, OP_RUN_NONE, "a new record");
    end_batch(1);
    cr_expect_eq(k8s_queue_len(queue), 0);
    cr_expect_null(op_runs_next_finished(rs));
    struct op_plan_dispatch other = dispatch("ns/p0", NULL, false);
    cr_expect_eq(op_runs_claim(rs, "ns/b", "u2", &other, busy, sizeof(busy)), 0);
}

Test(op_runs, a_cache_older_than_our_last_write_is_stale)
{
    cr_expect_not(op_runs_stale(rs, "ns/a", "5"), "no record");
    op_runs_wrote(rs, "ns/a", "u1", "7");
    cr_expect(op_runs_stale(rs, "ns/a", "5"));
    cr_expect(op_runs_stale(rs, "ns/a", NULL));
    cr_expect_not(op_runs_stale(rs, "ns/a", "7"));
    op_runs_drop(rs, "ns/a");
    cr_expect_not(op_runs_stale(rs, "ns/a", "5"));
}

Test(op_runs, adoption_holds_the_pods_of_a_running_capture)
{
    char busy[200];
    op_runs_adopt(rs, "ns/a", "u1", strs("ns/p0", "ns/p1"), 2);
    struct op_plan_dispatch d = dispatch("ns/p1", NULL, false);
    cr_expect_eq(op_runs_claim(rs, "ns/b", "u2", &d, busy, sizeof(busy)), 1);
    cr_expect_str_eq(busy, "pod p1 is busy with capture ns/a");
    op_runs_adopt(rs, "ns/c", "u3", strs("ns/p1", NULL), 1); /* held: freed, not adopted */
    bool stopping;
    cr_expect_eq(op_runs_view(rs, "ns/c", &stopping).n, 0);
    dispatch_free(&d);
}

Test(op_runs, shutdown_interrupts_a_batch_that_cannot_end_in_time)
{
    char busy[200];
    bool stopping;
    struct op_plan_dispatch d = dispatch("ns/p0", NULL, false);
    d.expected_ns = 3600 * K8S_NSEC_PER_SEC;
    cr_assert_eq(op_runs_claim(rs, "ns/a", "u1", &d, busy, sizeof(busy)), 0);
    cr_assert_eq(op_runs_submit(rs, "ns/a", &d), 0);
    op_runs_shutdown(rs, 0, "interrupted: shutting down"); /* waits a second: no callback */
    cr_expect_eq(relay.cancels, 2, "cancelled before and after the grace");
    cr_expect_str_eq(relay.reason, "interrupted: shutting down");
    end_batch(1);
    cr_expect_eq(op_runs_view(rs, "ns/a", &stopping).state, OP_RUN_INTERRUPTED);
    cr_expect(stopping);
    cr_expect_eq(k8s_queue_len(queue), 0, "stopping: not queued again");
}
