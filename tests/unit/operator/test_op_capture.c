/* op_capture_trim: the connections cache keeps of a terminal resource
 * (never reconciled again) only its identity and phase, and everything
 * else untouched. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "op_capture.h"

static json_t *conn(const char *phase)
{
    return json_pack("{s:{s:s, s:s}, s:{s:i}, s:{s:s, s:s, s:[{s:s}, {s:s}], s:i}}", "metadata",
                     "name", "c", "namespace", "ml", "spec", "gen", 1, "status", "phase", phase,
                     "sessionId", "2026_11_30_04_17_10", "hosts", "pod", "a", "pod", "b",
                     "attempts", 1);
}

Test(capture_trim, terminal_resources_keep_their_identity_and_phase)
{
    const char *terminal[] = {"Succeeded", "Failed"};
    for (int i = 0; i < 2; i++) {
        json_t *obj = conn(terminal[i]);
        json_t *kept = op_capture_trim(obj);
        cr_assert(kept && kept != obj);
        json_t *want = json_pack("{s:{s:s, s:s}, s:{s:s}}", "metadata", "name", "c", "namespace",
                                 "ml", "status", "phase", terminal[i]);
        cr_assert(json_equal(kept, want), "only the identity and the phase are kept");
        json_decref(want);
        /* the object it was given is untouched */
        cr_assert_eq(json_array_size(json_object_get(json_object_get(obj, "status"), "hosts")), 2);
        json_decref(kept);
        json_decref(obj);
    }
}

/* A finished parent keeps its schedule and its generation too: a Failed
 * one whose spec changes is validated again (op_parent_revived). */
Test(capture_trim, a_finished_parent_keeps_its_schedule_and_generation)
{
    json_t *obj = json_pack("{s:{s:s, s:s, s:i}, s:{s:s, s:{}}, s:{s:s, s:s, s:i}}", "metadata",
                            "name", "p", "namespace", "ml", "generation", 2, "spec", "schedule",
                            "@hourly", "triggerCapture", "status", "phase", "Failed", "message",
                            "bad", "observedGeneration", 1);
    json_t *kept = op_capture_trim(obj);
    json_t *want = json_pack("{s:{s:s, s:s, s:i}, s:{s:s}, s:{s:s, s:i}}", "metadata", "name", "p",
                             "namespace", "ml", "generation", 2, "spec", "schedule", "@hourly",
                             "status", "phase", "Failed", "observedGeneration", 1);
    char *got = json_dumps(kept, JSON_COMPACT);
    cr_expect(json_equal(kept, want), "kept %s", got);
    free(got);
    json_decref(want);
    json_decref(kept);
    json_decref(obj);
}

Test(capture_trim, running_resources_are_kept_whole)
{
    json_t *obj = conn("Running");
    json_t *kept = op_capture_trim(obj);
    cr_assert_eq(kept, obj); /* the same object, a new reference */
    json_t *back = op_capture_unpack(kept);
    cr_assert_eq(back, obj, "nothing to unpack");
    json_decref(back);
    json_decref(kept);
    json_decref(obj);
}

Test(capture_trim, new_and_pending_resources_are_packed_and_unpack_whole)
{
    json_t *pending = conn("Pending");
    json_object_set_new(json_object_get(pending, "spec"), "triggerCapture",
                        json_pack("{s:s, s:i}", "podNamespace", "other", "capturePort", 8471));
    json_t *fresh =
        json_pack("{s:{s:s, s:s, s:s}, s:{s:{s:s}}}", "metadata", "name", "new", "namespace", "ml",
                  "resourceVersion", "7", "spec", "triggerCapture", "podName", "a,b");
    json_t *objs[] = {pending, fresh};
    for (int i = 0; i < 2; i++) {
        json_t *kept = op_capture_trim(objs[i]);
        cr_assert(kept && kept != objs[i]);
        /* what the scanners read is there without unpacking */
        cr_assert(json_equal(json_object_get(json_object_get(kept, "metadata"), "name"),
                             json_object_get(json_object_get(objs[i], "metadata"), "name")));
        json_t *status = i ? json_object() : json_pack("{s:s}", "phase", "Pending");
        cr_assert(json_equal(json_object_get(kept, "status"), status));
        json_decref(status);
        json_t *back = op_capture_unpack(kept);
        cr_assert(json_equal(back, objs[i]), "unpacked whole");
        json_decref(back);
        json_decref(kept);
        json_decref(objs[i]);
    }
    json_t *pns = json_pack("{s:{s:s}, s:{s:{s:s}}}", "metadata", "name", "x", "spec",
                            "triggerCapture", "podNamespace", "team");
    json_t *kept = op_capture_trim(pns);
    cr_assert_str_eq(
        json_string_value(json_object_get(
            json_object_get(json_object_get(kept, "spec"), "triggerCapture"), "podNamespace")),
        "team", "the target namespace op_map reads");
    json_decref(kept);
    json_decref(pns);
}

/* ---------- the reconciler against an in-memory world ----------
 *
 * op_capture with a fake op_api (tests/fixtures/unit/op_capture/world.json):
 * an API server of a few objects with resourceVersions and 409s, Events
 * recorded, and profilers that count a Profile sent to a pod while another
 * is in flight there (an overlap, DESIGN §4.2). No server, no sockets. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_buf.h"
#include "k8s_jget.h"
#include "k8s_time.h"
#include "op_pod.h"
#include "op_proto.h"
#include "op_status.h"
#include "test_support.h"

#define NOW   (1764562630LL * K8S_NSEC_PER_SEC) /* session 2025_12_01_04_17_10 */
#define PODS  4
#define BATCH 64

struct fbatch {
    uint64_t id;
    char pods[PODS][64];
    size_t n;
    op_batch_done_fn done;
    void *ud;
    bool over;
    char session[20];
};

static struct {
    pthread_mutex_t lock;
    json_t *world, *objs, *events; /* objs: "ns/name" -> the API server's object */
    int rv, conflicts, submit_failures, overlaps;
    int running_failures; /* writes of Running that fail (-K8S_EIO) */
    int created, removed; /* children of schedules */
    struct fbatch b[BATCH];
    size_t nb;
    pthread_t cancellers[BATCH];
    size_t ncancel;
    struct k8s_store *conns, *pods;
    struct k8s_queue *queue;
    struct op_config cfg;
    struct k8s_metrics *metrics;
} w;

static int64_t fake_now(void)
{
    return NOW;
}

static int fake_get(void *ud, const char *ns, const char *name, json_t **ret, struct k8s_error *err)
{
    (void)ud;
    char key[300];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    pthread_mutex_lock(&w.lock);
    json_t *o = json_object_get(w.objs, key);
    *ret = o ? json_deep_copy(o) : NULL;
    pthread_mutex_unlock(&w.lock);
    return o ? 0 : k8s_error_set(err, -K8S_ENOTFOUND, "%s not found", key);
}

/* The status subresource: the object's resourceVersion must be current. */
static int fake_put(void *ud, const json_t *obj, json_t *status, json_t **ret,
                    struct k8s_error *err)
{
    (void)ud;
    char key[300];
    k8s_store_key(obj, key, sizeof(key));
    pthread_mutex_lock(&w.lock);
    json_t *cur = json_object_get(w.objs, key);
    const char *rv = k8s_jstr2(obj, "metadata", "resourceVersion");
    int r = 0;
    json_t *cached = NULL;
    const char *phase = json_string_value(json_object_get(status, "phase"));
    if (!cur) {
        r = k8s_error_set(err, -K8S_ENOTFOUND, "%s not found", key);
    } else if (w.running_failures > 0 && phase && !strcmp(phase, "Running")) {
        w.running_failures--;
        r = k8s_error_set(err, -K8S_EIO, "the API server is away");
    } else if (w.conflicts > 0 || !rv ||
               strcmp(rv, k8s_jstr2(cur, "metadata", "resourceVersion"))) {
        if (w.conflicts > 0) { /* another writer got there first */
            w.conflicts--;
            json_object_set_new(json_object_get(cur, "metadata"), "resourceVersion",
                                json_sprintf("%d", ++w.rv));
        }
        r = k8s_error_set(err, -K8S_ECONFLICT, "the object has been modified");
    } else {
        json_object_set(cur, "status", status);
        json_object_set_new(json_object_get(cur, "metadata"), "resourceVersion",
                            json_sprintf("%d", ++w.rv));
        cached = json_deep_copy(cur);
        *ret = json_deep_copy(cur);
    }
    pthread_mutex_unlock(&w.lock);
    if (cached) /* the watch, at once; outside our lock, as a watch thread would */
        k8s_store_put_new(w.conns, cached);
    json_decref(status);
    return r;
}

/* POST: the API server's object and the watch's copy, at once. */
static int fake_create(void *ud, const json_t *obj, struct k8s_error *err)
{
    (void)ud;
    char key[300];
    k8s_store_key(obj, key, sizeof(key));
    pthread_mutex_lock(&w.lock);
    int r = 0;
    json_t *made = NULL;
    if (json_object_get(w.objs, key)) {
        r = k8s_error_set(err, -K8S_ECONFLICT, "%s already exists", key);
    } else {
        made = json_deep_copy(obj);
        json_object_set_new(json_object_get(made, "metadata"), "uid", json_sprintf("uid-%s", key));
        json_object_set_new(json_object_get(made, "metadata"), "resourceVersion",
                            json_sprintf("%d", ++w.rv));
        json_object_set(w.objs, key, made);
        w.created++;
    }
    pthread_mutex_unlock(&w.lock);
    if (made)
        k8s_store_put_new(w.conns, made);
    return r;
}

static int fake_remove(void *ud, const char *ns, const char *name, struct k8s_error *err)
{
    (void)ud;
    char key[300];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    pthread_mutex_lock(&w.lock);
    json_t *o = json_incref(json_object_get(w.objs, key));
    json_object_del(w.objs, key);
    w.removed += o != NULL;
    pthread_mutex_unlock(&w.lock);
    if (o)
        k8s_store_remove(w.conns, o);
    json_decref(o);
    return o ? 0 : k8s_error_set(err, -K8S_ENOTFOUND, "%s not found", key);
}

static int fake_event(void *ud, const json_t *obj, const char *type, const char *reason,
                      const char *msg, struct k8s_error *err)
{
    (void)ud, (void)err;
    pthread_mutex_lock(&w.lock);
    json_array_append_new(w.events, json_pack("{s:s, s:s, s:s, s:s}", "object",
                                              k8s_jstr2(obj, "metadata", "name"), "type", type,
                                              "reason", reason, "message", msg));
    pthread_mutex_unlock(&w.lock);
    return 0;
}

static bool fake_absent(void *ud, const char *path)
{
    (void)ud, (void)path;
    return true;
}

static bool pod_busy(const char *pod)
{
    for (size_t i = 0; i < w.nb; i++)
        for (size_t j = 0; !w.b[i].over && j < w.b[i].n; j++)
            if (!strcmp(w.b[i].pods[j], pod))
                return true;
    return false;
}

static int fake_submit(void *ud, const struct op_batch_spec *spec, op_batch_done_fn done,
                       void *done_ud, uint64_t *ret_id)
{
    (void)ud;
    pthread_mutex_lock(&w.lock);
    if (w.submit_failures > 0 || w.nb == BATCH || spec->n > PODS) {
        w.submit_failures--;
        pthread_mutex_unlock(&w.lock);
        return -K8S_EIO;
    }
    struct fbatch *b = &w.b[w.nb];
    *b = (struct fbatch){.id = w.nb + 1, .n = spec->n, .done = done, .ud = done_ud};
    snprintf(b->session, sizeof(b->session), "%s", spec->session_id);
    for (size_t i = 0; i < spec->n; i++) {
        w.overlaps += pod_busy(spec->targets[i].host_name); /* the profiler's lock is taken */
        snprintf(b->pods[i], sizeof(b->pods[i]), "%s", spec->targets[i].host_name);
    }
    *ret_id = b->id;
    w.nb++;
    pthread_mutex_unlock(&w.lock);
    return 0;
}

/* Every host of batch id answers code (0: the live batch, if any). */
static bool deliver(uint64_t id, int code, const char *msg)
{
    pthread_mutex_lock(&w.lock);
    struct fbatch *b = NULL;
    for (size_t i = 0; i < w.nb && !b; i++)
        if (!w.b[i].over && (!id || w.b[i].id == id))
            b = &w.b[i];
    if (b)
        b->over = true;
    pthread_mutex_unlock(&w.lock);
    if (!b)
        return false;
    struct op_host_result res[PODS] = {0};
    for (size_t i = 0; i < b->n; i++) {
        res[i].code = code;
        snprintf(res[i].message, sizeof(res[i].message), "%s", msg);
    }
    b->done(b->ud, b->id, res, b->n); /* as the relay thread does, no lock of ours held */
    return true;
}

struct cancel_arg {
    uint64_t id;
    char reason[128];
};

static void *canceller(void *arg)
{
    struct cancel_arg *a = arg;
    deliver(a->id, OP_GRPC_CANCELLED, a->reason);
    free(a);
    return NULL;
}

/* The relay finishes cancelled hosts later, on its own thread. */
static void fake_cancel(void *ud, uint64_t id, const char *reason)
{
    (void)ud;
    struct cancel_arg *a = calloc(1, sizeof(*a));
    a->id = id;
    snprintf(a->reason, sizeof(a->reason), "%s", reason);
    pthread_mutex_lock(&w.lock);
    cr_assert(w.ncancel < BATCH);
    cr_assert_eq(pthread_create(&w.cancellers[w.ncancel++], NULL, canceller, a), 0);
    pthread_mutex_unlock(&w.lock);
}

static void stores(void *ud, struct op_stores *out)
{
    (void)ud;
    *out = (struct op_stores){.pods = w.pods};
}

/* A pod of the world: Running with an IP, or Pending. */
static void pod(const char *name, bool ready)
{
    json_t *p = json_deep_copy(json_object_get(w.world, ready ? "pod" : "pod_pending"));
    json_object_set_new(json_object_get(p, "metadata"), "name", json_string(name));
    if (ready)
        json_object_set_new(json_object_get(p, "status"), "podIP",
                            json_sprintf("10.0.0.%d", 10 + name[strlen(name) - 1] - '0'));
    k8s_store_put_new(w.pods, p);
}

/* A resource named name targeting pods (comma-separated), with status
 * (stolen; NULL: none), on the server and in the cache. */
static void create_with(const char *name, const char *pods, json_t *status, json_t *spec)
{
    json_t *o = json_deep_copy(json_object_get(w.world, "resource"));
    if (spec) /* stolen: fields beside triggerCapture */
        json_object_update(json_object_get(o, "spec"), spec);
    json_decref(spec);
    json_t *meta = json_object_get(o, "metadata");
    json_object_set_new(meta, "name", json_string(name));
    json_object_set_new(meta, "uid", json_sprintf("uid-%s", name));
    json_object_set_new(meta, "resourceVersion", json_sprintf("%d", ++w.rv));
    json_object_set_new(json_object_get(json_object_get(o, "spec"), "triggerCapture"), "podName",
                        json_string(pods));
    if (status)
        json_object_set_new(o, "status", status);
    pthread_mutex_lock(&w.lock);
    char key[300];
    k8s_store_key(o, key, sizeof(key));
    json_object_set(w.objs, key, o);
    pthread_mutex_unlock(&w.lock);
    k8s_store_put_new(w.conns, json_deep_copy(o)); /* the cache's own copy */
    json_decref(o);
}

static void create(const char *name, const char *pods, json_t *status)
{
    create_with(name, pods, status, NULL);
}

static void delete (const char *key)
{
    pthread_mutex_lock(&w.lock);
    json_t *o = json_incref(json_object_get(w.objs, key));
    json_object_del(w.objs, key);
    pthread_mutex_unlock(&w.lock);
    k8s_store_remove(w.conns, o);
    json_decref(o);
}

static void world_init(void)
{
    memset(&w, 0, sizeof(w));
    pthread_mutex_init(&w.lock, NULL);
    w.world = ts_load_json("unit/op_capture/world.json");
    w.objs = json_object();
    w.events = json_array();
    w.conns = k8s_store_new();
    k8s_store_set_transform(w.conns, op_capture_trim);
    w.pods = k8s_store_new();
    k8s_store_set_transform(w.pods, op_pod_pack);
    w.queue = k8s_queue_new(NULL);
    w.metrics = k8s_metrics_new();
    op_config_init(&w.cfg);
    pod("p-0", true);
    pod("p-1", true);
}

static void join_cancellers(void)
{
    pthread_mutex_lock(&w.lock);
    size_t n = w.ncancel;
    w.ncancel = 0;
    pthread_mutex_unlock(&w.lock);
    for (size_t i = 0; i < n; i++)
        pthread_join(w.cancellers[i], NULL);
}

static void world_done(void)
{
    join_cancellers();
    k8s_queue_free(w.queue);
    k8s_metrics_free(w.metrics);
    k8s_store_free(w.conns);
    k8s_store_free(w.pods);
    json_decref(w.objs);
    json_decref(w.events);
    json_decref(w.world);
    pthread_mutex_destroy(&w.lock);
}

/* A reconciler process, started as main starts it: adopt, then reconcile. */
static struct op_capture *start(void)
{
    struct op_capture_deps d = {
        .api = {fake_get, fake_put, fake_event, fake_absent, fake_submit, fake_cancel, fake_create,
                fake_remove, NULL},
        .conns = w.conns,
        .stores = stores,
        .queue = w.queue,
        .cfg = &w.cfg,
        .metrics = w.metrics,
        .now_ns = fake_now,
    };
    struct op_capture *c;
    cr_assert_eq(op_capture_new(&d, &c), 0);
    op_capture_adopt(c);
    return c;
}

/* The process ends (a crash, a leader change): its RPCs die with it. */
static void crash(struct op_capture *c)
{
    op_capture_free(c);
    join_cancellers();
}

static enum k8s_result rec(struct op_capture *c, const char *key)
{
    int64_t after;
    struct k8s_error err = {0};
    return op_capture_reconcile(c, key, &after, &err);
}

/* The server's status of key (borrowed while the object lives). */
static const json_t *status_of(const char *key)
{
    return json_object_get(json_object_get(w.objs, key), "status");
}

static const char *phase_of(const char *key)
{
    return json_string_value(json_object_get(status_of(key), "phase"));
}

static const char *status_str(const char *key, const char *field)
{
    return json_string_value(json_object_get(status_of(key), field));
}

static size_t events_with(const char *reason)
{
    size_t i, n = 0;
    json_t *e;
    json_array_foreach(w.events, i, e)
    {
        n += !strcmp(json_string_value(json_object_get(e, "reason")), reason);
    }
    return n;
}

TestSuite(capture, .init = world_init, .fini = world_done);

Test(capture, from_creation_to_succeeded_with_an_event_per_transition)
{
    create("x", "p-0,p-1", NULL);
    struct op_capture *c = start();
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    cr_assert_str_eq(phase_of("ml/x"), "Running");
    cr_assert_str_eq(status_str("ml/x", "sessionId"), "2025_12_01_04_17_10");
    cr_assert_eq(w.nb, 1, "one batch for both hosts");
    cr_assert_eq(w.b[0].n, 2);
    cr_assert_eq(op_capture_live(c), 1);
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE, "in flight: nothing to do");
    cr_assert_eq(w.nb, 1);
    cr_assert(deliver(0, OP_GRPC_OK, ""));
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    cr_assert_str_eq(phase_of("ml/x"), "Succeeded");
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(status_of("ml/x"), "captureResult"), "outputLocation")),
                     "gs://bucket/runs/r1/plugins/profile/2025_12_01_04_17_10");
    cr_assert_eq(events_with("Pending"), 1);
    cr_assert_eq(events_with("Started"), 1);
    cr_assert_eq(events_with("Succeeded"), 1);
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE, "terminal: not re-run");
    cr_assert_eq(w.nb, 1);
    cr_assert_eq(w.overlaps, 0);
    crash(c);
}

/* The metrics' text has this line. */
static bool metric(const char *line)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    cr_assert_eq(k8s_metrics_render(w.metrics, &b), 0);
    bool found = b.data && strstr(b.data, line);
    k8s_buf_done(&b);
    return found;
}

/* x on p-0 and p-1 from creation to its outcome, every host answering code. */
static struct op_capture *to_outcome(int code, const char *msg)
{
    create("x", "p-0,p-1", NULL);
    struct op_capture *c = start();
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    cr_assert(deliver(0, code, msg));
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    return c;
}

Test(capture, outcomes_and_rpcs_are_counted)
{
    struct op_capture *c = to_outcome(OP_GRPC_OK, "");
    cr_assert(metric("mldiagnostics_operator_captures_total{outcome=\"succeeded\"} 1"));
    cr_assert(metric("mldiagnostics_operator_rpcs_total{code=\"OK\"} 2"), "one per host");
    cr_assert(metric("mldiagnostics_operator_rpc_duration_seconds_count 2"));
    cr_assert(metric("mldiagnostics_operator_capture_duration_seconds_count 1"));
    crash(c);
}

Test(capture, a_failed_host_fails_the_capture_naming_it)
{
    struct op_capture *c = to_outcome(OP_GRPC_INTERNAL, "Another profiling session active.");
    cr_assert_str_eq(phase_of("ml/x"), "Failed");
    const char *em = json_string_value(
        json_object_get(json_object_get(status_of("ml/x"), "captureResult"), "errorMessage"));
    cr_assert(strstr(em, "pod p-1: INTERNAL: Another profiling session active."), "%s", em);
    cr_assert_eq(events_with("Failed"), 1);
    cr_assert(metric("mldiagnostics_operator_captures_total{outcome=\"failed\"} 1"));
    cr_assert(metric("mldiagnostics_operator_rpcs_total{code=\"INTERNAL\"} 2"));
    crash(c);
}

/* DESIGN §4.2: at most one capture per pod; the second waits in Pending
 * naming the pod and the capture holding it, and runs once it is free. */
Test(capture, a_second_capture_on_a_busy_pod_waits_then_runs)
{
    struct op_capture *c = start();
    create("x", "p-0", NULL);
    create("y", "p-0,p-1", NULL);
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    cr_assert_eq(rec(c, "ml/y"), K8S_REQUEUE_AFTER);
    cr_assert_str_eq(phase_of("ml/y"), "Pending");
    cr_assert_str_eq(status_str("ml/y", "message"), "pod p-0 is busy with capture ml/x");
    cr_assert_eq(w.nb, 1);
    cr_assert(deliver(0, OP_GRPC_OK, ""));
    cr_assert_eq(rec(c, "ml/y"), K8S_REQUEUE_AFTER, "x has not written its outcome yet");
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    cr_assert_str_eq(phase_of("ml/x"), "Succeeded");
    cr_assert_eq(rec(c, "ml/y"), K8S_DONE);
    cr_assert_str_eq(phase_of("ml/y"), "Running");
    cr_assert_eq(w.overlaps, 0);
    crash(c);
}

struct racer {
    struct op_capture *c;
    const char *key;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    (void)rec(r->c, r->key);
    return NULL;
}

Test(capture, captures_created_at_once_on_one_pod_never_overlap)
{
    static const char *const keys[] = {"ml/a", "ml/b", "ml/c", "ml/d", "ml/e", "ml/f"};
    enum { N = sizeof(keys) / sizeof(keys[0]) };
    struct op_capture *c = start();
    for (int i = 0; i < N; i++)
        create(keys[i] + 3, "p-0", NULL);
    pthread_t t[N];
    struct racer r[N];
    for (int i = 0; i < N; i++) {
        r[i] = (struct racer){c, keys[i]};
        cr_assert_eq(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    int running = 0, pending = 0;
    for (int i = 0; i < N; i++) {
        running += !strcmp(phase_of(keys[i]), "Running");
        pending += !strcmp(phase_of(keys[i]), "Pending");
    }
    cr_assert_eq(running, 1);
    cr_assert_eq(pending, N - 1);
    cr_assert_eq(w.nb, 1);
    cr_assert_eq(w.overlaps, 0);
    crash(c);
}

/* A leader change: the new leader finds x Running (its RPCs died with the
 * old leader) and y new, both on p-0. x's pods are held from adoption on,
 * so y waits even when it is reconciled first. */
Test(capture, after_a_leader_change_a_running_capture_keeps_its_pods)
{
    create("x", "p-0", NULL);
    create("y", "p-0", NULL);
    struct op_capture *old = start();
    cr_assert_eq(rec(old, "ml/x"), K8S_DONE);
    crash(old);
    struct op_capture *c = start();
    cr_assert_eq(rec(c, "ml/y"), K8S_REQUEUE_AFTER);
    cr_assert_str_eq(status_str("ml/y", "message"), "pod p-0 is busy with capture ml/x");
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    cr_assert_eq(w.nb, 2, "x resumed");
    cr_assert_str_eq(w.b[1].session, "2025_12_01_04_17_10");
    cr_assert_eq(json_integer_value(json_object_get(status_of("ml/x"), "attempts")), 2);
    cr_assert_eq(events_with("Resumed"), 1);
    cr_assert_eq(w.overlaps, 0);
    crash(c);
}

Test(capture, a_status_write_lost_to_another_writer_is_retried)
{
    create("x", "p-0,p-1", NULL);
    struct op_capture *c = start();
    w.conflicts = 1;
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    cr_assert_str_eq(phase_of("ml/x"), "Running");
    cr_assert_eq(w.nb, 1);
    w.conflicts = 10; /* every try lost: back off */
    create("y", "p-1", NULL);
    int64_t after;
    struct k8s_error err = {0};
    cr_assert_eq(op_capture_reconcile(c, "ml/y", &after, &err), K8S_RETRY);
    cr_assert_eq(err.err, -K8S_ECONFLICT);
    crash(c);
}

/* A capture on a schedule is a parent: each tick creates one child,
 * named for its minute and owned by it, which then captures as any other;
 * the parent itself never captures. */
Test(capture, a_schedule_creates_one_child_per_tick)
{
    char when[21], child[64];
    k8s_time_rfc3339((time_t)(NOW / K8S_NSEC_PER_SEC) - 70, when);
    create_with("nightly", "p-0", NULL, json_pack("{s:s}", "schedule", "* * * * *"));
    json_object_set_new(json_object_get(json_object_get(w.objs, "ml/nightly"), "metadata"),
                        "creationTimestamp", json_string(when));
    json_t *cached = json_deep_copy(json_object_get(w.objs, "ml/nightly"));
    k8s_store_put_new(w.conns, cached);
    struct op_capture *c = start();
    int64_t after;
    struct k8s_error err = {0};
    cr_assert_eq(op_capture_reconcile(c, "ml/nightly", &after, &err), K8S_REQUEUE_AFTER, "%s",
                 err.message);
    cr_assert_eq(w.created, 1);
    snprintf(child, sizeof(child), "ml/nightly-%lld", (long long)(NOW / K8S_NSEC_PER_SEC / 60));
    const json_t *made = json_object_get(w.objs, child);
    cr_assert_not_null(made, "%s", child);
    cr_assert_str_eq(
        json_string_value(json_object_get(
            json_array_get(json_object_get(json_object_get(made, "metadata"), "ownerReferences"),
                           0),
            "uid")),
        "uid-nightly");
    cr_assert_gt(after, 0);
    cr_assert_leq(after, 60 * K8S_NSEC_PER_SEC, "the next minute");
    cr_assert_not_null(status_str("ml/nightly", "lastScheduleTime"));
    cr_assert_null(status_str("ml/nightly", "phase"), "a parent has no phase");
    cr_assert_eq(w.nb, 0, "the parent captures nothing itself");
    cr_assert_eq(op_capture_reconcile(c, "ml/nightly", &after, &err), K8S_REQUEUE_AFTER);
    cr_assert_eq(w.created, 1, "one child per tick");
    cr_assert_eq(rec(c, child), K8S_DONE);
    cr_assert_str_eq(phase_of(child), "Running", "the child captures");
    cr_assert_eq(events_with("Scheduled"), 1);
    crash(c);
}

/* A parent whose schedule is invalid fails (InvalidSpec) and rests; once
 * its spec is fixed (a newer generation) it is validated again, its
 * failure cleared, and its schedule runs. */
Test(capture, a_failed_parent_resumes_when_its_spec_is_fixed)
{
    char when[21];
    k8s_time_rfc3339((time_t)(NOW / K8S_NSEC_PER_SEC) - 70, when);
    create_with("nightly", "p-0", NULL, json_pack("{s:s}", "schedule", "61 * * * *"));
    pthread_mutex_lock(&w.lock);
    json_t *o = json_object_get(w.objs, "ml/nightly");
    json_object_set_new(json_object_get(o, "metadata"), "creationTimestamp", json_string(when));
    json_object_set_new(json_object_get(o, "metadata"), "generation", json_integer(1));
    k8s_store_put_new(w.conns, json_deep_copy(o));
    pthread_mutex_unlock(&w.lock);
    struct op_capture *c = start();
    int64_t after;
    struct k8s_error err = {0};
    cr_assert_eq(op_capture_reconcile(c, "ml/nightly", &after, &err), K8S_DONE, "%s", err.message);
    cr_assert_str_eq(phase_of("ml/nightly"), "Failed");
    cr_assert_eq(events_with("InvalidSpec"), 1);
    cr_assert_eq(op_capture_reconcile(c, "ml/nightly", &after, &err), K8S_DONE);
    cr_assert_eq(events_with("InvalidSpec"), 1, "a failed parent rests while its spec stays");
    /* kubectl edit: the schedule fixed, the generation bumped */
    pthread_mutex_lock(&w.lock);
    o = json_object_get(w.objs, "ml/nightly");
    json_object_set_new(json_object_get(o, "spec"), "schedule", json_string("* * * * *"));
    json_object_set_new(json_object_get(o, "metadata"), "generation", json_integer(2));
    json_object_set_new(json_object_get(o, "metadata"), "resourceVersion",
                        json_sprintf("%d", ++w.rv));
    k8s_store_put_new(w.conns, json_deep_copy(o));
    pthread_mutex_unlock(&w.lock);
    cr_assert_eq(op_capture_reconcile(c, "ml/nightly", &after, &err), K8S_REQUEUE_AFTER, "%s",
                 err.message);
    cr_assert_eq(w.created, 1, "the schedule runs");
    cr_assert_null(status_str("ml/nightly", "phase"), "the failure is cleared");
    cr_assert_null(status_str("ml/nightly", "completionTime"));
    cr_assert_not_null(status_str("ml/nightly", "lastScheduleTime"));
    cr_assert_eq(op_capture_reconcile(c, "ml/nightly", &after, &err), K8S_REQUEUE_AFTER);
    cr_assert_eq(w.created, 1, "one child per tick");
    crash(c);
}

/* The pods are claimed before Running is written: when that write fails
 * they are given up, so another capture is not kept waiting for RPCs that
 * were never sent. */
Test(capture, a_running_write_that_fails_gives_the_pods_up)
{
    create("x", "p-0", NULL);
    struct op_capture *c = start();
    w.running_failures = 1;
    int64_t after;
    struct k8s_error err = {0};
    cr_assert_eq(op_capture_reconcile(c, "ml/x", &after, &err), K8S_RETRY);
    cr_assert_eq(err.err, -K8S_EIO);
    cr_assert_str_eq(phase_of("ml/x"), "Pending");
    cr_assert_eq(w.nb, 0, "no RPC without the checkpoint");
    create("y", "p-0", NULL);
    cr_assert_eq(rec(c, "ml/y"), K8S_DONE);
    cr_assert_str_eq(phase_of("ml/y"), "Running", "p-0 was given up");
    cr_assert_eq(rec(c, "ml/x"), K8S_REQUEUE_AFTER);
    cr_assert_str_eq(status_str("ml/x", "message"), "pod p-0 is busy with capture ml/y");
    crash(c);
}

Test(capture, deleting_a_running_capture_cancels_its_rpcs_and_frees_the_pods)
{
    create("x", "p-0,p-1", NULL);
    struct op_capture *c = start();
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    cr_assert_eq(op_capture_live(c), 1);
    delete ("ml/x");
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    join_cancellers();
    cr_assert(w.b[0].over, "cancelled");
    cr_assert_eq(op_capture_live(c), 0);
    create("y", "p-0", NULL);
    cr_assert_eq(rec(c, "ml/y"), K8S_DONE);
    cr_assert_str_eq(phase_of("ml/y"), "Running", "the pods are free again");
    cr_assert_eq(w.overlaps, 0);
    crash(c);
}

Test(capture, shutdown_records_the_interrupted_capture_for_the_next_leader)
{
    create("x", "p-0,p-1", NULL);
    struct op_capture *c = start();
    cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    op_capture_shutdown(c, 0); /* 10 s cannot end in no time */
    cr_assert_str_eq(phase_of("ml/x"), "Running");
    cr_assert(strstr(status_str("ml/x", "message"), "interrupted"));
    cr_assert_eq(events_with("Interrupted"), 1);
    crash(c);
    struct op_capture *next = start();
    cr_assert_eq(rec(next, "ml/x"), K8S_DONE);
    cr_assert_eq(w.nb, 2);
    cr_assert(deliver(0, OP_GRPC_OK, ""));
    cr_assert_eq(rec(next, "ml/x"), K8S_DONE);
    cr_assert_str_eq(phase_of("ml/x"), "Succeeded");
    cr_assert_eq(w.overlaps, 0);
    crash(next);
}

Test(capture, a_pod_that_does_not_exist_fails_at_once)
{
    struct op_capture *c = start();
    create("y", "p-0,p-9", NULL);
    cr_assert_eq(rec(c, "ml/y"), K8S_DONE);
    cr_assert_str_eq(phase_of("ml/y"), "Failed");
    cr_assert(strstr(status_str("ml/y", "message"), "p-9"));
    cr_assert_eq(w.nb, 0);
    crash(c);
}

/* ---------- restart at each step ----------
 *
 * The capture's steps, as one process takes them:
 *   0 nothing yet           3 results in, not written
 *   1 Pending, p-1 not ready 4 Succeeded written
 *   2 Running, RPCs in flight
 * plus 5: Running written but the RPCs never sent (the process died in
 * between). A process dies after each; a new one, built from the written
 * status alone, must reach the same outcome with no second Profile to a
 * pod while one is in flight. */
enum { STEPS = 5, UNSENT = 5 };

static void first_steps(struct op_capture *c, int cut)
{
    if (cut >= 1) {
        pod("p-1", false);
        cr_assert_eq(rec(c, "ml/x"), K8S_REQUEUE_AFTER);
        cr_assert_str_eq(phase_of("ml/x"), "Pending");
    }
    pod("p-1", true);
    if (cut == UNSENT) {
        w.submit_failures = 1;
        cr_assert_eq(rec(c, "ml/x"), K8S_RETRY);
        cr_assert_str_eq(phase_of("ml/x"), "Running");
        return;
    }
    if (cut >= 2)
        cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
    if (cut >= 3)
        cr_assert(deliver(0, OP_GRPC_OK, ""));
    if (cut >= 4)
        cr_assert_eq(rec(c, "ml/x"), K8S_DONE);
}

/* Reconcile until terminal, the profilers answering OK. */
static void converge(struct op_capture *c)
{
    for (int i = 0; i < 10 && !(phase_of("ml/x") && op_phase_terminal(phase_of("ml/x"))); i++) {
        (void)rec(c, "ml/x");
        deliver(0, OP_GRPC_OK, "");
    }
}

Test(capture, a_restart_at_each_step_converges_to_the_same_outcome)
{
    world_done();
    for (int cut = 0; cut <= UNSENT; cut++) {
        world_init();
        create("x", "p-0,p-1", NULL);
        struct op_capture *a = start();
        first_steps(a, cut);
        const char *before = phase_of("ml/x");
        crash(a);
        struct op_capture *b = start();
        converge(b);
        cr_assert_str_eq(phase_of("ml/x"), "Succeeded", "cut %d (was %s)", cut,
                         before ? before : "new");
        cr_assert_str_eq(status_str("ml/x", "sessionId"), "2025_12_01_04_17_10", "cut %d", cut);
        const json_t *cr = json_object_get(status_of("ml/x"), "captureResult");
        cr_assert_str_eq(json_string_value(json_object_get(cr, "outputLocation")),
                         "gs://bucket/runs/r1/plugins/profile/2025_12_01_04_17_10");
        cr_assert_eq(w.overlaps, 0, "cut %d: a second Profile while one was in flight", cut);
        int resumed = cut == 2 || cut == 3 || cut == UNSENT;
        cr_assert_eq(json_integer_value(json_object_get(status_of("ml/x"), "attempts")),
                     1 + resumed, "cut %d", cut);
        cr_assert_eq(w.nb, (size_t)(cut == 4 ? 1 : 1 + (cut == 2 || cut == 3)),
                     "cut %d: batches sent", cut);
        crash(b);
        world_done();
    }
    world_init(); /* for .fini */
}
