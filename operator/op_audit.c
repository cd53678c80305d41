#include "op_audit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jget.h"
#include "k8s_kinds.h"
#include "k8s_log.h"
#include "k8s_mlrun.h"
#include "k8s_names.h"
#include "op_event.h"
#include "op_pod.h"
#include "op_status.h"

#define OPT_KEY     K8S_LABEL_MANAGED
#define EXEMPT_KEY  K8S_LABEL_EXEMPT
#define NAMES_SHOWN 5
#define MAX_CLIMB   4

/* What the audit reports, one row each. */
enum { F_UNINJECTED, F_INCOMPLETE, N_FINDINGS };

static const struct {
    const char *metric, *help, *reason;
} findings[N_FINDINGS] = {
    [F_UNINJECTED] = {"mldiagnostics_operator_uninjected_pods",
                      "Pods of opted-in workloads admitted without injection, per workload.",
                      "PodsNotInjected"},
    [F_INCOMPLETE] = {"mldiagnostics_operator_incomplete_identity_pods",
                      "Injected pods whose identity lacks a field the google-cloud-mldiagnostics "
                      "SDK requires (it refuses to start a run), per workload.",
                      "IncompleteIdentity"},
};

struct family {
    struct op_audit *a;
    int f;
};

struct op_audit {
    struct k8s_client *c;
    op_stores_fn stores;
    void *ud;
    char *identity;
    pthread_mutex_t lock;
    /* per finding: "Kind/ns/name" → {"n": pods, "names": "a, b", "api", "missing"} (lock) */
    json_t *counts[N_FINDINGS];
    json_t *reported[N_FINDINGS]; /* "Kind/ns/name" → count last reported by an event */
    size_t total[N_FINDINGS];
    struct family families[N_FINDINGS]; /* what each metric family renders */
};

static const char *label(const json_t *obj, const char *where, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), where), key));
}

static bool is(const char *v, const char *want)
{
    return v && !strcmp(v, want);
}

/* ---------- the pod's workload ---------- */

/* kind, its API version, name, and its cached object (new reference or
 * NULL); row: its kind's row (NULL for a pod). */
struct workload {
    const char *kind, *api;
    char name[254];
    json_t *obj;
    const struct k8s_kind *row;
};

struct status_scan {
    const char *ns, *field, *value;
    json_t *found;
};

static void find_by_status(void *ud, const char *key, const json_t *obj)
{
    (void)key;
    struct status_scan *s = ud;
    if (!s->found && is(k8s_jstr2(obj, "metadata", "namespace"), s->ns) &&
        is(k8s_jstr2(obj, "status", s->field), s->value))
        s->found = json_incref((json_t *)obj);
}

static void set_workload(struct workload *w, const struct k8s_kind *k, json_t *obj)
{
    *w = (struct workload){k->kind, k->api_version, "", obj, k};
    snprintf(w->name, sizeof(w->name), "%s", k8s_jstr2(obj, "metadata", "name"));
}

/* The cached object the pod's selecting label names for workloadRef kind
 * k (a new reference), or NULL; *matched says the pod carries that label. */
static json_t *by_pod_label(const struct op_pod *pod, const struct op_stores *st,
                            const struct k8s_kind *k, bool *matched)
{
    enum k8s_kind_id id = k8s_kind_id(k);
    const char *v = pod->label[k->pods_by];
    /* a kind selecting pods by another's label (TrainJob: its JobSet's) is
     * reached from that one's owner */
    *matched = *v && st->kinds[id] && (k->pods_by_status || k->pods_by == id);
    if (!*matched)
        return NULL;
    if (!k->pods_by_status)
        return k8s_store_get(st->kinds[id], pod->namespace, v);
    struct status_scan s = {pod->namespace, k->pods_by_status, v, NULL};
    k8s_store_each(st->kinds[id], find_by_status, &s);
    return s.found;
}

/* Up the cached controller owners the kind table names (JobSet →
 * TrainJob); an owner not cached leaves the child the workload. */
static void climb(const struct op_stores *st, const char *ns, struct workload *w)
{
    for (int depth = 0; depth < MAX_CLIMB; depth++) {
        const json_t *owner = NULL, *ref;
        size_t i;
        json_array_foreach(json_object_get(json_object_get(w->obj, "metadata"), "ownerReferences"),
                           i, ref) if (json_is_true(json_object_get(ref, "controller"))) owner =
            ref;
        const struct k8s_kind *up =
            k8s_kind_of_ref(json_string_value(json_object_get(owner, "apiVersion")),
                            json_string_value(json_object_get(owner, "kind")));
        const char *oname = json_string_value(json_object_get(owner, "name"));
        if (!k8s_kind_owned_by(w->row, up))
            up = NULL;
        json_t *obj = up && oname && st->kinds[k8s_kind_id(up)]
                          ? k8s_store_get(st->kinds[k8s_kind_id(up)], ns, oname)
                          : NULL;
        if (!obj)
            return;
        k8s_store_release(w->obj);
        set_workload(w, up, obj);
    }
}

/* The workload of a pod from the caches: the first workloadRef kind whose
 * selecting label it carries, then up its owners. */
static bool workload_of(const struct op_pod *pod, const struct op_stores *st, struct workload *w)
{
    *w = (struct workload){0};
    bool matched = false;
    for (int i = 0; i < K8S_KIND_COUNT && !matched; i++) {
        if (!(k8s_kinds[i].flags & K8S_KIND_WORKLOAD_REF))
            continue;
        json_t *obj = by_pod_label(pod, st, &k8s_kinds[i], &matched);
        if (obj)
            set_workload(w, &k8s_kinds[i], obj);
    }
    if (w->obj)
        climb(st, pod->namespace, w);
    return w->obj != NULL;
}

/* The workload an injected pod's identity names (the pod itself when it
 * names none the operator can post an event about). */
static void identity_workload(const struct op_pod *pod, struct workload *w)
{
    *w = (struct workload){"Pod", "v1", "", NULL};
    snprintf(w->name, sizeof(w->name), "%s", pod->name);
    bool self = !strcmp(pod->id_kind, "Pod"); /* a bare pod: it, not its generateName */
    /* the identity names a kind without its group: one row, or the pod */
    const struct k8s_kind *k = k8s_kind_named(pod->id_kind, 0, NULL);
    if (*pod->id_name && !self && k) {
        *w = (struct workload){k->kind, k->api_version, "", NULL};
        snprintf(w->name, sizeof(w->name), "%s", pod->id_name);
    }
}

/* ---------- counting ---------- */

struct scan {
    const struct op_stores *st;
    json_t *counts[N_FINDINGS];
    size_t total[N_FINDINGS];
};

/* The namespace's label value for key (NULL when unknown). */
static const char *ns_label(const struct op_stores *st, const char *ns, const char *key, char *out,
                            size_t cap)
{
    json_t *o = st->namespaces ? k8s_store_get(st->namespaces, "", ns) : NULL;
    const char *v = label(o, "labels", key);
    if (v)
        snprintf(out, cap, "%s", v);
    k8s_store_release(o);
    return v ? out : NULL;
}

/* §3.3 from the caches, for a pod of a cached workload w (every cached
 * kind is one the namespace label covers): the workload's opt-out, then
 * pod, workload and namespace opt-ins. */
static bool opted_in(const struct op_pod *pod, const struct workload *w, const struct op_stores *st)
{
    char buf[16];
    const char *wl = label(w->obj, "labels", OPT_KEY);
    if (is(wl, "false"))
        return false;
    if (is(pod->opt_label, "true") || is(wl, "true"))
        return true;
    return is(ns_label(st, pod->namespace, OPT_KEY, buf, sizeof(buf)), "true");
}

static void count(struct scan *s, int f, const struct workload *w, const char *ns,
                  const struct op_pod *pod)
{
    char k[600];
    snprintf(k, sizeof(k), "%s/%s/%s", w->kind, ns, w->name);
    json_t *e = json_object_get(s->counts[f], k);
    if (!e) {
        e = json_pack("{s:I, s:s, s:s, s:I}", "n", (json_int_t)0, "names", "", "api", w->api,
                      "missing", (json_int_t)0);
        json_object_set_new(s->counts[f], k, e);
    }
    json_int_t n = json_integer_value(json_object_get(e, "n")) + 1;
    json_object_set_new(e, "n", json_integer(n));
    json_int_t missing = json_integer_value(json_object_get(e, "missing")) | pod->id_missing;
    json_object_set_new(e, "missing", json_integer(missing));
    if (n <= NAMES_SHOWN) {
        char names[600];
        snprintf(names, sizeof(names), "%s%s%s", json_string_value(json_object_get(e, "names")),
                 n > 1 ? ", " : "", pod->name);
        json_object_set_new(e, "names", json_string(names));
    }
    s->total[f]++;
}

static void count_pod(void *ud, const char *key, const json_t *packed)
{
    (void)key;
    struct scan *s = ud;
    struct op_pod pod;
    char buf[16];
    if (!op_pod_view(packed, &pod) || !strcmp(pod.namespace, "kube-system") || pod.deleting ||
        is(pod.phase, "Succeeded") || is(pod.phase, "Failed") ||
        is(ns_label(s->st, pod.namespace, EXEMPT_KEY, buf, sizeof(buf)), "true"))
        return;
    struct workload w;
    if (pod.injected) {
        identity_workload(&pod, &w);
        if (pod.id_missing)
            count(s, F_INCOMPLETE, &w, pod.namespace, &pod);
        return;
    }
    if (is(pod.opt_label, "false") || is(pod.opt_annotation, "false"))
        return;
    if (workload_of(&pod, s->st, &w) && opted_in(&pod, &w, s->st))
        count(s, F_UNINJECTED, &w, pod.namespace, &pod);
    k8s_store_release(w.obj);
}

/* ---------- events ---------- */

static void message(int f, const json_t *e, const char *what, char *out, size_t cap)
{
    json_int_t n = json_integer_value(json_object_get(e, "n"));
    const char *names = json_string_value(json_object_get(e, "names"));
    const char *more = n > NAMES_SHOWN ? ", ..." : "";
    if (f == F_UNINJECTED) {
        snprintf(out, cap,
                 "%lld pod%s of %s %s admitted without ML Diagnostics injection (the webhook "
                 "was unavailable or installed after they were created): %s%s",
                 (long long)n, n > 1 ? "s" : "", what, n > 1 ? "were" : "was", names, more);
        return;
    }
    char fields[128];
    k8s_mlrun_names((unsigned)json_integer_value(json_object_get(e, "missing")), false, fields,
                    sizeof(fields));
    snprintf(out, cap,
             "%lld pod%s of %s %s injected with an identity that lacks %s (a --standalone "
             "webhook, a failed lookup or no cluster name): the google-cloud-mldiagnostics SDK "
             "will refuse to start a run in %s: %s%s",
             (long long)n, n > 1 ? "s" : "", what, n > 1 ? "were" : "was", fields,
             n > 1 ? "them" : "it", names, more);
}

static void report(struct op_audit *a, int f, const char *key, const json_t *e)
{
    char kind[64], ns[256], name[256], what[600], msg[1400];
    if (sscanf(key, "%63[^/]/%255[^/]/%255s", kind, ns, name) != 3)
        return;
    snprintf(what, sizeof(what), "%s %s/%s", kind, ns, name);
    message(f, e, what, msg, sizeof(msg));
    struct op_event_ref ref = {json_string_value(json_object_get(e, "api")), kind, ns, name, NULL};
    struct k8s_error err;
    const char *reason = findings[f].reason;
    if (op_event_post(a->c, &ref, "Warning", reason, msg, a->identity, &err) < 0)
        k8s_log_json(
            K8S_LOG_WARN, "cannot post an event",
            json_pack("{s:s, s:s, s:s}", "workload", key, "reason", reason, "error", err.message));
    else
        k8s_log_json(K8S_LOG_WARN, reason,
                     json_pack("{s:s, s:I}", "workload", key, "pods",
                               json_integer_value(json_object_get(e, "n"))));
}

/* Post for workloads whose count grew; forget those that are fine again. */
static void report_grown(struct op_audit *a, int f, const json_t *counts, bool post_events)
{
    const char *key;
    json_t *e;
    json_object_foreach((json_t *)counts, key, e)
    {
        json_int_t n = json_integer_value(json_object_get(e, "n"));
        json_int_t was = json_integer_value(json_object_get(a->reported[f], key));
        if (post_events && n > was) {
            report(a, f, key, e);
            json_object_set_new(a->reported[f], key, json_integer(n));
        }
    }
    json_object_foreach(a->reported[f], key, e) if (!json_object_get(counts, key))
        json_object_set_new(a->reported[f], key, json_integer(0));
}

void op_audit_scan(struct op_audit *a, bool post_events)
{
    struct op_stores st = {0};
    a->stores(a->ud, &st);
    struct scan s = {&st, {json_object(), json_object()}, {0, 0}};
    if (s.counts[F_UNINJECTED] && s.counts[F_INCOMPLETE] && st.pods) {
        k8s_store_each(st.pods, count_pod, &s);
        pthread_mutex_lock(&a->lock); /* the metrics say it before the events do */
        for (int f = 0; f < N_FINDINGS; f++) {
            json_decref(a->counts[f]);
            a->counts[f] = json_incref(s.counts[f]);
            a->total[f] = s.total[f];
        }
        pthread_mutex_unlock(&a->lock);
        for (int f = 0; f < N_FINDINGS; f++)
            report_grown(a, f, s.counts[f], post_events);
    }
    for (int f = 0; f < N_FINDINGS; f++)
        json_decref(s.counts[f]);
}

/* ---------- metrics ---------- */

static int render(void *ud, const char *name, struct k8s_buf *out)
{
    const struct family *fam = ud;
    struct op_audit *a = fam->a;
    int r = 0;
    const char *key;
    json_t *e;
    pthread_mutex_lock(&a->lock);
    json_object_foreach(a->counts[fam->f], key, e)
    {
        char kind[64], ns[256], wname[256], labels[900], ens[300], ename[300];
        if (r || sscanf(key, "%63[^/]/%255[^/]/%255s", kind, ns, wname) != 3)
            continue;
        k8s_metrics_label_escape(ns, ens, sizeof(ens));
        k8s_metrics_label_escape(wname, ename, sizeof(ename));
        snprintf(labels, sizeof(labels), "namespace=\"%s\",kind=\"%s\",name=\"%s\"", ens, kind,
                 ename);
        r = k8s_metrics_family_value(out, name, labels,
                                     (double)json_integer_value(json_object_get(e, "n")));
    }
    pthread_mutex_unlock(&a->lock);
    return r;
}

struct op_audit *op_audit_new(struct k8s_client *c, op_stores_fn stores, void *stores_ud,
                              struct k8s_metrics *m, const char *identity)
{
    struct op_audit *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    *a = (struct op_audit){.c = c, .stores = stores, .ud = stores_ud};
    a->identity = strdup(identity);
    bool ok = a->identity != NULL;
    for (int f = 0; f < N_FINDINGS; f++) {
        a->counts[f] = json_object();
        a->reported[f] = json_object();
        ok = ok && a->counts[f] && a->reported[f];
    }
    pthread_mutex_init(&a->lock, NULL);
    if (!ok) {
        op_audit_free(a);
        return NULL;
    }
    for (int f = 0; m && f < N_FINDINGS; f++) {
        a->families[f] = (struct family){a, f};
        k8s_metrics_gauge_family(m, findings[f].metric, findings[f].help, render, &a->families[f]);
    }
    return a;
}

static size_t total(struct op_audit *a, int f)
{
    pthread_mutex_lock(&a->lock);
    size_t n = a->total[f];
    pthread_mutex_unlock(&a->lock);
    return n;
}

size_t op_audit_total(struct op_audit *a)
{
    return total(a, F_UNINJECTED);
}

size_t op_audit_incomplete(struct op_audit *a)
{
    return total(a, F_INCOMPLETE);
}

void op_audit_free(struct op_audit *a)
{
    if (!a)
        return;
    for (int f = 0; f < N_FINDINGS; f++) {
        json_decref(a->counts[f]);
        json_decref(a->reported[f]);
    }
    pthread_mutex_destroy(&a->lock);
    free(a->identity);
    free(a);
}
