/*
 * op_map — event-to-key mappers (controller-runtime's handlers): which
 * MLDiagnosticsConnection keys ("namespace/name") a watch event queues.
 * A resource's own event queues itself; a pod or workload event queues
 * the unfinished captures (neither Succeeded nor Failed) that target its
 * namespace (spec.triggerCapture.podNamespace, else the resource's own),
 * since any of them may be waiting for it (the shape, and the mapper of a
 * resource's own event, are the library's: k8s_map). Each watch source
 * names its mapper in op_controller's table.
 *
 * Thread-safety: reentrant (the queue and the store lock themselves).
 * Ownership: every argument is borrowed.
 */
#ifndef OP_MAP_H
#define OP_MAP_H

#include <jansson.h>
#include <stdbool.h>

#include "k8s_map.h"

/* A connection's own event: itself, and the capture on a schedule that
 * owns it (its controller owner), which counts its children. */
void op_map_connection(const struct k8s_map_ctx *ctx, const json_t *obj);

/* The unfinished captures targeting obj's namespace. */
void op_map_namespace(const struct k8s_map_ctx *ctx, const json_t *obj);

/* Every unfinished capture (ns NULL), or those targeting ns. */
void op_map_unfinished(const struct k8s_map_ctx *ctx, const char *ns);

/* A resource that a relist found changed (a gap in the watch hid it):
 * removed (obj NULL) it is queued, so its RPCs are cancelled; otherwise
 * as its watch event would have queued it, when unfinished. */
void op_map_relisted(const struct k8s_map_ctx *ctx, const char *key, const json_t *obj);

/* Neither Succeeded nor Failed. */
bool op_map_is_unfinished(const json_t *conn);

#endif
