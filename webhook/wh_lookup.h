/*
 * wh_lookup — how the mutation core asks about objects it cannot see in the
 * review: namespaces and the pod's top-level workload.
 *
 * The core never does I/O itself; it calls these ops. In --standalone mode
 * (and in the offline inject command) there are no ops and every question
 * is answered -K8S_EUNAVAIL. In a cluster the ops are served from
 * list+watch caches, with a bounded single-flight GET on a miss.
 *
 * Contract of get_meta:
 *   kind       k8s_kind_namespace, or a row of the kind table (k8s_kinds):
 *              the (group, kind), never a name alone (borrowed)
 *   ns         the namespace ("" for Namespace objects)
 *   deadline   CLOCK_MONOTONIC ns by which the answer must be given
 *   *ret_meta  on 0: a NEW reference to the object's metadata object
 *              (labels, annotations, creationTimestamp, uid,
 *              ownerReferences, name, namespace); untouched on failure.
 *   returns    0, -K8S_ENOTFOUND (no such object), -K8S_EUNAVAIL
 *              (not answerable: standalone, CRD absent, unknown kind),
 *              -K8S_ETIMEDOUT (deadline passed), other negatives.
 * Thread-safety: get_meta is called concurrently from many admissions.
 */
#ifndef WH_LOOKUP_H
#define WH_LOOKUP_H

#include <jansson.h>
#include <stdint.h>

#include "k8s_err.h"
#include "k8s_kinds.h"

struct wh_lookup {
    int (*get_meta)(void *ud, const struct k8s_kind *kind, const char *ns, const char *name,
                    int64_t deadline_ns, json_t **ret_meta, struct k8s_error *reterr);
    void *ud;
};

/* Ask lk (which may be NULL: standalone → -K8S_EUNAVAIL). */
K8S_MUST_CHECK static inline int wh_lookup_meta(const struct wh_lookup *lk,
                                                const struct k8s_kind *kind, const char *ns,
                                                const char *name, int64_t deadline_ns,
                                                json_t **ret_meta, struct k8s_error *reterr)
{
    if (!lk || !lk->get_meta)
        return k8s_error_set(reterr, -K8S_EUNAVAIL, "no API access (standalone)");
    return lk->get_meta(lk->ud, kind, ns, name, deadline_ns, ret_meta, reterr);
}

#endif
