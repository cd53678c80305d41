/*
 * op_audit — makes what the webhook could not do visible (DESIGN §4.4),
 * per workload, as a gauge and a Warning Event on the workload whenever
 * the count grows:
 *
 *  - pods of opted-in workloads admitted without the webhook's
 *    diagon.gke.io/injection annotation (the webhook was down, or the pod
 *    predates the install): mldiagnostics_operator_uninjected_pods,
 *    event reason PodsNotInjected;
 *  - injected pods whose diagon.gke.io/identifier / metadata lack a field
 *    the google-cloud-mldiagnostics SDK requires (standalone webhook,
 *    failed lookup; k8s_mlrun): the SDK will refuse to start a run in them.
 *    mldiagnostics_operator_incomplete_identity_pods, reason
 *    IncompleteIdentity, on the workload the identity names.
 *
 * Opted in, as the webhook decides (§3.3) from what the operator caches:
 * not opted out by the pod (label or annotation "false") or its workload;
 * and the pod's label, or its workload's label (a workloadRef kind of the
 * kind table, k8s_kinds, found by the pod label its row selects pods by,
 * then up the controller owners the table names: a TrainJob's JobSet →
 * the TrainJob), or its namespace's label is "true" (namespaces labelled
 * diagon-webhook-exempt=true are never injected, so never counted). The
 * namespace label is read only once the optional namespaces cache has
 * listed (RBAC may withhold it). Kinds the operator does not cache (Job,
 * a RayCluster without RayJob) are not audited.
 *
 * Thread-safety: op_audit_scan from one thread at a time; the metrics are
 * rendered from any thread. Failure: op_audit_new returns NULL (out of
 * memory); a failed event post is logged and retried when the count grows.
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

/* Pods counted at the last scan, uninjected and with an incomplete
 * identity (for tests and logs). */
size_t op_audit_total(struct op_audit *a);
size_t op_audit_incomplete(struct op_audit *a);

#endif
