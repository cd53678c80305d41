/*
 * op_parent — the thin step around op_schedule: a capture on a schedule
 * (a parent) is reconciled here instead of being captured itself. It
 * gathers the parent's children from the connections cache (by owner
 * uid), asks op_schedule what to do with the clock's time, and applies it
 * through op_api: create the owed child (one that exists already counts
 * as created), delete the children beyond the history limits, write the
 * parent's status, post a "Scheduled" Event. An invalid schedule or
 * template fails the parent (phase Failed, reason InvalidSpec, its
 * generation as status.observedGeneration), which then rests until its
 * spec changes: a Failed parent of a newer generation is validated again,
 * and when it is valid now its phase, completionTime and message are
 * cleared and its schedule resumes (op_parent_revived says when).
 *
 * Thread-safety: as op_capture (never two reconciles of one key at once).
 * Ownership: every argument is borrowed.
 */
#ifndef OP_PARENT_H
#define OP_PARENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "k8s_err.h"
#include "k8s_manager.h"
#include "k8s_store.h"
#include "op_api.h"
#include "op_config.h"

struct op_parent_deps {
    const struct op_api *api;
    struct k8s_store *conns; /* the connections cache (packed as op_capture_trim keeps them) */
    const struct op_config *cfg;
    int64_t now_s;
};

/* Is obj (a connection) a parent: has it spec.schedule? */
bool op_parent_is(const json_t *obj);

/* Is obj Failed at an older generation than its own (its spec changed
 * since it failed)? Reads metadata.generation and status.phase and
 * observedGeneration only, as the cache keeps them for a finished one. */
bool op_parent_revived(const json_t *obj);

/* Reconcile the parent obj ("namespace/name" key). K8S_REQUEUE_AFTER with
 * *after_ns until the next tick; K8S_RETRY with err. */
enum k8s_result op_parent_reconcile(const struct op_parent_deps *d, const json_t *obj,
                                    int64_t *after_ns, struct k8s_error *err);

#endif
