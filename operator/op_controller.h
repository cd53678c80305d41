/*
 * op_controller — wires the operator together the way controller-runtime
 * does: watch sources, registered by one table (MLDiagnosticsConnections;
 * pods trimmed to what targeting and auditing read; the workloadRef kinds
 * of the kind table, k8s_kinds, as metadata, a RayJob with its cluster
 * name) → caches → each source's event-to-key mapper (op_map) → a
 * rate-limited work queue of resource keys → the manager's workers
 * (k8s_manager) calling the reconciler (op_capture: op_plan's pure step,
 * then its apply).
 *
 * Every watch runs on every replica, so /readyz means "caches synced" on
 * leader and followers alike; workers start once this replica leads and
 * the caches have synced, after the captures Running in status have taken
 * back their pods (op_capture_adopt) and with every known resource queued. A change to a
 * pod or workload queues the unfinished captures of its namespace. No
 * event is lost to a gap in a watch (drops, 410, 429, 5xx, refused
 * connections): a relist of the resources queues every difference the
 * gap hid (a deletion too, which cancels the RPCs), a relist of pods or
 * workloads queues every unfinished capture, and every --resync-period
 * (5m) the leader queues every unfinished capture again, the safety net
 * (a timer of its own, k8s_ticker).
 * A reconcile that keeps failing waits at most 30 s between attempts. A
 * workload kind whose CRD is not installed is empty and watched within
 * 10 s of its creation (k8s_watch). The audit (op_audit) rescans every
 * 15 s (k8s_ticker), and at once when this replica comes to lead.
 *
 * Thread-safety: the public functions are for main's thread.
 */
#ifndef OP_CONTROLLER_H
#define OP_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>

#include "k8s_client.h"
#include "k8s_err.h"
#include "k8s_metrics.h"
#include "op_config.h"

struct op_controller;

/* Start the watches, the relay and the audit (nothing reconciles yet).
 * cfg, client and metrics are borrowed. */
int op_controller_start(const struct op_config *cfg, struct k8s_client *client,
                        struct k8s_metrics *metrics, struct op_controller **ret,
                        struct k8s_error *reterr) K8S_MUST_CHECK;

/* Every initial list done? why names what is missing when not. */
bool op_controller_synced(void *ctl, char *why, size_t cap);

/* This replica leads: start the workers once synced (call repeatedly;
 * idempotent). */
void op_controller_lead(struct op_controller *c);

/* SIGTERM: stop the workers, let captures that can end within grace_ns
 * finish, record the rest as interrupted. */
void op_controller_shutdown(struct op_controller *c, int64_t grace_ns);

/* Leadership lost: stop the workers and cancel RPCs without writing. */
void op_controller_abandon(struct op_controller *c);

/* Stop everything and free. NULL-safe. */
void op_controller_free(struct op_controller *c);

#endif
