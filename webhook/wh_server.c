#include "wh_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s_buf.h"
#include "k8s_log.h"
#include "k8s_time.h"
#include "wh_admit.h"
#include "wh_reaper.h"
#include "wh_tlsio.h"

/* TLS 1.2 and 1.3 only, AEAD ciphers only, and the server's order wins:
 * AES-128-GCM first (what Go's crypto/tls, the API server's side, prefers
 * on AES-NI hardware; 40% cheaper per byte than AES-256-GCM, and a 64 KiB
 * review is mostly cipher work), then AES-256-GCM, then ChaCha20. Key
 * exchange: X25519 first, the group Go's crypto/tls and OpenSSL send a key
 * share for; with GnuTLS's default order (P-256 first) each new connection
 * cost a HelloRetryRequest, one more round trip. */
#define TLS_PRIORITIES                                                                             \
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"            \
    "+CHACHA20-POLY1305:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:"               \
    "+GROUP-SECP521R1:%SERVER_PRECEDENCE"

/* The kernel's queue of connections not yet accepted (capped by
 * net.core.somaxconn): a burst of the API server's connections, or idle
 * ones held there by TCP_DEFER_ACCEPT, must not fill it. */
#define LISTEN_BACKLOG 4096

enum route { R_NONE, R_MUTATE, R_HEALTHZ, R_READYZ, R_METRICS };

/* One libmicrohttpd daemon with its own thread: a worker. The acceptor
 * gives each new connection to the worker with the fewest, so keep-alive
 * connections (the API server holds up to 25) spread over every core. A
 * shared listen socket polled by a thread pool instead leaves it to
 * whichever thread wakes first, and one core often ends up with them all. */
struct worker {
    struct MHD_Daemon *d;
    struct wh_server *s;
    int conns; /* open connections (atomic) */
};

/* Each TLS connection's own state, its socket context: the transport and
 * the reaper's entry until its first request. */
struct conn {
    struct wh_tlsio *io; /* NULL without memory for it: GnuTLS's plain transport */
    struct wh_reaper_entry reap;
    bool idle; /* between requests: --idle-timeout rather than --request-timeout */
};

struct wh_server {
    struct wh_server_deps deps;
    struct wh_admit_ctx admit;
    struct worker *workers;
    size_t nworkers;
    struct wh_reaper *reaper; /* --handshake-timeout */
    struct MHD_Daemon *plain_d;
    int listen_fd;
    pthread_t acceptor;
    bool accepting;
    int port;
    int inflight;  /* requests between arrival and completion (atomic) */
    bool draining; /* atomic */
    struct k8s_metric *inflight_g, *cert_expiry, *reloads_ok, *reloads_bad, *ready_g;
};

/* Per request, MHD's *con_cls. */
struct req {
    enum route route;
    struct k8s_buf body;
    int64_t start_ns;
    bool answered;  /* a response was queued early (404/405/413) */
    bool too_large; /* body over the cap: discard it, then answer 413 */
    long long discarded;
};

static bool draining(struct wh_server *s)
{
    return __atomic_load_n(&s->draining, __ATOMIC_RELAXED);
}

static bool synced(struct wh_server *s)
{
    return !s->deps.ready || s->deps.ready(s->deps.ready_ud);
}

static bool is_ready(struct wh_server *s)
{
    return !draining(s) && synced(s);
}

/* close: answer with "Connection: close" (draining, read once by the caller
 * so that what the answer says and whether it closes agree). */
static enum MHD_Result queue(struct MHD_Connection *c, int status, char *body, size_t len,
                             const char *ctype, bool close)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "POST");
    if (close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result r = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return r;
}

static enum MHD_Result text_as(struct MHD_Connection *c, int status, const char *line, bool close)
{
    struct wh_admit_result res;
    if (wh_admit_text(status, line, WH_OUT_INVALID, &res) < 0)
        return MHD_NO;
    return queue(c, res.status, res.body, res.len, res.content_type, close);
}

static enum MHD_Result text(struct MHD_Connection *c, struct wh_server *s, int status,
                            const char *line)
{
    return text_as(c, status, line, draining(s));
}

static enum MHD_Result serve_metrics(struct MHD_Connection *c, struct wh_server *s)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 16 << 20);
    k8s_metric_set(s->inflight_g, __atomic_load_n(&s->inflight, __ATOMIC_RELAXED));
    k8s_metric_set(s->ready_g, is_ready(s) ? 1 : 0);
    k8s_metric_set(s->cert_expiry,
                   s->deps.tls ? (double)(wh_tls_not_after(s->deps.tls) - time(NULL)) : 0);
    if (!s->deps.metrics || k8s_metrics_render(s->deps.metrics, &b) < 0)
        return text(c, s, 500, "cannot render metrics");
    size_t len;
    char *body = k8s_buf_take(&b, &len);
    return body ? queue(c, 200, body, len, "text/plain; version=0.0.4; charset=utf-8", draining(s))
                : MHD_NO;
}

static enum MHD_Result serve_get(struct MHD_Connection *c, struct wh_server *s, enum route r)
{
    if (r == R_METRICS)
        return serve_metrics(c, s);
    if (r != R_READYZ)
        return text(c, s, 200, "ok");
    /* One reading of the drain: a 200 never closes the connection, and the
     * answer that closes it says why. */
    if (draining(s))
        return text_as(c, 503, "shutting down", true);
    if (!synced(s))
        return text_as(c, 503, "not ready: caches not synced", false);
    return text_as(c, 200, "ok", false);
}

static struct conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

static struct wh_tlsio *tlsio_of(struct MHD_Connection *c)
{
    struct conn *k = conn_of(c);
    return k ? k->io : NULL;
}

/* The answer to a POST /mutate. libmicrohttpd sends its headers and then,
 * in the same call, its body (a POST's answer always has one): the
 * headers' record is held for the body's, one sendmsg() for both. */
static enum MHD_Result answer(struct MHD_Connection *c, struct wh_server *s, int status, char *body,
                              size_t len, const char *ctype)
{
    if (len > 0)
        wh_tlsio_hold_next(tlsio_of(c));
    return queue(c, status, body, len, ctype, draining(s));
}

/* The transport alone (deps.canned): queued as an admission's answer is,
 * without the admission. */
static enum MHD_Result serve_canned(struct MHD_Connection *c, struct wh_server *s, struct req *rq)
{
    char *body = NULL;
    size_t len = 0;
    if (s->deps.canned(s->deps.canned_ud, k8s_buf_str(&rq->body), rq->body.len, &body, &len) < 0)
        return MHD_NO;
    return answer(c, s, 200, body, len, "application/json");
}

static enum MHD_Result serve_mutate(struct MHD_Connection *c, struct wh_server *s, struct req *rq)
{
    if (s->deps.canned)
        return serve_canned(c, s, rq);
    struct wh_admit_result res;
    if (wh_admit(&s->admit, k8s_buf_str(&rq->body), rq->body.len, rq->start_ns, &res) < 0)
        return MHD_NO;
    return answer(c, s, res.status, res.body, res.len, res.content_type);
}

static enum route route_of(const char *url)
{
    static const struct {
        const char *path;
        enum route r;
    } t[] = {{"/mutate", R_MUTATE},
             {"/healthz", R_HEALTHZ},
             {"/readyz", R_READYZ},
             {"/metrics", R_METRICS}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(url, t[i].path))
            return t[i].r;
    return R_NONE;
}

/* Bodies over the cap are read and discarded up to this much, so that the
 * client, still sending, gets a clean 413 instead of a connection reset;
 * beyond it the connection is answered and closed at once. */
#define DISCARD_MAX (64LL << 20)

static long long declared_length(struct MHD_Connection *c)
{
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return cl ? strtoll(cl, NULL, 10) : -1;
}

/* First call for a request: route it, refuse what can be refused early. */
/* The first request's headers arrived: the reaper lets the connection be
 * (libmicrohttpd's --request-timeout bounds it from now on). */
static void first_request(struct wh_server *s, struct MHD_Connection *c)
{
    struct conn *k = conn_of(c);
    if (k)
        wh_reaper_remove(s->reaper, &k->reap);
}

/* A connection's inactivity bound, in whole seconds as libmicrohttpd counts
 * them: --request-timeout while a request is read or answered (the
 * daemon's default), --idle-timeout between requests. The idle one is the
 * longer so that the API server, whose pool drops a connection idle 90 s,
 * closes first: a close from this side races the client's next request on
 * that connection (HTTP/1.1 cannot say "going away"), and the request
 * fails, admitted uninjected. */
static void set_idle(struct wh_server *s, struct MHD_Connection *c, bool idle)
{
    const struct wh_config *cfg = s->deps.cfg;
    struct conn *k = conn_of(c); /* NULL on the plain listener: its default stays */
    if (!k || k->idle == idle || cfg->idle_timeout_ns == cfg->request_timeout_ns)
        return;
    k->idle = idle;
    int64_t ns = idle ? cfg->idle_timeout_ns : cfg->request_timeout_ns;
    (void)MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
                                    (unsigned)(ns / K8S_NSEC_PER_SEC));
}

static enum MHD_Result begin(struct wh_server *s, struct MHD_Connection *c, const char *url,
                             const char *method, void **con_cls)
{
    struct req *rq = calloc(1, sizeof(*rq));
    if (!rq)
        return MHD_NO;
    first_request(s, c);
    set_idle(s, c, false);
    rq->start_ns = k8s_mono_ns();
    rq->route = route_of(url);
    k8s_buf_init(&rq->body, (size_t)s->deps.cfg->max_request_bytes);
    *con_cls = rq;
    __atomic_add_fetch(&s->inflight, 1, __ATOMIC_RELAXED);
    bool post = !strcmp(method, MHD_HTTP_METHOD_POST);
    bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
    rq->answered = true;
    if (rq->route == R_NONE)
        return text(c, s, 404, "not found: the admission endpoint is POST /mutate");
    if (rq->route == R_MUTATE && !post)
        return text(c, s, 405, "method not allowed: use POST /mutate");
    if (rq->route != R_MUTATE && !get)
        return text(c, s, 405, "method not allowed: use GET");
    rq->answered = false;
    long long declared = rq->route == R_MUTATE ? declared_length(c) : -1;
    if (declared > DISCARD_MAX) {
        rq->answered = true;
        wh_admit_note(&s->admit, WH_OUT_TOO_LARGE, "declared body exceeds --max-request-bytes",
                      rq->start_ns);
        return text(c, s, 413, "request body exceeds --max-request-bytes");
    }
    rq->too_large = declared > s->deps.cfg->max_request_bytes;
    char *tail; /* one allocation for the whole body when its size is declared */
    if (!rq->too_large && declared > 0 && k8s_buf_reserve(&rq->body, (size_t)declared, &tail) < 0)
        rq->too_large = true;
    return MHD_YES;
}

/* A chunk of body: keep it, or count it once over the cap. */
static enum MHD_Result consume(struct MHD_Connection *c, struct wh_server *s, struct req *rq,
                               const char *data, size_t *size)
{
    size_t n = *size;
    *size = 0;
    if (!rq->too_large && k8s_buf_append(&rq->body, data, n) == 0)
        return MHD_YES;
    rq->too_large = true; /* the buffer freed itself */
    rq->discarded += (long long)n;
    if (rq->discarded <= DISCARD_MAX)
        return MHD_YES;
    rq->answered = true;
    wh_admit_note(&s->admit, WH_OUT_TOO_LARGE, "body exceeds --max-request-bytes", rq->start_ns);
    return text(c, s, 413, "request body exceeds --max-request-bytes");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct wh_server *s = cls;
    struct req *rq = *con_cls;
    if (!rq)
        return begin(s, c, url, method, con_cls);
    if (rq->answered) { /* body of a refused request: discard */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size)
        return consume(c, s, rq, upload_data, upload_data_size);
    rq->answered = true;
    if (rq->too_large) {
        wh_admit_note(&s->admit, WH_OUT_TOO_LARGE, "body exceeds --max-request-bytes",
                      rq->start_ns);
        return text(c, s, 413, "request body exceeds --max-request-bytes");
    }
    if (rq->route == R_MUTATE)
        return serve_mutate(c, s, rq);
    return serve_get(c, s, rq->route);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct wh_server *s = cls;
    struct req *rq = *con_cls;
    if (!rq)
        return;
    /* Nothing is held once an answer is complete (its body's push sent the
     * headers'); should that ever change, the bytes leave now, not with
     * the next answer. */
    if (wh_tlsio_flush(tlsio_of(c)) < 0)
        k8s_logf(K8S_LOG_WARN, "an answer's headers could not be sent at its completion");
    k8s_buf_done(&rq->body);
    free(rq);
    *con_cls = NULL;
    /* answered: the connection waits for the client's next request */
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && !draining(s))
        set_idle(s, c, true);
    __atomic_sub_fetch(&s->inflight, 1, __ATOMIC_RELAXED);
}

static void on_reload(void *ud, int result, const struct k8s_error *err)
{
    struct wh_server *s = ud;
    if (result == 0) {
        k8s_metric_add(s->reloads_ok, 1);
        k8s_logf(K8S_LOG_INFO, "serving certificate reloaded");
    } else {
        k8s_metric_add(s->reloads_bad, 1);
        k8s_log_json(K8S_LOG_WARN, "serving certificate not reloaded; keeping the previous one",
                     json_pack("{s:s}", "error", err->message));
    }
}

/* Set before the listeners start and cleared after they stopped. */
static double reaped(void *ud)
{
    return (double)wh_reaper_reaped(((struct wh_server *)ud)->reaper);
}

static void register_metrics(struct wh_server *s, struct k8s_metrics *m)
{
    s->inflight_g = k8s_metrics_gauge(m, "mldiagnostics_webhook_inflight_requests",
                                      "Requests being handled.", NULL);
    s->ready_g =
        k8s_metrics_gauge(m, "mldiagnostics_webhook_ready", "1 when /readyz answers 200.", NULL);
    s->cert_expiry = k8s_metrics_gauge(m, "mldiagnostics_webhook_certificate_expiry_seconds",
                                       "Seconds until the serving certificate expires.", NULL);
    s->reloads_ok = k8s_metrics_counter(m, "mldiagnostics_webhook_certificate_reloads_total",
                                        "Serving certificate reloads.", "result=\"success\"");
    s->reloads_bad = k8s_metrics_counter(m, "mldiagnostics_webhook_certificate_reloads_total",
                                         "Serving certificate reloads.", "result=\"rejected\"");
    k8s_metrics_counter_fn(m, "mldiagnostics_webhook_connections_reaped_total",
                           "Connections closed for want of a first request within "
                           "--handshake-timeout, or to make room at --max-connections.",
                           NULL, reaped, s);
}

int wh_server_new(const struct wh_server_deps *deps, struct wh_server **ret)
{
    struct wh_server *s = calloc(1, sizeof(*s));
    if (!s)
        return -K8S_ENOMEM;
    s->deps = *deps;
    s->listen_fd = -1;
    wh_admit_init(&s->admit, deps->cfg, deps->lookup, deps->metrics);
    if (deps->metrics)
        register_metrics(s, deps->metrics);
    *ret = s;
    return 0;
}

/* "host:port", ":port" or "port" → sockaddr. */
static int resolve(const char *host, const char *port, struct sockaddr_storage *ss,
                   struct k8s_error *reterr)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int g = getaddrinfo(host && *host ? host : NULL, port, &hints, &ai);
    if (g != 0)
        return k8s_error_set(reterr, -K8S_EINVAL, "bad listen address %s:%s: %s", host ? host : "",
                             port, gai_strerror(g));
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    return 0;
}

/* The acceptor counts a connection when it hands it over (the worker's
 * STARTED notice comes later, after more accepts); CLOSED uncounts it.
 * libmicrohttpd sends CLOSED after gnutls_deinit and before it closes the
 * descriptor, so the reaper lets go of it in time. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct worker *w = cls;
    struct conn *k = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (k) {
            wh_reaper_remove(w->s->reaper, &k->reap);
            wh_tlsio_free(k->io);
            free(k);
        }
        *socket_context = NULL;
        __atomic_sub_fetch(&w->conns, 1, __ATOMIC_RELAXED);
        return;
    }
    /* STARTED: before the first read. Without memory for the read-ahead
     * the connection keeps GnuTLS's plain transport; without memory for
     * its state it is closed. */
    const union MHD_ConnectionInfo *tls =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!fd || !(k = calloc(1, sizeof(*k)))) {
        if (fd)
            (void)shutdown(fd->connect_fd, SHUT_RDWR);
        return;
    }
    if (tls && tls->tls_session && wh_tlsio_attach(tls->tls_session, fd->connect_fd, &k->io) < 0)
        k->io = NULL; /* GnuTLS's plain transport */
    *socket_context = k;
    wh_reaper_add(w->s->reaper, &k->reap, fd->connect_fd);
}

static int start_worker(struct wh_server *s, struct worker *w, bool ipv6)
{
    const struct wh_config *cfg = s->deps.cfg;
    w->s = s;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TLS | MHD_USE_ITC |
                     MHD_USE_TURBO | MHD_USE_NO_LISTEN_SOCKET | (ipv6 ? MHD_USE_IPv6 : 0);
    w->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_HTTPS_CERT_CALLBACK, wh_tls_retrieve,
        MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)cfg->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)(cfg->request_timeout_ns / K8S_NSEC_PER_SEC), MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)cfg->connection_memory, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, w, MHD_OPTION_END);
    return w->d ? 0 : -K8S_EIO;
}

static struct worker *least_loaded(struct wh_server *s, int *total)
{
    struct worker *best = &s->workers[0];
    *total = 0;
    for (size_t i = 0; i < s->nworkers; i++) {
        int n = __atomic_load_n(&s->workers[i].conns, __ATOMIC_RELAXED);
        *total += n;
        if (n < __atomic_load_n(&best->conns, __ATOMIC_RELAXED))
            best = &s->workers[i];
    }
    return best;
}

/* Accept until the listen socket is shut down (drain). */
static void *accept_main(void *arg)
{
    struct wh_server *s = arg;
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                usleep(10 * 1000); /* out of descriptors: let connections close */
                continue;
            }
            return NULL; /* EINVAL after shutdown(): draining */
        }
        int total;
        struct worker *w = least_loaded(s, &total);
        /* at --max-connections, a connection still without its first
         * request gives way (it closes soon); with none, the new one does */
        if (total >= s->deps.cfg->max_connections &&
            !wh_reaper_evict_oldest(s->reaper, k8s_mono_ns())) {
            close(fd);
            continue;
        }
        __atomic_add_fetch(&w->conns, 1, __ATOMIC_RELAXED);
        /* refused here, it closed fd and never notifies: uncount it (a drain
         * waits for the count to reach zero) */
        if (MHD_add_connection(w->d, fd, (struct sockaddr *)&ss, len) != MHD_YES)
            __atomic_sub_fetch(&w->conns, 1, __ATOMIC_RELAXED);
    }
}

static int open_listener(struct wh_server *s, const struct sockaddr_storage *ss,
                         struct k8s_error *reterr)
{
    const struct wh_config *cfg = s->deps.cfg;
    int one = 1, fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len =
        ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return k8s_error_set(reterr, -K8S_EIO, "cannot listen on %s:%d: %s", cfg->bind_address,
                             (int)cfg->port, strerror(e));
    }
    /* A connection that has sent nothing stays in the kernel (a few hundred
     * bytes, no descriptor, no connection slot) until it does, or until
     * --handshake-timeout has passed; every real client speaks first. */
    int defer = (int)(cfg->handshake_timeout_ns / K8S_NSEC_PER_SEC);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof(defer));
    struct sockaddr_storage bound;
    len = sizeof(bound);
    getsockname(fd, (struct sockaddr *)&bound, &len);
    s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                : ((struct sockaddr_in *)&bound)->sin_port);
    s->listen_fd = fd;
    return 0;
}

static int start_tls(struct wh_server *s, struct k8s_error *reterr)
{
    const struct wh_config *cfg = s->deps.cfg;
    struct sockaddr_storage ss;
    char port[16];
    snprintf(port, sizeof(port), "%d", (int)cfg->port);
    int r = resolve(cfg->bind_address, port, &ss, reterr);
    if (r == 0)
        r = open_listener(s, &ss, reterr);
    if (r < 0)
        return r;
    wh_tls_install(s->deps.tls);
    if (wh_reaper_new(cfg->handshake_timeout_ns, &s->reaper) < 0)
        return k8s_error_set(reterr, -K8S_EIO, "cannot start the handshake-timeout thread");
    s->nworkers = (size_t)cfg->threads;
    s->workers = calloc(s->nworkers, sizeof(*s->workers));
    if (!s->workers)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    for (size_t i = 0; i < s->nworkers; i++)
        if (start_worker(s, &s->workers[i], ss.ss_family == AF_INET6) < 0)
            return k8s_error_set(reterr, -K8S_EIO, "cannot start server thread %zu", i);
    if (pthread_create(&s->acceptor, NULL, accept_main, s) != 0)
        return k8s_error_set(reterr, -K8S_EIO, "cannot start the accept thread");
    s->accepting = true;
    return 0;
}

static int start_plain(struct wh_server *s, struct k8s_error *reterr)
{
    const char *addr = s->deps.cfg->metrics_bind_address;
    const char *colon = strrchr(addr, ':');
    char host[128] = "";
    struct sockaddr_storage ss;
    if (colon)
        snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
    int r = resolve(host, colon ? colon + 1 : addr, &ss, reterr);
    if (r < 0)
        return r;
    s->plain_d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                                      (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
                                  0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                                  (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT,
                                  (unsigned)10, MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                                  MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
    if (!s->plain_d)
        return k8s_error_set(reterr, -K8S_EIO, "cannot listen on --metrics-bind-address %s", addr);
    return 0;
}

int wh_server_start(struct wh_server *s, struct k8s_error *reterr)
{
    int r = start_tls(s, reterr);
    if (r == 0 && *s->deps.cfg->metrics_bind_address)
        r = start_plain(s, reterr);
    if (r == 0 && s->deps.tls)
        r = wh_tls_watch_start(s->deps.tls, on_reload, s);
    return r;
}

/* Stop accepting: new connections are refused by the kernel at once. */
static void stop_accepting(struct wh_server *s)
{
    if (s->listen_fd >= 0)
        shutdown(s->listen_fd, SHUT_RDWR); /* wakes the acceptor with EINVAL */
    if (s->accepting)
        pthread_join(s->acceptor, NULL);
    s->accepting = false;
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    s->listen_fd = -1;
}

void wh_server_drain(struct wh_server *s)
{
    __atomic_store_n(&s->draining, true, __ATOMIC_RELAXED);
    stop_accepting(s);
}

static void stop(struct wh_server *s)
{
    stop_accepting(s);
    for (size_t i = 0; i < s->nworkers; i++)
        if (s->workers[i].d)
            MHD_stop_daemon(s->workers[i].d);
    free(s->workers);
    s->workers = NULL;
    s->nworkers = 0;
    if (s->plain_d)
        MHD_stop_daemon(s->plain_d);
    s->plain_d = NULL;
    wh_reaper_free(s->reaper); /* every connection closed, no scrape left to read it */
    s->reaper = NULL;
}

static int open_connections(struct wh_server *s)
{
    int total = 0;
    for (size_t i = 0; i < s->nworkers; i++)
        total += __atomic_load_n(&s->workers[i].conns, __ATOMIC_RELAXED);
    return total;
}

/* Draining answers every request with Connection: close, so each kept-alive
 * connection closes after its next answer; one still idle at the deadline
 * is closed then. Closing idle connections at once instead (Go's
 * Shutdown) races the API server, which keeps writing to the connections
 * of its pool: kube-proxy moves only new connections to the new pods. */
void wh_server_wait(struct wh_server *s, int64_t deadline_ns, struct wh_drain *ret)
{
    struct wh_drain d;
    for (;;) {
        d.unanswered = __atomic_load_n(&s->inflight, __ATOMIC_RELAXED);
        d.connections = open_connections(s);
        if ((d.unanswered == 0 && d.connections == 0) || k8s_mono_ns() >= deadline_ns)
            break;
        usleep(5 * 1000);
    }
    stop(s);
    if (ret)
        *ret = d;
}

void wh_server_free(struct wh_server *s)
{
    if (!s)
        return;
    if (s->deps.tls)
        wh_tls_watch_stop(s->deps.tls);
    stop(s);
    free(s);
}

int wh_server_port(const struct wh_server *s)
{
    return s->port;
}
