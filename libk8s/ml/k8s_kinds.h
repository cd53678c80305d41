/*
 * k8s_kinds — the workload kinds both programs know (DESIGN §3.4), one row
 * each: API group/version and plural, the pod label that names it, the
 * controller-owner kinds that are then the workload, where its documents
 * hold pod templates (the offline inject), and what the webhook and the
 * operator do with it (namespace-label opt-in, watched, workloadRef).
 *
 * Adding a kind is a row here plus its fixtures and tests: the webhook's
 * caches and owner walk, the offline inject, the operator's watches,
 * targets and audit, and the charts' RBAC (checked against this table by
 * tests/integration/test_charts.py, through tests/tools/kinds_json.c)
 * all read it.
 *
 * Thread-safety: the table is constant; every function is reentrant.
 * Ownership: returned strings and rows are static (borrowed).
 */
#ifndef K8S_KINDS_H
#define K8S_KINDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The workloadRef kinds (K8S_KIND_WORKLOAD_REF) come first, so that what
 * holds one thing per workloadRef kind is sized K8S_KIND_REF_COUNT
 * (tests/unit/libk8s/ml/test_k8s_kinds.c checks the order). */
enum k8s_kind_id {
    K8S_KIND_NONE = -1,
    K8S_KIND_JOBSET,
    K8S_KIND_LWS,
    K8S_KIND_RAYJOB,
    K8S_KIND_TRAINJOB,
    K8S_KIND_PYTORCHJOB,
    K8S_KIND_VOLCANO_JOB,
    K8S_KIND_MPIJOB,
    K8S_KIND_REF_COUNT,
    K8S_KIND_RAYCLUSTER = K8S_KIND_REF_COUNT,
    K8S_KIND_JOB,
    K8S_KIND_DEPLOYMENT,
    K8S_KIND_STATEFULSET,
    K8S_KIND_REPLICASET,
    K8S_KIND_COUNT
};

/* What a kind is for (flags of a row). */
enum {
    K8S_KIND_NAMES_BY_LABEL = 1 << 0, /* the webhook names the workload from pod_label first */
    K8S_KIND_NS_LABEL = 1 << 1,       /* the namespace label opts its pods in (§3.3 rule 4) */
    K8S_KIND_WEBHOOK_WATCH = 1 << 2,  /* the webhook list+watches it (others: GET on a miss) */
    K8S_KIND_WORKLOAD_REF = 1 << 3,   /* workloadRef accepts it; the operator watches it */
};

/* A pod label whose value is the workload's name; when `when` is set, only
 * on pods whose label `when` is `is`. */
struct k8s_kind_label {
    const char *key, *when, *is;
};

enum k8s_site_shape {
    K8S_SITE_ONE,         /* path is the template */
    K8S_SITE_EACH_ITEM,   /* path is an array; each item's template at suffix */
    K8S_SITE_EACH_MEMBER, /* path is an object; each member's template at suffix */
};

/* Where a document of the kind holds a pod template. */
struct k8s_kind_site {
    enum k8s_site_shape shape;
    const char *path, *suffix; /* JSON Pointers */
    const char *label;         /* for --explain: "template", "worker group" */
    const char *owner;         /* kind of its pods' controller owner, named as the
                                  document; NULL when the controller names it */
};

/* How the pods a workloadRef kind selects are told apart and ordered
 * (spec.triggerCapture.hosts): a pod's role is the name of the first rule
 * that applies to its labels; its index is its place when the workload's
 * pods are sorted by the rank labels' integer values (an absent one counts
 * as -1), then by the role's rule, then by name. */
struct k8s_kind_role {
    const char *key;  /* the pod label read */
    const char *is;   /* the rule applies when the label has this value; NULL: any */
    const char *name; /* the role; NULL: the label's value */
};

#define K8S_KIND_MAX_ROLES 2
#define K8S_KIND_MAX_RANKS 2

struct k8s_kind_hosts {
    struct k8s_kind_role roles[K8S_KIND_MAX_ROLES]; /* {NULL}-terminated when fewer */
    const char *ranks[K8S_KIND_MAX_RANKS];          /* NULL-terminated when fewer */
};

#define K8S_KIND_MAX_OWNERS 3
#define K8S_KIND_MAX_SITES  3

struct k8s_kind {
    const char *kind;        /* "JobSet"; a row is (group, kind): names may repeat */
    const char *group;       /* "jobset.x-k8s.io" ("batch", "apps", ...) */
    const char *api_version; /* "jobset.x-k8s.io/v1alpha2" */
    const char *prefix;      /* "/apis/jobset.x-k8s.io/v1alpha2" */
    const char *plural;      /* "jobsets" */
    const char *resource;    /* "jobsets.jobset.x-k8s.io": its CRD's name; logs, metrics */
    unsigned flags;
    struct k8s_kind_label pod_label; /* {NULL} when its pods carry none */
    /* controller owners that are then the workload (NULL-terminated) */
    const struct k8s_kind *owners[K8S_KIND_MAX_OWNERS];
    struct k8s_kind_site sites[K8S_KIND_MAX_SITES];
    /* workloadRef: its pods are those whose pod_label of kind pods_by is
     * its name, or the value of its status.<pods_by_status> */
    enum k8s_kind_id pods_by;
    const char *pods_by_status;
    /* the rows whose pods a workloadRef kind selects: their roles and order */
    struct k8s_kind_hosts hosts;
};

extern const struct k8s_kind k8s_kinds[K8S_KIND_COUNT];

/* Namespaces (core v1), looked up beside the table's kinds; not a row. */
extern const struct k8s_kind k8s_kind_namespace;

/* The row of (group, kind), group "" being the core group; NULL when
 * the table has none. */
const struct k8s_kind *k8s_kind_find(const char *group, const char *kind);

/* The row an object reference names by apiVersion ("group/version", or
 * "version" for the core group) and kind, as owner references do; NULL
 * when none (or either is NULL). */
const struct k8s_kind *k8s_kind_of_ref(const char *api_version, const char *kind);

/* The row named `kind` among those with every flag in `flags`, when
 * exactly one is (a reference without its apiVersion); NULL otherwise,
 * with *count (may be NULL) the number of rows that matched. */
const struct k8s_kind *k8s_kind_named(const char *kind, unsigned flags, int *count);

/* Is `owner` one of the controller owners k's row says are then the
 * workload? */
bool k8s_kind_owned_by(const struct k8s_kind *k, const struct k8s_kind *owner);

/* The id of a row of the table. */
static inline enum k8s_kind_id k8s_kind_id(const struct k8s_kind *k)
{
    return (enum k8s_kind_id)(k - k8s_kinds);
}

/* The value of k's pod label in a pod's labels (borrowed), or NULL when
 * absent or its condition label does not match. */
const char *k8s_kind_pod_label(const struct k8s_kind *k, const json_t *labels);
/* The same over labels of any form: get(labels, key) gives a label's
 * value or NULL. */
typedef const char *k8s_label_fn(const void *labels, const char *key);
const char *k8s_kind_pod_label_in(const struct k8s_kind *k, k8s_label_fn *get, const void *labels);

/* The role of a pod of k's (by k's hosts rules, over labels read with
 * get): the index of the rule that applies, *ret_name its name (borrowed:
 * static, or the label's value); -1 when none does. */
int k8s_kind_host_role(const struct k8s_kind *k, k8s_label_fn *get, const void *labels,
                       const char **ret_name);

/* Does a workloadRef kind select its pods by kind id's pod label? */
bool k8s_kind_selects_pods(enum k8s_kind_id id);

/* The name messages and docs give k, into out (truncated to cap): its
 * kind, followed by its group when another row has the name and the group
 * is not Kubernetes' own (no dot: batch, apps): "Job (batch.volcano.sh)".
 * Returns out. */
const char *k8s_kind_label(const struct k8s_kind *k, char *out, size_t cap);

/* "A, B or C": the kinds with every flag in `flags`, in table order, into
 * out (truncated to cap), each named by k8s_kind_label. Returns out. */
const char *k8s_kinds_names(unsigned flags, char *out, size_t cap);

/* The table as JSON (scripts/kinds.py and the charts' tests read it;
 * "label" is k8s_kind_label's): a NEW array, NULL on out of memory. */
json_t *k8s_kinds_json(void);

#endif
