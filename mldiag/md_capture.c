#include "md_capture.h"

#include <stdio.h>
#include <string.h>

#include "k8s_time.h"

#define GROUP_VERSION "diagon.gke.io/v1alpha1"

/* "k=v,k2=v2" as matchLabels. */
static int match_labels(const char *sel, json_t **ret, struct k8s_error *reterr)
{
    json_t *m = json_object();
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", sel);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); m && kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv) {
            json_decref(m);
            return k8s_error_set(reterr, -K8S_EINVAL,
                                 "--selector: \"%s\" is not key=value[,key=value]", sel);
        }
        *eq = '\0';
        json_object_set_new(m, kv, json_string(eq + 1));
    }
    if (!m || !json_object_size(m)) {
        json_decref(m);
        return k8s_error_set(reterr, m ? -K8S_EINVAL : -K8S_ENOMEM,
                             "--selector: \"%s\" is not key=value[,key=value]", sel);
    }
    *ret = json_pack("{s:o}", "matchLabels", m);
    return *ret ? 0 : k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
}

/* replicatedJobs from "a,b". */
static json_t *names_list(const char *list)
{
    json_t *a = json_array();
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", list);
    char *save = NULL;
    for (char *n = strtok_r(buf, ",", &save); a && n; n = strtok_r(NULL, ",", &save))
        json_array_append_new(a, json_string(n));
    return a;
}

static bool any_hosts(const struct md_capture *c)
{
    return c->indices || c->replicated_jobs || c->selector || c->max != MD_UNSET;
}

static int hosts(const struct md_capture *c, json_t *tc, struct k8s_error *reterr)
{
    if (!any_hosts(c))
        return 0;
    if (!c->target.kind)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             "--hosts, --replicated-jobs, --selector and --max choose among a "
                             "workload's pods: name a workload, not pods");
    json_t *h = json_object(), *sel = NULL;
    if (c->selector && match_labels(c->selector, &sel, reterr) < 0) {
        json_decref(h);
        return reterr->err;
    }
    if (c->indices)
        json_object_set_new(h, "indices", json_string(c->indices));
    if (c->replicated_jobs)
        json_object_set_new(h, "replicatedJobs", names_list(c->replicated_jobs));
    if (sel)
        json_object_set_new(h, "selector", sel);
    if (c->max != MD_UNSET)
        json_object_set_new(h, "max", json_integer(c->max));
    return json_object_set_new(tc, "hosts", h) < 0 ? -K8S_ENOMEM : 0;
}

static int options(const struct md_capture *c, json_t *tc)
{
    static const struct {
        const char *name;
        size_t at;
    } rows[] = {{"hostTracerLevel", offsetof(struct md_capture, host_level)},
                {"deviceTracerLevel", offsetof(struct md_capture, device_level)},
                {"pythonTracerLevel", offsetof(struct md_capture, python_level)}};
    json_t *o = json_object();
    for (size_t i = 0; o && i < sizeof(rows) / sizeof(rows[0]); i++) {
        int64_t v = *(const int64_t *)((const char *)c + rows[i].at);
        if (v != MD_UNSET)
            json_object_set_new(o, rows[i].name, json_integer(v));
    }
    if (o && c->delay_ns != MD_UNSET)
        json_object_set_new(o, "delayMs", json_integer(c->delay_ns / K8S_NSEC_PER_MSEC));
    if (o && !json_object_size(o)) {
        json_decref(o);
        return 0;
    }
    return json_object_set_new(tc, "options", o) < 0 ? -K8S_ENOMEM : 0;
}

/* The default name: the workload's (or first pod's), then the time. */
static void default_name(const struct md_capture *c, int64_t now_s, char out[64])
{
    size_t len = strcspn(c->target.name, ",");
    if (len > 40)
        len = 40;
    snprintf(out, 64, "%.*s-%lld", (int)len, c->target.name, (long long)now_s);
}

static json_t *trigger(const struct md_capture *c)
{
    json_t *tc = json_pack("{s:I, s:I, s:s, s:s, s:s}", "capturePort", (json_int_t)c->port,
                           "durationSeconds", (json_int_t)(c->duration_ns / K8S_NSEC_PER_SEC),
                           "podNamespace", c->namespace, "profiler", "google_cloud_mldiagnostics",
                           "storageLocation", c->storage);
    if (tc && c->target.kind)
        json_object_set_new(tc, "workloadRef",
                            json_pack("{s:s, s:s, s:s}", "apiVersion", c->target.kind->api_version,
                                      "kind", c->target.kind->kind, "name", c->target.name));
    else if (tc)
        json_object_set_new(tc, "podName", json_string(c->target.name));
    return tc;
}

int md_capture_build(const struct md_capture *c, int64_t now_s, json_t **ret,
                     struct k8s_error *reterr)
{
    if (c->duration_ns < K8S_NSEC_PER_SEC || c->duration_ns % K8S_NSEC_PER_SEC)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             "--duration: whole seconds, at least 1s (e.g. 10s, 2m)");
    if (!c->storage || !*c->storage)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             "--storage: required, gs://bucket/path or an absolute path in "
                             "the pods");
    char name[64];
    if (!c->name)
        default_name(c, now_s, name);
    json_t *tc = trigger(c);
    int r = tc ? hosts(c, tc, reterr) : k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    r = r ? r : options(c, tc);
    json_t *o =
        r == 0 ? json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:O}}", "apiVersion", GROUP_VERSION, "kind",
                           "MLDiagnosticsConnection", "metadata", "name", c->name ? c->name : name,
                           "namespace", c->namespace, "spec", "triggerCapture", tc)
               : NULL;
    json_decref(tc);
    if (r < 0)
        return r;
    if (!o)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    *ret = o;
    return 0;
}
