/*
 * wh_identity — the ML Diagnostics identity of a workload: the
 * GKE_DIAGON_IDENTIFIER and GKE_DIAGON_METADATA JSON (DESIGN §3.5) and the
 * ML run id the SDK derives from them.
 *
 * GKE_DIAGON_IDENTIFIER = {"metadata.name","metadata.kind","clustername",
 * "namespace"}; GKE_DIAGON_METADATA = {"parent-workload",
 * "creation-timestamp","associated-labels"}; compact JSON, keys in that
 * order, unknown values omitted (never invented).
 *
 * Thread-safety: reentrant. Ownership: struct wh_identity owns its
 * strings; wh_identity_done frees them (NULL-safe).
 */
#ifndef WH_IDENTITY_H
#define WH_IDENTITY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "k8s_err.h"
#include "wh_workload.h"

struct wh_identity {
    char *identifier;  /* GKE_DIAGON_IDENTIFIER value */
    char *metadata;    /* GKE_DIAGON_METADATA value */
    char run_id[512];  /* the SDK's run id; "" when a field it needs is unknown */
    char cluster[256]; /* the cluster name the identifier carries ("" when none) */
};

/* Build the identity of w in cluster `cluster` ("" = unknown). Each
 * omitted value is named in `warnings` (array). -K8S_ENOMEM on failure,
 * *ret untouched. */
int wh_identity_build(const struct wh_workload *w, const char *cluster, json_t *warnings,
                      struct wh_identity *ret) K8S_MUST_CHECK;

/* Adopt an identity already recorded on a pod (its diagon.gke.io/identifier
 * and diagon.gke.io/metadata annotations), so every container of one pod,
 * including ones added by later webhooks, gets byte-identical values.
 * Returns 0, -K8S_ENOTFOUND when the pod carries none, -K8S_ENOMEM. */
int wh_identity_adopt(const json_t *pod_meta, struct wh_identity *ret) K8S_MUST_CHECK;

void wh_identity_done(struct wh_identity *id);

/* The SDK's run id: lower(cluster_short-namespace-kind-name-YYYYMMDD-HHMMSS)
 * with every run of characters outside [a-z0-9] replaced by '-' and the
 * ends trimmed. false when a field is missing. */
bool wh_run_id(const char *identifier_json, const char *metadata_json, char *out, size_t cap);

/* The same from its parts (created: the workload's creationTimestamp). */
bool wh_run_id_of(const char *cluster, const char *ns, const char *kind, const char *name,
                  time_t created, char *out, size_t cap);

/* Last '/'-separated segment of a cluster name (borrowed). */
const char *wh_cluster_short(const char *cluster);

/* "k1=v1,k2=v2" of a label map sorted by key; new string (free()). */
char *wh_sorted_labels(const json_t *labels);

#endif
