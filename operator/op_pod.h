/*
 * op_pod — the operator's compact form of a pod. The pod cache keeps, per
 * pod, one string holding only the fields targeting and auditing read
 * (k8s_store's transform), instead of a tree of JSON values: about 200
 * bytes a pod instead of kilobytes, so 10,000 cached pods fit in a few MiB.
 * The pod's cached annotations must include diagon.gke.io/identifier and
 * diagon.gke.io/metadata for id_* to be known. A pod of a workload (one
 * that carries the pod label of a kind a workloadRef selects pods by)
 * keeps all its labels, read with op_pod_label: captures choose among a
 * workload's hosts by their roles, ranks and any label
 * (spec.triggerCapture.hosts).
 *
 * Thread-safety: reentrant. A view borrows from the packed value it was
 * made from (hold a reference while using it).
 */
#ifndef OP_POD_H
#define OP_POD_H

#include <jansson.h>
#include <stdbool.h>

#include "k8s_jsonload.h"
#include "k8s_kinds.h"

struct op_pod {
    const char *name, *namespace, *phase, *ip, *hostname;
    const char *opt_label, *opt_annotation; /* managed-mldiagnostics-gke */
    bool injected;                          /* has diagon.gke.io/injection */
    bool deleting;                          /* deletionTimestamp set */
    /* injected pods with diagon.gke.io/identifier or metadata annotations:
     * what they say ("" when absent) and lack (k8s_mlrun field bits: the
     * google-cloud-mldiagnostics SDK refuses to start without them) */
    const char *id_kind, *id_name;
    unsigned id_missing;
    /* per kind of the kind table, the value of its pod label when a
     * workloadRef kind selects pods by it (k8s_kind_selects_pods), else
     * "" (also when absent) */
    const char *label[K8S_KIND_COUNT];
    /* a workload's pod: its labels, key\0value\0 pairs up to labels_end
     * (empty for other pods) */
    const char *labels, *labels_end;
};

/* The value of label key of p (borrowed from the packed value), NULL when
 * absent or p keeps no labels. A k8s_label_fn over a struct op_pod. */
const char *op_pod_label(const void *pod, const char *key);

/* p's labels as a new JSON object (for a label selector); NULL when out
 * of memory. */
json_t *op_pod_labels_json(const struct op_pod *p);

/* The filter the pod watch loads pods through: what op_pod_pack reads
 * (static). */
const struct k8s_json_filter *op_pod_keep(void);

/* k8s_store transform: the packed form of a pod object (borrowed), a new
 * reference, NULL when it has no name. */
json_t *op_pod_pack(json_t *pod);

/* Read a packed pod; false when v is not one. */
bool op_pod_view(const json_t *packed, struct op_pod *out);

/* Running with an IP and not being deleted? When not, *why (static text)
 * says what it is. */
bool op_pod_ready(const struct op_pod *p, const char **why);

#endif
