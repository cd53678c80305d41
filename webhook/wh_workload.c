#include "wh_workload.h"

#include <stdio.h>
#include <string.h>

#include "k8s_buf.h"
#include "k8s_kinds.h"
#include "k8s_time.h"

#define L_POD_TEMPLATE_HASH "pod-template-hash"
#define MAX_CLIMB           4 /* owners above the first workload: Job→JobSet→TrainJob */

static const char *str_at(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

const char *wh_meta_label(const json_t *meta, const char *key)
{
    return str_at(json_object_get(meta, "labels"), key);
}

const char *wh_meta_annotation(const json_t *meta, const char *key)
{
    return str_at(json_object_get(meta, "annotations"), key);
}

const json_t *wh_controller_owner(const json_t *meta)
{
    size_t i;
    json_t *ref;
    json_array_foreach(json_object_get(meta, "ownerReferences"), i, ref)
    {
        if (json_is_true(json_object_get(ref, "controller")) && str_at(ref, "kind") &&
            str_at(ref, "name"))
            return ref;
    }
    return NULL;
}

static bool is_ml_kind(const char *kind)
{
    const struct k8s_kind *k = k8s_kind_find(kind);
    return k && (k->flags & K8S_KIND_NS_LABEL);
}

static void set_kind_name(struct wh_workload *w, const char *kind, const char *name)
{
    k8s_strjoin(w->kind, sizeof(w->kind), kind, NULL);
    k8s_strjoin(w->name, sizeof(w->name), name, NULL);
    w->ml_kind = is_ml_kind(kind);
}

/* Copy labels/annotations/creationTimestamp of a workload's metadata. */
static void take_meta(struct wh_workload *w, const json_t *meta)
{
    json_decref(w->labels);
    json_decref(w->annotations);
    json_t *l = json_object_get(meta, "labels");
    json_t *a = json_object_get(meta, "annotations");
    w->labels = json_is_object(l) ? json_incref(l) : json_object();
    w->annotations = json_is_object(a) ? json_incref(a) : json_object();
    w->created[0] = '\0';
    time_t t;
    const char *ts = str_at(meta, "creationTimestamp");
    if (ts && k8s_time_parse_rfc3339(ts, &t) == 0)
        k8s_time_rfc3339(t, w->created);
    w->unknown_why[0] = '\0';
}

struct resolver {
    struct wh_workload *w;
    const struct wh_lookup *lk;
    int64_t deadline_ns;
};

/* Look the current workload (w->kind/w->name) up; on success its metadata
 * is taken and a NEW reference returned (for owner walking), else NULL
 * with unknown_why set. */
static json_t *fetch(struct resolver *r)
{
    struct wh_workload *w = r->w;
    json_t *meta = NULL;
    struct k8s_error err = {0};
    int rc = wh_lookup_meta(r->lk, w->kind, w->ns, w->name, r->deadline_ns, &meta, &err);
    if (rc == 0) {
        take_meta(w, meta);
        return meta;
    }
    if (rc == -K8S_EUNAVAIL && !r->lk)
        k8s_strjoin(w->unknown_why, sizeof(w->unknown_why), "standalone: ", w->kind, " ", w->ns,
                    "/", w->name, " not looked up", NULL);
    else
        snprintf(w->unknown_why, sizeof(w->unknown_why), "lookup of %s %s/%s: %s", w->kind, w->ns,
                 w->name, err.message[0] ? err.message : k8s_strerror(rc));
    /* not found (deleted meanwhile) and not served (kind not watched) are
     * ordinary; anything else means the answer may be wrong */
    w->lookup_failed |= rc != -K8S_ENOTFOUND && rc != -K8S_EUNAVAIL;
    return NULL;
}

/* Is owner_kind one of the owners k's row says are then the workload? */
static bool owned_by(const struct k8s_kind *k, const char *owner_kind)
{
    for (size_t i = 0; k && i < K8S_KIND_MAX_OWNERS && k->owners[i]; i++)
        if (!strcmp(k->owners[i], owner_kind))
            return true;
    return false;
}

/* From the workload whose metadata is meta (a reference this consumes),
 * follow controller owners while the kind table says they are the
 * workload (Job → JobSet → TrainJob, RayCluster → RayJob, ...). */
static void climb(struct resolver *r, json_t *meta)
{
    for (int depth = 0; meta && depth < MAX_CLIMB; depth++) {
        const json_t *owner = wh_controller_owner(meta);
        if (!owner || !owned_by(k8s_kind_find(r->w->kind), str_at(owner, "kind")))
            break;
        /* the owner is the workload now: forget what the child told us */
        set_kind_name(r->w, str_at(owner, "kind"), str_at(owner, "name"));
        json_decref(r->w->labels);
        json_decref(r->w->annotations);
        r->w->labels = r->w->annotations = NULL;
        r->w->created[0] = '\0';
        json_t *up = fetch(r);
        json_decref(meta);
        meta = up;
    }
    json_decref(meta);
}

/* Deployment name from "<deploy>-<pod-template-hash>", or NULL. */
static bool deployment_of(const char *rs, const char *hash, char *out, size_t cap)
{
    size_t n = strlen(rs), h = hash ? strlen(hash) : 0;
    if (!h || n <= h + 1 || rs[n - h - 1] != '-' || strcmp(rs + n - h, hash))
        return false;
    snprintf(out, cap, "%.*s", (int)(n - h - 1), rs);
    return true;
}

static void resolve_bare(struct wh_workload *w, const json_t *meta, time_t now)
{
    const char *name = str_at(meta, "name");
    if (!name || !*name)
        name = str_at(meta, "generateName");
    set_kind_name(w, "Pod", name ? name : "");
    take_meta(w, meta);
    if (!w->created[0])
        k8s_time_rfc3339(now, w->created);
    w->bare_pod = true;
}

/* The workload named by labels controllers stamp on pods, if any. */
static bool by_label(struct wh_workload *w, const json_t *meta)
{
    const json_t *labels = json_object_get(meta, "labels");
    for (int i = 0; i < K8S_KIND_COUNT; i++) {
        const char *v = k8s_kind_pod_label(&k8s_kinds[i], labels);
        if (v && (k8s_kinds[i].flags & K8S_KIND_NAMES_BY_LABEL)) {
            set_kind_name(w, k8s_kinds[i].kind, v);
            return true;
        }
    }
    return false;
}

int wh_workload_resolve(const json_t *pod, const char *ns, const struct wh_lookup *lk, time_t now,
                        int64_t deadline_ns, struct wh_workload *ret)
{
    struct wh_workload *w = ret;
    memset(w, 0, sizeof(*w));
    const json_t *meta = json_object_get(pod, "metadata");
    k8s_strjoin(w->ns, sizeof(w->ns), ns ? ns : "", NULL);
    const json_t *owner = wh_controller_owner(meta);
    if (owner) /* both strings: wh_controller_owner checks */
        k8s_strjoin(w->parent, sizeof(w->parent), str_at(owner, "kind"), "/", str_at(owner, "name"),
                    NULL);
    struct resolver r = {.w = w, .lk = lk, .deadline_ns = deadline_ns};
    if (by_label(w, meta)) {
        climb(&r, fetch(&r));
        return 0;
    }
    if (!owner) {
        resolve_bare(w, meta, now);
        return 0;
    }
    const char *okind = str_at(owner, "kind"), *oname = str_at(owner, "name");
    char deploy[256];
    if (!strcmp(okind, "ReplicaSet") &&
        deployment_of(oname, wh_meta_label(meta, L_POD_TEMPLATE_HASH), deploy, sizeof(deploy))) {
        set_kind_name(w, "Deployment", deploy);
        json_decref(fetch(&r));
        return 0;
    }
    set_kind_name(w, okind, oname);
    climb(&r, fetch(&r));
    return 0;
}

void wh_workload_from_doc(const json_t *doc, const char *ns, const char *parent,
                          struct wh_workload *ret)
{
    memset(ret, 0, sizeof(*ret));
    const json_t *meta = json_object_get(doc, "metadata");
    const char *name = str_at(meta, "name");
    set_kind_name(ret, str_at(doc, "kind") ? str_at(doc, "kind") : "", name ? name : "");
    snprintf(ret->ns, sizeof(ret->ns), "%s", ns ? ns : "");
    snprintf(ret->parent, sizeof(ret->parent), "%s", parent ? parent : "");
    take_meta(ret, meta);
    if (!ret->created[0])
        snprintf(ret->unknown_why, sizeof(ret->unknown_why),
                 "offline: %s %s has no creationTimestamp", ret->kind, ret->name);
}

void wh_workload_done(struct wh_workload *w)
{
    if (!w)
        return;
    json_decref(w->labels);
    json_decref(w->annotations);
    w->labels = w->annotations = NULL;
}
