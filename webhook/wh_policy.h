/*
 * wh_policy — who gets injected (DESIGN §3.3), first match wins:
 *   1. pod label or annotation, or top-level workload label,
 *      managed-mldiagnostics-gke: "false" → skip (explicit opt-out);
 *   2. pod label "true" → inject;
 *   3. workload label "true" → inject;
 *   4. namespace label "true" and the pod belongs to a kind the kind
 *      table says the namespace label covers (k8s_kinds, K8S_KIND_NS_LABEL)
 *      → inject;
 *   5. otherwise skip.
 * Pure function; reentrant.
 */
#ifndef WH_POLICY_H
#define WH_POLICY_H

#include <jansson.h>
#include <stdbool.h>

#include "k8s_names.h"
#include "wh_meta.h"
#include "wh_workload.h"

struct wh_decision {
    bool inject;
    char reason[320]; /* e.g. "workload label managed-mldiagnostics-gke=true (JobSet/x)" */
};

/* Decide from the pod's metadata, its workload (labels may be unknown) and
 * the namespace's labels (NULL when unknown). Values other than "true" and
 * "false" count as unset and add a warning to `warnings` (an array). */
struct wh_decision wh_policy_decide(const struct wh_meta *pod_meta, const struct wh_workload *w,
                                    const struct wh_map *ns_labels, const char *ns_unknown_why,
                                    json_t *warnings);

#endif
