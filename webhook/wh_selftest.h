/*
 * wh_selftest — `mldiagnostics-webhook selftest`, the webhook chart's
 * `helm test` (DESIGN §5). A server-side dry-run create (dryRun=All; the
 * webhook's sideEffects: None makes it safe) of a pod labelled
 * managed-mldiagnostics-gke=true, in a namespace the webhook selects, must
 * come back with the diagon.gke.io/injection annotation.
 *
 * When it does not, names the likely cause, checked in this order: the
 * dry run itself refused (RBAC, Pod Security, quota: not the webhook);
 * the MutatingWebhookConfiguration missing; the namespace missing or
 * excluded by its namespaceSelector (the pod by its objectSelector); the
 * webhook, called as the API server calls it (wh_probe), unreachable,
 * its certificate not trusted by the caBundle, or declining the pod; and
 * when the webhook is reachable, trusted and injects from inside the
 * cluster, the API server cannot reach it (on GKE private clusters: the
 * firewall rule from the control plane to the nodes on TCP 8443).
 *
 * Retries every interval until timeout (after an install, pods start and
 * cert-manager injects the CA); stops early on an excluded namespace,
 * which no wait fixes. Uses the client it is given (in-cluster service
 * account or --kubeconfig, as the server does).
 *
 * Thread-safety: single-threaded command. Ownership: plain result struct.
 */
#ifndef WH_SELFTEST_H
#define WH_SELFTEST_H

#include <jansson.h>
#include <stdint.h>

#include "k8s_client.h"
#include "k8s_err.h"

enum wh_selftest_cause {
    WH_SELFTEST_INJECTED,        /* passed */
    WH_SELFTEST_REFUSED,         /* the dry run was refused for a reason of its own */
    WH_SELFTEST_NO_CONFIG,       /* no MutatingWebhookConfiguration (or no entry in it) */
    WH_SELFTEST_NAMESPACE,       /* namespace missing, or excluded by the selectors */
    WH_SELFTEST_UNREACHABLE,     /* the webhook does not answer */
    WH_SELFTEST_UNTRUSTED,       /* its certificate fails against caBundle */
    WH_SELFTEST_DECLINED,        /* it answers without injecting */
    WH_SELFTEST_API_CANNOT_CALL, /* it injects when called, the API server did not call it */
};

struct wh_selftest_opts {
    const char *namespace;      /* where the dry-run pod is created */
    const char *webhook_config; /* the MutatingWebhookConfiguration's name */
    const char *image;          /* the dry-run pod's image (never pulled) */
    int64_t timeout_ns;         /* keep trying this long; 0: once */
    int64_t interval_ns;        /* between attempts */
    int64_t request_timeout_ms; /* each API request and each webhook call */
};

struct wh_selftest_result {
    enum wh_selftest_cause cause;
    int attempts;
    char message[1536]; /* one line, naming the cause and what to check */
};

/* The dry-run pod: labelled, restricted-Pod-Security compliant, no
 * service account token, tiny resources (new reference; NULL on OOM). */
json_t *wh_selftest_pod(const char *image);

/* The diagon.gke.io/injection annotation of a created pod, or NULL. */
const char *wh_selftest_injection(const json_t *pod);

/* Run the check. 0 with *ret filled (ret->cause says pass or why not);
 * a negative error when the check itself cannot be made (the webhook
 * configuration or the namespace unreadable, out of memory), reterr
 * naming the object. */
int wh_selftest_run(struct k8s_client *c, const struct wh_selftest_opts *o,
                    struct wh_selftest_result *ret, struct k8s_error *reterr) K8S_MUST_CHECK;

/* The command: flags after argv[argi]; prints one line ("selftest
 * passed: ..." or "selftest failed: ..."); exit code 0, 1 (failed) or 2
 * (bad flags). */
int wh_selftest_main(int argc, char **argv, int argi);

#endif
