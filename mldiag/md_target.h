/*
 * md_target — what `kubectl mldiag capture TYPE/NAME` names, read the way
 * kubectl reads a resource argument: TYPE is a workloadRef kind of the kind
 * table by its kind or plural name in any case, followed by its group
 * when another row of the table has the name ("job.batch.volcano.sh":
 * "job" alone is batch's Job, as kubectl reads it);
 * or pod/pods, whose NAME may list pods separated by commas.
 *
 * Thread-safety: reentrant. Ownership: the target borrows NAME from the
 * argument and rows from the kind table.
 */
#ifndef MD_TARGET_H
#define MD_TARGET_H

#include <stddef.h>

#include "k8s_err.h"
#include "k8s_kinds.h"

struct md_target {
    const struct k8s_kind *kind; /* a workloadRef kind; NULL: pods */
    const char *name;            /* the workload, or "a,b" pod names */
};

/* Parse arg ("jobset/llama", "pod/a,b"). -K8S_EINVAL with reterr naming
 * the argument and the types accepted. */
int md_target_parse(const char *arg, struct md_target *ret,
                    struct k8s_error *reterr) K8S_MUST_CHECK;

#endif
