#include "md_show.h"

#include <string.h>
#include <time.h>

#include "k8s_jget.h"
#include "k8s_time.h"

static const char *str2(const json_t *o, const char *a, const char *b)
{
    const char *v = k8s_jstr2(o, a, b);
    return v ? v : "";
}

static const char *str(const json_t *o, const char *k)
{
    const char *v = k8s_jstr(o, k);
    return v ? v : "";
}

/* "2 Running, 1 Succeeded": the hosts of a status by phase, in order of
 * first appearance. */
static void host_counts(const json_t *status, char *out, size_t cap)
{
    const char *phases[8];
    int counts[8], n = 0;
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(status, "hosts"), i, h)
    {
        const char *p = str(h, "phase");
        int k = 0;
        while (k < n && strcmp(phases[k], p))
            k++;
        if (k == n && n < 8) {
            phases[n] = p;
            counts[n++] = 0;
        }
        if (k < n)
            counts[k]++;
    }
    size_t len = 0;
    out[0] = '\0';
    for (int k = 0; k < n && len < cap; k++)
        len +=
            (size_t)snprintf(out + len, cap - len, "%s%d %s", k ? ", " : "", counts[k], phases[k]);
}

void md_show_progress(FILE *out, const json_t *prev, const json_t *now)
{
    const json_t *ps = json_object_get(prev, "status"), *ns = json_object_get(now, "status");
    const char *phase = str(ns, "phase"), *msg = str(ns, "message");
    if (*phase && (strcmp(phase, str(ps, "phase")) || strcmp(msg, str(ps, "message"))))
        fprintf(out, "%s: %s\n", phase, msg);
    char was[200], is[200];
    host_counts(ps, was, sizeof(was));
    host_counts(ns, is, sizeof(is));
    if (*is && strcmp(was, is))
        fprintf(out, "  hosts: %s\n", is);
}

/* The storage a resource writes under (its spec's, without trailing '/'). */
static void storage_of(const json_t *obj, char *out, size_t cap)
{
    snprintf(out, cap, "%s",
             str2(json_object_get(obj, "spec"), "triggerCapture", "storageLocation"));
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/')
        out[--n] = '\0';
}

static void how_to_open(FILE *out, const json_t *obj, const char *location)
{
    char storage[1100];
    storage_of(obj, storage, sizeof(storage));
    if (!strncmp(storage, "gs://", 5)) {
        fprintf(out, "Open them with:  xprof --logdir=%s\n", storage);
        return;
    }
    const json_t *h = json_array_get(json_object_get(json_object_get(obj, "status"), "hosts"), 0);
    const char *ns = str2(json_object_get(obj, "spec"), "triggerCapture", "podNamespace");
    fprintf(out,
            "Each host wrote its file inside its pod. Copy them out and open them, e.g.:\n"
            "  kubectl cp %s/%s:%s ./%s/%s\n"
            "  xprof --logdir=./%s\n",
            *ns ? ns : str2(obj, "metadata", "namespace"), str(h, "pod"), location,
            str2(obj, "metadata", "name"), location + strlen(storage) + 1,
            str2(obj, "metadata", "name"));
}

int md_show_outcome(FILE *out, FILE *err, const json_t *obj)
{
    const json_t *st = json_object_get(obj, "status");
    const char *phase = str(st, "phase");
    size_t i;
    json_t *h;
    if (!strcmp(phase, "Succeeded")) {
        json_array_foreach(json_object_get(st, "hosts"), i, h)
        {
            fprintf(out, "  %-40s %s\n", str(h, "pod"), str(h, "outputFile"));
        }
        const char *location = str2(st, "captureResult", "outputLocation");
        fprintf(out, "Profiles: %s\n", location);
        how_to_open(out, obj, location);
        return 0;
    }
    if (strcmp(phase, "Failed"))
        return -1;
    fprintf(err, "error: capture %s failed: %s\n", str2(obj, "metadata", "name"),
            str(st, "message"));
    json_array_foreach(json_object_get(st, "hosts"), i, h)
    {
        if (*str(h, "error"))
            fprintf(err, "  %-40s %s\n", str(h, "pod"), str(h, "error"));
    }
    const char *why = str2(st, "captureResult", "errorMessage");
    if (!json_array_size(json_object_get(st, "hosts")) && *why && strcmp(why, str(st, "message")))
        fprintf(err, "  %s\n", why);
    return 1;
}

/* kubectl's HumanDuration (k8s.io/apimachinery/pkg/util/duration). */
static void human(int64_t sec, char out[16])
{
    int64_t min = sec / 60, hours = (sec + 1800) / 3600; /* whole hours, rounded */
    if (sec < 120)
        snprintf(out, 16, "%llds", (long long)sec);
    else if (min < 10)
        snprintf(out, 16, sec % 60 ? "%lldm%llds" : "%lldm", (long long)min, (long long)(sec % 60));
    else if (min < 3 * 60)
        snprintf(out, 16, "%lldm", (long long)min);
    else if (hours < 8)
        snprintf(out, 16, min % 60 ? "%lldh%lldm" : "%lldh", (long long)(min / 60),
                 (long long)(min % 60));
    else if (hours < 48)
        snprintf(out, 16, "%lldh", (long long)hours);
    else if (hours < 24 * 8)
        snprintf(out, 16, hours % 24 ? "%lldd%lldh" : "%lldd", (long long)(hours / 24),
                 (long long)(hours % 24));
    else if (hours < 24 * 365 * 2)
        snprintf(out, 16, "%lldd", (long long)(hours / 24));
    else
        snprintf(out, 16, "%lldy", (long long)(hours / (24 * 365)));
}

void md_show_age(const char *rfc3339, int64_t now_s, char out[16])
{
    time_t t = 0;
    if (!rfc3339 || k8s_time_parse_rfc3339(rfc3339, &t) < 0) {
        snprintf(out, 16, "<unknown>");
        return;
    }
    int64_t d = now_s - (int64_t)t;
    human(d < 0 ? 0 : d, out);
}

/* "JobSet/llama", or the pods named. */
static void target_of(const json_t *obj, char *out, size_t cap)
{
    const json_t *tc = json_object_get(json_object_get(obj, "spec"), "triggerCapture");
    const json_t *ref = json_object_get(tc, "workloadRef");
    if (ref)
        snprintf(out, cap, "%s/%s", str(ref, "kind"), str(ref, "name"));
    else
        snprintf(out, cap, "pod/%s", str(tc, "podName"));
}

void md_show_list(FILE *out, const json_t *list, int all_namespaces, int64_t now_s)
{
    size_t i;
    json_t *o;
    if (all_namespaces)
        fprintf(out, "%-20s ", "NAMESPACE");
    fprintf(out, "%-32s %-32s %-10s %-6s %s\n", "NAME", "TARGET", "PHASE", "HOSTS", "AGE");
    json_array_foreach(json_object_get(list, "items"), i, o)
    {
        char target[300], age[16];
        target_of(o, target, sizeof(target));
        md_show_age(str2(o, "metadata", "creationTimestamp"), now_s, age);
        const json_t *st = json_object_get(o, "status");
        if (all_namespaces)
            fprintf(out, "%-20s ", str2(o, "metadata", "namespace"));
        fprintf(out, "%-32s %-32s %-10s %-6zu %s\n", str2(o, "metadata", "name"), target,
                *str(st, "phase") ? str(st, "phase") : "<none>",
                json_array_size(json_object_get(st, "hosts")), age);
    }
}

void md_show_status(FILE *out, const json_t *obj, int64_t now_s)
{
    const json_t *st = json_object_get(obj, "status");
    char target[300], age[16];
    target_of(obj, target, sizeof(target));
    md_show_age(str2(obj, "metadata", "creationTimestamp"), now_s, age);
    fprintf(out, "Name:       %s\nNamespace:  %s\nTarget:     %s\nAge:        %s\n",
            str2(obj, "metadata", "name"), str2(obj, "metadata", "namespace"), target, age);
    fprintf(out, "Phase:      %s\nMessage:    %s\n", str(st, "phase"), str(st, "message"));
    if (*str(st, "sessionId"))
        fprintf(out, "Session:    %s (attempt %lld)\n", str(st, "sessionId"),
                (long long)json_integer_value(json_object_get(st, "attempts")));
    size_t i;
    json_t *h;
    if (json_array_size(json_object_get(st, "hosts")))
        fprintf(out, "Hosts:\n  %-40s %-11s %s\n", "POD", "PHASE", "FILE / ERROR");
    json_array_foreach(json_object_get(st, "hosts"), i, h)
    {
        fprintf(out, "  %-40s %-11s %s\n", str(h, "pod"), str(h, "phase"),
                *str(h, "error") ? str(h, "error") : str(h, "outputFile"));
    }
    if (!strcmp(str(st, "phase"), "Succeeded")) {
        const char *location = str2(st, "captureResult", "outputLocation");
        fprintf(out, "Profiles:   %s\n", location);
        how_to_open(out, obj, location);
    }
}
