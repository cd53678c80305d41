/*
 * op_status — an MLDiagnosticsConnection's status: conditions with stable
 * transition times, and writes through the status subresource with the
 * object's resourceVersion as precondition (a stale write is -K8S_ECONFLICT,
 * for the caller to re-read and retry).
 *
 * Thread-safety: reentrant.
 */
#ifndef OP_STATUS_H
#define OP_STATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <time.h>

#include "k8s_client.h"
#include "k8s_err.h"

#define OP_GROUP_VERSION "diagon.gke.io/v1alpha1"
#define OP_KIND          "MLDiagnosticsConnection"
#define OP_PLURAL        "mldiagnosticsconnections"

/* Set condition `type` in status.conditions: status "True"/"False", a
 * CamelCase reason, a message; lastTransitionTime changes only when the
 * status does. */
void op_condition_set(json_t *status, const char *type, const char *cstatus, const char *reason,
                      const char *message, json_int_t generation, time_t now);

/* The condition's lastTransitionTime when its status is cstatus, else 0. */
time_t op_condition_since(const json_t *status, const char *type, const char *cstatus);

/* PUT obj (borrowed) with `status` (stolen) to .../<name>/status. On
 * success *ret is the server's answer (new reference). */
int op_status_put(struct k8s_client *c, const json_t *obj, json_t *status, json_t **ret,
                  struct k8s_error *reterr) K8S_MUST_CHECK;

/* GET the object fresh from the API server (*ret new reference). */
int op_status_get(struct k8s_client *c, const char *ns, const char *name, json_t **ret,
                  struct k8s_error *reterr) K8S_MUST_CHECK;

#endif
