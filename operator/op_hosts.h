/*
 * op_hosts — which of a workload's hosts a capture takes
 * (spec.triggerCapture.hosts, with a workloadRef): by role
 * (replicatedJobs: a JobSet's replicated jobs, LWS leader/worker, Ray
 * head/worker group, PyTorchJob master/worker, MPIJob launcher/worker,
 * Volcano tasks), by index (indices: "0-3,8"), by label selector
 * (selector), and the first N left (max).
 *
 * A host's role and index come from the kind table (k8s_kind_hosts): the
 * workload's pods are sorted by their rank labels, their role's rule and
 * their name, and a host's index is its place in that order, so the same
 * pods give the same choice whatever order a cache lists them in. Every
 * filter given must hold; max then keeps the first N by index.
 *
 * Thread-safety: reentrant. Ownership: struct op_hosts owns its strings
 * and selector (op_hosts_done, NULL-safe, safe on a zeroed struct);
 * struct op_host borrows what the caller points it at.
 */
#ifndef OP_HOSTS_H
#define OP_HOSTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"
#include "k8s_kinds.h"

#define OP_HOSTS_MAX_ROLES  32
#define OP_HOSTS_MAX_RANGES 64

struct op_range {
    int64_t lo, hi; /* inclusive */
};

struct op_hosts {
    bool set;     /* hosts was given */
    char **roles; /* replicatedJobs */
    size_t n_roles;
    struct op_range *ranges; /* indices, as written */
    size_t n_ranges;
    json_t *selector; /* a metav1.LabelSelector; NULL: none */
    int64_t max;      /* 0: no limit */
};

/* Parse spec.triggerCapture.hosts (borrowed; NULL or null: not set) into
 * *ret. -K8S_EINVAL with reterr naming the field
 * ("spec.triggerCapture.hosts.indices: ..."), -K8S_ENOMEM; *ret is left
 * zeroed on failure. */
int op_hosts_parse(const json_t *hosts, struct op_hosts *ret,
                   struct k8s_error *reterr) K8S_MUST_CHECK;

void op_hosts_done(struct op_hosts *h);

/* One pod of the workload, as the choice sees it. */
struct op_host {
    const void *pod;                  /* the caller's */
    const char *name;                 /* the pod's name */
    const char *role;                 /* NULL: no rule of its kind applies */
    int rule;                         /* the role's rule; -1 with no role */
    int64_t rank[K8S_KIND_MAX_RANKS]; /* -1 when absent */
    const json_t *labels;             /* for the selector (needed only with one) */
};

/* The role, rule and ranks of a pod of kind k's, from its labels read with
 * get (the rest of *out is the caller's to fill). */
void op_host_read(const struct k8s_kind *k, k8s_label_fn *get, const void *labels,
                  struct op_host *out);

/* Sort v[0..n) (the workload's pods) into index order, then move the hosts
 * h takes to the front, in index order: their count in *ret_kept (the
 * others follow). A selector the API server would refuse takes nothing
 * (op_hosts_parse refuses it first). -K8S_ENOMEM leaves v sorted and
 * *ret_kept untouched. */
int op_hosts_choose(const struct op_hosts *h, struct op_host *v, size_t n,
                    size_t *ret_kept) K8S_MUST_CHECK;

/* What h asks for, for messages: "replicatedJobs workers, indices 0-3,8,
 * max 4", into out. Returns out. */
const char *op_hosts_describe(const struct op_hosts *h, char *out, size_t cap);

#endif
