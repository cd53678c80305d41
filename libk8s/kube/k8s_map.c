#include "k8s_map.h"

void k8s_map_self(const struct k8s_map_ctx *ctx, const json_t *obj)
{
    char key[600];
    if (k8s_store_key(obj, key, sizeof(key)))
        k8s_queue_add(ctx->queue, key);
}
