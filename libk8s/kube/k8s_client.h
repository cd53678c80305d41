/*
 * k8s_client — requests to the Kubernetes API server over libcurl: TLS
 * from the config (CA, client certificate, insecure), bearer tokens (a
 * token file is re-read every minute and on a 401, then the request is
 * retried once), timeouts and a response size cap, and API errors mapped
 * from the server's Status body into the k8s_err convention with the
 * server's reason and message kept.
 *
 * Thread-safety: a client may be used from any number of threads at once;
 * each call borrows a libcurl easy handle from a small pool (handles are
 * never shared by two threads at a time; connections are reused through
 * the pooled handles). libcurl is loaded (and globally initialised) by the
 * first k8s_client_new; create the first client before starting threads
 * that use libcurl otherwise.
 *
 * Ownership: a response body belongs to the caller (k8s_resp_done).
 */
#ifndef K8S_CLIENT_H
#define K8S_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "k8s_config.h"
#include "k8s_err.h"

#define K8S_ACCEPT_JSON "application/json"
#define K8S_ACCEPT_META                                                                            \
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
#define K8S_ACCEPT_META_LIST                                                                       \
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
#define K8S_PATCH_MERGE "application/merge-patch+json"
#define K8S_PATCH_JSON  "application/json-patch+json"

struct k8s_client;

struct k8s_req {
    const char *method;       /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *path;         /* absolute path with query, e.g. "/api/v1/namespaces/x" */
    const char *accept;       /* NULL: application/json */
    const char *content_type; /* for a body; NULL: application/json */
    const char *body;
    size_t body_len;
    int64_t timeout_ms; /* whole request; 0: 30 s */
    size_t max_bytes;   /* response cap; 0: 64 MiB */
};

struct k8s_resp {
    long status;
    char *body; /* NUL-terminated */
    size_t len;
};

/* Called for each complete line of a streamed response (without the
 * newline). Return non-zero to stop the stream. */
typedef int (*k8s_line_fn)(void *ud, const char *line, size_t len);

/* A client for the configuration k8s_config_load finds for kubeconfig
 * (NULL or "": $KUBECONFIG, the in-cluster service account, ~/.kube/config),
 * as the one-shot commands (certgen, selftest) need it. Failure: the error
 * of k8s_config_load or k8s_client_new; *ret untouched. */
int k8s_client_open(const char *kubeconfig, struct k8s_client **ret,
                    struct k8s_error *reterr) K8S_MUST_CHECK;

/* A client for cfg (copied); loads libcurl on first use (k8s_curl).
 * -K8S_ENOMEM, -K8S_EIO when libcurl cannot be loaded. */
int k8s_client_new(const struct k8s_config *cfg, struct k8s_client **ret,
                   struct k8s_error *reterr) K8S_MUST_CHECK;
void k8s_client_free(struct k8s_client *c);
const struct k8s_config *k8s_client_config(const struct k8s_client *c);

/* One request. 0 and *ret filled for a 2xx answer; otherwise the mapped
 * error (-K8S_ENOTFOUND for 404, -K8S_ECONFLICT 409, -K8S_EGONE 410,
 * -K8S_EINVALID 422, -K8S_ETHROTTLED 429 with retry_after_s,
 * -K8S_ESERVER 5xx, -K8S_EFORBIDDEN 401/403, -K8S_ETIMEDOUT, -K8S_EIO
 * connection problems, -K8S_ETOOBIG past max_bytes) and *ret untouched. */
int k8s_client_do(struct k8s_client *c, const struct k8s_req *rq, struct k8s_resp *ret,
                  struct k8s_error *reterr) K8S_MUST_CHECK;

/* A streamed request (watch): every line goes to on_line as it arrives.
 * Returns 0 when the server ends the stream (or on_line or *stop ended
 * it), the mapped error otherwise. *stop (NULL: none) is polled about
 * every 100 ms with an atomic load: set it from another thread with
 * __atomic_store_n. */
int k8s_client_stream(struct k8s_client *c, const struct k8s_req *rq, k8s_line_fn on_line, void *ud,
                      const int *stop, struct k8s_error *reterr) K8S_MUST_CHECK;

void k8s_resp_done(struct k8s_resp *r);

/* GET path and parse the answer: *ret is a new reference. accept NULL:
 * JSON. Errors as k8s_client_do, plus -K8S_EPARSE for a bad body. */
int k8s_get_json(struct k8s_client *c, const char *path, const char *accept, int64_t timeout_ms,
                 json_t **ret, struct k8s_error *reterr) K8S_MUST_CHECK;

/* POST (create), PUT (update), PATCH or DELETE body (borrowed) to path;
 * content_type NULL is JSON (K8S_PATCH_MERGE / K8S_PATCH_JSON for
 * patches). The server's answer goes to *ret (new reference) unless ret
 * is NULL. */
int k8s_send_json(struct k8s_client *c, const char *method, const char *path,
                  const char *content_type, const json_t *body, int64_t timeout_ms, json_t **ret,
                  struct k8s_error *reterr) K8S_MUST_CHECK;

/* Map an HTTP error answer to the convention (pure; used by the client
 * and its tests): the status picks the code, a Status body gives reason,
 * message and details.retryAfterSeconds, a non-JSON body its first line;
 * retry_after is the Retry-After header (NULL when absent). Returns the
 * negative code. */
int k8s_api_error(long status, const char *body, size_t len, const char *retry_after,
                  struct k8s_error *reterr);

#endif
