#include "op_relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "k8s_buf.h"
#include "k8s_time.h"
#include "op_h2.h"
#include "op_proto.h"
#include "op_rpcend.h"

#define MAX_REPLY   (4 << 20)
#define CONNECT_MS  5000
#define MARGIN_MS   5000 /* our own timeout: the server's deadline plus this */
#define POLL_MS     1000
#define HOLD_MAX_MS 500   /* longest a batch's bodies wait for its slowest connection */
#define READ_CHUNK  16384 /* the relay's one receive buffer: a read goes to op_h2 at once */
#define KEEPIDLE_S  60    /* captures can last an hour */
#define KEEPINTVL_S 30
#define RPC_PATH    "/tensorflow.ProfilerService/Profile"
#define USER_AGENT  "mldiagnostics-operator/" MLD_VERSION

struct batch;

struct host {
    struct batch *b;
    size_t idx;
    int fd; /* -1: no attempt on the wire */
    uint32_t events;
    struct op_h2 h2;
    struct k8s_buf req, reply; /* the framed ProfileRequest; the reply's message */
    union {
        struct sockaddr sa;
        struct sockaddr_in v4;
        struct sockaddr_in6 v6;
    } addr;
    socklen_t addrlen;  /* 0: the pod IP did not parse */
    char authority[56]; /* "<ip>:<port>", "[<ipv6>]:<port>" */
    char timeout[16];   /* grpc-timeout of this attempt */
    int grpc_status;    /* -1 until a grpc-status field */
    char grpc_message[256];
    enum op_rpc_failure failure;
    int err;            /* errno of OP_RPC_CONNECT / OP_RPC_CLOSED */
    int64_t retry_at;   /* monotonic ns; 0 when not waiting to retry */
    int64_t connect_by; /* monotonic ns: OP_RPC_CONNECT_TIMEOUT after it */
    int64_t give_up;    /* monotonic ns: OP_RPC_TIMEOUT after it */
    int64_t attempt_ns; /* unix ns the current attempt started */
    int64_t body_ns;    /* unix ns the socket took the whole message; 0: not yet */
    bool connected;
    bool held; /* connected, body waiting until the batch fires */
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
    struct batch *next, *dead_next;
};

struct cancel {
    uint64_t id;
    char reason[200];
    struct cancel *next;
};

struct op_relay {
    pthread_t thread;
    pthread_mutex_t lock;
    int ep;                 /* epoll set of the sockets and the wake-up eventfd */
    int wake;               /* eventfd: submissions, cancels, stop */
    struct batch *incoming; /* submitted, not yet started (lock) */
    struct cancel *cancels; /* requested (lock) */
    struct batch *active;   /* relay thread only */
    struct batch *dead;     /* finished; freed once the events in hand are handled */
    size_t live;            /* lock */
    uint64_t next_id;       /* lock */
    bool stop;              /* lock */
    uint8_t scratch[READ_CHUNK];
};

/* ---------- the reply, from op_h2 ---------- */

static void on_field(void *ud, const char *name, size_t nlen, const char *value, size_t vlen,
                     bool trailer)
{
    struct host *h = ud;
    (void)trailer; /* grpc-status comes in the trailers, or in a trailers-only reply */
    if (nlen == 11 && !strncasecmp(name, "grpc-status", 11)) {
        char num[16];
        size_t m = vlen < sizeof(num) - 1 ? vlen : sizeof(num) - 1;
        memcpy(num, value, m);
        num[m] = '\0';
        char *e;
        long s = strtol(num, &e, 10);
        h->grpc_status = *num && !*e && s >= 0 && s < 1000 ? (int)s : OP_GRPC_UNKNOWN;
    } else if (nlen == 12 && !strncasecmp(name, "grpc-message", 12)) {
        op_grpc_message_decode(value, vlen, h->grpc_message, sizeof(h->grpc_message));
    }
}

static bool on_data(void *ud, const uint8_t *p, size_t n)
{
    struct host *h = ud;
    int r = k8s_buf_append(&h->reply, p, n);
    if (r < 0)
        h->failure = r == -K8S_ETOOBIG ? OP_RPC_TOO_BIG : OP_RPC_NOMEM;
    return r == 0;
}

static const struct op_h2_callbacks h2_callbacks = {on_field, on_data};

/* ---------- sockets ---------- */

static void set_events(struct op_relay *r, struct host *h, uint32_t want)
{
    struct epoll_event ev = {.events = want, .data.ptr = h};
    if (want != h->events && epoll_ctl(r->ep, EPOLL_CTL_MOD, h->fd, &ev) == 0)
        h->events = want;
}

/* Close the attempt's connection and drop what it held. */
static void close_conn(struct op_relay *r, struct host *h)
{
    if (h->fd >= 0) {
        epoll_ctl(r->ep, EPOLL_CTL_DEL, h->fd, NULL);
        close(h->fd);
    }
    h->fd = -1;
    op_h2_done(&h->h2);
    h->h2 = (struct op_h2){.state = OP_H2_OPEN};
    k8s_buf_done(&h->reply);
}

/* Write what op_h2 has queued, as far as the socket takes it. */
static void flush(struct op_relay *r, struct host *h)
{
    size_t n;
    const void *out;
    while ((out = op_h2_out(&h->h2, &n))) {
        ssize_t w = send(h->fd, out, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (w < 0) {
            h->failure = OP_RPC_CLOSED;
            h->err = errno;
            return;
        }
        op_h2_consumed(&h->h2, (size_t)w);
    }
    if (!out && !h->body_ns && op_h2_body_sent(&h->h2))
        h->body_ns = k8s_real_ns();
    set_events(r, h, EPOLLIN | (out ? EPOLLOUT : 0u));
}

static void read_all(struct op_relay *r, struct host *h)
{
    for (;;) {
        ssize_t n = recv(h->fd, r->scratch, sizeof(r->scratch), 0);
        if (n > 0) {
            op_h2_recv(&h->h2, r->scratch, (size_t)n);
            if (h->h2.state != OP_H2_OPEN)
                return;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            h->failure = OP_RPC_CLOSED;
            h->err = n == 0 ? 0 : errno;
        }
        return;
    }
}

static void tune(int fd)
{
    static const struct {
        int level, name, value;
    } opts[] = {{IPPROTO_TCP, TCP_NODELAY, 1},
                {SOL_SOCKET, SO_KEEPALIVE, 1},
                {IPPROTO_TCP, TCP_KEEPIDLE, KEEPIDLE_S},
                {IPPROTO_TCP, TCP_KEEPINTVL, KEEPINTVL_S}};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        setsockopt(fd, opts[i].level, opts[i].name, &opts[i].value, sizeof(opts[i].value));
}

/* Begin connecting; false with h->failure when that failed at once. */
static bool open_conn(struct op_relay *r, struct host *h)
{
    if (!h->addrlen) {
        h->failure = OP_RPC_ADDRESS;
        return false;
    }
    h->fd = socket(h->addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = h};
    h->events = EPOLLOUT;
    if (h->fd < 0 || epoll_ctl(r->ep, EPOLL_CTL_ADD, h->fd, &ev) < 0 ||
        (connect(h->fd, &h->addr.sa, h->addrlen) < 0 && errno != EINPROGRESS)) {
        h->failure = OP_RPC_CONNECT;
        h->err = errno;
        close_conn(r, h);
        return false;
    }
    tune(h->fd);
    return true;
}

/* ---------- one attempt ---------- */

/* The request's message. Until the batch fires, a connected host's body
 * is held (its HEADERS frame is out, the message is not): when every host
 * is connected the bodies go out in one burst, so 1,536 profilers get
 * their complete request within a few milliseconds of each other instead
 * of spread over the time it takes to open 1,536 connections. */
static void send_body(struct op_relay *r, struct host *h)
{
    op_h2_send_body(&h->h2, h->req.data, h->req.len);
    flush(r, h);
}

/* TCP is up: the preface, SETTINGS and HEADERS go out; the body follows
 * now or at the fire. */
static void connected(struct op_relay *r, struct host *h)
{
    const struct op_h2_field fields[] = {
        {":method", "POST"},
        {":scheme", "http"},
        {":authority", h->authority},
        {":path", RPC_PATH},
        {"content-type", "application/grpc"},
        {"te", "trailers"},
        {"grpc-timeout", h->timeout},
        {"user-agent", USER_AGENT},
    };
    h->connected = true;
    if (op_h2_start(&h->h2, fields, sizeof(fields) / sizeof(fields[0]), MAX_REPLY, &h2_callbacks,
                    h) < 0) {
        h->failure = OP_RPC_NOMEM;
        return;
    }
    if (h->b->fired) {
        send_body(r, h);
        return;
    }
    h->held = true;
    h->b->held++;
    flush(r, h);
}

/* Arm h for an attempt; false with h->failure when it failed at once. */
static bool start_attempt(struct op_relay *r, struct host *h, int64_t now)
{
    struct op_host_result *res = &h->b->results[h->idx];
    int64_t remaining_ms = (h->b->deadline_mono - now) / K8S_NSEC_PER_MSEC;
    if (remaining_ms < 1)
        remaining_ms = 1;
    op_grpc_timeout(remaining_ms, h->timeout);
    h->grpc_status = -1;
    h->grpc_message[0] = '\0';
    h->failure = OP_RPC_NONE;
    h->err = 0;
    h->retry_at = 0;
    h->body_ns = 0;
    h->connected = h->held = false;
    h->connect_by = now + CONNECT_MS * K8S_NSEC_PER_MSEC;
    h->give_up = now + (remaining_ms + MARGIN_MS) * K8S_NSEC_PER_MSEC;
    h->attempt_ns = k8s_real_ns();
    if (!res->attempts++)
        res->sent_ns = h->attempt_ns;
    return open_conn(r, h);
}

/* The pod's address; addrlen stays 0 when the IP does not parse. */
static void set_address(struct host *h, const char *ip, int port)
{
    bool v6 = strchr(ip, ':') != NULL;
    snprintf(h->authority, sizeof(h->authority), "%s%s%s:%d", v6 ? "[" : "", ip, v6 ? "]" : "",
             port);
    if (!v6 && inet_pton(AF_INET, ip, &h->addr.v4.sin_addr) == 1) {
        h->addr.v4.sin_family = AF_INET;
        h->addr.v4.sin_port = htons((uint16_t)port);
        h->addrlen = sizeof(h->addr.v4);
    } else if (v6 && inet_pton(AF_INET6, ip, &h->addr.v6.sin6_addr) == 1) {
        h->addr.v6.sin6_family = AF_INET6;
        h->addr.v6.sin6_port = htons((uint16_t)port);
        h->addrlen = sizeof(h->addr.v6);
    }
}

static int setup_host(struct host *h, const struct op_batch_spec *s, size_t i)
{
    const struct op_relay_target *t = &s->targets[i];
    struct op_profile_request rq = {
        .duration_ms = s->duration_ms,
        .levels = s->levels,
        .start_timestamp_ns = s->start_timestamp_ns,
        .repository_root = s->repository_root,
        .session_id = s->session_id,
        .host_name = t->host_name,
    };
    h->idx = i;
    h->fd = -1;
    k8s_buf_init(&h->req, 1 << 20);
    k8s_buf_init(&h->reply, MAX_REPLY);
    set_address(h, t->ip, s->port);
    return op_proto_encode_request(&rq, &h->req) < 0 ? -K8S_ENOMEM : 0;
}

/* ---------- outcomes ---------- */

/* The gRPC outcome of a finished attempt into res; true when retryable. */
static bool classify(const struct host *h, struct op_host_result *res)
{
    struct op_rpc_end e = {.failure = h->failure,
                           .err = h->err,
                           .connected = h->connected,
                           .authority = h->authority,
                           .grpc_status = h->grpc_status,
                           .grpc_message = h->grpc_message,
                           .h2 = &h->h2,
                           .reply = (const uint8_t *)h->reply.data,
                           .reply_len = h->reply.len};
    return op_rpc_classify(&e, res);
}

static void free_batch(struct batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        op_h2_done(&b->hosts[i].h2);
        k8s_buf_done(&b->hosts[i].req);
        k8s_buf_done(&b->hosts[i].reply);
    }
    free(b->hosts);
    free(b->results);
    free(b);
}

/* Free the finished batches: no event in hand points at their hosts any
 * more. A wide capture's memory goes back to the system once idle. */
static void reap(struct op_relay *r)
{
    if (!r->dead)
        return;
    while (r->dead) {
        struct batch *b = r->dead;
        r->dead = b->dead_next;
        free_batch(b);
    }
    if (!r->active)
        malloc_trim(0);
}

/* The host has its outcome: close its connection; finish the batch when
 * it was the last one (true: the batch is done, its memory freed later). */
static bool finish_host(struct op_relay *r, struct host *h)
{
    struct batch *b = h->b;
    if (h->finished)
        return false;
    h->finished = true;
    b->results[h->idx].done_ns = k8s_real_ns();
    close_conn(r, h);
    if (--b->left)
        return false;
    for (struct batch **p = &r->active; *p; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            break;
        }
    b->done(b->ud, b->id, b->results, b->n);
    pthread_mutex_lock(&r->lock);
    r->live--;
    pthread_mutex_unlock(&r->lock);
    b->dead_next = r->dead;
    r->dead = b;
    return true;
}

/* The attempt ended: retry it later, or finish the host (true: that
 * finished the batch). */
static bool completed(struct op_relay *r, struct host *h, int64_t now)
{
    struct op_host_result *res = &h->b->results[h->idx];
    res->wire_ns = h->body_ns;
    bool retry = classify(h, res);
    close_conn(r, h); /* one RPC per connection */
    int64_t backoff = op_rpc_backoff_ns(res->attempts);
    if (retry && res->attempts <= h->b->max_retries && now + backoff < h->b->deadline_mono) {
        h->retry_at = now + backoff;
        return false;
    }
    if (retry && res->attempts > 1) {
        char why[sizeof(res->message)];
        snprintf(why, sizeof(why), "%s (after %d attempts)", res->message, res->attempts);
        memcpy(res->message, why, sizeof(why));
    }
    return finish_host(r, h);
}

static void cancel_batch(struct op_relay *r, struct batch *b, const char *reason)
{
    for (size_t i = 0; i < b->n; i++) {
        struct host *h = &b->hosts[i];
        if (h->finished)
            continue;
        b->results[i].code = OP_GRPC_CANCELLED;
        snprintf(b->results[i].message, sizeof(b->results[i].message), "%s", reason);
        if (h->fd >= 0 && h->connected) { /* the server sees the reset and saves nothing */
            op_h2_cancel(&h->h2);
            flush(r, h);
        }
        if (finish_host(r, h))
            return;
    }
}

/* Start host i's attempt; one that fails at once is an outcome too.
 * Returns true when that ended the batch. */
static bool start_or_fail(struct op_relay *r, struct batch *b, size_t i, int64_t now)
{
    struct host *h = &b->hosts[i];
    return !start_attempt(r, h, now) && completed(r, h, now);
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

/* What is due for one host: its retry, its timeouts, an end op_h2 or a
 * failed write reached outside an event. True when that ended the batch;
 * *next gets the host's next deadline. */
static bool host_timers(struct op_relay *r, struct host *h, int64_t now, int64_t *next)
{
    int64_t due = h->retry_at;
    if (!h->finished && h->fd >= 0) {
        if ((h->failure || h->h2.state != OP_H2_OPEN) && h->connected)
            return completed(r, h, now);
        if (!h->connected && now >= h->connect_by)
            h->failure = OP_RPC_CONNECT_TIMEOUT;
        else if (now >= h->give_up)
            h->failure = OP_RPC_TIMEOUT;
        if (h->failure)
            return completed(r, h, now);
        due = h->connected || h->give_up < h->connect_by ? h->give_up : h->connect_by;
    } else if (!h->finished && due && due <= now) {
        if (start_or_fail(r, h->b, h->idx, now))
            return true;
        return host_timers(r, h, now, next); /* the new attempt's timers */
    }
    if (!h->finished && due && (!*next || due < *next))
        *next = due;
    return false;
}

/* Every host's timers; the time of the next one (0: none). */
static int64_t timers(struct op_relay *r, int64_t now)
{
    int64_t next = 0;
    for (struct batch *b = r->active; b; b = b->next)
        for (size_t i = 0; i < b->n; i++)
            if (host_timers(r, &b->hosts[i], now, &next))
                return timers(r, now); /* the list changed */
    return next;
}

static void wake(struct op_relay *r)
{
    uint64_t one = 1;
    if (write(r->wake, &one, sizeof(one)) < 0) {
        /* the counter is saturated: the thread is awake anyway */
    }
}

/* A socket is ready. */
static void on_event(struct op_relay *r, struct host *h, uint32_t events)
{
    if (h->finished || h->fd < 0)
        return; /* an event for a connection closed since */
    if (!h->connected) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err) {
            h->failure = OP_RPC_CONNECT;
            h->err = err;
        } else if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
            connected(r, h);
        }
    }
    if (!h->failure && h->connected && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        read_all(r, h);
    if (!h->failure && h->connected)
        flush(r, h);
    if (h->failure || h->h2.state != OP_H2_OPEN)
        completed(r, h, k8s_mono_ns());
}

/* Milliseconds until the earliest of a host's timer and a tick. */
static int wait_ms(int64_t next)
{
    int64_t now = k8s_mono_ns(), until = now + POLL_MS * K8S_NSEC_PER_MSEC;
    if (next && next < until)
        until = next;
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
            if (h->held && !h->finished && h->fd >= 0)
                send_body(r, h);
            h->held = false;
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
            reap(r);
            return NULL;
        }
        int64_t now = k8s_mono_ns(), next = timers(r, now), fire_at = fire_ready(r, now);
        if (fire_at && (!next || fire_at < next))
            next = fire_at;
        reap(r);
        int n = epoll_wait(r->ep, evs, sizeof(evs) / sizeof(evs[0]), wait_ms(next));
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr) {
                on_event(r, evs[i].data.ptr, evs[i].events);
                continue;
            }
            uint64_t v;
            if (read(r->wake, &v, sizeof(v)) < 0) {
                /* nothing pending after all */
            }
        }
        reap(r);
    }
}

/* ---------- public ---------- */

int op_relay_new(struct op_relay **ret, struct k8s_error *reterr)
{
    struct op_relay *r = calloc(1, sizeof(*r));
    if (!r)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    int rc = 0;
    r->ep = epoll_create1(EPOLL_CLOEXEC);
    r->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (r->ep < 0 || r->wake < 0 || epoll_ctl(r->ep, EPOLL_CTL_ADD, r->wake, &ev) < 0) {
        rc = k8s_error_set(reterr, -K8S_EIO, "cannot set up the relay's event loop");
        goto out_close;
    }
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
