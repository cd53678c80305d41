/*
 * wh_workload — find a pod's top-level workload (DESIGN §3.4): first from
 * the labels controllers stamp on pods and the pod's controller owner
 * reference, then, when an API view is available (wh_lookup), from the
 * workload's own metadata (labels, annotations, creationTimestamp) and its
 * owners, climbing while the kind table (k8s_kinds) names the owner's kind
 * as the workload (RayCluster → RayJob, Job → JobSet/RayJob, JobSet →
 * TrainJob, StatefulSet → LWS, ReplicaSet → Deployment).
 *
 * Owner chains: Pod→Job→JobSet; Pod→Job→JobSet→TrainJob; Pod→PyTorchJob;
 * Pod→RayCluster→RayJob; Pod→Job→RayJob (submitter); Pod→StatefulSet→LWS
 * and worker Pod→StatefulSet→leader Pod→StatefulSet→LWS (both carry
 * leaderworkerset.sigs.k8s.io/name); Pod→ReplicaSet→Deployment;
 * Pod→StatefulSet; Pod→Job; bare pods (the workload is the pod itself).
 *
 * Thread-safety: reentrant. Ownership: struct wh_workload owns its json
 * references; release with wh_workload_done (safe on a zeroed struct).
 */
#ifndef WH_WORKLOAD_H
#define WH_WORKLOAD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "k8s_err.h"
#include "wh_lookup.h"

struct wh_workload {
    char kind[64];  /* "JobSet", "LeaderWorkerSet", ..., "Pod" */
    char name[256]; /* for a bare pod: its name, else its generateName */
    char ns[64];
    char parent[320];      /* "Kind/name" of the pod's controller owner, "" if none/unknown */
    char created[32];      /* RFC 3339 UTC ending in Z, "" when unknown */
    json_t *labels;        /* the workload's labels; NULL when unknown */
    json_t *annotations;   /* the workload's annotations; NULL when unknown */
    bool bare_pod;         /* the pod is its own workload */
    bool ml_kind;          /* a kind the namespace label covers (K8S_KIND_NS_LABEL) */
    char unknown_why[160]; /* why labels/created are unknown ("" when known) */
    bool lookup_failed;    /* a lookup failed (timeout, API error): worth a warning */
};

/* Resolve the workload of pod (a Pod or pod template object) in namespace
 * ns. now is the admission time (a bare pod's creation timestamp when it
 * has none). Lookup failures are not errors: what could not be learned is
 * left unknown and unknown_why says why. Returns 0, or -K8S_ENOMEM. */
int wh_workload_resolve(const json_t *pod, const char *ns, const struct wh_lookup *lk, time_t now,
                        int64_t deadline_ns, struct wh_workload *ret) K8S_MUST_CHECK;

/* Fill w from a workload document (offline inject: the document is the
 * workload). parent may be NULL. */
void wh_workload_from_doc(const json_t *doc, const char *ns, const char *parent,
                          struct wh_workload *ret);

void wh_workload_done(struct wh_workload *w);

/* The controller owner reference of an object's metadata (borrowed), or
 * NULL. */
const json_t *wh_controller_owner(const json_t *meta);

/* Label or annotation value helpers; NULL when absent or not a string. */
const char *wh_meta_label(const json_t *meta, const char *key);
const char *wh_meta_annotation(const json_t *meta, const char *key);

#endif
