/* op_plan, the capture reconciler's pure step: every phase, every
 * transition and every failure class of DESIGN §4.2/§4.3, from an input
 * built in memory (tests/fixtures/unit/op_plan/world.json) — no server. */
#include <criterion/criterion.h>
#include <string.h>

#include "k8s_time.h"
#include "op_plan.h"
#include "op_pod.h"
#include "op_proto.h"
#include "op_status.h"
#include "test_support.h"

#define NOW (1764562630LL * K8S_NSEC_PER_SEC) /* 2025-12-01T04:17:10Z */

static json_t *world;
static struct op_config cfg;
static struct op_stores st;
static struct op_plan p;
static struct op_targets snap; /* the last targets resolved for a plan */
static bool has_snap;

static void setup(void)
{
    world = ts_load_json("unit/op_plan/world.json");
    op_config_init(&cfg);
    st = (struct op_stores){.pods = k8s_store_new()};
    k8s_store_set_transform(st.pods, op_pod_pack);
    k8s_store_replace_new(st.pods, json_deep_copy(json_object_get(world, "pods")));
    memset(&p, 0, sizeof(p));
}

static void teardown(void)
{
    op_plan_done(&p);
    if (has_snap)
        op_targets_done(&snap);
    k8s_store_free(st.pods);
    json_decref(world);
}

TestSuite(op_plan, .init = setup, .fini = teardown);

/* The fixture's resource with status (stolen; NULL: none). */
static json_t *resource(json_t *status)
{
    json_t *obj = json_deep_copy(json_object_get(world, "resource"));
    if (status)
        json_object_set_new(obj, "status", status);
    return obj;
}

static struct op_plan_in input(const json_t *obj)
{
    return (struct op_plan_in){.obj = obj, .cfg = &cfg, .now_ns = NOW};
}

/* The plan for in, as op_capture reaches it: when it asks for the
 * targets, resolve them from the test's caches and decide again. */
static void decide(struct op_plan_in *in)
{
    op_plan_done(&p);
    in->targets = NULL;
    op_plan_decide(in, &p);
    if (!op_plan_has(&p, OP_FX_RESOLVE))
        return;
    if (has_snap)
        op_targets_done(&snap);
    cr_assert_eq(op_targets_resolve(&p.spec, &st, &snap), 0);
    has_snap = true;
    in->targets = &snap;
    op_plan_done(&p);
    op_plan_decide(in, &p);
}

/* The plan's effects, named and joined with spaces. */
static const char *effects(void)
{
    static const char *const names[] = {
        [OP_FX_CANCEL] = "CANCEL",   [OP_FX_FORGET] = "FORGET",   [OP_FX_RESOLVE] = "RESOLVE",
        [OP_FX_CONFIRM] = "CONFIRM", [OP_FX_CLAIM] = "CLAIM",     [OP_FX_WRITE] = "WRITE",
        [OP_FX_EVENT] = "EVENT",     [OP_FX_RELEASE] = "RELEASE", [OP_FX_SUBMIT] = "SUBMIT",
        [OP_FX_AGAIN] = "AGAIN",     [OP_FX_REQUEUE] = "REQUEUE", [OP_FX_RETRY] = "RETRY"};
    static char out[200];
    out[0] = '\0';
    for (size_t i = 0; i < p.n_fx; i++)
        strcat(strcat(out, i ? " " : ""), names[p.fx[i]]);
    return out;
}

#define expect_fx(list) cr_assert_str_eq(effects(), list)

static const char *field(const json_t *status, const char *k)
{
    return json_string_value(json_object_get(status, k));
}

static const json_t *condition(const json_t *status, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "type")), type))
            return c;
    }
    return NULL;
}

/* A Running status as a dispatch of attempt `attempts` wrote it. */
static json_t *running(int attempts)
{
    return json_pack("{s:s, s:s, s:s, s:i, s:[{s:s, s:s}, {s:s, s:s}]}", "phase", "Running",
                     "message", "capturing 2 hosts", "sessionId", "2025_12_01_04_17_10", "attempts",
                     attempts, "hosts", "pod", "p-0", "phase", "Running", "pod", "p-1", "phase",
                     "Running");
}

static char *pods2[] = {"ml/p-0", "ml/p-1"};
static char *files2[] = {"gs://bucket/runs/r1/plugins/profile/2025_12_01_04_17_10/p-0.xplane.pb",
                         "gs://bucket/runs/r1/plugins/profile/2025_12_01_04_17_10/p-1.xplane.pb"};

/* Our record of a batch whose results are in. */
static struct op_run_view finished(const struct op_host_result *results)
{
    return (struct op_run_view){OP_RUN_FINISHED,
                                "uid-1",
                                results,
                                pods2,
                                files2,
                                2,
                                1,
                                "2025_12_01_04_17_10",
                                "gs://bucket/runs/r1/plugins/profile/2025_12_01_04_17_10"};
}

/* ---------- (new) → Pending ---------- */

Test(op_plan, new_resource_is_validated_into_pending_then_goes_on)
{
    json_t *obj = resource(NULL);
    struct op_plan_in in = input(obj);
    decide(&in);
    cr_assert_not_null(p.status);
    cr_assert_str_eq(field(p.status, "phase"), "Pending");
    cr_assert_str_eq(field(p.status, "message"), "validated; resolving the target pods");
    cr_assert_str_eq(field(condition(p.status, "Valid"), "status"), "True");
    expect_fx("WRITE EVENT AGAIN"); /* goes on from the written Pending at once */
    cr_assert_str_eq(p.event.reason, "Pending");
    json_decref(obj);
}

Test(op_plan, invalid_spec_fails_at_once_naming_the_field)
{
    json_t *obj = resource(NULL);
    json_object_set_new(json_object_get(json_object_get(obj, "spec"), "triggerCapture"),
                        "capturePort", json_integer(0));
    struct op_plan_in in = input(obj);
    decide(&in);
    cr_assert_str_eq(field(p.status, "phase"), "Failed");
    cr_assert(strstr(field(p.status, "message"), "capturePort"), "%s", field(p.status, "message"));
    cr_assert_str_eq(field(condition(p.status, "Valid"), "status"), "False");
    cr_assert_eq(p.event.outcome, OP_OUT_INVALID);
    cr_assert_str_eq(p.event.reason, "InvalidSpec");
    cr_assert_null(p.dispatch);
    expect_fx("WRITE EVENT RELEASE");
    json_decref(obj);
}

Test(op_plan, capture_longer_than_the_sidecar_timeout_fails_with_both_values)
{
    json_t *obj = resource(NULL);
    json_object_set_new(json_object_get(json_object_get(obj, "spec"), "triggerCapture"),
                        "durationSeconds", json_integer(600));
    struct op_plan_in in = input(obj); /* --sidecar-timeout defaults to 5m */
    decide(&in);
    const char *msg = field(p.status, "message");
    cr_assert_str_eq(field(p.status, "phase"), "Failed");
    cr_assert(strstr(msg, "durationSeconds") && strstr(msg, "600s"), "%s", msg);
    cr_assert(strstr(msg, "--sidecar-timeout") && strstr(msg, "5m"), "%s", msg);
    cr_assert_eq(p.event.outcome, OP_OUT_INVALID);
    json_decref(obj);
}

/* ---------- Pending → Running ---------- */

Test(op_plan, pending_with_ready_pods_claims_them_then_writes_running_and_sends)
{
    json_t *obj = resource(json_pack("{s:s, s:s}", "phase", "Pending", "message", "validated"));
    struct op_plan_in in = input(obj);
    decide(&in);
    expect_fx("CLAIM WRITE SUBMIT EVENT");
    const struct op_plan_dispatch *d = p.dispatch;
    cr_assert_not_null(d);
    cr_assert_eq(d->n, 2);
    cr_assert_str_eq(d->pods[0], "ml/p-0");
    cr_assert_str_eq(d->pods[1], "ml/p-1");
    int64_t delay = op_start_delay_ms(2);
    cr_assert_eq(d->batch.start_timestamp_ns, (uint64_t)(NOW + delay * K8S_NSEC_PER_MSEC));
    cr_assert_str_eq(d->session, "2025_12_01_04_17_10", "the session is the start, in UTC");
    cr_assert_str_eq(d->batch.session_id, d->session);
    cr_assert_str_eq(d->batch.repository_root, "gs://bucket/runs/r1/plugins/profile");
    cr_assert_eq(d->batch.deadline_ms, 60000 + delay, "max(60 s, 2 x 10 s) + start delay");
    cr_assert_eq(d->batch.duration_ms, 10000);
    cr_assert_eq(d->batch.port, 8471);
    cr_assert_eq(d->batch.levels.host, 2, "jax.profiler's own client's levels");
    cr_assert_eq(d->batch.levels.device, 1);
    cr_assert_eq(d->batch.levels.python, 1);
    cr_assert_str_eq(d->targets[1].host_name, "p-1", "named after the pod (the default)");
    cr_assert_str_eq(d->targets[1].ip, "10.0.0.11");
    cr_assert_str_eq(d->files[0], files2[0]);
    cr_assert_eq(d->attempt, 1);
    cr_assert_not(d->resumed);
    /* the status written before any RPC: the checkpoint */
    cr_assert_str_eq(field(p.status, "phase"), "Running");
    cr_assert_str_eq(field(p.status, "sessionId"), "2025_12_01_04_17_10");
    cr_assert_eq(json_integer_value(json_object_get(p.status, "attempts")), 1);
    cr_assert_eq(json_array_size(json_object_get(p.status, "hosts")), 2);
    cr_assert_not_null(field(p.status, "startTime"));
    cr_assert_str_eq(p.event.reason, "Started");
    json_decref(obj);
}

Test(op_plan, pending_asks_for_its_targets_before_deciding)
{
    json_t *obj = resource(json_pack("{s:s, s:s}", "phase", "Pending", "message", "validated"));
    struct op_plan_in in = input(obj);
    op_plan_decide(&in, &p); /* no snapshot yet: the planner reads no cache */
    expect_fx("RESOLVE");
    cr_assert_null(p.status);
    cr_assert_null(p.dispatch);
    cr_assert(p.has_spec, "the spec whose targets to resolve");
    cr_assert_str_eq(p.spec.pod_namespace, "ml");
    json_decref(obj);
}

/* A capture of some of a workload's hosts says how many of how many. */
Test(op_plan, a_choice_of_hosts_says_how_many_of_how_many)
{
    struct op_target v[2] = {{"p-0", "10.0.0.1", "p-0"}, {"p-1", "10.0.0.2", "p-1"}};
    struct op_targets t = {.state = OP_TARGETS_READY, .v = v, .n = 2, .of = 16};
    json_t *obj = resource(json_pack("{s:s}", "phase", "Pending"));
    struct op_plan_in in = input(obj);
    in.targets = &t;
    op_plan_decide(&in, &p);
    cr_assert(strstr(field(p.status, "message"), "capturing 2 of 16 hosts for 10s"), "%s",
              field(p.status, "message"));
    cr_assert(strstr(p.event.msg, "capturing 2 of 16 hosts, session"), "%s", p.event.msg);
    cr_assert_eq(p.dispatch->of, 16, "kept for the outcome's message");
    json_decref(obj);
}

/* Without the host-name override each host is named "<ip>:<port>" as
 * xprof's own client names it, and its file after that, ':' as '_'. */
Test(op_plan, host_names_and_their_files_without_the_override)
{
    cfg.disable_hostname_override = true;
    struct op_target v[2] = {{"p-0", "10.0.0.1", "p-0"}, {"p-1", "fd00::1", "p-1"}};
    struct op_targets t = {.state = OP_TARGETS_READY, .v = v, .n = 2};
    json_t *obj = resource(json_pack("{s:s}", "phase", "Pending"));
    struct op_plan_in in = input(obj);
    in.targets = &t;
    op_plan_decide(&in, &p);
    const struct op_plan_dispatch *d = p.dispatch;
    cr_assert_not_null(d);
    cr_assert_str_eq(d->targets[0].host_name, "10.0.0.1:8471");
    cr_assert_str_eq(d->targets[1].host_name, "[fd00::1]:8471");
    const char *dir = "gs://bucket/runs/r1/plugins/profile/2025_12_01_04_17_10/";
    cr_assert(!strncmp(d->files[0], dir, strlen(dir)), "%s", d->files[0]);
    cr_assert_str_eq(d->files[0] + strlen(dir), "10.0.0.1_8471.xplane.pb");
    cr_assert_str_eq(d->files[1] + strlen(dir), "[fd00__1]_8471.xplane.pb");
    json_decref(obj);
}

/* spec.triggerCapture.options: the tracer levels travel in the batch, and
 * delayMs moves the common start (and the deadline) further ahead. */
Test(op_plan, options_set_the_levels_and_a_later_start)
{
    json_t *obj = resource(json_pack("{s:s}", "phase", "Pending"));
    json_object_set_new(json_object_get(json_object_get(obj, "spec"), "triggerCapture"), "options",
                        json_pack("{s:i, s:i, s:i}", "hostTracerLevel", 3, "pythonTracerLevel", 0,
                                  "delayMs", 30000));
    struct op_plan_in in = input(obj);
    decide(&in);
    const struct op_batch_spec *b = &p.dispatch->batch;
    cr_assert_eq(b->levels.host, 3);
    cr_assert_eq(b->levels.device, 1, "left at its default");
    cr_assert_eq(b->levels.python, 0);
    cr_assert_eq(b->start_timestamp_ns, (uint64_t)(NOW + 30 * K8S_NSEC_PER_SEC));
    cr_assert_eq(b->deadline_ms, 60000 + 30000, "max(60 s, 2 x 10 s) + the delay");
    cr_assert_str_eq(p.dispatch->session, "2025_12_01_04_17_40", "the session is the start");
    json_decref(obj);
}

Test(op_plan, deadline_is_capped_by_the_sidecar_timeout)
{
    cfg.sidecar_timeout_ns = 30 * K8S_NSEC_PER_SEC;
    json_t *obj = resource(json_pack("{s:s}", "phase", "Pending"));
    struct op_plan_in in = input(obj);
    decide(&in);
    cr_assert_eq(p.dispatch->batch.deadline_ms, 30000);
    json_decref(obj);
}

Test(op_plan, busy_pod_keeps_a_new_capture_pending_naming_the_holder)
{
    json_t *obj = resource(json_pack("{s:s, s:s}", "phase", "Pending", "message", "validated"));
    struct op_plan_in in = input(obj);
    in.busy = "pod ml/p-0 is busy with capture ml/other";
    decide(&in);
    cr_assert_null(p.dispatch);
    cr_assert_str_eq(field(p.status, "phase"), "Pending");
    cr_assert_str_eq(field(p.status, "message"), in.busy);
    expect_fx("WRITE REQUEUE"); /* already Pending: no second Pending event */
    cr_assert_eq(p.after_ns, OP_BUSY_RECHECK_NS);
    json_decref(obj);
}

Test(op_plan, pending_that_says_so_already_writes_nothing)
{
    const char *busy = "pod ml/p-0 is busy with capture ml/other";
    json_t *obj = resource(json_pack("{s:s, s:s}", "phase", "Pending", "message", busy));
    struct op_plan_in in = input(obj);
    in.busy = busy;
    decide(&in);
    cr_assert_null(p.status);
    expect_fx("REQUEUE");
    json_decref(obj);
}

Test(op_plan, pods_not_ready_wait_in_pending_naming_the_pod)
{
    k8s_store_put_new(st.pods, json_deep_copy(json_object_get(world, "pod_pending")));
    json_t *obj = resource(json_pack("{s:s}", "phase", "Pending"));
    struct op_plan_in in = input(obj);
    decide(&in);
    cr_assert_str_eq(field(p.status, "phase"), "Pending");
    cr_assert(strstr(field(p.status, "message"), "p-1"), "%s", field(p.status, "message"));
    cr_assert_str_eq(field(condition(p.status, "TargetsReady"), "status"), "False");
    expect_fx("WRITE REQUEUE");
    cr_assert_eq(p.after_ns, OP_WAIT_RECHECK_NS);
    json_decref(obj);
}

Test(op_plan, pods_not_ready_for_the_timeout_fail_the_capture)
{
    k8s_store_put_new(st.pods, json_deep_copy(json_object_get(world, "pod_pending")));
    json_t *status = json_pack("{s:s}", "phase", "Pending");
    op_condition_set(status, "TargetsReady", "False", "Waiting", "p-1", 1,
                     (time_t)(NOW / K8S_NSEC_PER_SEC) - 60);
    json_t *obj = resource(status);
    struct op_plan_in in = input(obj);
    decide(&in);
    cr_assert_str_eq(field(p.status, "phase"), "Failed");
    cr_assert(strstr(field(p.status, "message"), "not ready after 60s"), "%s",
              field(p.status, "message"));
    cr_assert_str_eq(p.event.reason, "TargetsNotReady");
    cr_assert_eq(p.event.outcome, OP_OUT_FAILED);
    expect_fx("WRITE EVENT RELEASE");
    json_decref(obj);
}

Test(op_plan, missing_pod_is_confirmed_with_the_api_server_before_failing)
{
    json_t *gone = json_pack("{s:{s:s, s:s}}", "metadata", "name", "p-1", "namespace", "ml");
    k8s_store_remove(st.pods, gone);
    json_decref(gone);
    json_t *obj = resource(json_pack("{s:s}", "phase", "Pending"));
    struct op_plan_in in = input(obj);
    decide(&in);
    expect_fx("CONFIRM");
    cr_assert_null(p.status);
    cr_assert_eq(p.n_confirm, 1);
    cr_assert(strstr(p.confirm[0], "/pods/p-1"), "%s", p.confirm[0]);
    in.absent = OP_ABSENT_FOUND; /* the cache lags a creation */
    decide(&in);
    cr_assert_null(p.status);
    expect_fx("REQUEUE");
    cr_assert_eq(p.after_ns, OP_CACHE_RECHECK_NS);
    in.absent = OP_ABSENT_CONFIRMED;
    decide(&in);
    cr_assert_str_eq(field(p.status, "phase"), "Failed");
    cr_assert(strstr(field(p.status, "message"), "p-1"));
    cr_assert_str_eq(p.event.reason, "TargetsNotFound");
    json_decref(obj);
}

/* ---------- Running ---------- */

Test(op_plan, running_with_rpcs_in_flight_waits_for_them)
{
    json_t *obj = resource(running(1));
    struct op_plan_in in = input(obj);
    in.run = (struct op_run_view){.state = OP_RUN_LIVE, .uid = "uid-1"};
    decide(&in);
    cr_assert_null(p.status);
    cr_assert_null(p.dispatch);
    expect_fx("");
    json_decref(obj);
}

Test(op_plan, every_host_ok_succeeds_with_the_output_location)
{
    json_t *status = running(1);
    json_object_set_new(status, "startTime", json_string("2025-12-01T04:16:10Z"));
    json_t *obj = resource(status);
    struct op_host_result res[2] = {{.code = OP_GRPC_OK}, {.code = OP_GRPC_OK}};
    struct op_plan_in in = input(obj);
    in.run = finished(res);
    decide(&in);
    cr_assert_str_eq(field(p.status, "phase"), "Succeeded");
    const json_t *cr = json_object_get(p.status, "captureResult");
    cr_assert_str_eq(field(cr, "status"), "Succeeded");
    cr_assert_str_eq(field(cr, "outputLocation"),
                     "gs://bucket/runs/r1/plugins/profile/2025_12_01_04_17_10");
    const json_t *h = json_array_get(json_object_get(p.status, "hosts"), 1);
    cr_assert_str_eq(field(h, "outputFile"), files2[1]);
    cr_assert_not_null(field(p.status, "completionTime"));
    expect_fx("WRITE EVENT RELEASE"); /* the metrics read the results: before the release */
    cr_assert(p.event.observe_rpcs);
    cr_assert_eq(p.event.outcome, OP_OUT_SUCCEEDED);
    cr_assert_eq(p.event.duration_ns, 60 * K8S_NSEC_PER_SEC);
    cr_assert_str_eq(p.event.reason, "Succeeded");
    json_decref(obj);
}

/* DESIGN §4.3: each final gRPC outcome of a host fails the capture with
 * the pod and its status/message in errorMessage. */
Test(op_plan, every_failure_class_fails_naming_the_pod_and_the_grpc_status)
{
    static const struct {
        int code;
        const char *message, *expect;
    } classes[] = {
        {OP_GRPC_INTERNAL, "Another profiling session active.",
         "pod p-1: INTERNAL: Another profiling session active."},
        {OP_GRPC_CANCELLED, "cancelled: the resource was deleted", "pod p-1: CANCELLED"},
        {OP_GRPC_DEADLINE_EXCEEDED, "", "pod p-1: DEADLINE_EXCEEDED"},
        {OP_GRPC_UNAVAILABLE, "connection refused", "pod p-1: UNAVAILABLE: connection refused"},
        {OP_GRPC_UNIMPLEMENTED, "", "pod p-1: UNIMPLEMENTED"},
        {OP_GRPC_INVALID_ARGUMENT, "bad request", "pod p-1: INVALID_ARGUMENT: bad request"},
    };
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        json_t *obj = resource(running(1));
        struct op_host_result res[2] = {{.code = OP_GRPC_OK}, {.code = classes[i].code}};
        snprintf(res[1].message, sizeof(res[1].message), "%s", classes[i].message);
        struct op_plan_in in = input(obj);
        in.run = finished(res);
        decide(&in);
        cr_assert_str_eq(field(p.status, "phase"), "Failed");
        cr_assert_str_eq(field(p.status, "message"), "1 of 2 hosts failed");
        const char *em = field(json_object_get(p.status, "captureResult"), "errorMessage");
        cr_assert(strstr(em, classes[i].expect), "%s in %s", classes[i].expect, em);
        cr_assert_null(strstr(em, "p-0"), "a host that succeeded is not named");
        const json_t *h = json_object_get(p.status, "hosts");
        cr_assert_str_eq(field(json_array_get(h, 0), "phase"), "Succeeded");
        cr_assert_str_eq(field(json_array_get(h, 1), "phase"), "Failed");
        cr_assert_eq(p.event.outcome, OP_OUT_FAILED);
        cr_assert_str_eq(p.event.type, "Warning");
        json_decref(obj);
    }
}

Test(op_plan, shutdown_interruption_stays_running_for_the_next_leader)
{
    json_t *obj = resource(running(1));
    struct op_host_result res[2] = {{.code = OP_GRPC_CANCELLED}, {.code = OP_GRPC_CANCELLED}};
    struct op_plan_in in = input(obj);
    in.run = finished(res);
    in.run.state = OP_RUN_INTERRUPTED;
    decide(&in);
    cr_assert_str_eq(field(p.status, "phase"), "Running");
    cr_assert(strstr(field(p.status, "message"), "interrupted"));
    cr_assert_str_eq(field(json_array_get(json_object_get(p.status, "hosts"), 0), "phase"),
                     "Interrupted");
    cr_assert_eq(p.event.outcome, OP_OUT_INTERRUPTED);
    expect_fx("WRITE EVENT RELEASE");
    json_decref(obj);
}

/* ---------- restart: Running in status, nothing in flight here ---------- */

Test(op_plan, running_without_rpcs_here_is_resumed_with_the_same_session)
{
    json_t *obj = resource(running(1));
    struct op_plan_in in = input(obj);
    in.now_ns = NOW + 3600 * K8S_NSEC_PER_SEC; /* an hour later */
    decide(&in);
    expect_fx("CLAIM WRITE SUBMIT EVENT");
    cr_assert_str_eq(p.dispatch->session, "2025_12_01_04_17_10");
    cr_assert_eq(p.dispatch->attempt, 2);
    cr_assert(p.dispatch->resumed);
    cr_assert_eq(json_integer_value(json_object_get(p.status, "attempts")), 2);
    cr_assert_str_eq(p.event.reason, "Resumed");
    json_decref(obj);
}

Test(op_plan, resume_finding_the_pods_busy_looks_again_quietly)
{
    json_t *obj = resource(running(1));
    struct op_plan_in in = input(obj);
    in.busy = "pod ml/p-0 is busy with capture ml/other";
    decide(&in);
    cr_assert_null(p.status, "it stays Running as written");
    expect_fx("REQUEUE");
    cr_assert_eq(p.after_ns, OP_BUSY_RECHECK_NS);
    json_decref(obj);
}

Test(op_plan, interrupted_more_than_the_retries_allow_fails_with_its_history)
{
    json_t *obj = resource(running(4)); /* --capture-max-retries 3 */
    struct op_plan_in in = input(obj);
    decide(&in);
    const char *msg = field(p.status, "message");
    cr_assert_str_eq(field(p.status, "phase"), "Failed");
    cr_assert(strstr(msg, "interrupted 4 times") && strstr(msg, "capturing 2 hosts"), "%s", msg);
    cr_assert_str_eq(p.event.reason, "Interrupted");
    cr_assert_null(p.dispatch);
    expect_fx("WRITE EVENT RELEASE");
    json_decref(obj);
}

Test(op_plan, resume_without_ready_pods_fails)
{
    k8s_store_put_new(st.pods, json_deep_copy(json_object_get(world, "pod_pending")));
    json_t *obj = resource(running(1));
    struct op_plan_in in = input(obj);
    decide(&in);
    cr_assert_str_eq(field(p.status, "phase"), "Failed");
    cr_assert(strstr(field(p.status, "message"), "cannot resume"));
    json_decref(obj);
}

/* ---------- terminal, deletion, shutdown ---------- */

Test(op_plan, terminal_resources_are_not_rerun)
{
    const char *terminal[] = {"Succeeded", "Failed"};
    for (int i = 0; i < 2; i++) {
        json_t *obj = resource(json_pack("{s:s}", "phase", terminal[i]));
        struct op_plan_in in = input(obj);
        in.run = (struct op_run_view){.state = OP_RUN_NONE, .uid = "uid-1"};
        decide(&in);
        cr_assert_null(p.status);
        cr_assert_null(p.dispatch);
        expect_fx("FORGET");            /* the record of a finished capture is dropped */
        in.run.state = OP_RUN_FINISHED; /* its own results: written already */
        decide(&in);
        cr_assert_null(p.status);
        expect_fx("");
        json_decref(obj);
    }
}

Test(op_plan, deleting_a_resource_cancels_its_rpcs)
{
    struct op_plan_in in = input(NULL);
    in.run = (struct op_run_view){.state = OP_RUN_LIVE, .uid = "uid-1"};
    decide(&in);
    expect_fx("CANCEL");
    cr_assert_str_eq(p.cancel_reason, "cancelled: the resource was deleted");
    cr_assert_null(p.status);
    json_t *obj = resource(running(1));
    json_object_set_new(json_object_get(obj, "metadata"), "deletionTimestamp",
                        json_string("2025-12-01T04:20:00Z"));
    in.obj = obj;
    decide(&in);
    expect_fx("CANCEL"); /* being deleted counts as gone */
    cr_assert_null(p.status);
    in.run = (struct op_run_view){0};
    decide(&in);
    expect_fx(""); /* nothing of ours to drop */
    json_decref(obj);
}

Test(op_plan, a_recreated_resource_drops_the_old_record_and_starts_anew)
{
    json_t *obj = resource(NULL);
    struct op_plan_in in = input(obj);
    in.run = (struct op_run_view){.state = OP_RUN_LIVE, .uid = "uid-0"};
    decide(&in);
    expect_fx("CANCEL WRITE EVENT AGAIN"); /* the new one is not taken as live */
    cr_assert_str_eq(field(p.status, "phase"), "Pending");
    json_decref(obj);
}

Test(op_plan, shutting_down_dispatches_nothing_new)
{
    json_t *obj = resource(json_pack("{s:s}", "phase", "Pending"));
    struct op_plan_in in = input(obj);
    in.stopping = true;
    decide(&in);
    cr_assert_null(p.status);
    cr_assert_null(p.dispatch);
    expect_fx("");
    json_decref(obj);
}

Test(op_plan, same_input_same_plan)
{
    json_t *obj = resource(json_pack("{s:s}", "phase", "Pending"));
    struct op_plan_in in = input(obj);
    decide(&in);
    json_t *first = json_incref(p.status);
    decide(&in);
    cr_assert(json_equal(first, p.status));
    json_decref(first);
    json_decref(obj);
}

Test(op_plan, session_id_is_the_utc_start)
{
    char id[20];
    op_session_id(0, id);
    cr_assert_str_eq(id, "1970_01_01_00_00_00");
}
