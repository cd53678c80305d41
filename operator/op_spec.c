#include "op_spec.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jget.h"
#include "k8s_time.h"
#include "op_proto.h"

#define F "spec.triggerCapture."

static bool alnum_lower(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool op_dns_label(const char *s, size_t n)
{
    if (n == 0 || n > 63 || !alnum_lower(s[0]) || !alnum_lower(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum_lower(s[i]) && s[i] != '-')
            return false;
    return true;
}

bool op_dns_subdomain(const char *s, size_t n)
{
    if (n == 0 || n > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n || s[i] == '.') {
            if (i == start || !alnum_lower(s[start]) || !alnum_lower(s[i - 1]))
                return false;
            for (size_t k = start; k < i; k++)
                if (!alnum_lower(s[k]) && s[k] != '-')
                    return false;
            start = i + 1;
        }
    return true;
}

const char *op_ref_kind_name(const struct k8s_kind *k)
{
    return k ? k->kind : "";
}

void op_spec_done(struct op_spec *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_pods; i++)
        free(s->pods[i]);
    free(s->pods);
    free(s->pod_namespace);
    free(s->storage);
    free(s->ref_name);
    op_hosts_done(&s->hosts);
    memset(s, 0, sizeof(*s));
}

/* An integer field of obj (at path) within [lo, hi]; required. */
static int int_field(const json_t *obj, const char *path, const char *name, long long lo,
                     long long hi, long long *ret, struct k8s_error *reterr)
{
    const json_t *v = json_object_get(obj, name);
    if (!v || json_is_null(v))
        return k8s_error_set(reterr, -K8S_EINVAL, "%s%s: required", path, name);
    if (!json_is_integer(v))
        return k8s_error_set(reterr, -K8S_EINVAL, "%s%s: must be an integer", path, name);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return k8s_error_set(reterr, -K8S_EINVAL, "%s%s: must be between %lld and %lld (got %lld)",
                             path, name, lo, hi, x);
    *ret = x;
    return 0;
}

/* An optional string field: *ret NULL when absent or null. */
static int str_field(const json_t *obj, const char *path, const char *name, const char **ret,
                     struct k8s_error *reterr)
{
    const json_t *v = json_object_get(obj, name);
    *ret = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return k8s_error_set(reterr, -K8S_EINVAL, "%s%s: must be a string", path, name);
    *ret = json_string_value(v);
    return 0;
}

static bool has_pod(const struct op_spec *s, const char *p, size_t n)
{
    for (size_t i = 0; i < s->n_pods; i++)
        if (strlen(s->pods[i]) == n && !memcmp(s->pods[i], p, n))
            return true;
    return false;
}

static int split_pods(struct op_spec *s, const char *list, struct k8s_error *reterr)
{
    size_t cap = 1;
    for (const char *c = list; *c; c++)
        cap += *c == ',';
    if (cap > OP_MAX_TARGETS)
        return k8s_error_set(reterr, -K8S_EINVAL, F "podName: more than %d pods", OP_MAX_TARGETS);
    if (!(s->pods = calloc(cap, sizeof(*s->pods))))
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    for (const char *p = list;;) {
        const char *end = p + strcspn(p, ",");
        const char *a = p, *b = end;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        char q[K8S_QUOTE_CAP];
        if (a == b)
            return k8s_error_set(reterr, -K8S_EINVAL, F "podName: empty pod name in \"%s\"",
                                 k8s_quote(q, list, strlen(list)));
        if (!op_dns_subdomain(a, (size_t)(b - a)))
            return k8s_error_set(reterr, -K8S_EINVAL,
                                 F "podName: \"%s\" is not a valid pod name (DNS-1123 subdomain)",
                                 k8s_quote(q, a, (size_t)(b - a)));
        if (!has_pod(s, a, (size_t)(b - a)) && !(s->pods[s->n_pods++] = strndup(a, b - a)))
            return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
        if (!*end)
            return 0;
        p = end + 1;
    }
}

static bool gcs_bucket_ok(const char *b, size_t n)
{
    if (n < 3 || n > 222 || !alnum_lower(b[0]) || !alnum_lower(b[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum_lower(b[i]) && b[i] != '-' && b[i] != '_' && b[i] != '.')
            return false;
    return true;
}

static bool has_dotdot(const char *p)
{
    for (const char *s = p; (s = strstr(s, "..")); s += 2)
        if ((s == p || s[-1] == '/') && (s[2] == '/' || s[2] == '\0'))
            return true;
    return false;
}

static int storage(struct op_spec *s, const char *loc, struct k8s_error *reterr)
{
    static const char need[] =
        F "storageLocation: must be gs://bucket/path or an absolute path without '..' (got \"%s\")";
    char q[K8S_QUOTE_CAP];
    if (!loc || !*loc)
        return k8s_error_set(reterr, -K8S_EINVAL, F "storageLocation: required");
    if (strlen(loc) > OP_MAX_STORAGE)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "storageLocation: longer than %d bytes (got %zu: \"%s\")",
                             OP_MAX_STORAGE, strlen(loc), k8s_quote(q, loc, strlen(loc)));
    for (const char *c = loc; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return k8s_error_set(reterr, -K8S_EINVAL,
                                 F "storageLocation: control character in \"%s\"",
                                 k8s_quote(q, loc, strlen(loc)));
    if (!strncmp(loc, "gs://", 5)) {
        const char *bucket = loc + 5;
        size_t n = strcspn(bucket, "/");
        if (!gcs_bucket_ok(bucket, n) || has_dotdot(bucket + n))
            return k8s_error_set(reterr, -K8S_EINVAL, need, k8s_quote(q, loc, strlen(loc)));
    } else if (loc[0] != '/' || has_dotdot(loc)) {
        return k8s_error_set(reterr, -K8S_EINVAL, need, k8s_quote(q, loc, strlen(loc)));
    }
    size_t n = strlen(loc);
    while (n > 1 && loc[n - 1] == '/' && strcmp(loc, "gs://"))
        n--;
    if (!(s->storage = strndup(loc, n)))
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    return 0;
}

/* The workloadRef kind: by apiVersion's group and kind when given, else
 * the one workloadRef kind of that name. */
static int ref_row(struct op_spec *s, const char *api, const char *kind, struct k8s_error *reterr)
{
    char q[K8S_QUOTE_CAP], q2[K8S_QUOTE_CAP], kinds[160];
    int count = 0;
    const struct k8s_kind *k =
        api ? k8s_kind_of_ref(api, kind) : k8s_kind_named(kind, K8S_KIND_WORKLOAD_REF, &count);
    if (k && (k->flags & K8S_KIND_WORKLOAD_REF)) {
        s->ref_kind = k;
        return 0;
    }
    if (count > 1)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "workloadRef.kind: %d kinds are named \"%s\"; set " F
                               "workloadRef.apiVersion to say which",
                             count, k8s_quote(q, kind, strlen(kind)));
    if (api)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "workloadRef: apiVersion \"%s\" and kind \"%s\" name no kind of "
                               "%s",
                             k8s_quote(q, api, strlen(api)), k8s_quote(q2, kind, strlen(kind)),
                             k8s_kinds_names(K8S_KIND_WORKLOAD_REF, kinds, sizeof(kinds)));
    return k8s_error_set(reterr, -K8S_EINVAL, F "workloadRef.kind: must be %s (got \"%s\")",
                         k8s_kinds_names(K8S_KIND_WORKLOAD_REF, kinds, sizeof(kinds)),
                         k8s_quote(q, kind, strlen(kind)));
}

static int workload_ref(struct op_spec *s, const json_t *ref, struct k8s_error *reterr)
{
    const char *kind = NULL, *name = NULL, *api = NULL;
    if (!json_is_object(ref))
        return k8s_error_set(reterr, -K8S_EINVAL, F "workloadRef: must be an object");
    int r = str_field(ref, F "workloadRef.", "kind", &kind, reterr);
    r = r ? r : str_field(ref, F "workloadRef.", "name", &name, reterr);
    r = r ? r : str_field(ref, F "workloadRef.", "apiVersion", &api, reterr);
    if (r < 0)
        return r;
    if (!kind || !strcmp(kind, ""))
        return k8s_error_set(reterr, -K8S_EINVAL, F "workloadRef.kind: required");
    if ((r = ref_row(s, api && *api ? api : NULL, kind, reterr)) < 0)
        return r;
    char q[K8S_QUOTE_CAP];
    if (!name || !op_dns_subdomain(name, strlen(name)))
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "workloadRef.name: required, a DNS-1123 subdomain (got \"%s\")",
                             name ? k8s_quote(q, name, strlen(name)) : "");
    if (!(s->ref_name = strdup(name)))
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    return 0;
}

static int namespace_rule(struct op_spec *s, const char *own, const char *pod_ns,
                          const struct op_spec_limits *lim, struct k8s_error *reterr)
{
    char q[K8S_QUOTE_CAP];
    if (pod_ns && *pod_ns && !op_dns_label(pod_ns, strlen(pod_ns)))
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "podNamespace: \"%s\" is not a valid namespace name",
                             k8s_quote(q, pod_ns, strlen(pod_ns)));
    const char *ns = pod_ns && *pod_ns ? pod_ns : own;
    if (strcmp(ns, own) && !lim->allow_cross_namespace)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "podNamespace: \"%s\" differs from the resource's namespace \"%s\" "
                               "(cross-namespace targets need --allow-cross-namespace)",
                             ns, own);
    if (!(s->pod_namespace = strdup(ns)))
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    return 0;
}

/* The options' fields, their ranges and defaults: one row each. */
static const struct {
    const char *name;
    long long lo, hi, def;
    size_t at; /* offsetof in struct op_options */
} option_rows[] = {
    {"hostTracerLevel", 0, 3, OP_TRACER_HOST_DEFAULT,
     offsetof(struct op_options, host_tracer_level)},
    {"deviceTracerLevel", 0, 1, OP_TRACER_DEVICE_DEFAULT,
     offsetof(struct op_options, device_tracer_level)},
    {"pythonTracerLevel", 0, 1, OP_TRACER_PYTHON_DEFAULT,
     offsetof(struct op_options, python_tracer_level)},
    {"delayMs", 0, 3600000, 0, offsetof(struct op_options, delay_ms)},
};

/* spec.triggerCapture.options into s->options, each field optional. */
static int options(struct op_spec *s, const json_t *opts, struct k8s_error *reterr)
{
    if (opts && !json_is_null(opts) && !json_is_object(opts))
        return k8s_error_set(reterr, -K8S_EINVAL, F "options: must be an object");
    for (size_t i = 0; i < sizeof(option_rows) / sizeof(option_rows[0]); i++) {
        const json_t *v = json_object_get(opts, option_rows[i].name);
        long long x = option_rows[i].def;
        if (v && !json_is_null(v) &&
            int_field(opts, F "options.", option_rows[i].name, option_rows[i].lo, option_rows[i].hi,
                      &x, reterr) < 0)
            return -K8S_EINVAL;
        *(int64_t *)((char *)&s->options + option_rows[i].at) = x;
    }
    return 0;
}

static int parse(const json_t *tc, const char *own, const struct op_spec_limits *lim,
                 struct op_spec *s, struct k8s_error *reterr)
{
    long long port, dur;
    const char *pods = NULL, *pod_ns = NULL, *profiler = NULL, *loc = NULL;
    int r = int_field(tc, F, "capturePort", 1, 65535, &port, reterr);
    r = r ? r : int_field(tc, F, "durationSeconds", 1, 2147483647, &dur, reterr);
    if (r == 0 && dur * K8S_NSEC_PER_SEC > lim->max_duration_ns) {
        char max[32];
        k8s_duration_format(lim->max_duration_ns, max);
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "durationSeconds: %llds exceeds --max-capture-duration (%s)", dur,
                             max);
    }
    r = r ? r : str_field(tc, F, "podName", &pods, reterr);
    r = r ? r : str_field(tc, F, "podNamespace", &pod_ns, reterr);
    r = r ? r : str_field(tc, F, "profiler", &profiler, reterr);
    r = r ? r : str_field(tc, F, "storageLocation", &loc, reterr);
    if (r < 0)
        return r;
    s->port = (int)port;
    s->duration_s = dur;
    char q[K8S_QUOTE_CAP];
    if (profiler && strcmp(profiler, "google_cloud_mldiagnostics"))
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "profiler: must be google_cloud_mldiagnostics (got \"%s\")",
                             k8s_quote(q, profiler, strlen(profiler)));
    const json_t *ref = json_object_get(tc, "workloadRef");
    bool has_ref = ref && !json_is_null(ref);
    if (has_ref && pods && *pods)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "podName and " F "workloadRef: set one of them, not both");
    if (!has_ref && (!pods || !*pods))
        return k8s_error_set(reterr, -K8S_EINVAL, F "podName: required (or " F "workloadRef)");
    const json_t *hosts = json_object_get(tc, "hosts");
    if (!has_ref && hosts && !json_is_null(hosts))
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "hosts: only with " F "workloadRef (podName names its pods)");
    r = has_ref ? workload_ref(s, ref, reterr) : split_pods(s, pods, reterr);
    r = r ? r : op_hosts_parse(hosts, &s->hosts, reterr);
    r = r ? r : namespace_rule(s, own, pod_ns, lim, reterr);
    r = r ? r : options(s, json_object_get(tc, "options"), reterr);
    return r ? r : storage(s, loc, reterr);
}

int64_t op_start_delay_ms(size_t hosts)
{
    return 250 + (int64_t)(hosts / 2);
}

int64_t op_spec_start_delay_ms(const struct op_spec *s, size_t hosts)
{
    int64_t need = op_start_delay_ms(hosts);
    return s->options.delay_ms > need ? s->options.delay_ms : need;
}

int op_spec_check_sidecar(const struct op_spec *s, size_t hosts, int64_t sidecar_timeout_ns,
                          struct k8s_error *reterr)
{
    int64_t delay_ms = op_spec_start_delay_ms(s, hosts);
    if (!sidecar_timeout_ns ||
        s->duration_s * 1000 + delay_ms <= sidecar_timeout_ns / K8S_NSEC_PER_MSEC)
        return 0;
    char limit[32];
    k8s_duration_format(sidecar_timeout_ns, limit);
    if (s->options.delay_ms > op_start_delay_ms(hosts)) /* the user's delay is the larger part */
        return k8s_error_set(reterr, -K8S_EINVAL,
                             F "options.delayMs: %lldms plus durationSeconds %llds exceeds "
                               "--sidecar-timeout (%s), the ceiling for one capture: the "
                               "profiler would be cut off and save nothing",
                             (long long)delay_ms, (long long)s->duration_s, limit);
    return k8s_error_set(reterr, -K8S_EINVAL,
                         F "durationSeconds: %llds plus the %lldms start delay exceeds "
                           "--sidecar-timeout (%s), the ceiling for one capture: the profiler "
                           "would be cut off and save nothing",
                         (long long)s->duration_s, (long long)delay_ms, limit);
}

int op_spec_parse(const json_t *obj, const struct op_spec_limits *lim, struct op_spec *ret,
                  struct k8s_error *reterr)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *tc = json_object_get(spec, "triggerCapture");
    const char *own = k8s_jstr2(obj, "metadata", "namespace");
    if (!json_is_object(spec))
        return k8s_error_set(reterr, -K8S_EINVAL, "spec: required");
    if (!json_is_object(tc))
        return k8s_error_set(reterr, -K8S_EINVAL, "spec.triggerCapture: required");
    struct op_spec s = {0};
    int r = parse(tc, own ? own : "default", lim, &s, reterr);
    r = r ? r : op_spec_check_sidecar(&s, s.n_pods ? s.n_pods : 1, lim->sidecar_timeout_ns, reterr);
    if (r < 0) {
        op_spec_done(&s);
        return r;
    }
    *ret = s;
    return 0;
}
