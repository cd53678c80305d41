#include "op_map.h"

#include <stdio.h>
#include <string.h>

#include "op_plan.h"
#include "op_status.h"

bool op_map_is_unfinished(const json_t *conn)
{
    return !op_phase_terminal(op_str2(conn, "status", "phase"));
}

struct scan {
    const struct k8s_map_ctx *ctx;
    const char *ns; /* NULL: every namespace */
};

static void queue_unfinished(void *ud, const char *key, const json_t *obj)
{
    const struct scan *s = ud;
    if (!op_map_is_unfinished(obj))
        return;
    const char *pns = op_str2(json_object_get(obj, "spec"), "triggerCapture", "podNamespace");
    const char *own = op_str2(obj, "metadata", "namespace");
    const char *target = pns && *pns ? pns : own;
    if (!s->ns || (target && !strcmp(target, s->ns)))
        k8s_queue_add(s->ctx->queue, key);
}

void op_map_connection(const struct k8s_map_ctx *ctx, const json_t *obj)
{
    k8s_map_self(ctx, obj);
    const json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(meta, "ownerReferences"), i, o)
    {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        const char *name = json_string_value(json_object_get(o, "name"));
        char key[600];
        if (ns && name && kind && !strcmp(kind, "MLDiagnosticsConnection") &&
            json_is_true(json_object_get(o, "controller"))) {
            snprintf(key, sizeof(key), "%s/%s", ns, name);
            k8s_queue_add(ctx->queue, key);
        }
    }
}

void op_map_namespace(const struct k8s_map_ctx *ctx, const json_t *obj)
{
    const char *ns = op_str2(obj, "metadata", "namespace");
    if (ns)
        op_map_unfinished(ctx, ns);
}

void op_map_unfinished(const struct k8s_map_ctx *ctx, const char *ns)
{
    struct scan s = {ctx, ns};
    k8s_store_each(ctx->primary, queue_unfinished, &s);
}

void op_map_relisted(const struct k8s_map_ctx *ctx, const char *key, const json_t *obj)
{
    struct scan s = {ctx, NULL};
    if (!obj)
        k8s_queue_add(ctx->queue, key);
    else
        queue_unfinished(&s, key, obj);
}
