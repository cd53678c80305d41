/*
 * op_event — Kubernetes Events (core/v1) about our resources and the
 * workloads we audit, as client-go's event recorder writes them: a name
 * "<object>.<unix ns in hex>", involvedObject, reason, message, type
 * Normal/Warning, source and reporting component, count 1.
 *
 * Events are best effort: a failure is returned for the caller to log;
 * nothing retries. Thread-safety: reentrant.
 */
#ifndef OP_EVENT_H
#define OP_EVENT_H

#include <jansson.h>

#include "k8s_client.h"
#include "k8s_err.h"

#define OP_COMPONENT "mldiagnostics-connection-operator"

struct op_event_ref {
    const char *api_version, *kind, *namespace, *name, *uid; /* uid may be NULL */
};

/* Post one Event about ref. type: "Normal" or "Warning". instance: the
 * reporting instance (our identity). */
int op_event_post(struct k8s_client *c, const struct op_event_ref *ref, const char *type,
                  const char *reason, const char *message, const char *instance,
                  struct k8s_error *reterr) K8S_MUST_CHECK;

/* ref of a cached object (borrowed strings, valid while obj is). */
struct op_event_ref op_event_ref_of(const json_t *obj, const char *api_version, const char *kind);

#endif
