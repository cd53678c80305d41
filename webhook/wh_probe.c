#include "wh_probe.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_client.h"
#include "k8s_codec.h"
#include "k8s_jget.h"

#define PEM_BEGIN "-----BEGIN CERTIFICATE-----"

static int url_target(const char *url, char *origin, size_t ocap, char *path, size_t pcap,
                      struct k8s_error *reterr)
{
    if (strncmp(url, "https://", 8))
        return k8s_error_set(reterr, -K8S_EINVAL, "clientConfig.url %s is not https", url);
    const char *slash = strchr(url + 8, '/');
    size_t n = slash ? (size_t)(slash - url) : strlen(url);
    if (n == 8 || n >= ocap)
        return k8s_error_set(reterr, -K8S_EINVAL, "clientConfig.url %s has no usable host", url);
    snprintf(origin, ocap, "%.*s", (int)n, url);
    snprintf(path, pcap, "%s", slash ? slash : "/");
    return 0;
}

int wh_probe_target(const json_t *hook, char *origin, size_t origin_cap, char *path,
                    size_t path_cap, struct k8s_error *reterr)
{
    const json_t *cc = json_object_get(hook, "clientConfig");
    const char *url = json_string_value(json_object_get(cc, "url"));
    if (url)
        return url_target(url, origin, origin_cap, path, path_cap, reterr);
    const json_t *svc = json_object_get(cc, "service");
    const char *name = json_string_value(json_object_get(svc, "name"));
    const char *ns = json_string_value(json_object_get(svc, "namespace"));
    const char *p = json_string_value(json_object_get(svc, "path"));
    const json_t *port = json_object_get(svc, "port");
    if (!name || !ns)
        return k8s_error_set(reterr, -K8S_EINVAL,
                             "clientConfig has neither a url nor a service name and namespace");
    int n = snprintf(origin, origin_cap, "https://%s.%s.svc:%lld", name, ns,
                     port ? (long long)json_integer_value(port) : 443LL);
    if (n < 0 || (size_t)n >= origin_cap)
        return k8s_error_set(reterr, -K8S_EINVAL, "clientConfig.service name too long");
    snprintf(path, path_cap, "%s%s", p && *p == '/' ? "" : "/", p ? p : "");
    return 0;
}

json_t *wh_probe_review(const json_t *pod, const char *ns)
{
    const char *name = k8s_jstr2(pod, "metadata", "name");
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s},"
                     " s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:O, s:n, s:b, s:{s:s, s:s, s:[s]}}}",
                     "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request",
                     "uid", "mldiagnostics-selftest-probe", "kind", "group", "", "version", "v1",
                     "kind", "Pod", "resource", "group", "", "version", "v1", "resource", "pods",
                     "requestKind", "group", "", "version", "v1", "kind", "Pod", "requestResource",
                     "group", "", "version", "v1", "resource", "pods", "name", name ? name : "",
                     "namespace", ns, "operation", "CREATE", "object", (json_t *)pod, "oldObject",
                     "dryRun", 1, "options", "apiVersion", "meta.k8s.io/v1", "kind",
                     "CreateOptions", "dryRun", "All");
}

/* caBundle (base64 PEM) → *pem (NULL when empty) and its certificate count. */
static int ca_bundle(const json_t *hook, char **pem, size_t *len, int *certs,
                     struct k8s_error *reterr)
{
    const char *b64 = k8s_jstr2(hook, "clientConfig", "caBundle");
    *pem = NULL;
    *len = 0;
    *certs = 0;
    if (!b64 || !*b64)
        return 0;
    *pem = (char *)k8s_base64_decode(b64, strlen(b64), len);
    if (!*pem)
        return k8s_error_set(reterr, -K8S_EINVAL, "clientConfig.caBundle is not base64");
    for (const char *p = *pem; (p = strstr(p, PEM_BEGIN)); p += sizeof(PEM_BEGIN) - 1)
        (*certs)++;
    return 0;
}

/* One POST of body to origin+path; *resp on 0. */
static int post(const char *origin, const char *path, const char *pem, size_t pem_len,
                bool insecure, const char *body, int64_t timeout_ms, struct k8s_resp *resp,
                struct k8s_error *reterr)
{
    struct k8s_config cfg = {
        .server = (char *)origin, .ca_pem = (char *)pem, .ca_len = pem_len, .insecure = insecure};
    struct k8s_client *c = NULL;
    int r = k8s_client_new(&cfg, &c, reterr);
    if (r < 0)
        return r;
    char target[1024];
    snprintf(target, sizeof(target), "%s%stimeout=%llds", path, strchr(path, '?') ? "&" : "?",
             (long long)((timeout_ms + 999) / 1000));
    struct k8s_req rq = {.method = "POST",
                         .path = target,
                         .body = body,
                         .body_len = strlen(body),
                         .timeout_ms = timeout_ms,
                         .max_bytes = 4 << 20};
    r = k8s_client_do(c, &rq, resp, reterr);
    k8s_client_free(c);
    return r;
}

/* A 2xx answer → INJECTS / DECLINES / BAD_ANSWER. */
static void judge(const struct k8s_resp *resp, struct wh_probe_result *ret)
{
    json_t *doc = json_loadb(resp->body, resp->len, 0, NULL);
    const json_t *r = json_object_get(doc, "response");
    const json_t *patch = json_object_get(r, "patch");
    const char *msg = k8s_jstr2(r, "status", "message");
    const char *warn = json_string_value(json_array_get(json_object_get(r, "warnings"), 0));
    if (!json_is_object(r)) {
        ret->verdict = WH_PROBE_BAD_ANSWER;
        snprintf(ret->detail, sizeof(ret->detail), "HTTP %ld: not an AdmissionReview: %.200s",
                 resp->status, resp->body);
    } else if (json_is_string(patch) && json_string_length(patch) > 0) {
        ret->verdict = WH_PROBE_INJECTS;
        snprintf(ret->detail, sizeof(ret->detail), "answered with a patch");
    } else {
        ret->verdict = WH_PROBE_DECLINES;
        snprintf(ret->detail, sizeof(ret->detail), "%s without a patch%s%s",
                 json_is_true(json_object_get(r, "allowed")) ? "allowed" : "refused",
                 msg || warn ? ": " : "",
                 msg    ? msg
                 : warn ? warn
                        : "");
    }
    json_decref(doc);
}

/* A failed POST → the verdict; ETLS is retried without verification to
 * tell a certificate the caBundle does not trust from a broken handshake. */
static void judge_error(const struct k8s_error *e, const char *origin, const char *path,
                        const char *body, int64_t timeout_ms, struct wh_probe_result *ret)
{
    snprintf(ret->detail, sizeof(ret->detail), "%s", e->message);
    if (e->http_status > 0 || e->err == -K8S_ETOOBIG) {
        ret->verdict = WH_PROBE_BAD_ANSWER;
        return;
    }
    if (e->err != -K8S_ETLS) {
        ret->verdict = WH_PROBE_UNREACHABLE;
        return;
    }
    ret->verdict = WH_PROBE_UNTRUSTED;
    struct k8s_resp resp = {0};
    struct k8s_error e2 = {0};
    int r = post(origin, path, NULL, 0, true, body, timeout_ms, &resp, &e2);
    ret->verifies_with = r == 0 || e2.http_status > 0;
    k8s_resp_done(&resp);
}

static void call(const char *origin, const char *path, const char *pem, size_t pem_len,
                 const char *body, int64_t timeout_ms, struct wh_probe_result *res)
{
    if (pem && res->ca_certs == 0) { /* the API server cannot load it either */
        res->verdict = WH_PROBE_UNTRUSTED;
        snprintf(res->detail, sizeof(res->detail), "caBundle holds no PEM certificate");
        return;
    }
    struct k8s_resp resp = {0};
    struct k8s_error e = {0};
    if (post(origin, path, pem, pem_len, false, body, timeout_ms, &resp, &e) == 0)
        judge(&resp, res);
    else
        judge_error(&e, origin, path, body, timeout_ms, res);
    k8s_resp_done(&resp);
}

int wh_probe_call(const json_t *hook, const json_t *pod, const char *ns, int64_t timeout_ms,
                  struct wh_probe_result *ret, struct k8s_error *reterr)
{
    char origin[400], path[400];
    struct wh_probe_result res = {0};
    char *pem = NULL;
    size_t pem_len = 0;
    int r = wh_probe_target(hook, origin, sizeof(origin), path, sizeof(path), reterr);
    if (r == 0)
        r = ca_bundle(hook, &pem, &pem_len, &res.ca_certs, reterr);
    json_t *review = r == 0 ? wh_probe_review(pod, ns) : NULL;
    char *body = review ? json_dumps(review, JSON_COMPACT) : NULL;
    if (r == 0 && !body)
        r = k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    if (r == 0) {
        snprintf(res.url, sizeof(res.url), "%s%s", origin, path);
        call(origin, path, pem, pem_len, body, timeout_ms, &res);
        *ret = res;
    }
    free(body);
    json_decref(review);
    free(pem);
    return r;
}
