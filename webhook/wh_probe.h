/*
 * wh_probe — call a webhook the way the API server calls it, from one
 * entry of a MutatingWebhookConfiguration: its clientConfig (a service
 * → https://NAME.NAMESPACE.svc:PORT/PATH, or a url), its caBundle as the
 * only trusted CA (the system's when empty, as the API server does), a
 * POST of an AdmissionReview v1 (dryRun) for a pod. Tells apart the
 * causes `mldiagnostics-webhook selftest` names: unreachable, certificate
 * not trusted, answers without injecting, would inject.
 *
 * Sends no credentials. Thread-safety: reentrant (one libcurl client per
 * call). Ownership: the caller keeps its JSON; results are plain structs.
 */
#ifndef WH_PROBE_H
#define WH_PROBE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"

enum wh_probe_verdict {
    WH_PROBE_INJECTS,     /* allowed with a JSON patch */
    WH_PROBE_DECLINES,    /* allowed (or refused) without a patch */
    WH_PROBE_UNREACHABLE, /* no connection, or no answer in time */
    WH_PROBE_UNTRUSTED,   /* TLS: the serving certificate fails against caBundle */
    WH_PROBE_BAD_ANSWER,  /* an HTTP error or not an AdmissionReview */
};

struct wh_probe_result {
    enum wh_probe_verdict verdict;
    char url[512];     /* what was called, e.g. https://svc.ns.svc:443/mutate */
    char detail[512];  /* the transport error, the HTTP status, or the webhook's message */
    int ca_certs;      /* PEM certificates in caBundle (0: empty, system roots used) */
    int verifies_with; /* UNTRUSTED: 1 when the handshake succeeds without verification */
};

/* The URL the API server calls for webhook entry hook (an element of
 * .webhooks): origin (scheme://host:port) into origin, path (with a
 * leading '/') into path. -K8S_EINVAL when the clientConfig has neither
 * a service nor an https url, reterr saying which. */
int wh_probe_target(const json_t *hook, char *origin, size_t origin_cap, char *path,
                    size_t path_cap, struct k8s_error *reterr) K8S_MUST_CHECK;

/* The AdmissionReview v1 the API server would send for creating pod in
 * ns as a dry run (new reference, NULL on OOM). */
json_t *wh_probe_review(const json_t *pod, const char *ns);

/* Call hook with the review of pod in ns, within timeout_ms. 0 and *ret
 * filled with the verdict (every outcome of the call is a verdict);
 * -K8S_EINVAL (bad clientConfig or caBundle) or -K8S_ENOMEM otherwise. */
int wh_probe_call(const json_t *hook, const json_t *pod, const char *ns, int64_t timeout_ms,
                  struct wh_probe_result *ret, struct k8s_error *reterr) K8S_MUST_CHECK;

#endif
