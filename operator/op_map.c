#include "op_map.h"

#include <stdio.h>
#include <string.h>

#include "k8s_jget.h"
#include "op_plan.h"
#include "op_status.h"

bool op_map_is_unfinished(const json_t *conn)
{
    return !op_phase_terminal(k8s_jstr2(conn, "status", "phase"));
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
    const char *pns = k8s_jstr2(json_object_get(obj, "spec"), "triggerCapture", "podNamespace");
    const char *own = k8s_jstr2(obj, "metadata", "namespace");
    const char *target = pns && *pns ? pns : own;
    if (!s->ns || (target && !strcmp(target, s->ns)))
        k8s_queue_add(s->ctx->queue, key);
}

void op_map_connection(const struct k8s_map_ctx *ctx, const json_t *obj)
{
    k8s_map_self(ctx, obj);
    const json_t *owner = k8s_controller_ref(obj);
    const char *ns = k8s_jstr2(obj, "metadata", "namespace"), *name = k8s_jstr(owner, "name");
    const char *kind = k8s_jstr(owner, "kind");
    char key[600];
    if (ns && name && kind && !strcmp(kind, "MLDiagnosticsConnection")) {
        snprintf(key, sizeof(key), "%s/%s", ns, name);
        k8s_queue_add(ctx->queue, key);
    }
}

void op_map_namespace(const struct k8s_map_ctx *ctx, const json_t *obj)
{
    const char *ns = k8s_jstr2(obj, "metadata", "namespace");
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
