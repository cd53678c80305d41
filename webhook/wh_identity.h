/*
 * wh_identity — the ML Diagnostics identity of a workload: the
 * GKE_DIAGON_IDENTIFIER and GKE_DIAGON_METADATA JSON (DESIGN §3.5), the
 * ML run id the SDK derives from them and the fields it would miss
 * (k8s_mlrun).
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
#include "k8s_mlrun.h"
#include "wh_meta.h"
#include "wh_workload.h"

struct wh_identity {
    char *identifier;               /* GKE_DIAGON_IDENTIFIER value */
    char *metadata;                 /* GKE_DIAGON_METADATA value */
    char run_id[K8S_MLRUN_ID_SIZE]; /* the SDK's run id; "" when it would refuse */
    unsigned missing;               /* k8s_mlrun fields (bits) the SDK would miss; an
                                       unreadable timestamp counts as missing */
    char cluster[256];              /* the cluster name the identifier carries ("" when none) */
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
int wh_identity_adopt(const struct wh_meta *pod_meta, struct wh_identity *ret) K8S_MUST_CHECK;

void wh_identity_done(struct wh_identity *id);

/* "k1=v1,k2=v2" of a label map sorted by key; new string (free()), NULL
 * on OOM. */
char *wh_sorted_labels(const struct wh_map *labels);

#endif
