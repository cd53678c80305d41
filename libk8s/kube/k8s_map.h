/*
 * k8s_map — event-to-key mappers, controller-runtime's handlers: a watch
 * source names the mapper that turns an event about one of its objects
 * into the keys ("namespace/name") of the primary resources it queues.
 * This module holds the shape every mapper has and the one every
 * controller uses for its primary resource (k8s_map_self); a program's
 * own mappers (from a pod to the resources waiting for it) are written
 * against the same shape.
 *
 * Thread-safety: reentrant (the queue and the store lock themselves).
 * Ownership: every argument is borrowed.
 */
#ifndef K8S_MAP_H
#define K8S_MAP_H

#include <jansson.h>

#include "k8s_queue.h"
#include "k8s_store.h"

struct k8s_map_ctx {
    struct k8s_queue *queue;
    struct k8s_store *primary; /* the primary resources' cache, for mappers that scan it */
};

/* Queue what an event about obj calls for. */
typedef void (*k8s_map_fn)(const struct k8s_map_ctx *ctx, const json_t *obj);

/* The object's own key ("namespace/name"; nothing when it has no name). */
void k8s_map_self(const struct k8s_map_ctx *ctx, const json_t *obj);

#endif
