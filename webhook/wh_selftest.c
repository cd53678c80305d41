#include "wh_selftest.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "k8s_config.h"
#include "k8s_flags.h"
#include "k8s_selector.h"
#include "k8s_time.h"
#include "wh_mutate.h"
#include "wh_policy.h"
#include "wh_probe.h"

#define MWC_PATH "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
#define NS_LABEL "kubernetes.io/metadata.name"
#define FIREWALL                                                                                   \
    "on GKE private clusters the control plane needs a firewall rule allowing it to reach the "    \
    "nodes on TCP 8443"

/* One attempt's inputs and what the API server said of the dry run. */
struct attempt {
    struct k8s_client *c;
    const struct wh_selftest_opts *o;
    const json_t *pod;
    char api_note[640]; /* "; the API server answered the dry run: ..." or "" */
};

static void set(struct wh_selftest_result *ret, enum wh_selftest_cause cause, const char *fmt, ...)
    K8S_PRINTF(3, 4);

static void set(struct wh_selftest_result *ret, enum wh_selftest_cause cause, const char *fmt, ...)
{
    va_list ap;
    ret->cause = cause;
    va_start(ap, fmt);
    vsnprintf(ret->message, sizeof(ret->message), fmt, ap);
    va_end(ap);
}

json_t *wh_selftest_pod(const char *image)
{
    return json_pack(
        "{s:s, s:s, s:{s:s, s:{s:s, s:s}}, s:{s:b, s:s, s:i, s:{s:b, s:i, s:{s:s}}, s:[{s:s, s:s, "
        "s:{s:{s:s, s:s}, s:{s:s, s:s}}, s:{s:b, s:b, s:b, s:{s:[s]}}}]}}",
        "apiVersion", "v1", "kind", "Pod", "metadata", "generateName", "mldiagnostics-selftest-",
        "labels", K8S_LABEL_MANAGED, "true", "app.kubernetes.io/name", "mldiagnostics-selftest",
        "spec", "automountServiceAccountToken", 0, "restartPolicy", "Never",
        "terminationGracePeriodSeconds", 0, "securityContext", "runAsNonRoot", 1, "runAsUser",
        65532, "seccompProfile", "type", "RuntimeDefault", "containers", "name", "selftest",
        "image", image, "resources", "requests", "cpu", "10m", "memory", "16Mi", "limits", "cpu",
        "10m", "memory", "16Mi", "securityContext", "allowPrivilegeEscalation", 0,
        "readOnlyRootFilesystem", 1, "runAsNonRoot", 1, "capabilities", "drop", "ALL");
}

const char *wh_selftest_injection(const json_t *pod)
{
    const json_t *ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
    return json_string_value(json_object_get(ann, K8S_ANN_INJECTION));
}

/* 1 when the dry run decides (injected, or refused for a reason of its
 * own), 0 when the webhook's side is to be diagnosed. */
static int dry_run(struct attempt *a, struct wh_selftest_result *ret)
{
    char path[400];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?dryRun=All", a->o->namespace);
    json_t *out = NULL;
    struct k8s_error e = {0};
    int r = k8s_send_json(a->c, "POST", path, NULL, a->pod, a->o->request_timeout_ms, &out, &e);
    const char *inj = r == 0 ? wh_selftest_injection(out) : NULL;
    if (inj)
        set(ret, WH_SELFTEST_INJECTED,
            "a dry-run pod in namespace %s came back injected (" K8S_ANN_INJECTION "=%s)",
            a->o->namespace, inj);
    json_decref(out);
    if (r == 0)
        return inj != NULL;
    snprintf(a->api_note, sizeof(a->api_note), "; the API server answered the dry run: %s",
             e.message);
    if (r == -K8S_ENOTFOUND || strstr(e.message, "failed calling webhook"))
        return 0;
    set(ret, WH_SELFTEST_REFUSED,
        "the dry-run create of a pod in namespace %s failed for a reason other than the "
        "webhook: %s",
        a->o->namespace, e.message);
    return 1;
}

/* The namespace's labels with kubernetes.io/metadata.name, which the API
 * server sets on every namespace (new reference). */
static json_t *ns_labels(const json_t *ns, const char *name)
{
    json_t *labels = json_object_get(json_object_get(ns, "metadata"), "labels");
    labels = json_is_object(labels) ? json_deep_copy(labels) : json_object();
    if (labels && !json_object_get(labels, NS_LABEL))
        json_object_set_new(labels, NS_LABEL, json_string(name));
    return labels;
}

static int selectors(struct attempt *a, const json_t *hook, const json_t *ns,
                     struct wh_selftest_result *ret)
{
    const char *cfg = a->o->webhook_config;
    char why[512];
    json_t *labels = ns_labels(ns, a->o->namespace);
    int m =
        k8s_selector_match(json_object_get(hook, "namespaceSelector"), labels, why, sizeof(why));
    json_decref(labels);
    if (m == 0)
        set(ret, WH_SELFTEST_NAMESPACE,
            "namespace excluded: namespace %s is not selected by the namespaceSelector of "
            "MutatingWebhookConfiguration %s (%s); test in a namespace it selects "
            "(selftest.namespace) or change the namespace's labels",
            a->o->namespace, cfg, why);
    const json_t *pod_labels = json_object_get(json_object_get(a->pod, "metadata"), "labels");
    if (m == 1 && (m = k8s_selector_match(json_object_get(hook, "objectSelector"), pod_labels, why,
                                          sizeof(why))) == 0)
        set(ret, WH_SELFTEST_NAMESPACE,
            "pod excluded: the objectSelector of MutatingWebhookConfiguration %s does not "
            "select a pod labelled " K8S_LABEL_MANAGED "=true (%s)",
            cfg, why);
    if (m < 0)
        set(ret, WH_SELFTEST_NO_CONFIG, "MutatingWebhookConfiguration %s: bad selector: %s", cfg,
            why);
    return m == 1 ? 0 : 1;
}

/* 1 when the namespace decides (missing, excluded), 0 when selected. */
static int namespace_check(struct attempt *a, const json_t *hook, struct wh_selftest_result *ret,
                           struct k8s_error *reterr)
{
    char path[320];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s", a->o->namespace);
    json_t *ns = NULL;
    int r = k8s_get_json(a->c, path, NULL, a->o->request_timeout_ms, &ns, reterr);
    if (r == -K8S_ENOTFOUND) {
        set(ret, WH_SELFTEST_NAMESPACE,
            "namespace %s does not exist: test in a namespace the webhook selects "
            "(selftest.namespace)",
            a->o->namespace);
        return 1;
    }
    if (r < 0) {
        k8s_error_prefix(reterr, "namespace %s", a->o->namespace);
        return r;
    }
    r = selectors(a, hook, ns, ret);
    json_decref(ns);
    return r;
}

static void untrusted(struct attempt *a, const struct wh_probe_result *p,
                      struct wh_selftest_result *ret)
{
    if (p->ca_certs > 0 && !p->verifies_with) {
        set(ret, WH_SELFTEST_UNTRUSTED,
            "certificate not trusted: the TLS handshake with the webhook at %s fails even "
            "without verification: %s",
            p->url, p->detail);
        return;
    }
    set(ret, WH_SELFTEST_UNTRUSTED,
        "certificate not trusted: the serving certificate of the webhook at %s does not verify "
        "against the caBundle of MutatingWebhookConfiguration %s%s: %s; with cert-manager check "
        "the Certificate and its CA injection (cert-manager.io/inject-ca-from), with "
        "certManager.enabled=false re-run the certgen hook (helm upgrade)",
        p->url, a->o->webhook_config,
        p->ca_certs ? "" : " (the caBundle is empty, so only the system roots are trusted)",
        p->detail);
}

static int probe(struct attempt *a, const json_t *hook, struct wh_selftest_result *ret,
                 struct k8s_error *reterr)
{
    struct wh_probe_result p;
    int r = wh_probe_call(hook, a->pod, a->o->namespace, a->o->request_timeout_ms, &p, reterr);
    if (r < 0) {
        k8s_error_prefix(reterr, "MutatingWebhookConfiguration %s", a->o->webhook_config);
        return r;
    }
    if (p.verdict == WH_PROBE_UNREACHABLE)
        set(ret, WH_SELFTEST_UNREACHABLE,
            "webhook unreachable: %s: %s; check that the webhook's pods are Ready and its "
            "Service has endpoints (the API server must reach them too: " FIREWALL ")",
            p.url, p.detail);
    else if (p.verdict == WH_PROBE_UNTRUSTED)
        untrusted(a, &p, ret);
    else if (p.verdict == WH_PROBE_INJECTS)
        set(ret, WH_SELFTEST_API_CANNOT_CALL,
            "webhook unreachable from the API server: called from inside the cluster, %s "
            "answers, is trusted by the caBundle and injects the pod, but the API server's "
            "dry-run create came back without injection (" FIREWALL ")",
            p.url);
    else
        set(ret, WH_SELFTEST_DECLINED, "the webhook at %s answers but does not inject the pod: %s",
            p.url, p.detail);
    return 0;
}

/* The configuration's first entry (the chart renders one) → diagnose. */
static int diagnose(struct attempt *a, struct wh_selftest_result *ret, struct k8s_error *reterr)
{
    char path[400];
    snprintf(path, sizeof(path), MWC_PATH "%s", a->o->webhook_config);
    json_t *mwc = NULL;
    int r = k8s_get_json(a->c, path, NULL, a->o->request_timeout_ms, &mwc, reterr);
    const json_t *hook = json_array_get(json_object_get(mwc, "webhooks"), 0);
    if (r == -K8S_ENOTFOUND)
        set(ret, WH_SELFTEST_NO_CONFIG,
            "webhook not installed: MutatingWebhookConfiguration %s not found",
            a->o->webhook_config);
    else if (r < 0)
        k8s_error_prefix(reterr, "MutatingWebhookConfiguration %s", a->o->webhook_config);
    else if (!hook)
        set(ret, WH_SELFTEST_NO_CONFIG, "MutatingWebhookConfiguration %s has no webhooks",
            a->o->webhook_config);
    else if ((r = namespace_check(a, hook, ret, reterr)) == 0)
        r = probe(a, hook, ret, reterr);
    json_decref(mwc);
    return r == -K8S_ENOTFOUND ? 0 : r < 0 ? r : 0;
}

static int attempt_once(struct attempt *a, struct wh_selftest_result *ret, struct k8s_error *reterr)
{
    a->api_note[0] = '\0';
    if (dry_run(a, ret))
        return 0;
    int r = diagnose(a, ret, reterr);
    size_t n = strlen(ret->message);
    if (r == 0 && ret->cause != WH_SELFTEST_INJECTED && n < sizeof(ret->message))
        snprintf(ret->message + n, sizeof(ret->message) - n, "%s", a->api_note);
    return r;
}

static void nap(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / K8S_NSEC_PER_SEC), (long)(ns % K8S_NSEC_PER_SEC)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int wh_selftest_run(struct k8s_client *c, const struct wh_selftest_opts *o,
                    struct wh_selftest_result *ret, struct k8s_error *reterr)
{
    json_t *pod = wh_selftest_pod(o->image);
    if (!pod)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    struct attempt a = {.c = c, .o = o, .pod = pod};
    struct wh_selftest_result res = {0};
    int64_t deadline = k8s_mono_ns() + o->timeout_ns;
    int r;
    for (;;) {
        res.attempts++;
        r = attempt_once(&a, &res, reterr);
        bool final = r == 0
                         ? res.cause == WH_SELFTEST_INJECTED || res.cause == WH_SELFTEST_NAMESPACE
                         : !k8s_err_is_transient(r);
        int64_t left = deadline - k8s_mono_ns();
        if (final || left <= 0)
            break;
        nap(o->interval_ns < left ? o->interval_ns : left);
    }
    json_decref(pod);
    if (r == 0)
        *ret = res;
    return r;
}

/* The command line: the options and the API access. */
struct cli {
    struct wh_selftest_opts o;
    const char *kubeconfig;
};

#define SEC        K8S_NSEC_PER_SEC
#define AT(member) K8S_FLAG_AT(struct cli, member)

static const struct k8s_flag flags[] = {
    {"namespace", K8S_FLAG_STRING, AT(o.namespace),
     "namespace of the dry-run pod; one the webhook selects"},
    {"webhook-config", K8S_FLAG_STRING, AT(o.webhook_config), "the MutatingWebhookConfiguration"},
    {"image", K8S_FLAG_STRING, AT(o.image), "image of the dry-run pod (never pulled)"},
    K8S_FLAG_ROWS_SELFTEST(struct cli, o.timeout_ns, o.interval_ns, kubeconfig),
    {NULL},
};

static void cli_init(struct cli *c)
{
    *c = (struct cli){.o = {.namespace = "default",
                            .webhook_config = "mldiagnostics-injection-webhook",
                            .image = "registry.k8s.io/pause:3.10",
                            .timeout_ns = 60 * SEC,
                            .interval_ns = 2 * SEC,
                            .request_timeout_ms = 10000},
                      .kubeconfig = ""};
}

static int parse(struct cli *c, int argc, char **argv, int argi, struct k8s_error *reterr)
{
    struct cli dflt;
    cli_init(&dflt);
    *c = dflt;
    int r = k8s_flags_command(
        flags, c, &dflt,
        "Usage: mldiagnostics-webhook selftest [flags]\n\n"
        "The chart's helm test: a dry-run create of a pod labelled " K8S_LABEL_MANAGED
        "=true\nmust come back injected; otherwise "
        "names the likely cause.\n\n",
        argc, argv, argi, reterr);
    if (r == 0 && (!*c->o.namespace || !*c->o.webhook_config || !*c->o.image))
        r = k8s_error_set(reterr, -K8S_EINVAL,
                          "--namespace, --webhook-config and --image must not be empty");
    return r;
}

int wh_selftest_main(int argc, char **argv, int argi)
{
    struct cli cli;
    struct k8s_error err = {0};
    int r = parse(&cli, argc, argv, argi, &err);
    if (r != 0) {
        if (r < 0)
            fprintf(stderr, "mldiagnostics-webhook selftest: %s (see --help)\n", err.message);
        return r > 0 ? 0 : 2;
    }
    struct k8s_client *c = NULL;
    struct wh_selftest_result res = {0};
    r = k8s_client_open(cli.kubeconfig, &c, &err);
    if (r == 0)
        r = wh_selftest_run(c, &cli.o, &res, &err);
    k8s_client_free(c);
    if (r < 0) {
        fprintf(stderr, "selftest failed: %s\n", err.message);
        return 1;
    }
    bool ok = res.cause == WH_SELFTEST_INJECTED;
    fprintf(ok ? stdout : stderr, "selftest %s: %s (attempts: %d)\n", ok ? "passed" : "failed",
            res.message, res.attempts);
    return ok ? 0 : 1;
}
