/*
 * op_runs — what this process knows about each MLDiagnosticsConnection
 * beyond its status: the capture reconciler's (op_capture) record per
 * resource key. A record holds the live batch of Profile RPCs, the pods
 * it claimed (op_holds: at most one capture per pod, DESIGN §4.2), the
 * per-host results not yet written, and the resourceVersion of our last
 * status write (a cache older than that is read through, so a stale
 * Running is never mistaken for an interrupted capture).
 *
 * A record's states, as op_plan reads them (op_run_view): none, live
 * (RPCs in flight), finished or interrupted (results wait to be written).
 * A batch that ends queues its key again (k8s_queue) unless stopping; one
 * whose resource is gone (forgotten while live) is dropped with its
 * results. Stopping (shutdown or a lost leadership) cancels the live
 * batches: on shutdown as interrupted, to be recorded for the next leader
 * to resume; on abandon discarded, nothing to write.
 *
 * Thread-safety: every function takes the record set's lock; call them
 * from the reconcile workers, never two with the same key at once (the
 * work queue's guarantee), and from the thread that stops them. The
 * relay's done callbacks come on its thread.
 * Ownership: keys, uids and reasons are copied or borrowed for the call;
 * the arrays of a view are borrowed until the next call for that key.
 * Failure: out of memory leaves no record (a later call makes one).
 */
#ifndef OP_RUNS_H
#define OP_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"
#include "op_api.h"
#include "op_plan.h"
#include "k8s_queue.h"

struct op_runs;

/* api (copied; its ud borrowed) sends and cancels batches; finished
 * batches queue their key on queue (borrowed). NULL when out of memory. */
struct op_runs *op_runs_new(const struct op_api *api, struct k8s_queue *queue);
/* Drop every record and free. Call after op_runs_shutdown or
 * op_runs_abandon (nothing live). NULL-safe. */
void op_runs_free(struct op_runs *rs);

/* The record of key as op_plan reads it (an empty view without one), and
 * whether the set is stopping (dispatch nothing new). */
struct op_run_view op_runs_view(struct op_runs *rs, const char *key, bool *ret_stopping);

/* Our status write of key (uid) made resourceVersion rv (NULL: no change). */
void op_runs_wrote(struct op_runs *rs, const char *key, const char *uid, const char *rv);

/* Is a cached copy at resourceVersion rv (NULL: none) older than our last
 * write of key? */
bool op_runs_stale(struct op_runs *rs, const char *key, const char *rv);

/* Claim the dispatch's pods for key (uid), all at once or none; on success
 * the record takes d's pods and files (d left with none) and its session
 * and location. 0; 1 when not claimed, busy naming why ("pod <pod> is busy
 * with capture <name>"); -K8S_ENOMEM when no record could be made. */
int op_runs_claim(struct op_runs *rs, const char *key, const char *uid, struct op_plan_dispatch *d,
                  char *busy, size_t cap) K8S_MUST_CHECK;

/* Send the claimed dispatch's batch: the record is live from here. On
 * failure (the submit's code) the record gives up its pods and, unless
 * d->resumed (still Running in status: it keeps its holds), its holds. */
int op_runs_submit(struct op_runs *rs, const char *key,
                   const struct op_plan_dispatch *d) K8S_MUST_CHECK;

/* The dispatch will not be sent (its Running was not written): as a
 * failed op_runs_submit. */
void op_runs_unclaim(struct op_runs *rs, const char *key, bool resumed);

/* The resource is gone or replaced: drop the record, or when live cancel
 * its batch (reason) and drop it when the batch ends. */
void op_runs_forget(struct op_runs *rs, const char *key, const char *reason);

/* Drop the record of key (not live), holds and all. */
void op_runs_drop(struct op_runs *rs, const char *key);

/* The outcome is written: give up the pods and results, keep the record
 * (its last written resourceVersion). */
void op_runs_release(struct op_runs *rs, const char *key);

/* fn for each host result of key's finished batch, under the lock. */
void op_runs_each_result(struct op_runs *rs, const char *key,
                         void (*fn)(void *ud, const struct op_host_result *h), void *ud);

/* A capture found Running in status holds its pods ("ns/pod", steals the
 * array) unless its record already has some or another holds one of
 * them; the array is freed then. */
void op_runs_adopt(struct op_runs *rs, const char *key, const char *uid, char **pods, size_t n);

/* Records with a live batch. */
size_t op_runs_live(struct op_runs *rs);

/* Stop: cancel (reason) the batches that would not end within grace_ns,
 * wait for the others until then, cancel what is left, and wait up to
 * a second more for the cancellations; the cancelled are interrupted. */
void op_runs_shutdown(struct op_runs *rs, int64_t grace_ns, const char *reason);

/* Stop: cancel every live batch (reason) to be discarded; wait up to a
 * second for the cancellations. */
void op_runs_abandon(struct op_runs *rs, const char *reason);

/* The key of a record whose results wait to be written (new string), or
 * NULL when none is; op_runs_drop_finished drops it if still waiting. */
char *op_runs_next_finished(struct op_runs *rs);
void op_runs_drop_finished(struct op_runs *rs, const char *key);

#endif
