#include "wh_identity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_buf.h"
#include "k8s_json.h"
#include "k8s_names.h"
#include "wh_warn.h"

char *wh_sorted_labels(const struct wh_map *labels)
{
    size_t n;
    struct wh_kv *kv = wh_map_ordered(labels, &n);
    if (!kv)
        return NULL;
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++)
        r = k8s_buf_cat(&b, i ? "," : "", kv[i].key, "=", kv[i].val ? kv[i].val : "", NULL);
    free(kv);
    return r < 0 ? NULL : k8s_buf_take(&b, NULL);
}

/* Append ,"key":"value" (or {"key":"value" for the first member): key_json
 * is "key": as JSON text, klen bytes. */
static int member(struct k8s_buf *b, const char *key_json, size_t klen, const char *val)
{
    char *t; /* the usual object in one allocation */
    int r = k8s_buf_reserve(b, b->len ? klen + 1 : klen + 512, &t);
    if (r)
        return r;
    t[0] = b->len ? ',' : '{';
    memcpy(t + 1, key_json, klen);
    k8s_buf_commit(b, klen + 1);
    return k8s_json_write_string(val, strlen(val), b);
}

#define MEMBER(b, key, val) member(b, "\"" key "\":", sizeof("\"" key "\":") - 1, val)

/* Compact JSON text, written directly (the same bytes jansson would emit). */
static char *identifier_json(const struct wh_workload *w, const char *cluster, json_t *warnings)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 16);
    int r = MEMBER(&b, "metadata.name", w->name);
    r = r ? r : MEMBER(&b, "metadata.kind", w->kind);
    if (*cluster)
        r = r ? r : MEMBER(&b, "clustername", cluster);
    else
        wh_warnf(warnings, "cluster name unknown: GKE_DIAGON_IDENTIFIER omits clustername "
                           "(set --cluster-name or CLUSTER_NAME)");
    if (*w->ns)
        r = r ? r : MEMBER(&b, "namespace", w->ns);
    else
        wh_warnf(warnings, "namespace unknown: GKE_DIAGON_IDENTIFIER omits namespace");
    r = r ? r : k8s_buf_append(&b, "}", 1);
    return r ? NULL : k8s_buf_take(&b, NULL);
}

static char *metadata_json(const struct wh_workload *w, json_t *warnings)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    char *labels = w->labels ? wh_sorted_labels(w->labels) : NULL;
    int r = w->labels && !labels ? -K8S_ENOMEM : 0;
    if (*w->parent)
        r = r ? r : MEMBER(&b, "parent-workload", w->parent);
    if (*w->created)
        r = r ? r : MEMBER(&b, "creation-timestamp", w->created);
    if (labels)
        r = r ? r : MEMBER(&b, "associated-labels", labels);
    r = r ? r : k8s_buf_append(&b, b.len ? "}" : "{}", b.len ? 1 : 2);
    free(labels);
    if (!*w->created || !w->labels)
        wh_warn_cat(warnings, "GKE_DIAGON_METADATA omits ",
                    !*w->created && !w->labels ? "creation-timestamp and associated-labels"
                    : !*w->created             ? "creation-timestamp"
                                               : "associated-labels",
                    ": ", w->unknown_why[0] ? w->unknown_why : "unknown", NULL);
    return r ? NULL : k8s_buf_take(&b, NULL);
}

/* What the SDK would miss; a timestamp it cannot read is as good as none. */
static void note_missing(struct wh_identity *id, unsigned missing)
{
    id->missing = missing;
    if (!id->missing && !id->run_id[0])
        id->missing = 1u << K8S_MLRUN_CREATED;
}

/* The fields identifier_json and metadata_json leave out or empty: what
 * k8s_mlrun_missing would find in them, without parsing them back. */
static unsigned built_missing(const struct wh_workload *w, const char *cluster)
{
    const char *v[K8S_MLRUN_NFIELDS] = {[K8S_MLRUN_NAMESPACE] = w->ns,
                                        [K8S_MLRUN_CLUSTER] = cluster,
                                        [K8S_MLRUN_KIND] = w->kind,
                                        [K8S_MLRUN_NAME] = w->name,
                                        [K8S_MLRUN_CREATED] = w->created};
    unsigned mask = 0;
    for (int f = 0; f < K8S_MLRUN_NFIELDS; f++)
        if (!v[f] || !*v[f])
            mask |= 1u << f;
    return mask;
}

int wh_identity_build(const struct wh_workload *w, const char *cluster, json_t *warnings,
                      struct wh_identity *ret)
{
    char *identifier = identifier_json(w, cluster, warnings);
    char *metadata = metadata_json(w, warnings);
    if (!identifier || !metadata) {
        free(identifier);
        free(metadata);
        return -K8S_ENOMEM;
    }
    /* nothing fails from here: *ret is written in place, not copied */
    ret->identifier = identifier;
    ret->metadata = metadata;
    if (k8s_mlrun_id(cluster, w->ns, w->kind, w->name, w->created, ret->run_id) < 0)
        ret->run_id[0] = '\0'; /* the SDK would refuse; the fields it misses are below */
    k8s_strjoin(ret->cluster, sizeof(ret->cluster), cluster, NULL);
    note_missing(ret, built_missing(w, cluster));
    return 0;
}

int wh_identity_adopt(const struct wh_meta *pod_meta, struct wh_identity *ret)
{
    const char *ident = wh_meta_annotation(pod_meta, K8S_ANN_IDENTIFIER);
    const char *meta = wh_meta_annotation(pod_meta, K8S_ANN_METADATA);
    if (!ident || !meta)
        return -K8S_ENOTFOUND;
    struct wh_identity id = {.identifier = strdup(ident), .metadata = strdup(meta)};
    if (!id.identifier || !id.metadata) {
        wh_identity_done(&id);
        return -K8S_ENOMEM;
    }
    if (k8s_mlrun_id_json(id.identifier, id.metadata, id.run_id) < 0)
        id.run_id[0] = '\0';
    note_missing(&id, k8s_mlrun_missing(id.identifier, id.metadata));
    json_t *parsed = json_loads(ident, 0, NULL);
    const char *cluster = json_string_value(json_object_get(parsed, "clustername"));
    snprintf(id.cluster, sizeof(id.cluster), "%s", cluster ? cluster : "");
    json_decref(parsed);
    *ret = id;
    return 0;
}

void wh_identity_done(struct wh_identity *id)
{
    if (!id)
        return;
    free(id->identifier);
    free(id->metadata);
    id->identifier = id->metadata = NULL;
}
