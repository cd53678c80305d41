#include "op_capture.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_log.h"
#include "k8s_time.h"
#include "op_event.h"
#include "op_holds.h"
#include "op_proto.h"
#include "op_spec.h"
#include "op_status.h"

#define SEC            K8S_NSEC_PER_SEC
#define WAIT_RECHECK   (5 * SEC)
#define BUSY_RECHECK   (2 * SEC)
#define CACHE_RECHECK  (SEC / 5)
#define LIST_MAX       20 /* pods named in one message */
#define CONFLICT_TRIES 3

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
    struct k8s_metric *succeeded, *failed, *invalid, *interrupted, *duration, *rpc;
    struct k8s_metric *rpc_code[17];
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

/* Free the pod and result arrays; the holds stay as they are. */
static void run_clear(struct run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->pods[i]);
        free(r->files ? r->files[i] : NULL);
    }
    free(r->pods);
    free(r->files);
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

/* ---------- small helpers ---------- */

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

void op_session_id(time_t start, char out[static 20])
{
    struct tm tm;
    gmtime_r(&start, &tm);
    strftime(out, 20, "%Y_%m_%d_%H_%M_%S", &tm);
}

static json_int_t generation(const json_t *obj)
{
    return json_integer_value(json_object_get(json_object_get(obj, "metadata"), "generation"));
}

static json_t *status_copy(const json_t *obj)
{
    const json_t *st = json_object_get(obj, "status");
    json_t *s = json_is_object(st) ? json_deep_copy(st) : json_object();
    return s ? s : json_object();
}

static void event(struct op_capture *c, const json_t *obj, const char *type, const char *reason,
                  const char *msg)
{
    struct op_event_ref ref = op_event_ref_of(obj, OP_GROUP_VERSION, OP_KIND);
    struct k8s_error err;
    if (op_event_post(c->d.client, &ref, type, reason, msg, c->d.cfg->identity, &err) < 0)
        k8s_log_json(K8S_LOG_WARN, "cannot post an event",
                     json_pack("{s:s, s:s, s:s}", "resource", ref.name ? ref.name : "", "reason",
                               reason, "error", err.message));
}

static void log_transition(const char *key, const char *phase, const char *msg)
{
    k8s_log_json(K8S_LOG_INFO, "capture",
                 json_pack("{s:s, s:s, s:s}", "resource", key, "phase", phase, "message", msg));
}

/* Write status; on success remember the new resourceVersion in run (if
 * any) and return the server's object in *ret (may be NULL). */
static int put_status(struct op_capture *c, const json_t *obj, json_t *status, const char *key,
                      json_t **ret, struct k8s_error *err)
{
    json_t *done = NULL;
    int r = op_status_put(c->d.client, obj, status, &done, err);
    if (r < 0)
        return r;
    const char *rv = op_str2(done, "metadata", "resourceVersion");
    pthread_mutex_lock(&c->lock);
    struct run *run = run_find(c, key);
    if (!run)
        run = run_new(c, key, op_str2(done, "metadata", "uid"));
    if (run && rv)
        snprintf(run->written_rv, sizeof(run->written_rv), "%s", rv);
    pthread_mutex_unlock(&c->lock);
    if (ret)
        *ret = done;
    else
        json_decref(done);
    return 0;
}

/* ---------- terminal outcomes ---------- */

static int fail_now(struct op_capture *c, const json_t *obj, const char *key, const char *reason,
                    const char *msg, struct k8s_error *err)
{
    time_t now = time(NULL);
    char when[21];
    k8s_time_rfc3339(now, when);
    json_t *st = status_copy(obj);
    json_object_set_new(st, "phase", json_string("Failed"));
    json_object_set_new(st, "message", json_string(msg));
    json_object_set_new(st, "completionTime", json_string(when));
    json_object_set_new(st, "observedGeneration", json_integer(generation(obj)));
    json_object_set_new(st, "captureResult",
                        json_pack("{s:s, s:s}", "status", "Failed", "errorMessage", msg));
    if (!strcmp(reason, "InvalidSpec"))
        op_condition_set(st, "Valid", "False", reason, msg, generation(obj), now);
    op_condition_set(st, "Complete", "True", "Failed", msg, generation(obj), now);
    int r = put_status(c, obj, st, key, NULL, err);
    if (r < 0)
        return r;
    k8s_metric_add(!strcmp(reason, "InvalidSpec") ? c->m.invalid : c->m.failed, 1);
    log_transition(key, "Failed", msg);
    event(c, obj, "Warning", reason, msg);
    return 0;
}

/* "pod a: INTERNAL: Another profiling session active.; pod b: ..." */
static void failure_list(const struct run *r, char *out, size_t cap, size_t *ret_failed)
{
    size_t failed = 0, n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < r->n; i++) {
        const struct op_host_result *h = &r->results[i];
        if (h->code == OP_GRPC_OK)
            continue;
        if (failed++ < LIST_MAX && n < cap)
            n += (size_t)snprintf(out + n, cap - n, "%spod %s: %s%s%s", failed > 1 ? "; " : "",
                                  strchr(r->pods[i], '/') + 1, op_grpc_code_name(h->code),
                                  h->message[0] ? ": " : "", h->message);
    }
    if (failed > LIST_MAX && n < cap)
        snprintf(out + n, cap - n, "; and %zu more", failed - LIST_MAX);
    *ret_failed = failed;
}

static json_t *hosts_json(const struct run *r, const char *phase_override)
{
    json_t *hosts = json_array();
    for (size_t i = 0; hosts && i < r->n; i++) {
        const struct op_host_result *h = r->results ? &r->results[i] : NULL;
        const char *phase = phase_override          ? phase_override
                            : h->code == OP_GRPC_OK ? "Succeeded"
                                                    : "Failed";
        json_t *o = json_pack("{s:s, s:s}", "pod", strchr(r->pods[i], '/') + 1, "phase", phase);
        if (o && h && !phase_override && h->code == OP_GRPC_OK)
            json_object_set_new(o, "outputFile", json_string(r->files[i]));
        if (o && h && !phase_override && h->code != OP_GRPC_OK) {
            char e[400];
            snprintf(e, sizeof(e), "%s%s%s", op_grpc_code_name(h->code), h->message[0] ? ": " : "",
                     h->message);
            json_object_set_new(o, "error", json_string(e));
        }
        json_array_append_new(hosts, o);
    }
    return hosts;
}

static void observe(struct op_capture *c, const struct run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const struct op_host_result *h = &r->results[i];
        k8s_metric_observe_ns(c->m.rpc, h->done_ns - h->sent_ns);
        if (h->code >= 0 && h->code <= 16)
            k8s_metric_add(c->m.rpc_code[h->code], 1);
    }
}

/* Results are in: write Succeeded or Failed. */
static int finish(struct op_capture *c, struct run *run, const json_t *obj, const char *key,
                  struct k8s_error *err)
{
    char failures[4096], msg[1400], when[21];
    const char *where = run->location;
    size_t failed;
    time_t now = time(NULL);
    failure_list(run, failures, sizeof(failures), &failed);
    bool ok = failed == 0;
    if (ok)
        snprintf(msg, sizeof(msg), "captured %zu host%s into %s", run->n, run->n > 1 ? "s" : "",
                 where);
    else
        snprintf(msg, sizeof(msg), "%zu of %zu host%s failed", failed, run->n,
                 run->n > 1 ? "s" : "");
    k8s_time_rfc3339(now, when);
    json_t *st = status_copy(obj);
    json_object_set_new(st, "phase", json_string(ok ? "Succeeded" : "Failed"));
    json_object_set_new(st, "message", json_string(msg));
    json_object_set_new(st, "completionTime", json_string(when));
    json_object_set_new(st, "observedGeneration", json_integer(generation(obj)));
    json_object_set_new(st, "hosts", hosts_json(run, NULL));
    json_t *res =
        json_pack("{s:s, s:s}", "status", ok ? "Succeeded" : "Failed", "outputLocation", where);
    if (res && !ok)
        json_object_set_new(res, "errorMessage", json_string(failures));
    json_object_set_new(st, "captureResult", res);
    op_condition_set(st, "Complete", "True", ok ? "Succeeded" : "Failed", ok ? msg : failures,
                     generation(obj), now);
    int r = put_status(c, obj, st, key, NULL, err);
    if (r < 0)
        return r;
    observe(c, run);
    time_t started = 0;
    const char *st_time = op_str2(obj, "status", "startTime");
    if (st_time && k8s_time_parse_rfc3339(st_time, &started) == 0)
        k8s_metric_observe_ns(c->m.duration, (int64_t)(now - started) * SEC);
    k8s_metric_add(ok ? c->m.succeeded : c->m.failed, 1);
    int64_t first = 0, last = 0; /* when the requests left, for the log */
    for (size_t i = 0; i < run->n; i++) {
        int64_t w = run->results[i].wire_ns;
        if (w && (!first || w < first))
            first = w;
        if (w > last)
            last = w;
    }
    k8s_log_json(K8S_LOG_INFO, "capture",
                 json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "resource", key, "phase",
                           ok ? "Succeeded" : "Failed", "message", ok ? msg : failures, "hosts",
                           (json_int_t)run->n, "firstSentNs", (json_int_t)first, "lastSentNs",
                           (json_int_t)last));
    event(c, obj, ok ? "Normal" : "Warning", ok ? "Succeeded" : "Failed", ok ? msg : failures);
    pthread_mutex_lock(&c->lock);
    run_release(c, run); /* keep written_rv: a stale cache is read through */
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* Shutdown cancelled the RPCs: keep Running, say so, let the next leader
 * resume. */
static int record_interrupted(struct op_capture *c, struct run *run, const json_t *obj,
                              const char *key, struct k8s_error *err)
{
    char msg[400];
    int max = (int)c->d.cfg->capture_max_retries + 1;
    snprintf(msg, sizeof(msg),
             "interrupted: the operator shut down during attempt %d of %d (session %s); "
             "the next leader resumes it",
             run->attempt, max, run->session);
    json_t *st = status_copy(obj);
    json_object_set_new(st, "message", json_string(msg));
    json_object_set_new(st, "hosts", hosts_json(run, "Interrupted"));
    op_condition_set(st, "Complete", "False", "Interrupted", msg, generation(obj), time(NULL));
    int r = put_status(c, obj, st, key, NULL, err);
    if (r < 0)
        return r;
    pthread_mutex_lock(&c->lock);
    run_release(c, run);
    pthread_mutex_unlock(&c->lock);
    k8s_metric_add(c->m.interrupted, 1);
    log_transition(key, "Running", msg);
    event(c, obj, "Warning", "Interrupted", msg);
    return 0;
}

/* ---------- dispatch ---------- */

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

/* Claim the targets for run (op_holds: the check and the taking are one
 * step, so of two workers deciding at once one wins); false with *why,
 * naming the pod and the capture holding it, when one is busy. */
static bool claim(struct op_capture *c, struct run *run, const struct op_spec *s,
                  const struct op_targets *t, const char *storage_root, char *why, size_t cap)
{
    char **pods = calloc(t->n, sizeof(*pods)), **files = calloc(t->n, sizeof(*files));
    bool ok = pods && files;
    for (size_t i = 0; ok && i < t->n; i++) {
        char host[320], file[320];
        struct op_relay_target rt = {.pod = t->v[i].pod, .ip = t->v[i].ip};
        op_relay_host_name(&rt, s->port, !c->d.cfg->disable_hostname_override, host, sizeof(host));
        op_relay_file_stem(host, file, sizeof(file));
        ok = asprintf(&pods[i], "%s/%s", s->pod_namespace, t->v[i].pod) > 0 &&
             asprintf(&files[i], "%s/%s.xplane.pb", storage_root, file) > 0;
    }
    struct k8s_error e = {0};
    if (ok && op_holds_claim(c->holds, run, run->key, pods, t->n, &e) == 0) {
        pthread_mutex_lock(&c->lock);
        run_clear(run); /* what it held before is now pods[] */
        run->pods = pods;
        run->files = files;
        run->n = t->n;
        pthread_mutex_unlock(&c->lock);
        return true;
    }
    snprintf(why, cap, "%s", ok ? e.message : "out of memory");
    free_list(pods, t->n);
    free_list(files, t->n);
    return false;
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
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    if (requeue && !c->stopping)
        op_queue_add(c->d.queue, requeue);
    free(requeue);
}

struct dispatch {
    const json_t *obj;
    const char *key;
    const struct op_spec *spec;
    const struct op_targets *t;
    int attempt;
    const char *session; /* NULL: a new one from the start time */
};

static json_t *running_status(struct op_capture *c, const struct dispatch *x, struct run *run,
                              time_t now)
{
    char when[21], msg[400];
    int max = (int)c->d.cfg->capture_max_retries + 1;
    k8s_time_rfc3339(now, when);
    snprintf(msg, sizeof(msg), "capturing %zu host%s for %llds (session %s, attempt %d of %d)",
             x->t->n, x->t->n > 1 ? "s" : "", (long long)x->spec->duration_s, run->session,
             x->attempt, max);
    json_t *st = status_copy(x->obj);
    json_object_set_new(st, "phase", json_string("Running"));
    json_object_set_new(st, "message", json_string(msg));
    if (!json_is_string(json_object_get(st, "startTime")))
        json_object_set_new(st, "startTime", json_string(when));
    json_object_set_new(st, "sessionId", json_string(run->session));
    json_object_set_new(st, "attempts", json_integer(x->attempt));
    json_object_set_new(st, "observedGeneration", json_integer(generation(x->obj)));
    json_object_set_new(st, "hosts", hosts_json(run, "Running"));
    json_object_del(st, "captureResult");
    json_object_del(st, "completionTime");
    op_condition_set(st, "Valid", "True", "Valid", "the spec is valid", generation(x->obj), now);
    op_condition_set(st, "TargetsReady", "True", "Ready", "every target pod is Running",
                     generation(x->obj), now);
    op_condition_set(st, "Complete", "False", "InProgress", msg, generation(x->obj), now);
    return st;
}

static int submit(struct op_capture *c, const struct dispatch *x, struct run *run, const char *root,
                  int64_t start_ns, struct k8s_error *err)
{
    struct op_relay_target *tg = calloc(x->t->n, sizeof(*tg));
    if (!tg)
        return k8s_error_set(err, -K8S_ENOMEM, "out of memory");
    for (size_t i = 0; i < x->t->n; i++)
        tg[i] = (struct op_relay_target){x->t->v[i].pod, x->t->v[i].ip};
    int64_t dur_ms = x->spec->duration_s * 1000, delay_ms = op_start_delay_ms(x->t->n);
    int64_t deadline = (dur_ms * 2 > 60000 ? dur_ms * 2 : 60000) + delay_ms;
    int64_t ceiling = c->d.cfg->sidecar_timeout_ns / K8S_NSEC_PER_MSEC;
    struct op_batch_spec b = {
        .targets = tg,
        .n = x->t->n,
        .port = x->spec->port,
        .duration_ms = (uint64_t)dur_ms,
        .start_timestamp_ns = (uint64_t)start_ns,
        .repository_root = root,
        .session_id = run->session,
        .host_name_override = !c->d.cfg->disable_hostname_override,
        .deadline_ms = deadline < ceiling ? deadline : ceiling,
        .max_retries = (int)c->d.cfg->capture_max_retries,
    };
    pthread_mutex_lock(&c->lock);
    int r = op_relay_submit(c->d.relay, &b, on_batch_done, c, &run->batch);
    if (r == 0) {
        run->live = true;
        run->attempt = x->attempt;
        run->expected_end_mono = k8s_mono_ns() + (delay_ms + dur_ms + 2000) * K8S_NSEC_PER_MSEC;
    }
    pthread_mutex_unlock(&c->lock);
    free(tg);
    return r < 0 ? k8s_error_set(err, r, "cannot queue the RPCs") : 0;
}

/* Write Running, then send the RPCs. */
static enum op_result dispatch(struct op_capture *c, const struct dispatch *x, int64_t *after,
                               char *why, size_t whycap, struct k8s_error *err)
{
    pthread_mutex_lock(&c->lock);
    struct run *run = run_find(c, x->key);
    if (!run)
        run = run_new(c, x->key, op_str2(x->obj, "metadata", "uid"));
    pthread_mutex_unlock(&c->lock);
    if (!run)
        return k8s_error_set(err, -K8S_ENOMEM, "out of memory"), OP_RETRY;
    int64_t now_ns = k8s_real_ns(),
            start_ns = now_ns + op_start_delay_ms(x->t->n) * K8S_NSEC_PER_MSEC;
    if (x->session)
        snprintf(run->session, sizeof(run->session), "%s", x->session);
    else
        op_session_id((time_t)(start_ns / SEC), run->session);
    char root[1100];
    snprintf(root, sizeof(root), "%s/plugins/profile", x->spec->storage);
    snprintf(run->location, sizeof(run->location), "%s/%s", root, run->session);
    if (!claim(c, run, x->spec, x->t, run->location, why, whycap)) {
        *after = BUSY_RECHECK;
        return OP_REQUEUE_AFTER; /* the caller keeps the message in Pending */
    }
    json_t *st = running_status(c, x, run, (time_t)(now_ns / SEC));
    int r = put_status(c, x->obj, st, x->key, NULL, err);
    r = r ? r : submit(c, x, run, root, start_ns, err);
    if (r < 0) {
        pthread_mutex_lock(&c->lock);
        if (x->session) /* still Running in status: it keeps its pods */
            run_clear(run);
        else
            run_release(c, run);
        pthread_mutex_unlock(&c->lock);
        return OP_RETRY;
    }
    char msg[300];
    snprintf(msg, sizeof(msg), "%s %zu host%s, session %s, attempt %d",
             x->attempt > 1 ? "resumed the capture on" : "capturing", x->t->n,
             x->t->n > 1 ? "s" : "", run->session, x->attempt);
    log_transition(x->key, "Running", msg);
    event(c, x->obj, "Normal", x->attempt > 1 ? "Resumed" : "Started", msg);
    return OP_DONE;
}

/* ---------- the phases ---------- */

/* Pending with msg; *ret (when not NULL) gets the object as written, or a
 * new reference to obj when nothing changed. */
static int write_pending(struct op_capture *c, const json_t *obj, const char *key, const char *msg,
                         bool ready, json_t **ret, struct k8s_error *err)
{
    time_t now = time(NULL);
    json_t *st = status_copy(obj);
    const char *was = json_string_value(json_object_get(st, "message"));
    const char *phase = json_string_value(json_object_get(st, "phase"));
    bool was_pending = phase && !strcmp(phase, "Pending");
    bool same = was && !strcmp(was, msg) && was_pending; /* was and phase die below */
    json_object_set_new(st, "phase", json_string("Pending"));
    json_object_set_new(st, "message", json_string(msg));
    json_object_set_new(st, "observedGeneration", json_integer(generation(obj)));
    op_condition_set(st, "Valid", "True", "Valid", "the spec is valid", generation(obj), now);
    if (!ready)
        op_condition_set(st, "TargetsReady", "False", "Waiting", msg, generation(obj), now);
    op_condition_set(st, "Complete", "False", "Pending", msg, generation(obj), now);
    if (same) { /* nothing new to say */
        json_decref(st);
        if (ret)
            *ret = json_incref((json_t *)obj);
        return 0;
    }
    int r = put_status(c, obj, st, key, ret, err);
    if (r == 0 && !was_pending) {
        log_transition(key, "Pending", msg);
        event(c, obj, "Normal", "Pending", msg);
    }
    return r;
}

/* The cache said "not found": does the API server agree? A cache can lag a
 * pod or workload created just before the capture. */
static bool confirmed_absent(struct op_capture *c, const struct op_targets *t)
{
    for (size_t i = 0; i < t->n_absent; i++) {
        json_t *o = NULL;
        struct k8s_error err;
        int r = k8s_get_json(c->d.client, t->absent[i], K8S_ACCEPT_META, 5000, &o, &err);
        json_decref(o);
        if (r != -K8S_ENOTFOUND)
            return false;
    }
    return true;
}

static enum op_result pending(struct op_capture *c, const json_t *obj, const char *key,
                              const struct op_spec *s, int64_t *after, struct k8s_error *err)
{
    struct op_stores st = {0};
    struct op_targets t;
    c->d.stores(c->d.stores_ud, &st);
    if (op_targets_resolve(s, &st, &t) < 0)
        return k8s_error_set(err, -K8S_ENOMEM, "out of memory"), OP_RETRY;
    enum op_result res = OP_DONE;
    int r = 0;
    struct k8s_error verr;
    if (t.state == OP_TARGETS_FAIL && !confirmed_absent(c, &t)) {
        *after = CACHE_RECHECK; /* there after all: wait for the cache to catch up */
        res = OP_REQUEUE_AFTER;
    } else if (t.state == OP_TARGETS_FAIL) {
        r = fail_now(c, obj, key, "TargetsNotFound", t.why, err);
    } else if (t.state == OP_TARGETS_WAIT) {
        time_t since = op_condition_since(json_object_get(obj, "status"), "TargetsReady", "False");
        int64_t limit = c->d.cfg->pod_ready_timeout_ns / SEC;
        if (since && time(NULL) - since >= limit) {
            char msg[1200];
            snprintf(msg, sizeof(msg), "target pods not ready after %llds: %s", (long long)limit,
                     t.why);
            r = fail_now(c, obj, key, "TargetsNotReady", msg, err);
        } else {
            r = write_pending(c, obj, key, t.why, false, NULL, err);
            *after = WAIT_RECHECK < c->d.cfg->pod_ready_timeout_ns / 4
                         ? WAIT_RECHECK
                         : c->d.cfg->pod_ready_timeout_ns / 4;
            res = OP_REQUEUE_AFTER;
        }
    } else if (op_spec_check_sidecar(s, t.n, c->d.cfg->sidecar_timeout_ns, &verr) < 0) {
        r = fail_now(c, obj, key, "InvalidSpec", verr.message, err); /* more hosts, longer delay */
    } else {
        const struct dispatch x = {obj, key, s, &t, 1, NULL};
        char busy[700] = "";
        res = dispatch(c, &x, after, busy, sizeof(busy), err);
        if (res == OP_REQUEUE_AFTER) /* pods busy: say so */
            r = write_pending(c, obj, key, busy, true, NULL, err);
    }
    op_targets_done(&t);
    return r < 0 ? OP_RETRY : res;
}

/* Running in the status, nothing in flight here: resume or give up. */
static enum op_result resume(struct op_capture *c, const json_t *obj, const char *key,
                             const struct op_spec *s, int64_t *after, struct k8s_error *err)
{
    const json_t *status = json_object_get(obj, "status");
    json_int_t attempts = json_integer_value(json_object_get(status, "attempts"));
    const char *session = json_string_value(json_object_get(status, "sessionId"));
    const char *last = json_string_value(json_object_get(status, "message"));
    if (attempts > c->d.cfg->capture_max_retries || !session || strlen(session) != 19) {
        char msg[900];
        snprintf(msg, sizeof(msg),
                 "interrupted %lld time%s, no attempts left (--capture-max-"
                 "retries=%lld); last: %s",
                 (long long)attempts, attempts == 1 ? "" : "s",
                 (long long)c->d.cfg->capture_max_retries, last ? last : "-");
        return fail_now(c, obj, key, "Interrupted", msg, err) < 0 ? OP_RETRY : OP_DONE;
    }
    struct op_stores st = {0};
    struct op_targets t;
    c->d.stores(c->d.stores_ud, &st);
    if (op_targets_resolve(s, &st, &t) < 0)
        return k8s_error_set(err, -K8S_ENOMEM, "out of memory"), OP_RETRY;
    enum op_result res;
    struct k8s_error verr;
    if (t.state != OP_TARGETS_READY) {
        char msg[1200];
        snprintf(msg, sizeof(msg), "cannot resume the interrupted capture: %s", t.why);
        res = fail_now(c, obj, key, "TargetsNotReady", msg, err) < 0 ? OP_RETRY : OP_DONE;
    } else if (op_spec_check_sidecar(s, t.n, c->d.cfg->sidecar_timeout_ns, &verr) < 0) {
        res = fail_now(c, obj, key, "InvalidSpec", verr.message, err) < 0 ? OP_RETRY : OP_DONE;
    } else {
        const struct dispatch x = {obj, key, s, &t, (int)attempts + 1, session};
        char busy[700];
        res = dispatch(c, &x, after, busy, sizeof(busy), err);
    }
    op_targets_done(&t);
    return res;
}

/* ---------- reconcile ---------- */

/* Drop or cancel what we hold for key when the resource is gone or was
 * replaced by another of the same name (uid NULL: gone). */
static void forget_other(struct op_capture *c, const char *key, const char *uid)
{
    pthread_mutex_lock(&c->lock);
    struct run *r = run_find(c, key);
    if (r && (!uid || strcmp(r->uid, uid))) {
        if (r->live) {
            r->discard = true;
            op_relay_cancel(c->d.relay, r->batch, "cancelled: the resource was deleted");
            /* the relay's callback drops it; a re-created resource gets a new run */
            r->key[0] = '\0';
        } else {
            run_drop(c, r);
        }
    }
    pthread_mutex_unlock(&c->lock);
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
        int rc = op_status_get(c->d.client, ns, name, &obj, err);
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
    if (!phase || (strcmp(phase, "Succeeded") && strcmp(phase, "Failed")) ||
        !json_object_get(st, "hosts"))
        return json_incref(obj);
    json_t *out = json_copy(obj), *slim = json_copy(st); /* shallow: children shared */
    if (!out || !slim || json_object_del(slim, "hosts") < 0 ||
        json_object_set_new(out, "status", slim) < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static enum op_result step(struct op_capture *c, const json_t *obj, const char *key, int64_t *after,
                           struct k8s_error *err)
{
    const char *phase = op_str2(obj, "status", "phase");
    pthread_mutex_lock(&c->lock);
    struct run *run = run_find(c, key);
    bool live = run && run->live, finished = run && run->finished;
    pthread_mutex_unlock(&c->lock);
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) {
        if (run && !live && !finished) {
            pthread_mutex_lock(&c->lock);
            run_drop(c, run);
            pthread_mutex_unlock(&c->lock);
        }
        return OP_DONE; /* terminal resources are not re-run */
    }
    if (live)
        return OP_DONE;
    if (finished)
        return (run->interrupted ? record_interrupted(c, run, obj, key, err)
                                 : finish(c, run, obj, key, err)) < 0
                   ? OP_RETRY
                   : OP_DONE;
    if (c->stopping)
        return OP_DONE;
    struct op_spec s;
    struct k8s_error verr;
    struct op_spec_limits lim = {c->d.cfg->max_capture_duration_ns, c->d.cfg->allow_cross_namespace,
                                 c->d.cfg->sidecar_timeout_ns};
    if (op_spec_parse(obj, &lim, &s, &verr) < 0)
        return fail_now(c, obj, key, "InvalidSpec", verr.message, err) < 0 ? OP_RETRY : OP_DONE;
    enum op_result res = OP_DONE;
    if (phase && !strcmp(phase, "Running"))
        res = resume(c, obj, key, &s, after, err);
    else if (phase && !strcmp(phase, "Pending"))
        res = pending(c, obj, key, &s, after, err);
    else {
        json_t *now = NULL; /* go on from the object as written: the cache lags */
        if (write_pending(c, obj, key, "validated; resolving the target pods", true, &now, err) < 0)
            res = OP_RETRY;
        else
            res = pending(c, now, key, &s, after, err);
        k8s_store_release(now); /* may be obj itself: the cache's */
    }
    op_spec_done(&s);
    return res;
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
        int r = current(c, key, ns, name, attempt > 0, &obj, reterr);
        if (r < 0)
            return OP_RETRY;
        const json_t *meta = json_object_get(obj, "metadata");
        if (!obj || json_object_get(meta, "deletionTimestamp")) {
            forget_other(c, key, NULL);
            k8s_store_release(obj);
            return OP_DONE;
        }
        forget_other(c, key, json_string_value(json_object_get(meta, "uid")));
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
    if (!m)
        return;
    const char *n = "mldiagnostics_operator_captures_total", *h = "Captures by outcome.";
    c->m.succeeded = k8s_metrics_counter(m, n, h, "outcome=\"succeeded\"");
    c->m.failed = k8s_metrics_counter(m, n, h, "outcome=\"failed\"");
    c->m.invalid = k8s_metrics_counter(m, n, h, "outcome=\"invalid\"");
    c->m.interrupted = k8s_metrics_counter(m, n, h, "outcome=\"interrupted\"");
    c->m.duration = k8s_metrics_histogram(m, "mldiagnostics_operator_capture_duration_seconds",
                                          "From a capture's start to its outcome.", NULL, secs,
                                          sizeof(secs) / sizeof(secs[0]));
    c->m.rpc = k8s_metrics_histogram(m, "mldiagnostics_operator_rpc_duration_seconds",
                                     "Profile RPC latency per host, retries included.", NULL, secs,
                                     sizeof(secs) / sizeof(secs[0]));
    for (int i = 0; i <= 16; i++) {
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

void op_capture_shutdown(struct op_capture *c, int64_t grace_ns)
{
    int64_t until = k8s_mono_ns() + grace_ns;
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    for (struct run *r = c->runs; r; r = r->next)
        if (r->live && r->expected_end_mono > until) { /* cannot end in time: stop it now */
            r->interrupted = true;
            op_relay_cancel(c->d.relay, r->batch, "interrupted: the operator is shutting down");
        }
    wait_live(c, until);
    for (struct run *r = c->runs; r; r = r->next)
        if (r->live) {
            r->interrupted = true;
            op_relay_cancel(c->d.relay, r->batch, "interrupted: the operator is shutting down");
        }
    wait_live(c, k8s_mono_ns() + SEC);
    pthread_mutex_unlock(&c->lock);
    /* record every outcome now known; nobody else runs reconciles */
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
            op_status_get(c->d.client, ns, name, &obj, &err) == 0)
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

void op_capture_abandon(struct op_capture *c)
{
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    for (struct run *r = c->runs; r; r = r->next)
        if (r->live) {
            r->discard = true;
            op_relay_cancel(c->d.relay, r->batch, "cancelled: leadership lost");
        }
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
