#include "op_capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jget.h"
#include "k8s_log.h"
#include "k8s_time.h"
#include "op_parent.h"
#include "op_proto.h"
#include "op_runs.h"
#include "op_status.h"

#define CONFLICT_TRIES 3
#define ROUNDS_MAX     8 /* plans asking a question or to go on, per reconcile */
#define N_CODES        (OP_GRPC_UNAUTHENTICATED + 1)

struct metrics {
    struct k8s_metric *outcome[OP_OUT_INTERRUPTED + 1], *duration, *rpc;
    struct k8s_metric *rpc_code[N_CODES];
};

struct op_capture {
    struct op_capture_deps d;
    struct op_runs *runs; /* this process's record of each resource */
    struct metrics m;
};

/* ---------- applying a plan ---------- */

static int64_t now_ns(const struct op_capture *c)
{
    return c->d.now_ns ? c->d.now_ns() : k8s_real_ns();
}

/* Write status; on success remember the new resourceVersion and return
 * the server's object in *ret (may be NULL). */
static int put_status(struct op_capture *c, const json_t *obj, json_t *status, const char *key,
                      json_t **ret, struct k8s_error *err)
{
    json_t *done = NULL;
    int r = c->d.api.put_status(c->d.api.ud, obj, status, &done, err);
    if (r < 0)
        return r;
    op_runs_wrote(c->runs, key, k8s_jstr2(done, "metadata", "uid"),
                  k8s_jstr2(done, "metadata", "resourceVersion"));
    if (ret)
        *ret = done;
    else
        json_decref(done);
    return 0;
}

static void observe(void *ud, const struct op_host_result *h)
{
    struct op_capture *c = ud;
    k8s_metric_observe_ns(c->m.rpc, h->done_ns - h->sent_ns);
    if (h->code >= 0 && h->code < N_CODES)
        k8s_metric_add(c->m.rpc_code[h->code], 1);
}

/* What follows a successful write: metrics, the log line, the Event. */
static void tell(struct op_capture *c, const struct op_plan_event *e, const json_t *obj,
                 const char *key)
{
    if (e->observe_rpcs)
        op_runs_each_result(c->runs, key, observe, c);
    if (e->duration_ns >= 0)
        k8s_metric_observe_ns(c->m.duration, e->duration_ns);
    k8s_metric_add(c->m.outcome[e->outcome], 1);
    json_t *line = e->log ? json_pack("{s:s}", "resource", key) : NULL;
    if (line && json_object_update(line, e->log) == 0)
        k8s_log_json(K8S_LOG_INFO, "capture", line);
    else
        json_decref(line);
    struct k8s_error err;
    if (e->type && c->d.api.event(c->d.api.ud, obj, e->type, e->reason, e->msg, &err) < 0)
        k8s_log_json(K8S_LOG_WARN, "cannot post an event",
                     json_pack("{s:s, s:s, s:s}", "resource", key, "reason", e->reason, "error",
                               err.message));
}

/* The answers to the questions a plan asks, for the next decision. */
struct answers {
    char busy[700];
    bool busy_set;
    enum op_absent absent;
    struct op_targets targets; /* the snapshot OP_FX_RESOLVE took */
    bool has_targets;
    json_t *obj; /* the object as written, to go on from (owned) */
};

static void answers_done(struct answers *a)
{
    if (a->has_targets)
        op_targets_done(&a->targets);
    json_decref(a->obj);
    memset(a, 0, sizeof(*a));
}

/* One plan being applied. */
struct apply {
    struct op_capture *c;
    struct op_plan *p;
    const json_t *obj;
    const char *key;
    struct answers *a;
    json_t *written;  /* the server's object after a write that OP_FX_AGAIN follows */
    bool claimed;     /* the plan's pods are held: a failed write gives them up */
    int64_t after_ns; /* K8S_REQUEUE_AFTER */
    struct k8s_error *err;
};

/* How an effect went: on to the next, the plan's end with a result, or a
 * question answered (decide again). */
enum applied { NEXT, FAILED, DECIDE_AGAIN };

static enum applied fail_with(struct apply *x, int rc, const char *what)
{
    k8s_error_set(x->err, rc, "%s", what);
    return FAILED;
}

/* The target pods from the caches, as of now. */
static enum applied resolve(struct apply *x)
{
    struct op_stores st = {0};
    x->c->d.stores(x->c->d.stores_ud, &st);
    if (x->a->has_targets)
        op_targets_done(&x->a->targets);
    x->a->has_targets = op_targets_resolve(&x->p->spec, &st, &x->a->targets) == 0;
    return x->a->has_targets ? DECIDE_AGAIN : fail_with(x, -K8S_ENOMEM, "out of memory");
}

static enum applied confirm(struct apply *x)
{
    bool all = true;
    for (size_t i = 0; all && i < x->p->n_confirm; i++)
        all = x->c->d.api.absent(x->c->d.api.ud, x->p->confirm[i]);
    x->a->absent = all ? OP_ABSENT_CONFIRMED : OP_ABSENT_FOUND;
    return DECIDE_AGAIN;
}

static enum applied claim(struct apply *x)
{
    int r = op_runs_claim(x->c->runs, x->key, k8s_jstr2(x->obj, "metadata", "uid"), x->p->dispatch,
                          x->a->busy, sizeof(x->a->busy));
    if (r < 0)
        return fail_with(x, r, "out of memory");
    x->a->busy_set = r > 0;
    x->claimed = r == 0;
    return r > 0 ? DECIDE_AGAIN : NEXT;
}

static enum applied write(struct apply *x)
{
    json_t *st = x->p->status;
    x->p->status = NULL;
    bool again = op_plan_has(x->p, OP_FX_AGAIN);
    if (put_status(x->c, x->obj, st, x->key, again ? &x->written : NULL, x->err) == 0)
        return NEXT;
    if (x->claimed) /* Running was never written: the pods were never ours to keep */
        op_runs_unclaim(x->c->runs, x->key, x->p->dispatch->resumed);
    return FAILED;
}

static enum applied submit(struct apply *x)
{
    int r = op_runs_submit(x->c->runs, x->key, x->p->dispatch);
    return r < 0 ? fail_with(x, r, "cannot queue the RPCs") : NEXT;
}

static enum applied effect(struct apply *x, enum op_effect e, enum k8s_result *res)
{
    switch (e) {
    case OP_FX_CANCEL:
        op_runs_forget(x->c->runs, x->key, x->p->cancel_reason);
        return NEXT;
    case OP_FX_FORGET:
        op_runs_drop(x->c->runs, x->key);
        return NEXT;
    case OP_FX_RESOLVE:
        return resolve(x);
    case OP_FX_CONFIRM:
        return confirm(x);
    case OP_FX_CLAIM:
        return claim(x);
    case OP_FX_WRITE:
        return write(x);
    case OP_FX_EVENT: /* the metrics read the results: before the release */
        tell(x->c, &x->p->event, x->obj, x->key);
        return NEXT;
    case OP_FX_RELEASE:
        op_runs_release(x->c->runs, x->key);
        return NEXT;
    case OP_FX_SUBMIT:
        return submit(x);
    case OP_FX_AGAIN:
        return DECIDE_AGAIN;
    case OP_FX_REQUEUE:
        *res = K8S_REQUEUE_AFTER;
        x->after_ns = x->p->after_ns;
        return NEXT;
    case OP_FX_RETRY:
        *x->err = x->p->err;
        return FAILED;
    }
    return NEXT;
}

/* Apply x->p's effects in order, until one fails or asks to decide again. */
static enum applied apply(struct apply *x, enum k8s_result *res)
{
    *res = K8S_DONE;
    for (size_t i = 0; i < x->p->n_fx; i++) {
        enum applied how = effect(x, x->p->fx[i], res);
        if (how == FAILED)
            *res = K8S_RETRY;
        if (how != NEXT)
            return how;
    }
    return NEXT;
}

/* Decide and apply until a plan ends with a result. */
static enum k8s_result step(struct op_capture *c, const json_t *obj, const char *key,
                            int64_t *after, struct k8s_error *err)
{
    struct answers a = {0};
    enum k8s_result res = K8S_DONE;
    for (int round = 0; round < ROUNDS_MAX; round++) {
        struct op_plan_in in = {.obj = a.obj ? a.obj : obj,
                                .cfg = c->d.cfg,
                                .targets = a.has_targets ? &a.targets : NULL,
                                .now_ns = now_ns(c),
                                .busy = a.busy_set ? a.busy : NULL,
                                .absent = a.absent};
        in.run = op_runs_view(c->runs, key, &in.stopping);
        struct op_plan p;
        op_plan_decide(&in, &p);
        struct apply x = {.c = c, .p = &p, .obj = in.obj, .key = key, .a = &a, .err = err};
        enum applied how = apply(&x, &res);
        *after = x.after_ns;
        op_plan_done(&p);
        if (x.written) { /* go on from the object as written, asking afresh */
            answers_done(&a);
            a.obj = x.written;
        }
        if (how != DECIDE_AGAIN)
            break;
    }
    answers_done(&a);
    return res;
}

/* ---------- reconcile ---------- */

/* A capture on a schedule: its children, through op_parent. */
static enum k8s_result parent(struct op_capture *c, const json_t *obj, int64_t *after,
                              struct k8s_error *err)
{
    struct op_parent_deps d = {&c->d.api, c->d.conns, c->d.cfg, now_ns(c) / K8S_NSEC_PER_SEC};
    return op_parent_reconcile(&d, obj, after, err);
}

static bool split_key(const char *key, char *ns, size_t nscap, char *name, size_t namecap)
{
    const char *slash = strchr(key, '/');
    if (!slash || (size_t)(slash - key) >= nscap || strlen(slash + 1) >= namecap)
        return false;
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    strcpy(name, slash + 1);
    return true;
}

/* The object to act on: the cache's, unless our last write is newer, or
 * it is a Failed parent whose spec changed (the cache keeps no more of a
 * finished one than settled() does). */
static int current(struct op_capture *c, const char *key, const char *ns, const char *name,
                   bool fresh, json_t **ret, struct k8s_error *err)
{
    json_t *stored = k8s_store_get(c->d.conns, ns, name);
    json_t *obj = stored ? op_capture_unpack(stored) : NULL;
    k8s_store_release(stored);
    if (fresh || op_runs_stale(c->runs, key, k8s_jstr2(obj, "metadata", "resourceVersion")) ||
        (op_parent_is(obj) && op_parent_revived(obj))) {
        k8s_store_release(obj); /* the cache's own when it was not packed */
        obj = NULL;
        int rc = c->d.api.get(c->d.api.ud, ns, name, &obj, err);
        if (rc < 0 && rc != -K8S_ENOTFOUND)
            return rc;
    }
    *ret = obj;
    return 0;
}

#define PACKED "mldiagnostics.packed" /* never a member of a real resource */

/* What a terminal resource's reconcile reads: its key, uid, version and
 * generation, that it is over, and whether it is a parent (spec.schedule:
 * a Failed parent whose spec changed is validated again). */
static const char *const settled_meta[] = {
    "name", "namespace", "uid", "resourceVersion", "generation", "ownerReferences", NULL};
static const char *const settled_spec[] = {"schedule", NULL};
static const char *const settled_status[] = {"phase", "observedGeneration", NULL};

/* Into a new object: the members of from named in keys, shared. */
static json_t *pick(const json_t *from, const char *const *keys)
{
    json_t *out = json_object();
    for (; out && *keys; keys++) {
        json_t *v = json_object_get(from, *keys);
        if (v && json_object_set(out, *keys, v) < 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

static json_t *settled(const json_t *obj)
{
    json_t *meta = pick(json_object_get(obj, "metadata"), settled_meta);
    json_t *st = pick(json_object_get(obj, "status"), settled_status);
    json_t *spec = pick(json_object_get(obj, "spec"), settled_spec);
    json_t *out =
        meta && st && spec ? json_pack("{s:O, s:O}", "metadata", meta, "status", st) : NULL;
    if (out && json_object_size(spec) && json_object_set(out, "spec", spec) < 0) {
        json_decref(out);
        out = NULL;
    }
    json_decref(meta);
    json_decref(st);
    json_decref(spec);
    return out;
}

/* A new or pending resource, packed: its whole form as compact JSON text
 * beside what the scanners read without unpacking (op_map: the key, the
 * phase, the target namespace); jansson's tree of a 0.5 KiB resource is
 * 3.5 KiB, the text about 0.5. */
static json_t *packed(const json_t *obj)
{
    static const char *const meta_keys[] = {
        "name", "namespace", "uid", "resourceVersion", "ownerReferences", NULL};
    static const char *const status_keys[] = {"phase", NULL};
    static const char *const target_keys[] = {"podNamespace", NULL};
    char *text = json_dumps(obj, JSON_COMPACT);
    json_t *meta = pick(json_object_get(obj, "metadata"), meta_keys);
    json_t *st = pick(json_object_get(obj, "status"), status_keys);
    json_t *tc = pick(json_object_get(json_object_get(obj, "spec"), "triggerCapture"), target_keys);
    json_t *out = text && meta && st && tc
                      ? json_pack("{s:O, s:O, s:{s:O}, s:s}", "metadata", meta, "status", st,
                                  "spec", "triggerCapture", tc, PACKED, text)
                      : NULL;
    free(text);
    json_decref(meta);
    json_decref(st);
    json_decref(tc);
    return out;
}

json_t *op_capture_trim(json_t *obj)
{
    const char *phase = k8s_jstr2(obj, "status", "phase");
    if (op_phase_terminal(phase))
        return settled(obj);
    if (phase && !strcmp(phase, "Running"))
        return json_incref(obj); /* a few at a time, with their hosts: read often */
    return packed(obj);
}

json_t *op_capture_unpack(const json_t *stored)
{
    const char *text = json_string_value(json_object_get(stored, PACKED));
    return text ? json_loads(text, 0, NULL) : json_incref((json_t *)stored);
}

enum k8s_result op_capture_reconcile(struct op_capture *c, const char *key, int64_t *ret_after_ns,
                                     struct k8s_error *reterr)
{
    char ns[256], name[256];
    *ret_after_ns = 0;
    if (!split_key(key, ns, sizeof(ns), name, sizeof(name)))
        return K8S_DONE;
    for (int attempt = 0;; attempt++) {
        json_t *obj = NULL;
        if (current(c, key, ns, name, attempt > 0, &obj, reterr) < 0)
            return K8S_RETRY;
        enum k8s_result res = op_parent_is(obj) ? parent(c, obj, ret_after_ns, reterr)
                                                : step(c, obj, key, ret_after_ns, reterr);
        k8s_store_release(obj); /* the cache's own (shared), unpacked, or our own read */
        /* a write lost to another writer, or to a deletion the cache has not
         * seen yet: read afresh and redo the step (gone: the run is dropped) */
        if (res != K8S_RETRY || attempt + 1 >= CONFLICT_TRIES ||
            (reterr->err != -K8S_ECONFLICT && reterr->err != -K8S_ENOTFOUND))
            return res;
    }
}

/* ---------- lifecycle ---------- */

static void register_metrics(struct op_capture *c)
{
    struct k8s_metrics *m = c->d.metrics;
    static const double secs[] = {1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200};
    static const char *const outcomes[] = {[OP_OUT_SUCCEEDED] = "succeeded",
                                           [OP_OUT_FAILED] = "failed",
                                           [OP_OUT_INVALID] = "invalid",
                                           [OP_OUT_INTERRUPTED] = "interrupted"};
    _Static_assert(sizeof(outcomes) / sizeof(outcomes[0]) == OP_OUT_INTERRUPTED + 1,
                   "a label per outcome");
    if (!m)
        return;
    for (size_t i = OP_OUT_NONE + 1; i < sizeof(outcomes) / sizeof(outcomes[0]); i++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "outcome=\"%s\"", outcomes[i]);
        c->m.outcome[i] = k8s_metrics_counter(m, "mldiagnostics_operator_captures_total",
                                              "Captures by outcome.", labels);
    }
    c->m.duration = k8s_metrics_histogram(m, "mldiagnostics_operator_capture_duration_seconds",
                                          "From a capture's start to its outcome.", NULL, secs,
                                          sizeof(secs) / sizeof(secs[0]));
    c->m.rpc = k8s_metrics_histogram(m, "mldiagnostics_operator_rpc_duration_seconds",
                                     "Profile RPC latency per host, retries included.", NULL, secs,
                                     sizeof(secs) / sizeof(secs[0]));
    for (int i = 0; i < N_CODES; i++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "code=\"%s\"", op_grpc_code_name(i));
        c->m.rpc_code[i] = k8s_metrics_counter(m, "mldiagnostics_operator_rpcs_total",
                                               "Profile RPC outcomes by gRPC status.", labels);
    }
}

int op_capture_new(const struct op_capture_deps *deps, struct op_capture **ret)
{
    struct op_capture *c = calloc(1, sizeof(*c));
    if (!c)
        return -K8S_ENOMEM;
    c->d = *deps;
    if (!(c->runs = op_runs_new(&c->d.api, deps->queue))) {
        free(c);
        return -K8S_ENOMEM;
    }
    register_metrics(c);
    *ret = c;
    return 0;
}

/* "ns/pod" of each status.hosts[] entry of a resource in Running; NULL
 * when it is not Running or lists no host. */
static char **status_pods(const json_t *obj, size_t *ret_n)
{
    const json_t *hosts = json_object_get(json_object_get(obj, "status"), "hosts");
    const char *pns = k8s_jstr2(json_object_get(obj, "spec"), "triggerCapture", "podNamespace");
    const char *ns = pns && *pns ? pns : k8s_jstr2(obj, "metadata", "namespace");
    const char *phase = k8s_jstr2(obj, "status", "phase");
    size_t n = json_array_size(hosts), k = 0, i;
    char **pods = n && ns && phase && !strcmp(phase, "Running") ? calloc(n, sizeof(*pods)) : NULL;
    json_t *h;
    json_array_foreach(pods ? hosts : NULL, i, h)
    {
        const char *pod = json_string_value(json_object_get(h, "pod"));
        if (pod && asprintf(&pods[k], "%s/%s", ns, pod) > 0)
            k++;
    }
    *ret_n = k;
    return pods;
}

static void adopt_one(void *ud, const char *key, const json_t *stored)
{
    struct op_capture *c = ud;
    size_t n = 0;
    json_t *obj = op_capture_unpack(stored);
    char **pods = status_pods(obj, &n);
    if (pods)
        op_runs_adopt(c->runs, key, k8s_jstr2(obj, "metadata", "uid"), pods, n);
    k8s_store_release(obj); /* the cache's own when it was not packed */
}

void op_capture_adopt(struct op_capture *c)
{
    k8s_store_each(c->d.conns, adopt_one, c);
}

size_t op_capture_live(struct op_capture *c)
{
    return op_runs_live(c->runs);
}

/* Record every outcome now known (shutdown: nobody else reconciles). */
static void record_finished(struct op_capture *c)
{
    for (;;) {
        char *key = op_runs_next_finished(c->runs);
        if (!key)
            return;
        int64_t after;
        struct k8s_error err = {0};
        char ns[256], name[256];
        json_t *obj = NULL;
        if (split_key(key, ns, sizeof(ns), name, sizeof(name)) &&
            c->d.api.get(c->d.api.ud, ns, name, &obj, &err) == 0)
            (void)step(c, obj, key, &after, &err);
        json_decref(obj);
        op_runs_drop_finished(c->runs, key); /* could not write it: give up on it */
        free(key);
    }
}

void op_capture_shutdown(struct op_capture *c, int64_t grace_ns)
{
    op_runs_shutdown(c->runs, grace_ns, "interrupted: the operator is shutting down");
    record_finished(c);
}

void op_capture_abandon(struct op_capture *c)
{
    op_runs_abandon(c->runs, "cancelled: leadership lost");
}

void op_capture_free(struct op_capture *c)
{
    if (!c)
        return;
    op_capture_abandon(c);
    op_runs_free(c->runs);
    free(c);
}
