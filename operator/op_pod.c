#include "op_pod.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_buf.h"
#include "k8s_jget.h"
#include "k8s_mlrun.h"
#include "k8s_names.h"

#define OPT_KEY K8S_LABEL_MANAGED

enum {
    F_NAME,
    F_NS,
    F_PHASE,
    F_IP,
    F_HOST,
    F_OPT_L,
    F_OPT_A,
    F_FLAGS,
    F_ID_KIND,
    F_ID_NAME,
    F_ID_MISSING,
    F_LABEL, /* then one per kind of the kind table */
    N_FIELDS = F_LABEL + K8S_KIND_COUNT
};

static const char *at(const json_t *o, const char *a, const char *b)
{
    const char *v = k8s_jstr2(o, a, b);
    return v ? v : "";
}

/* The workload an injected pod's identity names, and what it lacks. */
struct identity {
    char kind[64], name[256], missing[16];
};

static void identity_of(const json_t *annotations, struct identity *id)
{
    const char *ident = json_string_value(json_object_get(annotations, K8S_ANN_IDENTIFIER));
    const char *meta = json_string_value(json_object_get(annotations, K8S_ANN_METADATA));
    json_t *o = ident ? json_loads(ident, 0, NULL) : NULL;
    const char *kind = json_string_value(json_object_get(o, "metadata.kind"));
    const char *name = json_string_value(json_object_get(o, "metadata.name"));
    snprintf(id->kind, sizeof(id->kind), "%s", kind ? kind : "");
    snprintf(id->name, sizeof(id->name), "%s", name ? name : "");
    snprintf(id->missing, sizeof(id->missing), "%u", k8s_mlrun_missing(ident, meta));
    json_decref(o);
}

/* Every label as key\0value\0 (a label value never holds a NUL). */
static int pack_labels(struct k8s_buf *b, const json_t *labels)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)labels, key, v)
    {
        const char *val = json_string_value(v);
        if (!val)
            continue;
        if (k8s_buf_append(b, key, strlen(key) + 1) < 0 ||
            k8s_buf_append(b, val, strlen(val) + 1) < 0)
            return -K8S_ENOMEM; /* the buffer freed itself */
    }
    return 0;
}

const char *op_pod_label(const void *pod, const char *key)
{
    const struct op_pod *p = pod;
    for (const char *k = p->labels; k && k < p->labels_end;) {
        const char *v = k + strlen(k) + 1;
        if (v >= p->labels_end)
            return NULL;
        if (!strcmp(k, key))
            return v;
        k = v + strlen(v) + 1;
    }
    return NULL;
}

json_t *op_pod_labels_json(const struct op_pod *p)
{
    json_t *o = json_object();
    for (const char *k = p->labels; o && k && k < p->labels_end;) {
        const char *v = k + strlen(k) + 1;
        if (v >= p->labels_end || json_object_set_new(o, k, json_string(v)) < 0)
            break;
        k = v + strlen(v) + 1;
    }
    return o;
}

json_t *op_pod_pack(json_t *pod)
{
    const json_t *meta = json_object_get(pod, "metadata");
    const json_t *labels = json_object_get(meta, "labels");
    const json_t *annotations = json_object_get(meta, "annotations");
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!name || !*name)
        return NULL;
    bool injected = json_object_get(annotations, K8S_ANN_INJECTION) != NULL;
    struct identity id = {"", "", "0"};
    if (injected && (json_object_get(annotations, K8S_ANN_IDENTIFIER) ||
                     json_object_get(annotations, K8S_ANN_METADATA)))
        identity_of(annotations, &id); /* what it says; nothing said, nothing to judge */
    char flags[3] = {injected ? 'i' : '-', json_object_get(meta, "deletionTimestamp") ? 'd' : '-',
                     '\0'};
    const char *f[N_FIELDS] = {
        [F_NAME] = name,
        [F_NS] = at(pod, "metadata", "namespace"),
        [F_PHASE] = at(pod, "status", "phase"),
        [F_IP] = at(pod, "status", "podIP"),
        [F_HOST] = at(pod, "spec", "hostname"),
        [F_OPT_L] = json_string_value(json_object_get(labels, OPT_KEY)),
        [F_OPT_A] = json_string_value(json_object_get(annotations, OPT_KEY)),
        [F_FLAGS] = flags,
        [F_ID_KIND] = id.kind,
        [F_ID_NAME] = id.name,
        [F_ID_MISSING] = id.missing,
    };
    bool workload = false;
    for (int k = 0; k < K8S_KIND_COUNT; k++) /* the labels workloadRef targets select by */
        if (k8s_kind_selects_pods((enum k8s_kind_id)k)) {
            f[F_LABEL + k] = k8s_kind_pod_label(&k8s_kinds[k], labels);
            workload |= f[F_LABEL + k] != NULL;
        }
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 16);
    for (int i = 0; i < N_FIELDS; i++)
        if (k8s_buf_append(&b, f[i] ? f[i] : "", f[i] ? strlen(f[i]) + 1 : 1) < 0)
            return NULL; /* the buffer freed itself */
    if (workload && pack_labels(&b, labels) < 0)
        return NULL;
    json_t *v = json_stringn_nocheck(b.data, b.len);
    k8s_buf_done(&b);
    return v;
}

bool op_pod_view(const json_t *packed, struct op_pod *out)
{
    const char *s = json_string_value(packed), *f[N_FIELDS];
    size_t n = json_string_length(packed), at = 0;
    for (int i = 0; i < N_FIELDS; i++) {
        if (!s || at >= n)
            return false;
        f[i] = s + at;
        at += strlen(f[i]) + 1;
    }
    *out = (struct op_pod){
        .name = f[F_NAME],
        .namespace = f[F_NS],
        .phase = f[F_PHASE],
        .ip = f[F_IP],
        .hostname = *f[F_HOST] ? f[F_HOST] : f[F_NAME],
        .opt_label = f[F_OPT_L],
        .opt_annotation = f[F_OPT_A],
        .injected = f[F_FLAGS][0] == 'i',
        .deleting = f[F_FLAGS][0] && f[F_FLAGS][1] == 'd',
        .id_kind = f[F_ID_KIND],
        .id_name = f[F_ID_NAME],
        .id_missing = (unsigned)strtoul(f[F_ID_MISSING], NULL, 10),
    };
    for (int k = 0; k < K8S_KIND_COUNT; k++)
        out->label[k] = f[F_LABEL + k];
    out->labels = s + at; /* the rest: a workload's pod's labels */
    out->labels_end = s + n;
    return true;
}

bool op_pod_ready(const struct op_pod *p, const char **why)
{
    if (p->deleting)
        *why = "terminating";
    else if (strcmp(p->phase, "Running"))
        *why = *p->phase ? p->phase : "no phase yet";
    else if (!*p->ip)
        *why = "no IP yet";
    else
        return true;
    return false;
}

/* ---------- what the pod cache keeps ---------- */

static const struct k8s_json_filter annotations_keep[] = {{K8S_ANN_INJECTION, NULL},
                                                          {K8S_ANN_IDENTIFIER, NULL},
                                                          {K8S_ANN_METADATA, NULL},
                                                          {K8S_LABEL_MANAGED, NULL},
                                                          {NULL}};
static const struct k8s_json_filter meta_keep[] = {{"name", NULL},
                                                   {"namespace", NULL},
                                                   {"uid", NULL},
                                                   {"resourceVersion", NULL},
                                                   {"deletionTimestamp", NULL},
                                                   {"labels", NULL}, /* all: see pack */
                                                   {"annotations", annotations_keep},
                                                   {NULL}};
static const struct k8s_json_filter spec_keep[] = {{"hostname", NULL}, {NULL}};
static const struct k8s_json_filter status_keep[] = {{"phase", NULL}, {"podIP", NULL}, {NULL}};
static const struct k8s_json_filter pod_keep[] = {
    {"metadata", meta_keep}, {"spec", spec_keep}, {"status", status_keep}, {NULL}};
const struct k8s_json_filter *op_pod_keep(void)
{
    return pod_keep;
}
