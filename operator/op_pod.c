#include "op_pod.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_buf.h"
#include "k8s_mlrun.h"

#define OPT_KEY      "managed-mldiagnostics-gke"
#define A_INJECTION  "diagon.gke.io/injection"
#define A_IDENTIFIER "diagon.gke.io/identifier"
#define A_METADATA   "diagon.gke.io/metadata"

enum {
    F_NAME,
    F_NS,
    F_PHASE,
    F_IP,
    F_HOST,
    F_JOBSET,
    F_LWS,
    F_RAY,
    F_OPT_L,
    F_OPT_A,
    F_FLAGS,
    F_ID_KIND,
    F_ID_NAME,
    F_ID_MISSING,
    N_FIELDS
};

static const char *at(const json_t *o, const char *a, const char *b)
{
    const char *v = json_string_value(json_object_get(json_object_get(o, a), b));
    return v ? v : "";
}

/* The workload an injected pod's identity names, and what it lacks. */
struct identity {
    char kind[64], name[256], missing[16];
};

static void identity_of(const json_t *annotations, struct identity *id)
{
    const char *ident = json_string_value(json_object_get(annotations, A_IDENTIFIER));
    const char *meta = json_string_value(json_object_get(annotations, A_METADATA));
    json_t *o = ident ? json_loads(ident, 0, NULL) : NULL;
    const char *kind = json_string_value(json_object_get(o, "metadata.kind"));
    const char *name = json_string_value(json_object_get(o, "metadata.name"));
    snprintf(id->kind, sizeof(id->kind), "%s", kind ? kind : "");
    snprintf(id->name, sizeof(id->name), "%s", name ? name : "");
    snprintf(id->missing, sizeof(id->missing), "%u", k8s_mlrun_missing(ident, meta));
    json_decref(o);
}

json_t *op_pod_pack(json_t *pod)
{
    const json_t *meta = json_object_get(pod, "metadata");
    const json_t *labels = json_object_get(meta, "labels");
    const json_t *annotations = json_object_get(meta, "annotations");
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!name || !*name)
        return NULL;
    bool injected = json_object_get(annotations, A_INJECTION) != NULL;
    struct identity id = {"", "", "0"};
    if (injected &&
        (json_object_get(annotations, A_IDENTIFIER) || json_object_get(annotations, A_METADATA)))
        identity_of(annotations, &id); /* what it says; nothing said, nothing to judge */
    char flags[3] = {injected ? 'i' : '-', json_object_get(meta, "deletionTimestamp") ? 'd' : '-',
                     '\0'};
    const char *f[N_FIELDS] = {
        [F_NAME] = name,
        [F_NS] = at(pod, "metadata", "namespace"),
        [F_PHASE] = at(pod, "status", "phase"),
        [F_IP] = at(pod, "status", "podIP"),
        [F_HOST] = at(pod, "spec", "hostname"),
        [F_JOBSET] = at(meta, "labels", "jobset.sigs.k8s.io/jobset-name"),
        [F_LWS] = at(meta, "labels", "leaderworkerset.sigs.k8s.io/name"),
        [F_RAY] = at(meta, "labels", "ray.io/cluster"),
        [F_OPT_L] = json_string_value(json_object_get(labels, OPT_KEY)),
        [F_OPT_A] = json_string_value(json_object_get(annotations, OPT_KEY)),
        [F_FLAGS] = flags,
        [F_ID_KIND] = id.kind,
        [F_ID_NAME] = id.name,
        [F_ID_MISSING] = id.missing,
    };
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 16);
    for (int i = 0; i < N_FIELDS; i++)
        if (k8s_buf_append(&b, f[i] ? f[i] : "", f[i] ? strlen(f[i]) + 1 : 1) < 0)
            return NULL; /* the buffer freed itself */
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
        .jobset = f[F_JOBSET],
        .lws = f[F_LWS],
        .ray_cluster = f[F_RAY],
        .opt_label = f[F_OPT_L],
        .opt_annotation = f[F_OPT_A],
        .injected = f[F_FLAGS][0] == 'i',
        .deleting = f[F_FLAGS][0] && f[F_FLAGS][1] == 'd',
        .id_kind = f[F_ID_KIND],
        .id_name = f[F_ID_NAME],
        .id_missing = (unsigned)strtoul(f[F_ID_MISSING], NULL, 10),
    };
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
