#include "wh_workload.h"

#include <stdio.h>
#include <string.h>

#include "k8s_buf.h"
#include "k8s_kinds.h"
#include "k8s_time.h"

#define L_POD_TEMPLATE_HASH "pod-template-hash"
#define MAX_CLIMB           4 /* owners above the first workload: Job→JobSet→TrainJob */

/* row: the kind's row, or NULL for a kind the table lacks (named `kind`). */
static void set_kind_name(struct wh_workload *w, const struct k8s_kind *row, const char *kind,
                          const char *name)
{
    w->row = row;
    k8s_strjoin(w->kind, sizeof(w->kind), row ? row->kind : kind, NULL);
    k8s_strjoin(w->name, sizeof(w->name), name, NULL);
    w->ml_kind = row && (row->flags & K8S_KIND_NS_LABEL);
}

static void set_created(struct wh_workload *w, const char *ts)
{
    time_t t;
    w->created[0] = '\0';
    if (ts && k8s_time_parse_rfc3339(ts, &t) == 0)
        k8s_time_rfc3339(t, w->created);
}

/* Forget the metadata of the workload w was before (its owner is now). */
static void forget(struct wh_workload *w)
{
    wh_meta_done(&w->meta);
    json_decref(w->doc);
    w->doc = NULL;
    w->labels = w->annotations = NULL;
    w->created[0] = '\0';
}

/* Take doc (a workload's metadata; the reference is stolen) as w's. */
static int take_doc(struct wh_workload *w, json_t *doc)
{
    forget(w);
    w->doc = doc;
    if (wh_meta_from_json(doc, &w->meta) < 0)
        return -K8S_ENOMEM;
    w->labels = &w->meta.labels; /* known, even when empty or not a map */
    w->annotations = &w->meta.annotations;
    set_created(w, w->meta.created);
    w->unknown_why[0] = '\0';
    return 0;
}

struct resolver {
    struct wh_workload *w;
    const struct wh_lookup *lk;
    int64_t deadline_ns;
};

/* Look the current workload (w->kind/w->name) up: 1 when found (its
 * metadata taken), 0 when not (unknown_why set), or -K8S_ENOMEM. */
static int fetch(struct resolver *r)
{
    struct wh_workload *w = r->w;
    json_t *meta = NULL;
    struct k8s_error err = {0};
    int rc = w->row ? wh_lookup_meta(r->lk, w->row, w->ns, w->name, r->deadline_ns, &meta, &err)
                    : k8s_error_set(&err, -K8S_EUNAVAIL, "%s is not looked up", w->kind);
    if (rc == 0)
        return take_doc(w, meta) < 0 ? -K8S_ENOMEM : 1;
    if (rc == -K8S_EUNAVAIL && !r->lk)
        k8s_strjoin(w->unknown_why, sizeof(w->unknown_why), "standalone: ", w->kind, " ", w->ns,
                    "/", w->name, " not looked up", NULL);
    else
        snprintf(w->unknown_why, sizeof(w->unknown_why), "lookup of %s %s/%s: %s", w->kind, w->ns,
                 w->name, err.message[0] ? err.message : k8s_strerror(rc));
    /* not found (deleted meanwhile) and not served (kind not watched) are
     * ordinary; anything else means the answer may be wrong */
    w->lookup_failed |= rc != -K8S_ENOTFOUND && rc != -K8S_EUNAVAIL;
    return 0;
}

/* From the workload just fetched, follow controller owners while the
 * kind table says they are the workload (Job → JobSet → TrainJob,
 * RayCluster → RayJob, ...). found: fetch's answer. */
static int climb(struct resolver *r, int found)
{
    struct wh_workload *w = r->w;
    for (int depth = 0; found > 0 && depth < MAX_CLIMB; depth++) {
        const struct k8s_kind *up = k8s_kind_of_ref(w->meta.owner_api_version, w->meta.owner_kind);
        if (!k8s_kind_owned_by(w->row, up))
            break;
        /* the owner is the workload now: forget what the child told us */
        set_kind_name(w, up, NULL, w->meta.owner_name);
        forget(w);
        found = fetch(r);
    }
    return found < 0 ? found : 0;
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

static void resolve_bare(struct wh_workload *w, const struct wh_meta *meta, time_t now)
{
    const char *name = meta->name;
    if (!name || !*name)
        name = meta->generate_name;
    set_kind_name(w, NULL, "Pod", name ? name : "");
    w->labels = &meta->labels; /* borrowed from the pod */
    w->annotations = &meta->annotations;
    set_created(w, meta->created);
    if (!w->created[0])
        k8s_time_rfc3339(now, w->created);
    w->bare_pod = true;
}

static const char *label_of(const void *meta, const char *key)
{
    return wh_meta_label(meta, key);
}

/* The workload named by labels controllers stamp on pods, if any. */
static bool by_label(struct wh_workload *w, const struct wh_meta *meta)
{
    for (int i = 0; i < K8S_KIND_COUNT; i++) {
        const char *v = k8s_kind_pod_label_in(&k8s_kinds[i], label_of, meta);
        if (v && (k8s_kinds[i].flags & K8S_KIND_NAMES_BY_LABEL)) {
            set_kind_name(w, &k8s_kinds[i], NULL, v);
            return true;
        }
    }
    return false;
}

int wh_workload_resolve(const struct wh_meta *meta, const char *ns, const struct wh_lookup *lk,
                        time_t now, int64_t deadline_ns, struct wh_workload *ret)
{
    struct wh_workload *w = ret;
    memset(w, 0, sizeof(*w));
    k8s_strjoin(w->ns, sizeof(w->ns), ns ? ns : "", NULL);
    const char *okind = meta->owner_kind, *oname = meta->owner_name;
    if (okind)
        k8s_strjoin(w->parent, sizeof(w->parent), okind, "/", oname, NULL);
    struct resolver r = {.w = w, .lk = lk, .deadline_ns = deadline_ns};
    if (by_label(w, meta))
        return climb(&r, fetch(&r));
    if (!okind) {
        resolve_bare(w, meta, now);
        return 0;
    }
    char deploy[256];
    const struct k8s_kind *owner = k8s_kind_of_ref(meta->owner_api_version, okind);
    if (owner == &k8s_kinds[K8S_KIND_REPLICASET] &&
        deployment_of(oname, wh_meta_label(meta, L_POD_TEMPLATE_HASH), deploy, sizeof(deploy))) {
        set_kind_name(w, &k8s_kinds[K8S_KIND_DEPLOYMENT], NULL, deploy);
        return fetch(&r) < 0 ? -K8S_ENOMEM : 0;
    }
    set_kind_name(w, owner, okind, oname);
    return climb(&r, fetch(&r));
}

int wh_workload_from_doc(const json_t *doc, const char *ns, const char *parent,
                         struct wh_workload *ret)
{
    memset(ret, 0, sizeof(*ret));
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *api = json_string_value(json_object_get(doc, "apiVersion"));
    int r = take_doc(ret, json_incref(json_object_get(doc, "metadata")));
    set_kind_name(ret, k8s_kind_of_ref(api, kind), kind ? kind : "",
                  ret->meta.name ? ret->meta.name : "");
    snprintf(ret->ns, sizeof(ret->ns), "%s", ns ? ns : "");
    snprintf(ret->parent, sizeof(ret->parent), "%s", parent ? parent : "");
    if (!ret->created[0])
        snprintf(ret->unknown_why, sizeof(ret->unknown_why),
                 "offline: %s %s has no creationTimestamp", ret->kind, ret->name);
    if (r < 0)
        wh_workload_done(ret);
    return r;
}

void wh_workload_done(struct wh_workload *w)
{
    if (w)
        forget(w);
}
