/*
 * op_targets — which pods a capture talks to (DESIGN §4.2): the pods named
 * in podName, or the pods of a workloadRef kind (k8s_kinds) found by the
 * label its row selects them by: its own (jobset.sigs.k8s.io/jobset-name,
 * leaderworkerset.sigs.k8s.io/name, training.kubeflow.org/job-name), its
 * JobSet's (a TrainJob's JobSet has its name), or its RayCluster's
 * (ray.io/cluster of the RayJob's status.rayClusterName), read from the
 * operator's caches.
 *
 * With spec.triggerCapture.hosts only the hosts it takes (op_hosts) are
 * targets, and only they must be ready.
 *
 * A named pod that does not exist fails the capture at once, as does a
 * workload that does not exist; pods that exist but are not Running with
 * an IP (or a workload without pods yet, or none that hosts takes) make
 * the capture wait.
 *
 * Thread-safety: reentrant (the stores lock themselves).
 */
#ifndef OP_TARGETS_H
#define OP_TARGETS_H

#include <stdbool.h>
#include <stddef.h>

#include "k8s_kinds.h"
#include "k8s_store.h"
#include "op_spec.h"

/* The caches targets are read from (borrowed). Pods are kept in op_pod's
 * packed form; workloads (the K8S_KIND_WORKLOAD_REF kinds) by kind id. A
 * NULL store, or one whose kind is not served (absent CRD), has no
 * objects. */
struct op_stores {
    struct k8s_store *pods;
    struct k8s_store *namespaces; /* NULL until listed (the audit's; optional) */
    struct k8s_store *kinds[K8S_KIND_COUNT];
    bool absent[K8S_KIND_COUNT];
};

struct op_target {
    char *pod;
    char *ip;
    char *hostname; /* the container's host name: spec.hostname, else the pod name */
};

enum op_targets_state { OP_TARGETS_READY, OP_TARGETS_WAIT, OP_TARGETS_FAIL };

struct op_targets {
    enum op_targets_state state;
    struct op_target *v; /* READY: the targets, sorted by pod name */
    size_t n;
    size_t of;      /* READY: the workload's pods spec.hosts chose them from; 0: no choice made */
    char why[1024]; /* WAIT / FAIL: what is missing, naming pods */
    /* FAIL: the API paths of what the cache does not have (the first
     * few), for the caller to confirm — a cache can lag a creation */
    char *absent[4];
    size_t n_absent;
};

/* Resolve s against the stores into *ret (op_targets_done). -K8S_ENOMEM;
 * otherwise 0 with ret->state saying ready, wait or fail. */
int op_targets_resolve(const struct op_spec *s, const struct op_stores *st,
                       struct op_targets *ret) K8S_MUST_CHECK;

void op_targets_done(struct op_targets *t);

#endif
