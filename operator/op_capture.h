/*
 * op_capture — the MLDiagnosticsConnection reconciler (DESIGN §4.2, §4.4).
 *
 * Reads the resource from the cache and moves it along
 *   (new) → Pending → Running → Succeeded | Failed
 * writing every step through the status subresource. What to do is
 * op_plan's (the pure step); this module is the thin step around it: it
 * gathers the plan's input (the cache, its own record of each resource's
 * RPCs, the clock, and, when a plan asks for them, the target pods
 * resolved from the pod and workload caches), applies the plan's effects
 * in order through op_api (status writes with their 409 retries, Events,
 * RPCs), and counts and logs what was done.
 *
 * The status is the checkpoint: Running (with session id, attempt and
 * hosts) is written before any RPC; a Running resource this process has
 * no RPCs for (after
 * a restart or a failover) is re-dispatched with the same session id while
 * attempts remain, else Failed with its history. Deleting a resource
 * cancels its RPCs; a status write that finds the resource gone (the
 * cache has not seen the deletion yet) reads it afresh, so the run is
 * dropped instead of retried.
 *
 * At most one capture per pod, for any interleaving (DESIGN §4.2): a
 * capture claims its target pods (op_runs, in op_holds) in the same step
 * as it decides to run, before it writes Running, and gives them up only once
 * its RPCs are over and its outcome is written (or it is gone); a
 * capture that finds a pod held waits in Pending with a message naming
 * the pod and the holder, and looks again every 2 s. A capture found
 * Running in status (after a restart or a leader change) holds the pods
 * listed in its status.hosts from op_capture_adopt on, until it ends or
 * is re-dispatched, so the new leader resumes it before anything new
 * takes its pods.
 *
 * In memory per resource (op_runs, this module's record): the live batch,
 * its pod claims, results not yet written, and the resourceVersion of our
 * last write (a cache older than that is bypassed with a GET, so a stale
 * Running is never mistaken for an interrupted capture).
 *
 * Thread-safety: op_capture_reconcile from any number of workers, never
 * two with the same key at once (the work queue's guarantee); the relay
 * calls back on its thread. Logs: one line per transition, here at the
 * reconcile edge.
 */
#ifndef OP_CAPTURE_H
#define OP_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "k8s_manager.h"
#include "k8s_metrics.h"
#include "k8s_store.h"
#include "op_api.h"
#include "op_config.h"
#include "op_plan.h"
#include "k8s_queue.h"
#include "op_targets.h"

typedef void (*op_stores_fn)(void *ud, struct op_stores *out);

struct op_capture_deps {
    struct op_api api;       /* status, Events, RPCs (copied; its ud borrowed) */
    struct k8s_store *conns; /* MLDiagnosticsConnections */
    op_stores_fn stores;     /* the pod and workload caches, as of now */
    void *stores_ud;
    struct k8s_queue *queue; /* finished batches re-queue their key */
    const struct op_config *cfg;
    struct k8s_metrics *metrics; /* may be NULL */
    int64_t (*now_ns)(void);     /* the wall clock, unix ns; NULL: k8s_real_ns */
};

struct op_capture;

int op_capture_new(const struct op_capture_deps *deps, struct op_capture **ret) K8S_MUST_CHECK;
/* NULL-safe; cancels live batches without writing status. */
void op_capture_free(struct op_capture *c);

/* Reconcile "namespace/name". K8S_DONE: nothing more to do until an event;
 * K8S_REQUEUE_AFTER: look again after *ret_after_ns; K8S_RETRY: failed
 * (reterr says why), back off and retry. */
enum k8s_result op_capture_reconcile(struct op_capture *c, const char *key, int64_t *ret_after_ns,
                                     struct k8s_error *reterr);

/* SIGTERM: dispatch nothing new; wait up to grace_ns for live captures
 * that can end by then, cancel the others, and record each outcome (the
 * cancelled ones as interrupted, still Running, for the next leader to
 * resume). Call after the workers stopped. */
void op_capture_shutdown(struct op_capture *c, int64_t grace_ns);

/* This replica starts reconciling (start-up or a leader change): every
 * resource the connections cache shows Running holds its status.hosts.
 * Call once the caches have synced, before the first reconcile. */
void op_capture_adopt(struct op_capture *c);

/* Lost leadership: cancel every live batch, write nothing. */
void op_capture_abandon(struct op_capture *c);

size_t op_capture_live(struct op_capture *c);

/* The connections cache's transform (k8s_store_set_transform), so that
 * 5,000 resources created at once fit DESIGN §6's 32 MiB:
 *   terminal (never reconciled again, but for a Failed parent whose spec
 *     changed, then read whole from the API server): only metadata.name,
 *     namespace, uid, resourceVersion, generation and ownerReferences,
 *     status.phase and observedGeneration, and spec.schedule (a failed
 *     resource's tree was ~8 KiB; a 1,536-host capture's status.hosts
 *     ~1.5 MiB);
 *   Running (a few at a time, read on every host's answer): whole;
 *   new or Pending: packed, its whole form as compact JSON text (a seventh
 *     of jansson's tree) beside metadata.name, namespace, uid and
 *     resourceVersion, status.phase and spec.triggerCapture.podNamespace,
 *     what the scanners (op_map) read; op_capture_unpack gives it back.
 * obj borrowed; returns a new reference, NULL when out of memory. */
json_t *op_capture_trim(json_t *obj);

/* A cached resource as it was received (op_capture_trim's packed form
 * unpacked; any other form as it is): a new reference, NULL when out of
 * memory, to drop with k8s_store_release (it may be the cache's own).
 * stored borrowed. */
json_t *op_capture_unpack(const json_t *stored);

#endif
