#include "op_status.h"

#include <stdio.h>
#include <string.h>

#include "k8s_jget.h"
#include "k8s_time.h"

#define BASE "/apis/" OP_GROUP_VERSION "/namespaces/%s/" OP_PLURAL "/%s"

static json_t *find_condition(const json_t *status, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

void op_condition_set(json_t *status, const char *type, const char *cstatus, const char *reason,
                      const char *message, json_int_t generation, time_t now)
{
    json_t *list = json_object_get(status, "conditions");
    if (!json_is_array(list)) {
        list = json_array();
        json_object_set_new(status, "conditions", list);
    }
    json_t *c = find_condition(status, type);
    const char *was = c ? json_string_value(json_object_get(c, "status")) : NULL;
    char when[21];
    k8s_time_rfc3339(now, when);
    json_t *fresh =
        json_pack("{s:s, s:s, s:s, s:s, s:I}", "type", type, "status", cstatus, "reason", reason,
                  "message", message, "observedGeneration", generation);
    if (!fresh)
        return;
    const json_t *old_time = c ? json_object_get(c, "lastTransitionTime") : NULL;
    if (was && !strcmp(was, cstatus) && json_is_string(old_time))
        json_object_set(fresh, "lastTransitionTime", (json_t *)old_time);
    else
        json_object_set_new(fresh, "lastTransitionTime", json_string(when));
    if (c) {
        json_object_update(c, fresh);
        json_decref(fresh);
    } else {
        json_array_append_new(list, fresh);
    }
}

time_t op_condition_since(const json_t *status, const char *type, const char *cstatus)
{
    const json_t *c = find_condition(status, type);
    const char *st = c ? json_string_value(json_object_get(c, "status")) : NULL;
    const char *when = c ? json_string_value(json_object_get(c, "lastTransitionTime")) : NULL;
    time_t t = 0;
    if (!st || strcmp(st, cstatus) || !when || k8s_time_parse_rfc3339(when, &t) < 0)
        return 0;
    return t;
}

int op_status_put(struct k8s_client *c, const json_t *obj, json_t *status, json_t **ret,
                  struct k8s_error *reterr)
{
    const char *ns = k8s_jstr2(obj, "metadata", "namespace");
    const char *name = k8s_jstr2(obj, "metadata", "name");
    char path[600];
    if (!ns || !name || !status) {
        json_decref(status);
        return k8s_error_set(reterr, -K8S_EINVAL, "status: object without namespace or name");
    }
    snprintf(path, sizeof(path), BASE "/status", ns, name);
    json_t *body = json_copy((json_t *)obj); /* shallow: only .status is replaced */
    if (!body) {
        json_decref(status);
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    }
    json_object_set_new(body, "status", status);
    json_object_set_new(body, "apiVersion", json_string(OP_GROUP_VERSION));
    json_object_set_new(body, "kind", json_string(OP_KIND));
    int r = k8s_send_json(c, "PUT", path, NULL, body, 10000, ret, reterr);
    json_decref(body);
    return r;
}

int op_status_get(struct k8s_client *c, const char *ns, const char *name, json_t **ret,
                  struct k8s_error *reterr)
{
    char path[600];
    snprintf(path, sizeof(path), BASE, ns, name);
    return k8s_get_json(c, path, NULL, 10000, ret, reterr);
}
