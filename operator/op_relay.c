#include "op_relay.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "k8s_buf.h"
#include "k8s_curl.h"
#include "k8s_time.h"
#include "op_proto.h"

#define MAX_REPLY      (4 << 20)
#define CONNECT_MS     5000
#define MARGIN_MS      5000 /* curl's own timeout: the server's deadline plus this */
#define RETRY_FIRST_MS 1000
#define POLL_MS        1000
#define HOLD_MAX_MS    500 /* longest a batch's bodies wait for its slowest connection */
#define USER_AGENT     "mldiagnostics-operator/" MLD_VERSION

struct batch;

struct host {
    struct batch *b;
    size_t idx;
    CURL *h;
    struct curl_slist *headers;
    struct k8s_buf req, reply;
    char url[160];
    int grpc_status; /* -1 until a grpc-status header or trailer */
    char grpc_message[256];
    long http_status;
    int64_t retry_at;   /* monotonic ns; 0 when not waiting to retry */
    int64_t attempt_ns; /* unix ns the current attempt started */
    int64_t body_ns;    /* unix ns libcurl took the body of this attempt; 0: not yet */
    size_t sent_off;    /* request bytes handed to libcurl in this attempt */
    bool held;          /* connected, body paused until the batch fires */
    bool finished;
};

struct batch {
    uint64_t id;
    struct host *hosts;
    struct op_host_result *results;
    size_t n, left;
    int max_retries;
    int64_t deadline_mono; /* no attempt starts after it */
    int64_t hold_until;    /* monotonic ns: fire even if some hosts never connected */
    size_t held;           /* hosts connected and waiting for the fire */
    bool fired;            /* bodies flow (held ones released, later ones at once) */
    op_batch_done_fn done;
    void *ud;
    struct batch *next;
};

struct cancel {
    uint64_t id;
    char reason[200];
    struct cancel *next;
};

struct op_relay {
    pthread_t thread;
    pthread_mutex_t lock;
    CURLM *multi;
    int ep;                 /* epoll set of libcurl's sockets and the wake-up eventfd */
    int wake;               /* eventfd: submissions, cancels, stop */
    int64_t timer_at;       /* libcurl's timeout, monotonic ns; 0: none */
    struct batch *incoming; /* submitted, not yet started (lock) */
    struct cancel *cancels; /* requested (lock) */
    struct batch *active;   /* relay thread only */
    size_t live;            /* lock */
    uint64_t next_id;       /* lock */
    bool stop;              /* lock */
};

/* ---------- callbacks ---------- */

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    struct host *h = ud;
    size_t len = size * n;
    const char *colon = memchr(data, ':', len);
    if (len > 5 && !strncmp(data, "HTTP/", 5)) {
        const char *sp = memchr(data, ' ', len);
        h->http_status = sp ? strtol(sp + 1, NULL, 10) : 0;
        return len;
    }
    if (!colon)
        return len;
    size_t klen = (size_t)(colon - data);
    const char *v = colon + 1, *end = data + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    if (klen == 11 && !strncasecmp(data, "grpc-status", 11)) {
        char num[16];
        size_t m = (size_t)(end - v) < sizeof(num) - 1 ? (size_t)(end - v) : sizeof(num) - 1;
        memcpy(num, v, m);
        num[m] = '\0';
        char *e;
        long s = strtol(num, &e, 10);
        h->grpc_status = *num && !*e && s >= 0 && s < 1000 ? (int)s : OP_GRPC_UNKNOWN;
    } else if (klen == 12 && !strncasecmp(data, "grpc-message", 12)) {
        op_grpc_message_decode(v, (size_t)(end - v), h->grpc_message, sizeof(h->grpc_message));
    }
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct host *h = ud;
    return k8s_buf_append(&h->reply, data, size * n) == 0 ? size * n : 0;
}

/* ---------- one attempt ---------- */

/* The request body. Until the batch fires, a connected host's body is
 * held (its HEADERS frame is out, the message is not): when every host is
 * connected the bodies go out in one burst, so 1,536 profilers get their
 * complete request within a few milliseconds of each other instead of
 * spread over the time it takes to open 1,536 connections. */
static size_t on_read(char *buf, size_t size, size_t n, void *ud)
{
    struct host *h = ud;
    if (!h->b->fired) {
        if (!h->held) {
            h->held = true;
            h->b->held++;
        }
        return CURL_READFUNC_PAUSE;
    }
    if (!h->sent_off)
        h->body_ns = k8s_real_ns();
    size_t left = h->req.len - h->sent_off, take = size * n < left ? size * n : left;
    memcpy(buf, h->req.data + h->sent_off, take);
    h->sent_off += take;
    return take;
}

static int on_seek(void *ud, curl_off_t offset, int origin)
{
    struct host *h = ud;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > h->req.len)
        return CURL_SEEKFUNC_CANTSEEK;
    h->sent_off = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

static struct curl_slist *headers_for(int64_t remaining_ms)
{
    char timeout[16], line[48];
    op_grpc_timeout(remaining_ms, timeout);
    snprintf(line, sizeof(line), "grpc-timeout: %s", timeout);
    struct curl_slist *l = NULL, *t;
    const char *lines[] = {"Content-Type: application/grpc", "TE: trailers", line,
                           "Accept:", "Expect:"};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (!(t = k8s_curl.slist_append(l, lines[i]))) {
            k8s_curl.slist_free_all(l);
            return NULL;
        }
        l = t;
    }
    return l;
}

/* Configure (or re-arm) h for an attempt and add it to the multi handle. */
static int start_attempt(struct op_relay *r, struct host *h, int64_t now)
{
    struct op_host_result *res = &h->b->results[h->idx];
    int64_t remaining_ms = (h->b->deadline_mono - now) / K8S_NSEC_PER_MSEC;
    if (remaining_ms < 1)
        remaining_ms = 1;
    k8s_curl.slist_free_all(h->headers);
    if (!(h->headers = headers_for(remaining_ms)))
        return -K8S_ENOMEM;
    k8s_buf_reset(&h->reply);
    h->grpc_status = -1;
    h->grpc_message[0] = '\0';
    h->http_status = 0;
    h->retry_at = 0;
    h->sent_off = 0;
    h->body_ns = 0;
    h->held = false;
    CURL *c = h->h;
    k8s_curl.easy_setopt(c, CURLOPT_HTTPHEADER, h->headers);
    k8s_curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(remaining_ms + MARGIN_MS));
    h->attempt_ns = k8s_real_ns();
    if (!res->attempts++)
        res->sent_ns = h->attempt_ns;
    return k8s_curl.multi_add_handle(r->multi, c) == CURLM_OK ? 0 : -K8S_ENOMEM;
}

const char *op_relay_host_name(const struct op_relay_target *t, int port, bool override, char *buf,
                               size_t cap)
{
    bool v6 = strchr(t->ip, ':') != NULL;
    if (override)
        snprintf(buf, cap, "%s", t->pod);
    else
        snprintf(buf, cap, "%s%s%s:%d", v6 ? "[" : "", t->ip, v6 ? "]" : "", port);
    return buf;
}

void op_relay_file_stem(const char *host_name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", host_name);
    for (char *p = buf; *p; p++)
        if (*p == ':')
            *p = '_';
}

static int setup_host(struct host *h, const struct op_batch_spec *s, size_t i)
{
    const struct op_relay_target *t = &s->targets[i];
    char host_name[320];
    struct op_profile_request rq = {
        .duration_ms = s->duration_ms,
        .start_timestamp_ns = s->start_timestamp_ns,
        .repository_root = s->repository_root,
        .session_id = s->session_id,
        .host_name =
            op_relay_host_name(t, s->port, s->host_name_override, host_name, sizeof(host_name)),
    };
    k8s_buf_init(&h->req, 1 << 20);
    k8s_buf_init(&h->reply, MAX_REPLY);
    h->idx = i;
    bool v6 = strchr(t->ip, ':') != NULL;
    int n = snprintf(h->url, sizeof(h->url), "http://%s%s%s:%d/tensorflow.ProfilerService/Profile",
                     v6 ? "[" : "", t->ip, v6 ? "]" : "", s->port);
    if (n < 0 || (size_t)n >= sizeof(h->url))
        return -K8S_EINVAL;
    if (op_proto_encode_request(&rq, &h->req) < 0 || !(h->h = k8s_curl.easy_init()))
        return -K8S_ENOMEM;
    CURL *c = h->h;
    k8s_curl.easy_setopt(c, CURLOPT_URL, h->url);
    k8s_curl.easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    k8s_curl.easy_setopt(c, CURLOPT_POST, 1L);
    k8s_curl.easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    k8s_curl.easy_setopt(c, CURLOPT_READDATA, h);
    k8s_curl.easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
    k8s_curl.easy_setopt(c, CURLOPT_SEEKDATA, h);
    k8s_curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)h->req.len);
    k8s_curl.easy_setopt(c, CURLOPT_USERAGENT, USER_AGENT);
    k8s_curl.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    k8s_curl.easy_setopt(c, CURLOPT_HEADERDATA, h);
    k8s_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    k8s_curl.easy_setopt(c, CURLOPT_WRITEDATA, h);
    k8s_curl.easy_setopt(c, CURLOPT_PRIVATE, h);
    k8s_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    k8s_curl.easy_setopt(c, CURLOPT_NOPROXY, "*"); /* pod IPs never go through a proxy */
    k8s_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_MS);
    /* one RPC per connection: curl 7.88 cannot reuse an h2c connection after
     * a trailers-only reply (the next stream fails with a framing error), and
     * a retry must not land on a connection the profiler is tearing down */
    k8s_curl.easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
    k8s_curl.easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    k8s_curl.easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L); /* captures can last an hour */
    /* a reply is a few bytes and the request one frame: small buffers keep
     * thousands of concurrent RPCs in little memory */
    k8s_curl.easy_setopt(c, CURLOPT_BUFFERSIZE, 4096L);
    k8s_curl.easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
    k8s_curl.easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 60L);
    k8s_curl.easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 30L);
    return 0;
}

/* ---------- outcomes ---------- */

static int http_to_grpc(long status)
{
    switch (status) {
    case 400:
        return OP_GRPC_INTERNAL;
    case 401:
        return OP_GRPC_UNAUTHENTICATED;
    case 403:
        return OP_GRPC_PERMISSION_DENIED;
    case 404:
        return OP_GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
        return OP_GRPC_UNAVAILABLE;
    default:
        return OP_GRPC_UNKNOWN;
    }
}

static bool connection_failure(CURLcode cc)
{
    return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
           cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING ||
           cc == CURLE_HTTP2 || cc == CURLE_PARTIAL_FILE;
}

/* The gRPC outcome of a finished attempt into res; true when retryable. */
static bool classify(struct host *h, CURLcode cc, struct op_host_result *res)
{
    double connect = 0;
    res->empty_trace = false;
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        k8s_curl.easy_getinfo(h->h, CURLINFO_CONNECT_TIME, &connect);
        res->code = connect > 0 ? OP_GRPC_DEADLINE_EXCEEDED : OP_GRPC_UNAVAILABLE;
        snprintf(res->message, sizeof(res->message), "%s",
                 connect > 0 ? "no reply before the deadline" : "connection timed out");
        return connect <= 0;
    }
    if (cc != CURLE_OK && h->grpc_status < 0) {
        bool conn = connection_failure(cc);
        res->code = conn                                                  ? OP_GRPC_UNAVAILABLE
                    : cc == CURLE_WRITE_ERROR || cc == CURLE_HTTP2_STREAM ? OP_GRPC_INTERNAL
                                                                          : OP_GRPC_UNKNOWN;
        snprintf(res->message, sizeof(res->message), "%s",
                 cc == CURLE_WRITE_ERROR    ? "reply larger than 4 MiB"
                 : cc == CURLE_HTTP2_STREAM ? "stream reset by the profiler"
                                            : k8s_curl.easy_strerror(cc));
        return conn;
    }
    if (h->http_status != 200 && h->grpc_status < 0) {
        res->code = http_to_grpc(h->http_status);
        snprintf(res->message, sizeof(res->message), "HTTP status %ld from the profiler",
                 h->http_status);
        return res->code == OP_GRPC_UNAVAILABLE;
    }
    if (h->grpc_status < 0) {
        res->code = OP_GRPC_INTERNAL;
        snprintf(res->message, sizeof(res->message), "reply without grpc-status");
        return false;
    }
    res->code = h->grpc_status;
    snprintf(res->message, sizeof(res->message), "%s", h->grpc_message);
    if (res->code != OP_GRPC_OK)
        return res->code == OP_GRPC_UNAVAILABLE;
    const uint8_t *msg;
    size_t len;
    struct op_profile_response pr;
    struct k8s_error err;
    if (op_grpc_unframe(h->reply.data, h->reply.len, &msg, &len, &err) < 0 ||
        op_proto_decode_response(msg, len, &pr, &err) < 0) {
        res->code = OP_GRPC_INTERNAL;
        snprintf(res->message, sizeof(res->message), "malformed reply: %s", err.message);
        return false;
    }
    res->empty_trace = pr.empty_trace;
    return false;
}

static void free_batch(struct batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct host *h = &b->hosts[i];
        if (h->h)
            k8s_curl.easy_cleanup(h->h);
        if (h->headers)
            k8s_curl.slist_free_all(h->headers);
        k8s_buf_done(&h->req);
        k8s_buf_done(&h->reply);
    }
    free(b->hosts);
    free(b->results);
    free(b);
}

/* The host has its outcome: release its handle; finish the batch when it
 * was the last one. */
static void finish_host(struct op_relay *r, struct host *h)
{
    struct batch *b = h->b;
    if (h->finished)
        return;
    h->finished = true;
    b->results[h->idx].done_ns = k8s_real_ns();
    k8s_curl.multi_remove_handle(r->multi, h->h);
    k8s_curl.easy_cleanup(h->h);
    h->h = NULL;
    if (--b->left)
        return;
    for (struct batch **p = &r->active; *p; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            break;
        }
    b->done(b->ud, b->id, b->results, b->n);
    pthread_mutex_lock(&r->lock);
    bool idle = --r->live == 0;
    pthread_mutex_unlock(&r->lock);
    free_batch(b);
    if (idle)
        malloc_trim(0); /* a wide capture's buffers go back to the system */
}

static void completed(struct op_relay *r, struct host *h, CURLcode cc, int64_t now)
{
    struct op_host_result *res = &h->b->results[h->idx];
    curl_off_t pre = 0;
    if (k8s_curl.easy_getinfo(h->h, CURLINFO_PRETRANSFER_TIME_T, &pre) == CURLE_OK && pre > 0)
        res->wire_ns = h->attempt_ns + (int64_t)pre * 1000;
    if (h->body_ns > res->wire_ns) /* a held body left when the batch fired */
        res->wire_ns = h->body_ns;
    bool retry = classify(h, cc, res);
    int shift = res->attempts - 1 < 12 ? res->attempts - 1 : 12;
    int64_t backoff = (int64_t)RETRY_FIRST_MS * K8S_NSEC_PER_MSEC << shift;
    if (retry && res->attempts <= h->b->max_retries && now + backoff < h->b->deadline_mono) {
        k8s_curl.multi_remove_handle(r->multi, h->h);
        h->retry_at = now + backoff;
        return;
    }
    if (retry && res->attempts > 1) {
        char why[sizeof(res->message)];
        snprintf(why, sizeof(why), "%s (after %d attempts)", res->message, res->attempts);
        memcpy(res->message, why, sizeof(why));
    }
    finish_host(r, h);
}

static void cancel_batch(struct op_relay *r, struct batch *b, const char *reason)
{
    size_t n = b->n;
    for (size_t i = 0; i < n; i++) {
        struct host *h = &b->hosts[i];
        if (h->finished)
            continue;
        b->results[i].code = OP_GRPC_CANCELLED;
        snprintf(b->results[i].message, sizeof(b->results[i].message), "%s", reason);
        bool last = b->left == 1;
        finish_host(r, h); /* removes a handle that waits for a retry too (a no-op) */
        if (last)
            return; /* b is freed */
    }
}

/* Start host i's attempt; when that fails for want of memory, the host
 * ends with INTERNAL. Returns true when that ended the batch (b is freed). */
static bool start_or_fail(struct op_relay *r, struct batch *b, size_t i, int64_t now)
{
    struct host *h = &b->hosts[i];
    if (start_attempt(r, h, now) == 0)
        return false;
    b->results[i].code = OP_GRPC_INTERNAL;
    snprintf(b->results[i].message, sizeof(b->results[i].message), "out of memory");
    bool last = b->left == 1;
    finish_host(r, h);
    return last;
}

/* ---------- the thread ---------- */

static void start_batch(struct op_relay *r, struct batch *b)
{
    int64_t now = k8s_mono_ns();
    b->next = r->active;
    r->active = b;
    b->hold_until = now + HOLD_MAX_MS * K8S_NSEC_PER_MSEC;
    for (size_t i = 0; i < b->n; i++)
        if (start_or_fail(r, b, i, now))
            return;
}

static void take_requests(struct op_relay *r, bool *stop)
{
    pthread_mutex_lock(&r->lock);
    struct batch *in = r->incoming;
    struct cancel *cs = r->cancels;
    r->incoming = NULL;
    r->cancels = NULL;
    *stop = r->stop;
    pthread_mutex_unlock(&r->lock);
    struct batch *order = NULL; /* submitted newest first: start the oldest first */
    while (in) {
        struct batch *b = in;
        in = b->next;
        b->next = order;
        order = b;
    }
    while (order) {
        struct batch *b = order;
        order = b->next;
        start_batch(r, b);
    }
    while (cs) {
        struct cancel *c = cs;
        cs = c->next;
        for (struct batch *b = r->active; b; b = b->next)
            if (b->id == c->id) {
                cancel_batch(r, b, c->reason);
                break;
            }
        free(c);
    }
}

/* Re-arm hosts whose retry is due; the time of the next one (0: none). */
static int64_t due_retries(struct op_relay *r, int64_t now)
{
    int64_t next = 0;
    for (struct batch *b = r->active; b; b = b->next)
        for (size_t i = 0; i < b->n; i++) {
            struct host *h = &b->hosts[i];
            if (h->finished || !h->retry_at)
                continue;
            if (h->retry_at <= now) {
                if (start_or_fail(r, b, i, now))
                    return due_retries(r, now); /* the list changed */
            } else if (!next || h->retry_at < next) {
                next = h->retry_at;
            }
        }
    return next;
}

/* libcurl says which sockets to watch (the multi_socket API: work per
 * event is O(1), where multi_perform would walk every handle each time). */
static int on_socket(CURL *e, curl_socket_t fd, int what, void *ud, void *socketp)
{
    (void)e;
    (void)socketp;
    struct op_relay *r = ud;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(r->ep, EPOLL_CTL_DEL, fd, NULL);
        return 0;
    }
    struct epoll_event ev = {.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) |
                                       (what & CURL_POLL_OUT ? EPOLLOUT : 0u),
                             .data.fd = fd};
    if (epoll_ctl(r->ep, EPOLL_CTL_MOD, fd, &ev) < 0 && errno == ENOENT)
        epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev);
    return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *ud)
{
    (void)m;
    struct op_relay *r = ud;
    r->timer_at = timeout_ms < 0 ? 0 : k8s_mono_ns() + timeout_ms * K8S_NSEC_PER_MSEC;
    return 0;
}

static void wake(struct op_relay *r)
{
    uint64_t one = 1;
    if (write(r->wake, &one, sizeof(one)) < 0) {
        /* the counter is saturated: the thread is awake anyway */
    }
}

static void drain_done(struct op_relay *r)
{
    CURLMsg *m;
    int left = 0;
    while ((m = k8s_curl.multi_info_read(r->multi, &left)))
        if (m->msg == CURLMSG_DONE) {
            struct host *h = NULL;
            k8s_curl.easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&h);
            completed(r, h, m->data.result, k8s_mono_ns());
        }
}

/* Milliseconds until the earliest of libcurl's timer, a due retry, a tick. */
static int wait_ms(const struct op_relay *r, int64_t next_retry)
{
    int64_t now = k8s_mono_ns(), until = now + POLL_MS * K8S_NSEC_PER_MSEC;
    if (r->timer_at && r->timer_at < until)
        until = r->timer_at;
    if (next_retry && next_retry < until)
        until = next_retry;
    int64_t ms = (until - now + K8S_NSEC_PER_MSEC - 1) / K8S_NSEC_PER_MSEC;
    return ms > 0 ? (int)ms : 0;
}

/* Release the held bodies of a batch whose hosts are all connected (or
 * done, or waiting to retry), or that has waited HOLD_MAX_MS. Returns the
 * monotonic time of the next forced fire, 0 when none is pending. */
static int64_t fire_ready(struct op_relay *r, int64_t now)
{
    int64_t next = 0;
    for (struct batch *b = r->active; b; b = b->next) {
        if (b->fired)
            continue;
        size_t waiting = 0;
        for (size_t i = 0; i < b->n; i++)
            waiting += !b->hosts[i].finished && !b->hosts[i].held && !b->hosts[i].retry_at;
        if (waiting && now < b->hold_until) {
            next = !next || b->hold_until < next ? b->hold_until : next;
            continue;
        }
        b->fired = true;
        for (size_t i = 0; i < b->n; i++) {
            struct host *h = &b->hosts[i];
            if (h->held && !h->finished) {
                h->held = false;
                k8s_curl.easy_pause(h->h, CURLPAUSE_CONT);
            }
        }
    }
    return next;
}

static void *run(void *arg)
{
    struct op_relay *r = arg;
    struct epoll_event evs[256];
    for (;;) {
        bool stop;
        take_requests(r, &stop);
        if (stop) {
            while (r->active)
                cancel_batch(r, r->active, "cancelled: the operator is stopping");
            return NULL;
        }
        int64_t now = k8s_mono_ns(), next = due_retries(r, now), fire_at = fire_ready(r, now);
        if (fire_at && (!next || fire_at < next))
            next = fire_at;
        int running = 0;
        int n = epoll_wait(r->ep, evs, sizeof(evs) / sizeof(evs[0]), wait_ms(r, next));
        for (int i = 0; i < n; i++) {
            if (evs[i].data.fd == r->wake) {
                uint64_t v;
                if (read(r->wake, &v, sizeof(v)) < 0) {
                    /* nothing pending after all */
                }
                continue;
            }
            int what = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                       (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                       (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
            k8s_curl.multi_socket_action(r->multi, evs[i].data.fd, what, &running);
        }
        if (r->timer_at && k8s_mono_ns() >= r->timer_at) {
            r->timer_at = 0;
            k8s_curl.multi_socket_action(r->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        drain_done(r);
    }
}

/* ---------- public ---------- */

int op_relay_new(struct op_relay **ret, struct k8s_error *reterr)
{
    int rc = k8s_curl_load(reterr);
    if (rc < 0)
        return rc;
    struct op_relay *r = calloc(1, sizeof(*r));
    if (!r)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    r->ep = epoll_create1(EPOLL_CLOEXEC);
    r->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = r->wake};
    if (r->ep < 0 || r->wake < 0 || epoll_ctl(r->ep, EPOLL_CTL_ADD, r->wake, &ev) < 0 ||
        !(r->multi = k8s_curl.multi_init())) {
        rc = k8s_error_set(reterr, -K8S_EIO, "cannot set up the relay's event loop");
        goto out_close;
    }
    k8s_curl.multi_setopt(r->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    k8s_curl.multi_setopt(r->multi, CURLMOPT_SOCKETDATA, r);
    k8s_curl.multi_setopt(r->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    k8s_curl.multi_setopt(r->multi, CURLMOPT_TIMERDATA, r);
    pthread_mutex_init(&r->lock, NULL);
    r->next_id = 1;
    if (pthread_create(&r->thread, NULL, run, r) != 0) {
        pthread_mutex_destroy(&r->lock);
        rc = k8s_error_set(reterr, -K8S_EIO, "cannot start the relay thread");
        goto out_close;
    }
    *ret = r;
    return 0;
out_close:
    if (r->multi)
        k8s_curl.multi_cleanup(r->multi);
    if (r->ep >= 0)
        close(r->ep);
    if (r->wake >= 0)
        close(r->wake);
    free(r);
    return rc;
}

void op_relay_free(struct op_relay *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stop = true;
    pthread_mutex_unlock(&r->lock);
    wake(r);
    pthread_join(r->thread, NULL);
    while (r->incoming) { /* submitted after the thread's last look */
        struct batch *b = r->incoming;
        r->incoming = b->next;
        for (size_t i = 0; i < b->n; i++) {
            b->results[i].code = OP_GRPC_CANCELLED;
            snprintf(b->results[i].message, sizeof(b->results[i].message),
                     "cancelled: the operator is stopping");
        }
        b->done(b->ud, b->id, b->results, b->n);
        free_batch(b);
    }
    while (r->cancels) {
        struct cancel *c = r->cancels;
        r->cancels = c->next;
        free(c);
    }
    k8s_curl.multi_cleanup(r->multi);
    close(r->ep);
    close(r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

int op_relay_submit(struct op_relay *r, const struct op_batch_spec *spec, op_batch_done_fn done,
                    void *ud, uint64_t *ret_id)
{
    if (!spec->n)
        return -K8S_EINVAL;
    struct batch *b = calloc(1, sizeof(*b));
    if (!b)
        return -K8S_ENOMEM;
    b->hosts = calloc(spec->n, sizeof(*b->hosts));
    b->results = calloc(spec->n, sizeof(*b->results));
    b->n = b->left = spec->n;
    if (!b->hosts || !b->results) {
        free_batch(b);
        return -K8S_ENOMEM;
    }
    b->max_retries = spec->max_retries;
    b->deadline_mono = k8s_mono_ns() + spec->deadline_ms * K8S_NSEC_PER_MSEC;
    b->done = done;
    b->ud = ud;
    for (size_t i = 0; i < spec->n; i++) {
        b->hosts[i].b = b;
        int rc = setup_host(&b->hosts[i], spec, i);
        if (rc < 0) {
            free_batch(b);
            return rc;
        }
    }
    pthread_mutex_lock(&r->lock);
    b->id = r->next_id++;
    b->next = r->incoming;
    r->incoming = b;
    r->live++;
    pthread_mutex_unlock(&r->lock);
    *ret_id = b->id;
    wake(r);
    return 0;
}

void op_relay_cancel(struct op_relay *r, uint64_t id, const char *reason)
{
    struct cancel *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->id = id;
    snprintf(c->reason, sizeof(c->reason), "%s", reason);
    pthread_mutex_lock(&r->lock);
    c->next = r->cancels;
    r->cancels = c;
    pthread_mutex_unlock(&r->lock);
    wake(r);
}

size_t op_relay_live(struct op_relay *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->live;
    pthread_mutex_unlock(&r->lock);
    return n;
}
