#include "op_capture.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_log.h"
#include "k8s_time.h"
#include "op_holds.h"
#include "op_proto.h"
#include "op_status.h"

#define SEC            K8S_NSEC_PER_SEC
#define CONFLICT_TRIES 3
#define ROUNDS_MAX     6 /* plans asking a question or to go on, per reconcile */
#define N_CODES        (OP_GRPC_UNAUTHENTICATED + 1)

/* What this process knows about one resource beyond its status. */
struct run {
    char *key, *uid;
    uint64_t batch;
    bool live;        /* RPCs in flight */
    bool finished;    /* results below wait to be written */
    bool interrupted; /* cancelled by shutdown: record as interrupted */
    bool discard;     /* the resource is gone: drop the results */
    struct op_host_result *results;
    char **pods; /* held "ns/pod" (op_holds), and the hosts' file names */
    char **files;
    size_t n;
    int attempt;
    int64_t expected_end_mono; /* when the profilers should be done */
    char written_rv[64];       /* resourceVersion of our last status write */
    char session[20];
    char location[1100]; /* <storage>/plugins/profile/<session> */
    struct run *next;
};

struct metrics {
    struct k8s_metric *outcome[OP_OUT_INTERRUPTED + 1], *duration, *rpc;
    struct k8s_metric *rpc_code[N_CODES];
};

struct op_capture {
    struct op_capture_deps d;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* a batch finished */
    struct run *runs;
    struct op_holds *holds; /* pod -> the run holding it */
    bool stopping;
    struct metrics m;
};

/* ---------- runs (lock held) ---------- */

static struct run *run_find(struct op_capture *c, const char *key)
{
    for (struct run *r = c->runs; r; r = r->next)
        if (!strcmp(r->key, key))
            return r;
    return NULL;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

/* Free the pod and result arrays; the holds stay as they are. */
static void run_clear(struct run *r)
{
    free_list(r->pods, r->n);
    free_list(r->files, r->files ? r->n : 0);
    free(r->results);
    r->pods = r->files = NULL;
    r->results = NULL;
    r->n = 0;
    r->finished = r->interrupted = false;
}

/* Done with the pods: clear, and give them up for other captures. */
static void run_release(struct op_capture *c, struct run *r)
{
    run_clear(r);
    op_holds_release(c->holds, r);
}

static void run_drop(struct op_capture *c, struct run *r)
{
    for (struct run **p = &c->runs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    run_release(c, r);
    free(r->key);
    free(r->uid);
    free(r);
}

static struct run *run_new(struct op_capture *c, const char *key, const char *uid)
{
    struct run *r = calloc(1, sizeof(*r));
    if (!r || !(r->key = strdup(key)) || !(r->uid = strdup(uid ? uid : ""))) {
        if (r)
            free(r->key);
        free(r);
        return NULL;
    }
    r->next = c->runs;
    c->runs = r;
    return r;
}

static struct run *run_get(struct op_capture *c, const char *key, const char *uid)
{
    pthread_mutex_lock(&c->lock);
    struct run *r = run_find(c, key);
    if (!r)
        r = run_new(c, key, uid);
    pthread_mutex_unlock(&c->lock);
    return r;
}

/* Drop or cancel what we hold for key (the resource is gone or was
 * replaced by another of the same name). */
static void run_forget(struct op_capture *c, const char *key, const char *reason)
{
    pthread_mutex_lock(&c->lock);
    struct run *r = run_find(c, key);
    if (r && r->live) {
        r->discard = true;
        c->d.api.cancel(c->d.api.ud, r->batch, reason);
        /* the relay's callback drops it; a re-created resource gets a new run */
        r->key[0] = '\0';
    } else if (r) {
        run_drop(c, r);
    }
    pthread_mutex_unlock(&c->lock);
}

/* The plan's input: the record of key, as a view (lock held). A worker
 * reconciles a key alone, and the relay touches a run only while live,
 * so the arrays stay put while the plan reads them. */
static struct op_run_view run_view(const struct run *r)
{
    if (!r)
        return (struct op_run_view){0};
    enum op_run_state st = r->live          ? OP_RUN_LIVE
                           : !r->finished   ? OP_RUN_NONE
                           : r->interrupted ? OP_RUN_INTERRUPTED
                                            : OP_RUN_FINISHED;
    return (struct op_run_view){st,   r->uid,     r->results, r->pods,    r->files,
                                r->n, r->attempt, r->session, r->location};
}

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
    const char *rv = op_str2(done, "metadata", "resourceVersion");
    struct run *run = run_get(c, key, op_str2(done, "metadata", "uid"));
    pthread_mutex_lock(&c->lock);
    if (run && rv)
        snprintf(run->written_rv, sizeof(run->written_rv), "%s", rv);
    pthread_mutex_unlock(&c->lock);
    if (ret)
        *ret = done;
    else
        json_decref(done);
    return 0;
}

static void observe(struct op_capture *c, const char *key)
{
    pthread_mutex_lock(&c->lock);
    const struct run *r = run_find(c, key);
    for (size_t i = 0; r && i < r->n && r->results; i++) {
        const struct op_host_result *h = &r->results[i];
        k8s_metric_observe_ns(c->m.rpc, h->done_ns - h->sent_ns);
        if (h->code >= 0 && h->code < N_CODES)
            k8s_metric_add(c->m.rpc_code[h->code], 1);
    }
    pthread_mutex_unlock(&c->lock);
}

/* What follows a successful write: metrics, the log line, the Event. */
static void tell(struct op_capture *c, const struct op_plan *p, const json_t *obj, const char *key)
{
    if (p->observe_rpcs)
        observe(c, key);
    if (p->duration_ns >= 0)
        k8s_metric_observe_ns(c->m.duration, p->duration_ns);
    k8s_metric_add(c->m.outcome[p->outcome], 1);
    json_t *line = p->log ? json_pack("{s:s}", "resource", key) : NULL;
    if (line && json_object_update(line, p->log) == 0)
        k8s_log_json(K8S_LOG_INFO, "capture", line);
    else
        json_decref(line);
    struct k8s_error err;
    if (p->event_type &&
        c->d.api.event(c->d.api.ud, obj, p->event_type, p->event_reason, p->event_msg, &err) < 0)
        k8s_log_json(K8S_LOG_WARN, "cannot post an event",
                     json_pack("{s:s, s:s, s:s}", "resource", key, "reason", p->event_reason,
                               "error", err.message));
}

static void on_batch_done(void *ud, uint64_t id, const struct op_host_result *results, size_t n)
{
    struct op_capture *c = ud;
    char *requeue = NULL;
    pthread_mutex_lock(&c->lock);
    struct run *r = c->runs;
    while (r && !(r->live && r->batch == id))
        r = r->next;
    if (r) {
        r->live = false;
        if (r->discard) {
            run_drop(c, r);
        } else if ((r->results = malloc(n * sizeof(*results)))) {
            memcpy(r->results, results, n * sizeof(*results));
            r->finished = true;
            requeue = strdup(r->key);
        }
    }
    bool stopping = c->stopping; /* read under the lock: shutdown writes it */
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    if (requeue && !stopping)
        op_queue_add(c->d.queue, requeue);
    free(requeue);
}

/* Claim the plan's pods for run (op_holds: the check and the taking are
 * one step, so of two workers deciding at once one wins). On a conflict
 * *busy names the pod and the capture holding it. */
static int claim(struct op_capture *c, struct run *run, struct op_plan_dispatch *d, char *busy,
                 size_t cap)
{
    struct k8s_error e = {0};
    int r = op_holds_claim(c->holds, run, run->key, d->pods, d->n, &e);
    if (r < 0) {
        snprintf(busy, cap, "%s", e.message);
        return r;
    }
    pthread_mutex_lock(&c->lock);
    run_clear(run); /* what it held before is now the plan's pods */
    run->pods = d->pods;
    run->files = d->files;
    run->n = d->n;
    d->pods = d->files = NULL;
    d->n = 0;
    snprintf(run->session, sizeof(run->session), "%s", d->session);
    snprintf(run->location, sizeof(run->location), "%s", d->location);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* The pods are ours: write Running, then send the RPCs. */
static int send(struct op_capture *c, struct op_plan *p, const json_t *obj, const char *key,
                struct run *run, struct k8s_error *err)
{
    struct op_plan_dispatch *d = p->dispatch;
    json_t *st = p->status;
    p->status = NULL;
    int r = put_status(c, obj, st, key, NULL, err);
    if (r == 0) {
        pthread_mutex_lock(&c->lock);
        r = c->d.api.submit(c->d.api.ud, &d->batch, on_batch_done, c, &run->batch);
        if (r == 0) {
            run->live = true;
            run->attempt = d->attempt;
            run->expected_end_mono = k8s_mono_ns() + d->expected_ns;
        }
        pthread_mutex_unlock(&c->lock);
        if (r < 0)
            k8s_error_set(err, r, "cannot queue the RPCs");
    }
    if (r < 0) {
        pthread_mutex_lock(&c->lock);
        if (d->resumed) /* still Running in status: it keeps its pods */
            run_clear(run);
        else
            run_release(c, run);
        pthread_mutex_unlock(&c->lock);
    }
    return r;
}

/* How a plan ended: with a result, or asking to decide again. */
enum applied { APPLIED, DECIDE_AGAIN };

struct answers {
    char busy[700];
    bool busy_set;
    enum op_absent absent;
    json_t *obj; /* the object as written, to go on from (owned) */
};

static enum applied apply_ask(struct op_capture *c, struct op_plan *p, const json_t *obj,
                              const char *key, struct answers *a, enum op_result *res,
                              struct k8s_error *err)
{
    if (p->ask == OP_ASK_CONFIRM) {
        bool all = true;
        for (size_t i = 0; all && i < p->n_confirm; i++)
            all = c->d.api.absent(c->d.api.ud, p->confirm[i]);
        a->absent = all ? OP_ABSENT_CONFIRMED : OP_ABSENT_FOUND;
        return DECIDE_AGAIN;
    }
    struct run *run = run_get(c, key, op_str2(obj, "metadata", "uid"));
    if (!run) {
        *res = OP_RETRY;
        k8s_error_set(err, -K8S_ENOMEM, "out of memory");
        return APPLIED;
    }
    if (claim(c, run, p->dispatch, a->busy, sizeof(a->busy)) < 0) {
        a->busy_set = true;
        return DECIDE_AGAIN;
    }
    if (send(c, p, obj, key, run, err) < 0) {
        *res = OP_RETRY;
        return APPLIED;
    }
    tell(c, p, obj, key);
    return APPLIED;
}

static enum applied apply(struct op_capture *c, struct op_plan *p, const json_t *obj,
                          const char *key, struct answers *a, enum op_result *res,
                          struct k8s_error *err)
{
    *res = p->result;
    if (p->result == OP_RETRY)
        *err = p->err;
    if (p->drop)
        run_forget(c, key, p->cancel_reason);
    if (p->forget) {
        pthread_mutex_lock(&c->lock);
        struct run *r = run_find(c, key);
        if (r)
            run_drop(c, r);
        pthread_mutex_unlock(&c->lock);
    }
    if (p->ask != OP_ASK_NONE)
        return apply_ask(c, p, obj, key, a, res, err);
    if (!p->status)
        return APPLIED;
    json_t *st = p->status, *written = NULL;
    p->status = NULL;
    if (put_status(c, obj, st, key, p->again ? &written : NULL, err) < 0) {
        *res = OP_RETRY;
        return APPLIED;
    }
    tell(c, p, obj, key); /* the metrics read the results: before the release */
    if (p->release) {
        pthread_mutex_lock(&c->lock);
        struct run *r = run_find(c, key);
        if (r) /* keep written_rv: a stale cache is read through */
            run_release(c, r);
        pthread_mutex_unlock(&c->lock);
    }
    if (!p->again)
        return APPLIED;
    *a = (struct answers){.obj = written};
    return DECIDE_AGAIN;
}

/* Decide and apply until a plan ends with a result. */
static enum op_result step(struct op_capture *c, const json_t *obj, const char *key, int64_t *after,
                           struct k8s_error *err)
{
    struct answers a = {0};
    enum op_result res = OP_DONE;
    for (int round = 0; round < ROUNDS_MAX; round++) {
        struct op_stores st = {0};
        c->d.stores(c->d.stores_ud, &st);
        struct op_plan_in in = {.obj = a.obj ? a.obj : obj,
                                .cfg = c->d.cfg,
                                .stores = &st,
                                .now_ns = now_ns(c),
                                .busy = a.busy_set ? a.busy : NULL,
                                .absent = a.absent};
        pthread_mutex_lock(&c->lock);
        in.stopping = c->stopping;
        in.run = run_view(run_find(c, key));
        pthread_mutex_unlock(&c->lock);
        struct op_plan p;
        op_plan_decide(&in, &p);
        json_t *held = a.obj;
        a.obj = NULL;
        enum applied how = apply(c, &p, in.obj, key, &a, &res, err);
        if (a.obj == NULL && how == DECIDE_AGAIN)
            a.obj = held; /* an answer about the same object */
        else
            json_decref(held);
        *after = p.after_ns;
        op_plan_done(&p);
        if (how == APPLIED)
            break;
    }
    json_decref(a.obj);
    return res;
}

/* ---------- reconcile ---------- */

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

/* The object to act on: the cache's, unless our last write is newer. */
static int current(struct op_capture *c, const char *key, const char *ns, const char *name,
                   bool fresh, json_t **ret, struct k8s_error *err)
{
    json_t *obj = k8s_store_get(c->d.conns, ns, name);
    const char *rv = op_str2(obj, "metadata", "resourceVersion");
    pthread_mutex_lock(&c->lock);
    struct run *r = run_find(c, key);
    bool stale = fresh || (r && r->written_rv[0] && (!rv || strcmp(rv, r->written_rv)));
    pthread_mutex_unlock(&c->lock);
    if (stale) {
        k8s_store_release(obj);
        obj = NULL;
        int rc = c->d.api.get(c->d.api.ud, ns, name, &obj, err);
        if (rc < 0 && rc != -K8S_ENOTFOUND)
            return rc;
    }
    *ret = obj;
    return 0;
}

json_t *op_capture_trim(json_t *obj)
{
    const char *phase = op_str2(obj, "status", "phase");
    json_t *st = json_object_get(obj, "status");
    if (!op_phase_terminal(phase) || !json_object_get(st, "hosts"))
        return json_incref(obj);
    json_t *out = json_copy(obj), *slim = json_copy(st); /* shallow: children shared */
    if (!out || !slim || json_object_del(slim, "hosts") < 0 ||
        json_object_set_new(out, "status", slim) < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

enum op_result op_capture_reconcile(struct op_capture *c, const char *key, int64_t *ret_after_ns,
                                    struct k8s_error *reterr)
{
    char ns[256], name[256];
    *ret_after_ns = 0;
    if (!split_key(key, ns, sizeof(ns), name, sizeof(name)))
        return OP_DONE;
    for (int attempt = 0;; attempt++) {
        json_t *obj = NULL;
        if (current(c, key, ns, name, attempt > 0, &obj, reterr) < 0)
            return OP_RETRY;
        enum op_result res = step(c, obj, key, ret_after_ns, reterr);
        k8s_store_release(obj); /* the cache's (shared), or our own read */
        /* a write lost to another writer, or to a deletion the cache has not
         * seen yet: read afresh and redo the step (gone: the run is dropped) */
        if (res != OP_RETRY || attempt + 1 >= CONFLICT_TRIES ||
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
    if (!(c->holds = op_holds_new())) {
        free(c);
        return -K8S_ENOMEM;
    }
    pthread_mutex_init(&c->lock, NULL);
    k8s_cond_init_mono(&c->cond);
    register_metrics(c);
    *ret = c;
    return 0;
}

/* "ns/pod" of each status.hosts[] entry of a resource in Running; NULL
 * when it is not Running or lists no host. */
static char **status_pods(const json_t *obj, size_t *ret_n)
{
    const json_t *hosts = json_object_get(json_object_get(obj, "status"), "hosts");
    const char *pns = op_str2(json_object_get(obj, "spec"), "triggerCapture", "podNamespace");
    const char *ns = pns && *pns ? pns : op_str2(obj, "metadata", "namespace");
    const char *phase = op_str2(obj, "status", "phase");
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

static void adopt_one(void *ud, const char *key, const json_t *obj)
{
    struct op_capture *c = ud;
    size_t n = 0;
    char **pods = status_pods(obj, &n);
    if (!pods)
        return;
    pthread_mutex_lock(&c->lock);
    struct run *r = run_find(c, key);
    if (!r)
        r = run_new(c, key, op_str2(obj, "metadata", "uid"));
    if (r && !r->live && !r->finished && !r->n &&
        op_holds_claim(c->holds, r, key, pods, n, NULL) == 0) {
        r->pods = pods; /* files: the re-dispatch's claim sets them */
        r->n = n;
        pods = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    free_list(pods, n);
}

void op_capture_adopt(struct op_capture *c)
{
    k8s_store_each(c->d.conns, adopt_one, c);
}

size_t op_capture_live(struct op_capture *c)
{
    size_t n = 0;
    pthread_mutex_lock(&c->lock);
    for (struct run *r = c->runs; r; r = r->next)
        n += r->live;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* Wait (lock held) until no run is live or until the monotonic deadline. */
static void wait_live(struct op_capture *c, int64_t until)
{
    struct timespec ts = {until / SEC, until % SEC};
    for (;;) {
        bool any = false;
        for (struct run *r = c->runs; r; r = r->next)
            any |= r->live;
        if (!any || k8s_mono_ns() >= until)
            return;
        pthread_cond_timedwait(&c->cond, &c->lock, &ts);
    }
}

/* Cancel (lock held) the live runs that would still run at `until`
 * (INT64_MAX: every live run), marking them interrupted or discarded. */
static void cancel_live(struct op_capture *c, int64_t until, bool discard, const char *reason)
{
    for (struct run *r = c->runs; r; r = r->next)
        if (r->live && (until == INT64_MAX || r->expected_end_mono > until)) {
            if (discard)
                r->discard = true;
            else
                r->interrupted = true;
            c->d.api.cancel(c->d.api.ud, r->batch, reason);
        }
}

/* Record every outcome now known (shutdown: nobody else reconciles). */
static void record_finished(struct op_capture *c)
{
    for (;;) {
        char *key = NULL;
        pthread_mutex_lock(&c->lock);
        for (struct run *r = c->runs; r && !key; r = r->next)
            if (r->finished && r->key[0])
                key = strdup(r->key);
        pthread_mutex_unlock(&c->lock);
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
        pthread_mutex_lock(&c->lock);
        struct run *r = run_find(c, key);
        if (r && r->finished) /* could not write it: give up on this one */
            run_drop(c, r);
        pthread_mutex_unlock(&c->lock);
        free(key);
    }
}

void op_capture_shutdown(struct op_capture *c, int64_t grace_ns)
{
    static const char why[] = "interrupted: the operator is shutting down";
    int64_t until = k8s_mono_ns() + grace_ns;
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    cancel_live(c, until, false, why); /* cannot end in time: stop it now */
    wait_live(c, until);
    cancel_live(c, INT64_MAX, false, why);
    wait_live(c, k8s_mono_ns() + SEC);
    pthread_mutex_unlock(&c->lock);
    record_finished(c);
}

void op_capture_abandon(struct op_capture *c)
{
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    cancel_live(c, INT64_MAX, true, "cancelled: leadership lost");
    wait_live(c, k8s_mono_ns() + SEC);
    pthread_mutex_unlock(&c->lock);
}

void op_capture_free(struct op_capture *c)
{
    if (!c)
        return;
    op_capture_abandon(c);
    while (c->runs)
        run_drop(c, c->runs);
    op_holds_free(c->holds);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
