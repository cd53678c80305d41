#include "op_event.h"

#include <stdio.h>
#include <string.h>

#include "k8s_time.h"

struct op_event_ref op_event_ref_of(const json_t *obj, const char *api_version, const char *kind)
{
    const json_t *meta = json_object_get(obj, "metadata");
    return (struct op_event_ref){
        .api_version = api_version,
        .kind = kind,
        .namespace = json_string_value(json_object_get(meta, "namespace")),
        .name = json_string_value(json_object_get(meta, "name")),
        .uid = json_string_value(json_object_get(meta, "uid")),
    };
}

int op_event_post(struct k8s_client *c, const struct op_event_ref *ref, const char *type,
                  const char *reason, const char *message, const char *instance,
                  struct k8s_error *reterr)
{
    if (!ref->namespace || !ref->name)
        return k8s_error_set(reterr, -K8S_EINVAL, "event: object without namespace or name");
    int64_t ns = k8s_real_ns();
    char name[320], path[320], now[21];
    snprintf(name, sizeof(name), "%.240s.%llx", ref->name, (unsigned long long)ns);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ref->namespace);
    k8s_time_rfc3339((time_t)(ns / K8S_NSEC_PER_SEC), now);
    json_t *inv = json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", ref->api_version, "kind",
                            ref->kind, "namespace", ref->namespace, "name", ref->name);
    if (inv && ref->uid)
        json_object_set_new(inv, "uid", json_string(ref->uid));
    /* legacy style, as client-go's record package writes: timestamps and a
     * count, no eventTime (which would call for the events.k8s.io rules) */
    json_t *ev = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:{s:s}, s:s, s:s, s:i, s:s, s:s}",
        "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace", ref->namespace,
        "involvedObject", inv, "reason", reason, "message", message, "type", type, "source",
        "component", OP_COMPONENT, "firstTimestamp", now, "lastTimestamp", now, "count", 1,
        "reportingComponent", OP_COMPONENT, "reportingInstance", instance);
    if (!ev)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    int r = k8s_send_json(c, "POST", path, NULL, ev, 5000, NULL, reterr);
    json_decref(ev);
    return r;
}
