#include "wh_identity.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_buf.h"
#include "k8s_json.h"
#include "k8s_time.h"
#include "wh_warn.h"

#define A_IDENTIFIER "diagon.gke.io/identifier"
#define A_METADATA   "diagon.gke.io/metadata"

const char *wh_cluster_short(const char *cluster)
{
    const char *slash = strrchr(cluster, '/');
    return slash ? slash + 1 : cluster;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *wh_sorted_labels(const json_t *labels)
{
    size_t n = json_object_size(labels), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof(*keys));
    if (!keys)
        return NULL;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)labels, k, v) keys[i++] = k;
    qsort(keys, n, sizeof(*keys), cmp_str);
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    int r = 0;
    for (i = 0; i < n && r == 0; i++) {
        const char *val = json_string_value(json_object_get(labels, keys[i]));
        r = k8s_buf_cat(&b, i ? "," : "", keys[i], "=", val ? val : "", NULL);
    }
    free(keys);
    return r < 0 ? NULL : k8s_buf_take(&b, NULL);
}

/* Append ,"key":"value" (or {"key":"value" for the first member). */
static int member(struct k8s_buf *b, const char *key, const char *val)
{
    int r = k8s_buf_appends(b, b->len ? "," : "{");
    r = r ? r : k8s_json_write_string(key, strlen(key), b);
    r = r ? r : k8s_buf_append(b, ":", 1);
    return r ? r : k8s_json_write_string(val, strlen(val), b);
}

/* Compact JSON text, written directly (the same bytes jansson would emit). */
static char *identifier_json(const struct wh_workload *w, const char *cluster, json_t *warnings)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 16);
    int r = member(&b, "metadata.name", w->name);
    r = r ? r : member(&b, "metadata.kind", w->kind);
    if (*cluster)
        r = r ? r : member(&b, "clustername", cluster);
    else
        wh_warnf(warnings, "cluster name unknown: GKE_DIAGON_IDENTIFIER omits clustername "
                           "(set --cluster-name or CLUSTER_NAME)");
    if (*w->ns)
        r = r ? r : member(&b, "namespace", w->ns);
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
        r = r ? r : member(&b, "parent-workload", w->parent);
    if (*w->created)
        r = r ? r : member(&b, "creation-timestamp", w->created);
    if (labels)
        r = r ? r : member(&b, "associated-labels", labels);
    r = r ? r : k8s_buf_appends(&b, b.len ? "}" : "{}");
    free(labels);
    if (!*w->created || !w->labels)
        wh_warnf(warnings, "GKE_DIAGON_METADATA omits %s: %s",
                 !*w->created && !w->labels ? "creation-timestamp and associated-labels"
                 : !*w->created             ? "creation-timestamp"
                                            : "associated-labels",
                 w->unknown_why[0] ? w->unknown_why : "unknown");
    return r ? NULL : k8s_buf_take(&b, NULL);
}

int wh_identity_build(const struct wh_workload *w, const char *cluster, json_t *warnings,
                      struct wh_identity *ret)
{
    struct wh_identity id = {0};
    id.identifier = identifier_json(w, cluster, warnings);
    id.metadata = metadata_json(w, warnings);
    if (!id.identifier || !id.metadata) {
        wh_identity_done(&id);
        return -K8S_ENOMEM;
    }
    time_t t;
    if (*w->created && k8s_time_parse_rfc3339(w->created, &t) == 0)
        wh_run_id_of(cluster, w->ns, w->kind, w->name, t, id.run_id, sizeof(id.run_id));
    snprintf(id.cluster, sizeof(id.cluster), "%s", cluster);
    *ret = id;
    return 0;
}

int wh_identity_adopt(const json_t *pod_meta, struct wh_identity *ret)
{
    const char *ident = wh_meta_annotation(pod_meta, A_IDENTIFIER);
    const char *meta = wh_meta_annotation(pod_meta, A_METADATA);
    if (!ident || !meta)
        return -K8S_ENOTFOUND;
    struct wh_identity id = {.identifier = strdup(ident), .metadata = strdup(meta)};
    if (!id.identifier || !id.metadata) {
        wh_identity_done(&id);
        return -K8S_ENOMEM;
    }
    wh_run_id(id.identifier, id.metadata, id.run_id, sizeof(id.run_id));
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

/* Append s lower-cased, runs of [^a-z0-9] collapsed to one '-'. */
static void sanitize_into(char *out, size_t cap, size_t *len, const char *s)
{
    for (; *s && *len + 1 < cap; s++) {
        char c = (char)tolower((unsigned char)*s);
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (ok)
            out[(*len)++] = c;
        else if (*len > 0 && out[*len - 1] != '-')
            out[(*len)++] = '-';
    }
    out[*len] = '\0';
}

bool wh_run_id_of(const char *cluster, const char *ns, const char *kind, const char *name,
                  time_t created, char *out, size_t cap)
{
    out[0] = '\0';
    if (!*cluster || !*ns || !*kind || !*name)
        return false;
    char stamp[32];
    struct tm tm;
    gmtime_r(&created, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    const char *parts[] = {wh_cluster_short(cluster), ns, kind, name, stamp};
    size_t len = 0;
    for (size_t i = 0; i < 5; i++) {
        if (i)
            sanitize_into(out, cap, &len, "-");
        sanitize_into(out, cap, &len, parts[i]);
    }
    while (len > 0 && out[len - 1] == '-')
        out[--len] = '\0';
    return true;
}

bool wh_run_id(const char *identifier_json, const char *metadata_json, char *out, size_t cap)
{
    out[0] = '\0';
    json_t *id = json_loads(identifier_json, 0, NULL);
    json_t *md = json_loads(metadata_json, 0, NULL);
    const char *cluster = json_string_value(json_object_get(id, "clustername"));
    const char *ns = json_string_value(json_object_get(id, "namespace"));
    const char *kind = json_string_value(json_object_get(id, "metadata.kind"));
    const char *name = json_string_value(json_object_get(id, "metadata.name"));
    const char *ts = json_string_value(json_object_get(md, "creation-timestamp"));
    time_t t;
    bool ok = cluster && ns && kind && name && ts && k8s_time_parse_rfc3339(ts, &t) == 0 &&
              wh_run_id_of(cluster, ns, kind, name, t, out, cap);
    json_decref(id);
    json_decref(md);
    return ok;
}
