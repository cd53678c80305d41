#include "md_target.h"

#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

/* Does type name row k: kind, singular (the kind in lower case) or
 * plural, in any case, with ".group" when group is given? */
static bool names(const struct k8s_kind *k, const char *type, size_t len, const char *group)
{
    if (group && strcasecmp(group, k->group))
        return false;
    size_t plural = strlen(k->plural);
    return (strlen(k->kind) == len && !strncasecmp(type, k->kind, len)) ||
           (plural == len && !strncasecmp(type, k->plural, len));
}

/* The row type names, when exactly one row of the table does (kubectl
 * reads "job" as batch's Job: a name two rows share needs its group). */
static const struct k8s_kind *row_of(const char *type, size_t len, const char *group, int *count)
{
    const struct k8s_kind *found = NULL;
    *count = 0;
    for (int i = 0; i < K8S_KIND_COUNT; i++)
        if (names(&k8s_kinds[i], type, len, group)) {
            found = &k8s_kinds[i];
            ++*count;
        }
    return *count == 1 ? found : NULL;
}

static int bad(const char *arg, const char *why, struct k8s_error *reterr)
{
    char kinds[200];
    return k8s_error_set(reterr, -K8S_EINVAL,
                         "\"%s\": %s; TYPE/NAME where TYPE is pod or one of %s", arg, why,
                         k8s_kinds_names(K8S_KIND_WORKLOAD_REF, kinds, sizeof(kinds)));
}

int md_target_parse(const char *arg, struct md_target *ret, struct k8s_error *reterr)
{
    const char *slash = strchr(arg, '/');
    if (!slash || slash == arg || !slash[1])
        return bad(arg, "not TYPE/NAME", reterr);
    size_t len = (size_t)(slash - arg);
    if ((len == 3 && !strncasecmp(arg, "pod", 3)) || (len == 4 && !strncasecmp(arg, "pods", 4))) {
        *ret = (struct md_target){NULL, slash + 1};
        return 0;
    }
    const char *dot = memchr(arg, '.', len);
    char group[128] = "";
    if (dot)
        snprintf(group, sizeof(group), "%.*s", (int)(slash - dot - 1), dot + 1);
    int count;
    const struct k8s_kind *k =
        row_of(arg, dot ? (size_t)(dot - arg) : len, dot ? group : NULL, &count);
    if (count > 1)
        return bad(arg,
                   "more than one kind has that name: add its group (e.g. job.batch.volcano.sh)",
                   reterr);
    if (!k || !(k->flags & K8S_KIND_WORKLOAD_REF))
        return bad(arg, "not a kind a capture can target", reterr);
    *ret = (struct md_target){k, slash + 1};
    return 0;
}
