#include "wh_policy.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "k8s_err.h"
#include "k8s_kinds.h"
#include "wh_warn.h"

enum tri { UNSET, YES, NO };

static enum tri value_of(const struct wh_map *map, const char *where, json_t *warnings)
{
    const char *v = wh_map_get(map, K8S_LABEL_MANAGED);
    if (!v)
        return UNSET;
    if (!strcmp(v, "true"))
        return YES;
    if (!strcmp(v, "false"))
        return NO;
    wh_warnf(warnings, "%s %s=\"%.40s\" ignored: use \"true\" or \"false\"", where,
             K8S_LABEL_MANAGED, v);
    return UNSET;
}

K8S_PRINTF(2, 3) static struct wh_decision decided(bool inject, const char *fmt, ...)
{
    struct wh_decision d = {.inject = inject};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d.reason, sizeof(d.reason), fmt, ap);
    va_end(ap);
    return d;
}

/* Rule 5's explanation: say what could not be consulted. */
static struct wh_decision skip_reason(const struct wh_workload *w, bool ns_opted_in, bool ns_known,
                                      const char *ns_unknown_why)
{
    char kinds[160];
    if (ns_opted_in)
        return decided(false, "namespace %s is labelled but %s is not a %s", w->ns, w->kind,
                       k8s_kinds_names(K8S_KIND_NS_LABEL, kinds, sizeof(kinds)));
    if (!w->labels && w->unknown_why[0])
        return decided(false, "no opt-in label on the pod; workload labels unknown (%s)",
                       w->unknown_why);
    if (!ns_known && ns_unknown_why && w->ml_kind)
        return decided(false, "no opt-in label on pod or workload; namespace labels unknown (%s)",
                       ns_unknown_why);
    return decided(false, "no " K8S_LABEL_MANAGED "=true label on pod, workload or namespace");
}

struct wh_decision wh_policy_decide(const struct wh_meta *pod_meta, const struct wh_workload *w,
                                    const struct wh_map *ns_labels, const char *ns_unknown_why,
                                    json_t *warnings)
{
    enum tri pod_l = value_of(pod_meta ? &pod_meta->labels : NULL, "pod label", warnings);
    enum tri pod_a = value_of(pod_meta ? &pod_meta->annotations : NULL, "pod annotation", warnings);
    enum tri wl = w->bare_pod ? UNSET : value_of(w->labels, "workload label", warnings);
    enum tri nsl = value_of(ns_labels, "namespace label", warnings);
    if (pod_l == NO || pod_a == NO)
        return decided(false, "opted out by pod %s " K8S_LABEL_MANAGED "=false",
                       pod_l == NO ? "label" : "annotation");
    if (wl == NO)
        return decided(false, "opted out by workload label " K8S_LABEL_MANAGED "=false (%s/%s)",
                       w->kind, w->name);
    if (pod_l == YES)
        return decided(true, "pod label " K8S_LABEL_MANAGED "=true");
    if (wl == YES)
        return decided(true, "workload label " K8S_LABEL_MANAGED "=true (%s/%s)", w->kind, w->name);
    if (nsl == YES && w->ml_kind)
        return decided(true, "namespace label " K8S_LABEL_MANAGED "=true (%s, %s/%s)", w->ns,
                       w->kind, w->name);
    return skip_reason(w, nsl == YES, ns_labels != NULL, ns_unknown_why);
}
