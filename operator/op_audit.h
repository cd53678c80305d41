/*
 * op_audit — makes the webhook's fail-open visible (DESIGN §4.4): pods of
 * opted-in workloads that were admitted without the webhook's
 * diagon.gke.io/injection annotation (the webhook was down, or the pod
 * predates the install) are counted per workload, exported as the gauge
 * mldiagnostics_operator_uninjected_pods{namespace,kind,name}, and
 * reported by a Warning Event on the workload whenever the count grows.
 *
 * Opted in, as the webhook decides (§3.3) from what the operator caches:
 * not opted out by the pod (label or annotation "false") or its workload,
 * and the pod's label or its JobSet / LeaderWorkerSet / RayJob's label is
 * "true". Namespace labels are not watched by the operator, so pods opted
 * in only through their namespace are not audited.
 *
 * Thread-safety: op_audit_scan from one thread at a time; the metric is
 * rendered from any thread.
 */
#ifndef OP_AUDIT_H
#define OP_AUDIT_H

#include <stdbool.h>

#include "k8s_client.h"
#include "k8s_metrics.h"
#include "op_capture.h"

struct op_audit;

/* client, metrics borrowed; identity copied. NULL on out of memory. */
struct op_audit *op_audit_new(struct k8s_client *c, op_stores_fn stores, void *stores_ud,
                              struct k8s_metrics *m, const char *identity);
void op_audit_free(struct op_audit *a);

/* Recount from the caches; post events (the leader only) for workloads
 * whose count grew since they were last reported. */
void op_audit_scan(struct op_audit *a, bool post_events);

/* Pods counted at the last scan (for tests and logs). */
size_t op_audit_total(struct op_audit *a);

#endif
