#include "op_targets.h"

#include "k8s_jget.h"
#include "op_pod.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_MAX 10 /* pods named in a message */

void op_targets_done(struct op_targets *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].pod);
        free(t->v[i].ip);
        free(t->v[i].hostname);
    }
    free(t->v);
    t->v = NULL;
    t->n = 0;
    for (size_t i = 0; i < t->n_absent; i++)
        free(t->absent[i]);
    t->n_absent = 0;
}

/* Remember the API path of something the cache lacks (the first few). */
static void note_absent(struct op_targets *t, const char *prefix, const char *ns,
                        const char *plural, const char *name)
{
    char *path = NULL;
    if (t->n_absent < sizeof(t->absent) / sizeof(t->absent[0]) &&
        asprintf(&path, "%s/namespaces/%s/%s/%s", prefix, ns, plural, name) > 0)
        t->absent[t->n_absent++] = path;
}

/* ---------- collecting pods ---------- */

struct found {
    json_t **pods;
    size_t n, cap;
    bool oom;
};

static void keep(struct found *f, const json_t *pod)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        json_t **p = realloc(f->pods, cap * sizeof(*p));
        if (!p) {
            f->oom = true;
            return;
        }
        f->pods = p;
        f->cap = cap;
    }
    f->pods[f->n++] = json_incref((json_t *)pod);
}

struct by_label {
    const char *ns, *value;
    enum k8s_kind_id label; /* whose pod label */
    struct found *f;
};

static void match_label(void *ud, const char *key, const json_t *packed)
{
    (void)key;
    struct by_label *q = ud;
    struct op_pod p;
    if (!op_pod_view(packed, &p))
        return;
    const char *v = p.label[q->label];
    /* finished pods (an earlier attempt of the workload) are not targets */
    if (!strcmp(p.namespace, q->ns) && !strcmp(v, q->value) && strcmp(p.phase, "Succeeded") &&
        strcmp(p.phase, "Failed"))
        keep(q->f, packed);
}

static const char *name_of(const json_t *packed)
{
    struct op_pod p;
    return op_pod_view(packed, &p) ? p.name : "";
}

static int pod_name_cmp(const void *a, const void *b)
{
    return strcmp(name_of(*(json_t *const *)a), name_of(*(json_t *const *)b));
}

/* The pod a host was read from (its packed form's view, and its labels
 * as JSON when a selector reads them). */
struct host_pod {
    struct op_pod view;
    json_t *labels;
};

static bool read_hosts(const struct op_spec *s, const struct k8s_kind *pods_of,
                       const struct found *f, struct host_pod *hp, struct op_host *v)
{
    for (size_t i = 0; i < f->n; i++) {
        if (!op_pod_view(f->pods[i], &hp[i].view))
            memset(&hp[i].view, 0, sizeof(hp[i].view));
        v[i] = (struct op_host){.pod = f->pods[i], .name = hp[i].view.name ? hp[i].view.name : ""};
        op_host_read(pods_of, op_pod_label, &hp[i].view, &v[i]);
        if (s->hosts.selector && !(hp[i].labels = op_pod_labels_json(&hp[i].view)))
            return false;
        v[i].labels = hp[i].labels;
    }
    return true;
}

/* Keep in f the hosts spec.triggerCapture.hosts takes (the others are
 * released); none taken: wait, saying so. */
static void choose(const struct op_spec *s, const struct k8s_kind *pods_of, struct found *f,
                   struct op_targets *t)
{
    size_t n = f->n, kept = 0;
    struct host_pod *hp = calloc(n, sizeof(*hp));
    struct op_host *v = calloc(n, sizeof(*v));
    if (!hp || !v || !read_hosts(s, pods_of, f, hp, v) ||
        op_hosts_choose(&s->hosts, v, f->n, &kept) < 0) {
        f->oom = true;
    } else {
        for (size_t i = 0; i < f->n; i++)
            f->pods[i] = (json_t *)v[i].pod; /* the taken first, then the others */
        for (size_t i = kept; i < f->n; i++)
            k8s_store_release(f->pods[i]);
        t->of = f->n;
        f->n = kept;
    }
    for (size_t i = 0; hp && i < n; i++)
        json_decref(hp[i].labels);
    free(hp);
    free(v);
    if (!f->oom && !kept) {
        char want[300];
        t->state = OP_TARGETS_WAIT;
        snprintf(t->why, sizeof(t->why), "hosts (%s) takes none of the %zu pods of %s %s/%s yet",
                 op_hosts_describe(&s->hosts, want, sizeof(want)), t->of, s->ref_kind->kind,
                 s->pod_namespace, s->ref_name);
    }
}

/* The pods of the workload into f; WAIT/FAIL reasons into t. */
static void workload_pods(const struct op_spec *s, const struct op_stores *st, struct found *f,
                          struct op_targets *t)
{
    const struct k8s_kind *k = s->ref_kind;
    enum k8s_kind_id id = k8s_kind_id(k);
    json_t *w = st->kinds[id] ? k8s_store_get(st->kinds[id], s->pod_namespace, s->ref_name) : NULL;
    if (!w) {
        note_absent(t, k->prefix, s->pod_namespace, k->plural, s->ref_name);
        t->state = OP_TARGETS_FAIL;
        snprintf(t->why, sizeof(t->why), "%s %s/%s not found%s", k->kind, s->pod_namespace,
                 s->ref_name, st->absent[id] ? " (its CRD is not installed)" : "");
        return;
    }
    struct by_label q = {.ns = s->pod_namespace, .value = s->ref_name, .label = k->pods_by, .f = f};
    if (k->pods_by_status)
        q.value = k8s_jstr2(w, "status", k->pods_by_status);
    if (!q.value || !*q.value) {
        t->state = OP_TARGETS_WAIT;
        snprintf(t->why, sizeof(t->why), "%s %s/%s has no %s yet", k->kind, s->pod_namespace,
                 s->ref_name, k8s_kinds[k->pods_by].kind);
    } else {
        k8s_store_each(st->pods, match_label, &q);
        if (!f->n && !f->oom) {
            t->state = OP_TARGETS_WAIT;
            snprintf(t->why, sizeof(t->why), "%s %s/%s has no pods yet", k->kind, s->pod_namespace,
                     s->ref_name);
        } else if (s->hosts.set && !f->oom) {
            choose(s, &k8s_kinds[k->pods_by], f, t);
        }
    }
    k8s_store_release(w);
}

/* The named pods into f; a missing one fails the capture. */
static void named_pods(const struct op_spec *s, const struct op_stores *st, struct found *f,
                       struct op_targets *t)
{
    size_t missing = 0;
    int n = 0;
    for (size_t i = 0; i < s->n_pods; i++) {
        json_t *p = st->pods ? k8s_store_get(st->pods, s->pod_namespace, s->pods[i]) : NULL;
        if (p) {
            keep(f, p);
            k8s_store_release(p);
            continue;
        }
        note_absent(t, "/api/v1", s->pod_namespace, "pods", s->pods[i]);
        if (missing++ < LIST_MAX)
            n += snprintf(t->why + n, sizeof(t->why) - (size_t)n, "%s%s", missing > 1 ? ", " : "",
                          s->pods[i]);
        if ((size_t)n >= sizeof(t->why))
            n = (int)sizeof(t->why) - 1;
    }
    if (!missing)
        return;
    char list[sizeof(t->why)];
    snprintf(list, sizeof(list), "%s", t->why);
    t->state = OP_TARGETS_FAIL;
    snprintf(t->why, sizeof(t->why), "pod%s not found in namespace %s: %s%s",
             missing > 1 ? "s" : "", s->pod_namespace, list, missing > LIST_MAX ? ", ..." : "");
}

/* ---------- readiness and the result ---------- */

static void not_ready(struct found *f, struct op_targets *t)
{
    size_t bad = 0;
    int n = 0;
    char list[sizeof(t->why)] = "";
    for (size_t i = 0; i < f->n; i++) {
        const char *why = "not a pod";
        struct op_pod p;
        if (op_pod_view(f->pods[i], &p) && op_pod_ready(&p, &why))
            continue;
        if (bad++ < LIST_MAX)
            n += snprintf(list + n, sizeof(list) - (size_t)n, "%s%s (%s)", bad > 1 ? ", " : "",
                          name_of(f->pods[i]), why);
        if ((size_t)n >= sizeof(list))
            n = (int)sizeof(list) - 1;
    }
    if (!bad)
        return;
    t->state = OP_TARGETS_WAIT;
    snprintf(t->why, sizeof(t->why), "waiting for %zu of %zu pod%s to be Running with an IP: %s%s",
             bad, f->n, f->n > 1 ? "s" : "", list, bad > LIST_MAX ? ", ..." : "");
}

static int fill(struct found *f, struct op_targets *t)
{
    if (!(t->v = calloc(f->n, sizeof(*t->v))))
        return -K8S_ENOMEM;
    for (size_t i = 0; i < f->n; i++, t->n++) {
        struct op_pod p;
        struct op_target *x = &t->v[i];
        if (!op_pod_view(f->pods[i], &p))
            return -K8S_EINVAL;
        x->pod = strdup(p.name);
        x->ip = strdup(p.ip);
        x->hostname = strdup(p.hostname);
        if (!x->pod || !x->ip || !x->hostname) {
            t->n++;
            return -K8S_ENOMEM;
        }
    }
    return 0;
}

int op_targets_resolve(const struct op_spec *s, const struct op_stores *st, struct op_targets *ret)
{
    struct op_targets t = {.state = OP_TARGETS_READY};
    struct found f = {0};
    if (s->ref_kind)
        workload_pods(s, st, &f, &t);
    else
        named_pods(s, st, &f, &t);
    int r = f.oom ? -K8S_ENOMEM : 0;
    if (r == 0 && t.state == OP_TARGETS_READY)
        not_ready(&f, &t);
    if (r == 0 && t.state == OP_TARGETS_READY) {
        qsort(f.pods, f.n, sizeof(*f.pods), pod_name_cmp);
        r = fill(&f, &t);
    }
    for (size_t i = 0; i < f.n; i++)
        k8s_store_release(f.pods[i]); /* shared with the pod cache */
    free(f.pods);
    if (r < 0) {
        op_targets_done(&t);
        return r;
    }
    *ret = t;
    return 0;
}
