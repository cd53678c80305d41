#include "k8s_client.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "k8s_buf.h"
#include "k8s_curl.h"
#include "k8s_json.h"
#include "k8s_lines.h"
#include "k8s_time.h"

#define POOL_MAX     16
#define TOKEN_TTL_NS (60 * K8S_NSEC_PER_SEC) /* client-go re-reads token files every minute */
#define MAX_LINE     (16 << 20)

struct k8s_client {
    struct k8s_config cfg;
    pthread_mutex_t lock; /* guards token and pool */
    char *token;
    int64_t token_read_ns;
    CURL *pool[POOL_MAX];
    size_t npool;
};

int k8s_client_open(const char *kubeconfig, struct k8s_client **ret, struct k8s_error *reterr)
{
    struct k8s_config kc;
    int r = k8s_config_load(kubeconfig, &kc, reterr);
    if (r < 0)
        return r;
    r = k8s_client_new(&kc, ret, reterr);
    k8s_config_done(&kc);
    return r;
}

int k8s_client_new(const struct k8s_config *cfg, struct k8s_client **ret, struct k8s_error *reterr)
{
    int r = k8s_curl_load(reterr);
    if (r < 0)
        return r;
    struct k8s_client *c = calloc(1, sizeof(*c));
    if (!c || k8s_config_copy(cfg, &c->cfg) < 0) {
        free(c);
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&c->lock, NULL);
    *ret = c;
    return 0;
}

void k8s_client_free(struct k8s_client *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->npool; i++)
        k8s_curl.easy_cleanup(c->pool[i]);
    if (c->token)
        explicit_bzero(c->token, strlen(c->token));
    free(c->token);
    k8s_config_done(&c->cfg);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

const struct k8s_config *k8s_client_config(const struct k8s_client *c)
{
    return &c->cfg;
}

void k8s_resp_done(struct k8s_resp *r)
{
    if (!r)
        return;
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

/* ---------- error mapping ---------- */

static int code_of(long status)
{
    switch (status) {
    case 401:
    case 403:
        return -K8S_EFORBIDDEN;
    case 404:
        return -K8S_ENOTFOUND;
    case 409:
        return -K8S_ECONFLICT;
    case 410:
        return -K8S_EGONE;
    case 413:
        return -K8S_ETOOBIG;
    case 422:
        return -K8S_EINVALID;
    case 429:
        return -K8S_ETHROTTLED;
    default:
        return status >= 500 ? -K8S_ESERVER : -K8S_EINVAL;
    }
}

/* The first line of a plain-text body, trimmed. */
static void first_line(const char *body, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    while (n < len && body[n] != '\n' && body[n] != '\r')
        n++;
    snprintf(out, cap, "%.*s", (int)n, body);
}

int k8s_api_error(long status, const char *body, size_t len, const char *retry_after,
                  struct k8s_error *reterr)
{
    int err = code_of(status);
    if (!reterr)
        return err;
    k8s_error_set(reterr, err, "HTTP %ld", status);
    reterr->http_status = (int)status;
    json_t *st = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(st, "message"));
    const char *reason = json_string_value(json_object_get(st, "reason"));
    json_t *after = json_object_get(json_object_get(st, "details"), "retryAfterSeconds");
    if (msg)
        snprintf(reterr->message, sizeof(reterr->message), "%s", msg);
    else if (body && len)
        first_line(body, len, reterr->message, sizeof(reterr->message));
    snprintf(reterr->reason, sizeof(reterr->reason), "%s", reason ? reason : "");
    if (json_is_integer(after))
        reterr->retry_after_s = (int)json_integer_value(after);
    if (retry_after && atoi(retry_after) > 0)
        reterr->retry_after_s = atoi(retry_after);
    json_decref(st);
    return err;
}

/* ---------- tokens and handles ---------- */

/* The bearer token to send (a copy). force re-reads a token file. */
static char *current_token(struct k8s_client *c, bool force)
{
    char *out = NULL;
    pthread_mutex_lock(&c->lock);
    int64_t now = k8s_mono_ns();
    if (c->cfg.token_file && (force || !c->token || now - c->token_read_ns > TOKEN_TTL_NS)) {
        char *t = NULL;
        size_t n;
        if (k8s_read_file(c->cfg.token_file, 64 << 10, &t, &n, NULL) == 0) {
            t[strcspn(t, "\r\n")] = '\0';
            free(c->token);
            c->token = t;
            c->token_read_ns = now;
        } /* unreadable now: keep the last token (kubelet swaps files atomically) */
    }
    const char *t = c->token ? c->token : c->cfg.token;
    if (t)
        out = strdup(t);
    pthread_mutex_unlock(&c->lock);
    return out;
}

static CURL *take_handle(struct k8s_client *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->npool)
        h = c->pool[--c->npool];
    pthread_mutex_unlock(&c->lock);
    if (h)
        k8s_curl.easy_reset(h); /* options cleared; live connections kept */
    else
        h = k8s_curl.easy_init();
    return h;
}

static void give_handle(struct k8s_client *c, CURL *h)
{
    pthread_mutex_lock(&c->lock);
    if (c->npool < POOL_MAX) {
        c->pool[c->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (h)
        k8s_curl.easy_cleanup(h);
}

/* ---------- one transfer ---------- */

struct xfer {
    struct k8s_client *c;
    CURL *h;
    const struct k8s_req *rq;
    struct k8s_buf body;
    char retry_after[16];
    /* streaming */
    struct k8s_lines lines;
    k8s_line_fn on_line;
    void *ud;
    const int *stop; /* another thread's flag: atomic loads */
    bool stopped;
    bool too_big;
    int mode; /* 0 undecided, 1 lines (a 2xx stream), 2 buffer (an error answer) */
    char errbuf[CURL_ERROR_SIZE];
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct xfer *x = arg;
    size_t len = size * n;
    if (x->on_line && !x->mode) { /* headers are in: stream only a success */
        long status = 0;
        k8s_curl.easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
        x->mode = status >= 200 && status < 300 ? 1 : 2;
    }
    if (x->mode == 1) {
        int r = k8s_lines_feed(&x->lines, p, len, x->on_line, x->ud);
        x->stopped |= r == 1;
        x->too_big |= r == -K8S_ETOOBIG;
        return r == 0 ? len : 0;
    }
    if (k8s_buf_append(&x->body, p, len) < 0) {
        x->too_big = true;
        return 0;
    }
    return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct xfer *x = arg;
    size_t len = size * n;
    if (len > 12 && !strncasecmp(p, "Retry-After:", 12)) {
        const char *v = p + 12;
        while (*v == ' ')
            v++;
        snprintf(x->retry_after, sizeof(x->retry_after), "%.*s", (int)strcspn(v, "\r\n"), v);
    }
    return len;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c2, curl_off_t d)
{
    struct xfer *x = arg;
    if (x->stop && __atomic_load_n(x->stop, __ATOMIC_ACQUIRE)) {
        x->stopped = true;
        return 1;
    }
    return 0;
}

static struct curl_slist *headers(struct xfer *x, const char *token)
{
    char line[8192];
    struct curl_slist *h = NULL, *t;
    snprintf(line, sizeof(line), "Accept: %s", x->rq->accept ? x->rq->accept : K8S_ACCEPT_JSON);
    h = k8s_curl.slist_append(h, line);
    if (h && x->rq->body) {
        snprintf(line, sizeof(line), "Content-Type: %s",
                 x->rq->content_type ? x->rq->content_type : K8S_ACCEPT_JSON);
        h = (t = k8s_curl.slist_append(h, line)) ? t : h;
    }
    if (h && token) {
        snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
        h = (t = k8s_curl.slist_append(h, line)) ? t : h;
        explicit_bzero(line, sizeof(line));
    }
    if (h)
        h = (t = k8s_curl.slist_append(h, "User-Agent: mldiagnostics/" MLD_VERSION)) ? t : h;
    return h;
}

static void set_tls(CURL *h, const struct k8s_config *cfg)
{
    if (cfg->ca_pem) {
        struct curl_blob b = {cfg->ca_pem, cfg->ca_len, CURL_BLOB_COPY};
        k8s_curl.easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
    }
    if (cfg->cert_pem && cfg->key_pem) {
        struct curl_blob cb = {cfg->cert_pem, cfg->cert_len, CURL_BLOB_COPY};
        struct curl_blob kb = {cfg->key_pem, cfg->key_len, CURL_BLOB_COPY};
        k8s_curl.easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
        k8s_curl.easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        k8s_curl.easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
        k8s_curl.easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (cfg->insecure) {
        k8s_curl.easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        k8s_curl.easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

static void set_request(CURL *h, struct xfer *x, struct curl_slist *hdrs)
{
    const struct k8s_req *rq = x->rq;
    char url[4096];
    snprintf(url, sizeof(url), "%s%s", x->c->cfg.server, rq->path);
    int64_t timeout = rq->timeout_ms > 0 ? rq->timeout_ms : 30000;
    k8s_curl.easy_setopt(h, CURLOPT_URL, url);
    k8s_curl.easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
    if (!strcmp(rq->method, "HEAD"))
        k8s_curl.easy_setopt(h, CURLOPT_NOBODY, 1L);
    if (rq->body) {
        k8s_curl.easy_setopt(h, CURLOPT_POSTFIELDS, rq->body);
        k8s_curl.easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
    }
    k8s_curl.easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    k8s_curl.easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout);
    k8s_curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout < 5000 ? timeout : 5000));
    k8s_curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    k8s_curl.easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    k8s_curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    k8s_curl.easy_setopt(h, CURLOPT_WRITEDATA, x);
    k8s_curl.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    k8s_curl.easy_setopt(h, CURLOPT_HEADERDATA, x);
    k8s_curl.easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
    k8s_curl.easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    k8s_curl.easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    k8s_curl.easy_setopt(h, CURLOPT_XFERINFODATA, x);
    set_tls(h, &x->c->cfg);
}

static int transport_error(struct xfer *x, CURLcode cc, struct k8s_error *reterr)
{
    if (x->too_big)
        return k8s_error_set(reterr, -K8S_ETOOBIG, "%s %s: response larger than the cap",
                             x->rq->method, x->rq->path);
    int err = cc == CURLE_OPERATION_TIMEDOUT ? -K8S_ETIMEDOUT
              : cc == CURLE_SSL_CONNECT_ERROR || cc == CURLE_PEER_FAILED_VERIFICATION ||
                      cc == CURLE_SSL_CERTPROBLEM
                  ? -K8S_ETLS
                  : -K8S_EIO;
    return k8s_error_set(reterr, err, "%s %s%s: %s", x->rq->method, x->c->cfg.server, x->rq->path,
                         x->errbuf[0] ? x->errbuf : k8s_curl.easy_strerror(cc));
}

/* Perform once; *status gets the HTTP status (0 on transport failure). */
static int perform(struct xfer *x, bool force_token, long *status, struct k8s_error *reterr)
{
    char *token = current_token(x->c, force_token);
    CURL *h = take_handle(x->c);
    struct curl_slist *hdrs = headers(x, token);
    if (token)
        explicit_bzero(token, strlen(token));
    free(token);
    if (!h || !hdrs) {
        k8s_curl.slist_free_all(hdrs);
        if (h)
            k8s_curl.easy_cleanup(h);
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    }
    set_request(h, x, hdrs);
    x->h = h;
    x->mode = 0;
    CURLcode cc = k8s_curl.easy_perform(h);
    x->h = NULL;
    *status = 0;
    k8s_curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    k8s_curl.slist_free_all(hdrs);
    give_handle(x->c, h);
    if (cc == CURLE_OK || (x->stopped && cc == CURLE_ABORTED_BY_CALLBACK) ||
        (x->stopped && cc == CURLE_WRITE_ERROR))
        return 0;
    return transport_error(x, cc, reterr);
}

/* Perform, and once more with a freshly read token after a 401. */
static int run(struct xfer *x, struct k8s_error *reterr)
{
    long status = 0;
    int r = perform(x, false, &status, reterr);
    if (r == 0 && status == 401 && x->c->cfg.token_file) {
        k8s_buf_reset(&x->body);
        r = perform(x, true, &status, reterr);
    }
    if (r < 0)
        return r;
    if (status >= 200 && status < 300)
        return (int)status;
    return k8s_api_error(status, x->body.data, x->body.len,
                         x->retry_after[0] ? x->retry_after : NULL, reterr);
}

int k8s_client_do(struct k8s_client *c, const struct k8s_req *rq, struct k8s_resp *ret,
                  struct k8s_error *reterr)
{
    struct xfer x = {.c = c, .rq = rq};
    k8s_buf_init(&x.body, rq->max_bytes ? rq->max_bytes : (size_t)64 << 20);
    int r = run(&x, reterr);
    if (r < 0) {
        k8s_buf_done(&x.body);
        return r;
    }
    ret->status = r;
    ret->body = k8s_buf_take(&x.body, &ret->len);
    return ret->body ? 0 : -K8S_ENOMEM;
}

int k8s_client_stream(struct k8s_client *c, const struct k8s_req *rq, k8s_line_fn on_line, void *ud,
                      const int *stop, struct k8s_error *reterr)
{
    struct xfer x = {.c = c, .rq = rq, .on_line = on_line, .ud = ud, .stop = stop};
    k8s_buf_init(&x.body, 1 << 20); /* an error answer's body */
    k8s_lines_init(&x.lines, MAX_LINE);
    int r = run(&x, reterr);
    k8s_lines_done(&x.lines);
    k8s_buf_done(&x.body);
    return r < 0 ? r : 0;
}

/* ---------- JSON helpers ---------- */

static int parse_answer(struct k8s_resp *resp, const struct k8s_req *rq, json_t **ret,
                        struct k8s_error *reterr)
{
    json_error_t je;
    json_t *v = json_loadb(resp->body, resp->len, 0, &je);
    k8s_resp_done(resp);
    if (!v)
        return k8s_error_set(reterr, -K8S_EPARSE, "%s %s: bad JSON answer: %s", rq->method,
                             rq->path, je.text);
    *ret = v;
    return 0;
}

int k8s_get_json(struct k8s_client *c, const char *path, const char *accept, int64_t timeout_ms,
                 json_t **ret, struct k8s_error *reterr)
{
    struct k8s_req rq = {.method = "GET", .path = path, .accept = accept, .timeout_ms = timeout_ms};
    struct k8s_resp resp;
    int r = k8s_client_do(c, &rq, &resp, reterr);
    return r < 0 ? r : parse_answer(&resp, &rq, ret, reterr);
}

int k8s_send_json(struct k8s_client *c, const char *method, const char *path,
                  const char *content_type, const json_t *body, int64_t timeout_ms, json_t **ret,
                  struct k8s_error *reterr)
{
    struct k8s_buf text;
    k8s_buf_init(&text, (size_t)64 << 20);
    int r = k8s_json_write(body, &text);
    if (r < 0)
        return k8s_error_set(reterr, r, "%s %s: cannot serialize the body", method, path);
    struct k8s_req rq = {.method = method,
                         .path = path,
                         .content_type = content_type,
                         .body = text.data,
                         .body_len = text.len,
                         .timeout_ms = timeout_ms};
    struct k8s_resp resp;
    r = k8s_client_do(c, &rq, &resp, reterr);
    k8s_buf_done(&text);
    if (r < 0)
        return r;
    if (!ret) {
        k8s_resp_done(&resp);
        return 0;
    }
    return parse_answer(&resp, &rq, ret, reterr);
}
