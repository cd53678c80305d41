/*
 * wh_server — the HTTPS admission server (libmicrohttpd + GnuTLS, TLS 1.2+
 * only): POST /mutate, GET /healthz, /readyz, /metrics, optionally a plain
 * HTTP listener for metrics and probes. It is glue: decoding, the
 * decision and the patch live in wh_review and wh_mutate; this module
 * reads bodies within their cap, answers, logs one line per admission and
 * keeps the metrics. Against hostile clients: connections that send
 * nothing wait in the kernel (TCP_DEFER_ACCEPT), a connection without its
 * first request's headers --handshake-timeout after the accept is closed
 * (wh_reaper), headers larger than --connection-memory get 431, bodies
 * over --max-request-bytes 413, and at --max-connections a new connection
 * takes the place of the oldest still waiting for its first request.
 *
 * Between requests a keep-alive connection is closed after --idle-timeout
 * (longer than the API server's 90 s, so the client closes first), while
 * a request is read or answered after --request-timeout of silence.
 *
 * Lifecycle: wh_server_new → wh_server_start → (signal) wh_server_drain →
 * wh_server_wait → wh_server_free. Draining stops accepting connections,
 * fails /readyz and answers every request, those in flight and those that
 * still arrive on open connections, with Connection: close; the wait ends
 * when every connection has closed so, or at the deadline. Unlike Go's
 * http.Server.Shutdown it never closes an idle connection early: the
 * client's pool may be writing its next request on it.
 *
 * Thread-safety: the request handlers run on the server's thread pool;
 * the lifecycle functions belong to the main thread.
 */
#ifndef WH_SERVER_H
#define WH_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"
#include "k8s_metrics.h"
#include "wh_config.h"
#include "wh_lookup.h"
#include "wh_tls.h"

struct wh_server;

/* Extra readiness condition (caches synced); NULL = always ready. */
typedef bool (*wh_ready_fn)(void *ud);

struct wh_server_deps {
    const struct wh_config *cfg;
    const struct wh_lookup *lookup; /* NULL in standalone mode */
    struct wh_tls *tls;             /* borrowed; must outlive the server */
    struct k8s_metrics *metrics;    /* borrowed; the server registers its series */
    wh_ready_fn ready;
    void *ready_ud;
    /* Bench only (tests/bench/canned_webhook): answer every POST /mutate
     * with what this returns for the request's body, without admitting:
     * the transport alone, or a webhook that costs nothing. It returns 0
     * and new malloc'd bytes in *ret (the server frees them), or negative
     * to drop the connection; it runs on the server's threads, several at
     * once. NULL in the product. */
    int (*canned)(void *ud, const char *body, size_t len, char **ret, size_t *ret_len);
    void *canned_ud;
};

/* Build the server (nothing listens yet). -K8S_ENOMEM. */
int wh_server_new(const struct wh_server_deps *deps, struct wh_server **ret) K8S_MUST_CHECK;

/* Bind and serve. -K8S_EIO / -K8S_EINVAL with reterr naming the address. */
int wh_server_start(struct wh_server *s, struct k8s_error *reterr) K8S_MUST_CHECK;

/* Stop accepting and fail /readyz. Async-signal-safe it is not: call from
 * the main thread after the signal was noticed. */
void wh_server_drain(struct wh_server *s);

/* What a drain left when it stopped. */
struct wh_drain {
    int unanswered;  /* requests still in flight (0 on a clean drain) */
    int connections; /* connections still open, closed by the stop */
};

/* Wait until every connection has closed (each after an answer with
 * Connection: close, or by its client) or deadline_ns (monotonic) passes,
 * then stop the listeners; *ret (may be NULL) says what was left. */
void wh_server_wait(struct wh_server *s, int64_t deadline_ns, struct wh_drain *ret);

void wh_server_free(struct wh_server *s);

/* The port actually bound (useful with --port 0 in tests), or 0. */
int wh_server_port(const struct wh_server *s);

#endif
