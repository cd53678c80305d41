/*
 * wh_workload — find a pod's top-level workload (DESIGN §3.4): first from
 * the labels controllers stamp on pods and the pod's controller owner
 * reference, then, when an API view is available (wh_lookup), from the
 * workload's own metadata (labels, annotations, creationTimestamp) and its
 * owners, climbing while the kind table (k8s_kinds) names the owner's kind
 * (its group and kind, read from the owner reference's apiVersion: a
 * Volcano Job is not batch's) as the workload (RayCluster → RayJob, Job →
 * JobSet/RayJob/MPIJob, JobSet → TrainJob, StatefulSet → LWS, ReplicaSet →
 * Deployment).
 *
 * Owner chains: Pod→Job→JobSet; Pod→Job→JobSet→TrainJob; Pod→PyTorchJob;
 * Pod→MPIJob (workers) and Pod→Job→MPIJob (launcher); Pod→Job (Volcano's);
 * Pod→RayCluster→RayJob; Pod→Job→RayJob (submitter); Pod→StatefulSet→LWS
 * and worker Pod→StatefulSet→leader Pod→StatefulSet→LWS (both carry
 * leaderworkerset.sigs.k8s.io/name); Pod→ReplicaSet→Deployment;
 * Pod→StatefulSet; Pod→Job; bare pods (the workload is the pod itself).
 *
 * Thread-safety: reentrant. Ownership: struct wh_workload owns the
 * workload's metadata it looked up (doc, meta); for a bare pod, labels and
 * annotations are borrowed from the pod's metadata, which must outlive
 * it. Release with wh_workload_done (safe on a zeroed struct).
 */
#ifndef WH_WORKLOAD_H
#define WH_WORKLOAD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "k8s_err.h"
#include "k8s_kinds.h"
#include "wh_lookup.h"
#include "wh_meta.h"

struct wh_workload {
    const struct k8s_kind *row; /* its kind's row (k8s_kinds); NULL: a Pod or unknown kind */
    char kind[64];              /* "JobSet", "LeaderWorkerSet", ..., "Pod" */
    char name[256];             /* for a bare pod: its name, else its generateName */
    char ns[64];
    char parent[320];            /* "Kind/name" of the pod's controller owner, "" if none/unknown */
    char created[32];            /* RFC 3339 UTC ending in Z, "" when unknown */
    const struct wh_map *labels; /* the workload's labels; NULL when unknown */
    const struct wh_map *annotations; /* the workload's annotations; NULL when unknown */
    bool bare_pod;                    /* the pod is its own workload */
    bool ml_kind;                     /* a kind the namespace label covers (K8S_KIND_NS_LABEL) */
    char unknown_why[160];            /* why labels/created are unknown ("" when known) */
    bool lookup_failed;               /* a lookup failed (timeout, API error): worth a warning */
    json_t *doc;         /* the metadata looked up (or given), that meta borrows from */
    struct wh_meta meta; /* of doc: what labels and annotations point into */
};

/* Resolve the workload of a pod (or pod template) whose metadata is meta
 * in namespace ns. now is the admission time (a bare pod's creation
 * timestamp when it has none). Lookup failures are not errors: what could
 * not be learned is left unknown and unknown_why says why. Returns 0, or
 * -K8S_ENOMEM (then *ret is to be released). */
int wh_workload_resolve(const struct wh_meta *meta, const char *ns, const struct wh_lookup *lk,
                        time_t now, int64_t deadline_ns, struct wh_workload *ret) K8S_MUST_CHECK;

/* Fill w from a workload document (offline inject: the document is the
 * workload; w holds a reference to its metadata). parent may be NULL.
 * Returns 0, or -K8S_ENOMEM (*ret empty). */
int wh_workload_from_doc(const json_t *doc, const char *ns, const char *parent,
                         struct wh_workload *ret) K8S_MUST_CHECK;

void wh_workload_done(struct wh_workload *w);

#endif
