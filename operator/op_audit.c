#include "op_audit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_log.h"
#include "op_event.h"
#include "op_pod.h"
#include "op_status.h"

#define OPT_KEY     "managed-mldiagnostics-gke"
#define NAMES_SHOWN 5

struct op_audit {
    struct k8s_client *c;
    op_stores_fn stores;
    void *ud;
    char *identity;
    pthread_mutex_t lock;
    json_t *counts;   /* "Kind/ns/name" → {"n": pods, "names": "a, b"} (lock) */
    json_t *reported; /* "Kind/ns/name" → count last reported by an event */
    size_t total;
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

/* The pod's workload: kind, name, and its cached object (new reference or
 * NULL). */
struct workload {
    const char *kind, *api;
    char name[254];
    json_t *obj;
};

struct ray_scan {
    const char *ns, *cluster;
    json_t *found;
};

static void find_rayjob(void *ud, const char *key, const json_t *rj)
{
    (void)key;
    struct ray_scan *s = ud;
    if (!s->found && is(op_str2(rj, "metadata", "namespace"), s->ns) &&
        is(op_str2(rj, "status", "rayClusterName"), s->cluster))
        s->found = json_incref((json_t *)rj);
}

static bool workload_of(const struct op_pod *pod, const struct op_stores *st, struct workload *w)
{
    const char *ns = pod->namespace;
    const char *js = *pod->jobset ? pod->jobset : NULL;
    const char *lws = *pod->lws ? pod->lws : NULL;
    const char *ray = *pod->ray_cluster ? pod->ray_cluster : NULL;
    *w = (struct workload){0};
    if (js && st->jobsets) {
        *w = (struct workload){"JobSet", "jobset.x-k8s.io/v1alpha2", "", NULL};
        snprintf(w->name, sizeof(w->name), "%s", js);
        w->obj = k8s_store_get(st->jobsets, ns, js);
    } else if (lws && st->lws) {
        *w = (struct workload){"LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", "", NULL};
        snprintf(w->name, sizeof(w->name), "%s", lws);
        w->obj = k8s_store_get(st->lws, ns, lws);
    } else if (ray && st->rayjobs) {
        struct ray_scan s = {ns, ray, NULL};
        k8s_store_each(st->rayjobs, find_rayjob, &s);
        if (s.found) {
            *w = (struct workload){"RayJob", "ray.io/v1", "", s.found};
            snprintf(w->name, sizeof(w->name), "%s", op_str2(s.found, "metadata", "name"));
        }
    }
    return w->obj != NULL;
}

struct scan {
    const struct op_stores *st;
    json_t *counts;
    size_t total;
};

static void count_pod(void *ud, const char *key, const json_t *packed)
{
    (void)key;
    struct scan *s = ud;
    struct op_pod pod;
    if (!op_pod_view(packed, &pod) || !strcmp(pod.namespace, "kube-system") || pod.injected ||
        pod.deleting || is(pod.phase, "Succeeded") || is(pod.phase, "Failed"))
        return;
    if (is(pod.opt_label, "false") || is(pod.opt_annotation, "false"))
        return;
    const char *ns = pod.namespace;
    struct workload w;
    bool has = workload_of(&pod, s->st, &w);
    const char *wl = has ? label(w.obj, "labels", OPT_KEY) : NULL;
    bool in = !is(wl, "false") && (is(pod.opt_label, "true") || is(wl, "true"));
    if (in && has) {
        char k[600];
        snprintf(k, sizeof(k), "%s/%s/%s", w.kind, ns, w.name);
        json_t *e = json_object_get(s->counts, k);
        if (!e) {
            e = json_pack("{s:I, s:s, s:s}", "n", (json_int_t)0, "names", "", "api", w.api);
            json_object_set_new(s->counts, k, e);
        }
        json_int_t n = json_integer_value(json_object_get(e, "n")) + 1;
        json_object_set_new(e, "n", json_integer(n));
        if (n <= NAMES_SHOWN) {
            char names[600];
            snprintf(names, sizeof(names), "%s%s%s", json_string_value(json_object_get(e, "names")),
                     n > 1 ? ", " : "", pod.name);
            json_object_set_new(e, "names", json_string(names));
        }
        s->total++;
    }
    json_decref(w.obj);
}

static void report(struct op_audit *a, const char *key, const json_t *e)
{
    char kind[64], ns[256], name[256];
    if (sscanf(key, "%63[^/]/%255[^/]/%255s", kind, ns, name) != 3)
        return;
    json_int_t n = json_integer_value(json_object_get(e, "n"));
    char msg[1200];
    snprintf(msg, sizeof(msg),
             "%lld pod%s of %s %s/%s %s admitted without ML Diagnostics injection (the webhook "
             "was unavailable or installed after they were created): %s%s",
             (long long)n, n > 1 ? "s" : "", kind, ns, name, n > 1 ? "were" : "was",
             json_string_value(json_object_get(e, "names")), n > NAMES_SHOWN ? ", ..." : "");
    struct op_event_ref ref = {json_string_value(json_object_get(e, "api")), kind, ns, name, NULL};
    struct k8s_error err;
    if (op_event_post(a->c, &ref, "Warning", "PodsNotInjected", msg, a->identity, &err) < 0)
        k8s_log_json(K8S_LOG_WARN, "cannot post an event",
                     json_pack("{s:s, s:s}", "workload", key, "error", err.message));
    else
        k8s_log_json(K8S_LOG_WARN, "pods not injected",
                     json_pack("{s:s, s:I}", "workload", key, "pods", n));
}

void op_audit_scan(struct op_audit *a, bool post_events)
{
    struct op_stores st = {0};
    a->stores(a->ud, &st);
    struct scan s = {&st, json_object(), 0};
    if (!s.counts || !st.pods) {
        json_decref(s.counts);
        return;
    }
    k8s_store_each(st.pods, count_pod, &s);
    const char *key;
    json_t *e;
    json_object_foreach(s.counts, key, e)
    {
        json_int_t n = json_integer_value(json_object_get(e, "n"));
        json_int_t was = json_integer_value(json_object_get(a->reported, key));
        if (post_events && n > was) {
            report(a, key, e);
            json_object_set_new(a->reported, key, json_integer(n));
        }
    }
    json_object_foreach(a->reported, key, e) /* forget workloads that are fine again */
        if (!json_object_get(s.counts, key)) json_object_set_new(a->reported, key, json_integer(0));
    pthread_mutex_lock(&a->lock);
    json_decref(a->counts);
    a->counts = s.counts;
    a->total = s.total;
    pthread_mutex_unlock(&a->lock);
}

static int render(void *ud, const char *name, struct k8s_buf *out)
{
    struct op_audit *a = ud;
    int r = 0;
    const char *key;
    json_t *e;
    pthread_mutex_lock(&a->lock);
    json_object_foreach(a->counts, key, e)
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
    a->counts = json_object();
    a->reported = json_object();
    pthread_mutex_init(&a->lock, NULL);
    if (!a->identity || !a->counts || !a->reported) {
        op_audit_free(a);
        return NULL;
    }
    if (m)
        k8s_metrics_gauge_family(m, "mldiagnostics_operator_uninjected_pods",
                                 "Pods of opted-in workloads admitted without injection, per "
                                 "workload.",
                                 render, a);
    return a;
}

size_t op_audit_total(struct op_audit *a)
{
    pthread_mutex_lock(&a->lock);
    size_t n = a->total;
    pthread_mutex_unlock(&a->lock);
    return n;
}

void op_audit_free(struct op_audit *a)
{
    if (!a)
        return;
    json_decref(a->counts);
    json_decref(a->reported);
    pthread_mutex_destroy(&a->lock);
    free(a->identity);
    free(a);
}
