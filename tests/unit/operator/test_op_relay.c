/* op_relay against a local cleartext HTTP/2 (h2c) gRPC server built on
 * nghttp2's server session, a thread per connection: what one batch sends
 * (path, headers, the ProfileRequest), and each outcome class of DESIGN
 * §4.3 — OK, a busy profiler (INTERNAL, final), UNAVAILABLE (retried),
 * refused connections (retried, then UNAVAILABLE), cancellation. The
 * server picks its answer from the host_name in the request. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "k8s_time.h"
#include "op_proto.h"
#include "op_relay.h"

#define MAX_REQ 16

struct request {
    char path[64], content_type[64], te[64], timeout[64];
    uint8_t body[4096];
    size_t len;
};

static struct {
    int fd, port;
    pthread_t acceptor;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct request req[MAX_REQ];
    size_t nreq;
    int flaky_left; /* "flaky" hosts answer UNAVAILABLE this many times */
    bool stop;
    /* the batch's outcome */
    struct op_host_result res[8];
    size_t nres;
    int done_calls;
} sv;

struct conn {
    int fd;
    nghttp2_session *s;
    struct request *rq;
    char grpc_status[4];
    const char *grpc_message;
};

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE                 \
    }

static bool body_has(const struct request *rq, const char *s)
{
    return memmem(rq->body, rq->len, s, strlen(s)) != NULL;
}

/* Trailers-only answers: grpc-status in the one HEADERS frame. */
static void answer(struct conn *c, int32_t sid)
{
    const struct request *rq = c->rq;
    pthread_mutex_lock(&sv.lock);
    bool flaky = body_has(rq, "flaky") && sv.flaky_left > 0 && sv.flaky_left--;
    bool hang = body_has(rq, "hang"), busy = body_has(rq, "busy");
    pthread_mutex_unlock(&sv.lock);
    if (hang)
        return; /* never answers: the caller cancels */
    int code = busy ? OP_GRPC_INTERNAL : flaky ? OP_GRPC_UNAVAILABLE : OP_GRPC_OK;
    const char *msg = code == OP_GRPC_INTERNAL      ? "Another profiling session active."
                      : code == OP_GRPC_UNAVAILABLE ? "try again"
                                                    : "";
    snprintf(c->grpc_status, sizeof(c->grpc_status), "%d", code);
    nghttp2_nv only[] = {NV(":status", "200"), NV("content-type", "application/grpc"),
                         NV("grpc-status", c->grpc_status), NV("grpc-message", msg)};
    cr_assert_eq(nghttp2_submit_response(c->s, sid, only, 4, NULL), 0);
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *ud)
{
    (void)s, (void)f, (void)flags;
    struct request *rq = ((struct conn *)ud)->rq;
    const struct {
        const char *name;
        char *to;
    } keep[] = {{":path", rq->path},
                {"content-type", rq->content_type},
                {"te", rq->te},
                {"grpc-timeout", rq->timeout}};
    pthread_mutex_lock(&sv.lock); /* the test reads it: no race through the socket */
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
        if (strlen(keep[i].name) == nlen && !memcmp(name, keep[i].name, nlen))
            snprintf(keep[i].to, 64, "%.*s", (int)vlen, value);
    pthread_mutex_unlock(&sv.lock);
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t sid, const uint8_t *data, size_t len,
                   void *ud)
{
    (void)s, (void)flags, (void)sid;
    struct request *rq = ((struct conn *)ud)->rq;
    pthread_mutex_lock(&sv.lock);
    cr_assert_leq(rq->len + len, sizeof(rq->body));
    memcpy(rq->body + rq->len, data, len);
    rq->len += len;
    pthread_mutex_unlock(&sv.lock);
    return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    (void)s;
    if (f->hd.stream_id && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
        (f->hd.type == NGHTTP2_DATA || f->hd.type == NGHTTP2_HEADERS))
        answer(ud, f->hd.stream_id);
    return 0;
}

static bool flush(struct conn *c)
{
    const uint8_t *out;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(c->s, &out)) > 0)
        if (write(c->fd, out, (size_t)n) != n)
            return false;
    return n == 0;
}

static void *serve(void *arg)
{
    struct conn *c = arg;
    nghttp2_session_callbacks *cb;
    cr_assert_eq(nghttp2_session_callbacks_new(&cb), 0);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
    cr_assert_eq(nghttp2_session_server_new(&c->s, cb, c), 0);
    nghttp2_session_callbacks_del(cb);
    cr_assert_eq(nghttp2_submit_settings(c->s, 0, NULL, 0), 0);
    uint8_t buf[4096];
    ssize_t n;
    while (flush(c) && (n = read(c->fd, buf, sizeof(buf))) > 0)
        if (nghttp2_session_mem_recv(c->s, buf, (size_t)n) < 0)
            break;
    nghttp2_session_del(c->s);
    close(c->fd);
    free(c);
    return NULL;
}

static void *acceptor(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(sv.fd, NULL, NULL);
        pthread_mutex_lock(&sv.lock);
        bool stop = sv.stop || fd < 0 || sv.nreq == MAX_REQ;
        struct conn *c = stop ? NULL : calloc(1, sizeof(*c));
        if (c)
            *c = (struct conn){.fd = fd, .rq = &sv.req[sv.nreq++]};
        pthread_mutex_unlock(&sv.lock);
        if (!c) {
            if (fd >= 0)
                close(fd);
            return NULL;
        }
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, serve, c), 0);
        pthread_detach(t);
    }
}

/* A listening socket on 127.0.0.1; its port. */
static int listener(int *fd)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(*fd >= 0);
    cr_assert_eq(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(*fd, 64), 0);
    cr_assert_eq(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

static void setup(void)
{
    memset(&sv, 0, sizeof(sv));
    pthread_mutex_init(&sv.lock, NULL);
    k8s_cond_init_mono(&sv.cond);
    sv.port = listener(&sv.fd);
    cr_assert_eq(pthread_create(&sv.acceptor, NULL, acceptor, NULL), 0);
}

static void teardown(void)
{
    pthread_mutex_lock(&sv.lock);
    sv.stop = true;
    pthread_mutex_unlock(&sv.lock);
    shutdown(sv.fd, SHUT_RDWR);
    pthread_join(sv.acceptor, NULL);
    close(sv.fd);
}

TestSuite(op_relay, .init = setup, .fini = teardown, .timeout = 60);

static void on_done(void *ud, uint64_t id, const struct op_host_result *res, size_t n)
{
    (void)ud, (void)id;
    pthread_mutex_lock(&sv.lock);
    cr_assert_leq(n, 8);
    memcpy(sv.res, res, n * sizeof(*res));
    sv.nres = n;
    sv.done_calls++;
    pthread_cond_broadcast(&sv.cond);
    pthread_mutex_unlock(&sv.lock);
}

/* Submit a batch to the hosts named (pods on 127.0.0.1:port), wait for it. */
static uint64_t submit(struct op_relay *r, const char *const *pods, size_t n, int port, int retries)
{
    struct op_relay_target t[8];
    for (size_t i = 0; i < n; i++)
        t[i] = (struct op_relay_target){pods[i], "127.0.0.1"};
    struct op_batch_spec b = {
        .targets = t,
        .n = n,
        .port = port,
        .duration_ms = 2000,
        .levels = OP_TRACER_LEVELS_DEFAULT,
        .repository_root = "gs://bucket/r/plugins/profile",
        .session_id = "2025_12_01_04_17_10",
        .deadline_ms = 20000,
        .max_retries = retries,
    };
    uint64_t id;
    cr_assert_eq(op_relay_submit(r, &b, on_done, NULL, &id), 0);
    return id;
}

static void wait_done(void)
{
    int64_t until = k8s_mono_ns() + 30 * K8S_NSEC_PER_SEC;
    struct timespec ts = {until / K8S_NSEC_PER_SEC, until % K8S_NSEC_PER_SEC};
    pthread_mutex_lock(&sv.lock);
    while (!sv.done_calls)
        cr_assert_neq(pthread_cond_timedwait(&sv.cond, &sv.lock, &ts), ETIMEDOUT, "no outcome");
    pthread_mutex_unlock(&sv.lock);
}

/* op_relay_live reaches 0 right after the done callback returns. */
static bool idle(struct op_relay *r)
{
    for (int i = 0; i < 200 && op_relay_live(r); i++)
        usleep(5000);
    return op_relay_live(r) == 0;
}

static struct op_relay *relay(void)
{
    struct op_relay *r;
    struct k8s_error err;
    cr_assert_eq(op_relay_new(&r, &err), 0, "%s", err.message);
    return r;
}

Test(op_relay, a_batch_sends_one_profile_rpc_per_host_and_reports_once)
{
    static const char *const pods[] = {"ok-0", "ok-1", "ok-2"};
    struct op_relay *r = relay();
    submit(r, pods, 3, sv.port, 3);
    wait_done();
    cr_assert_eq(sv.done_calls, 1);
    cr_assert_eq(sv.nres, 3);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(sv.res[i].code, OP_GRPC_OK, "%s: %s", pods[i], sv.res[i].message);
        cr_assert_eq(sv.res[i].attempts, 1);
        cr_assert(sv.res[i].wire_ns > 0 && sv.res[i].done_ns >= sv.res[i].sent_ns);
    }
    pthread_mutex_lock(&sv.lock);
    cr_assert_eq(sv.nreq, 3, "one connection per RPC");
    for (size_t i = 0; i < sv.nreq; i++) {
        const struct request *rq = &sv.req[i];
        cr_assert_str_eq(rq->path, "/tensorflow.ProfilerService/Profile");
        cr_assert_str_eq(rq->content_type, "application/grpc");
        cr_assert_str_eq(rq->te, "trailers");
        long ms = strtol(rq->timeout, NULL, 10); /* what is left of the batch's 20 s */
        cr_assert(ms > 15000 && ms <= 20000 && strchr(rq->timeout, 'm'), "%s", rq->timeout);
        cr_assert(rq->len > 5 && rq->body[0] == 0, "a gRPC frame, not compressed");
        cr_assert(body_has(rq, "2025_12_01_04_17_10") && body_has(rq, "gs://bucket/r/plugins/"),
                  "session id and repository root");
        cr_assert(body_has(rq, "ok-"), "host_name: the pod");
    }
    pthread_mutex_unlock(&sv.lock);
    cr_assert(idle(r), "the batch is over once its callback ran");
    op_relay_free(r);
}

Test(op_relay, a_busy_profiler_is_final_internal_with_its_message)
{
    static const char *const pods[] = {"busy-0"};
    struct op_relay *r = relay();
    submit(r, pods, 1, sv.port, 3);
    wait_done();
    cr_assert_eq(sv.res[0].code, OP_GRPC_INTERNAL);
    cr_assert_str_eq(sv.res[0].message, "Another profiling session active.");
    cr_assert_eq(sv.res[0].attempts, 1, "not retried");
    op_relay_free(r);
}

Test(op_relay, unavailable_is_retried)
{
    static const char *const pods[] = {"flaky-0"};
    sv.flaky_left = 1;
    struct op_relay *r = relay();
    submit(r, pods, 1, sv.port, 3);
    wait_done();
    cr_assert_eq(sv.res[0].code, OP_GRPC_OK, "%s", sv.res[0].message);
    cr_assert_eq(sv.res[0].attempts, 2);
    pthread_mutex_lock(&sv.lock);
    cr_assert_eq(sv.nreq, 2);
    pthread_mutex_unlock(&sv.lock);
    op_relay_free(r);
}

Test(op_relay, unavailable_past_the_retries_is_reported)
{
    static const char *const pods[] = {"flaky-0"};
    sv.flaky_left = 5;
    struct op_relay *r = relay();
    submit(r, pods, 1, sv.port, 1);
    wait_done();
    cr_assert_eq(sv.res[0].code, OP_GRPC_UNAVAILABLE);
    cr_assert_eq(sv.res[0].attempts, 2, "1 + --capture-max-retries");
    op_relay_free(r);
}

Test(op_relay, a_refused_connection_is_unavailable)
{
    int fd, port = listener(&fd);
    close(fd); /* nothing listens there now */
    static const char *const pods[] = {"ok-0"};
    struct op_relay *r = relay();
    submit(r, pods, 1, port, 0);
    wait_done();
    cr_assert_eq(sv.res[0].code, OP_GRPC_UNAVAILABLE);
    cr_assert_neq(sv.res[0].message[0], '\0', "says what went wrong");
    op_relay_free(r);
}

Test(op_relay, cancel_finishes_the_unfinished_hosts_with_the_reason)
{
    static const char *const pods[] = {"ok-0", "hang-1"};
    struct op_relay *r = relay();
    uint64_t id = submit(r, pods, 2, sv.port, 0);
    for (int i = 0; i < 500; i++) { /* until both requests are in */
        pthread_mutex_lock(&sv.lock);
        bool in = sv.nreq == 2 && sv.req[0].len && sv.req[1].len;
        pthread_mutex_unlock(&sv.lock);
        if (in)
            break;
        usleep(10000);
    }
    usleep(100000);
    op_relay_cancel(r, id, "cancelled: the resource was deleted");
    wait_done();
    cr_assert_eq(sv.done_calls, 1);
    int cancelled = 0;
    for (size_t i = 0; i < 2; i++)
        if (sv.res[i].code == OP_GRPC_CANCELLED) {
            cancelled++;
            cr_assert_str_eq(sv.res[i].message, "cancelled: the resource was deleted");
        }
    cr_assert_eq(cancelled, 1, "the host that answered keeps its answer");
    cr_assert(idle(r), "the batch is over once its callback ran");
    op_relay_free(r);
}

Test(op_relay, no_targets_is_invalid)
{
    struct op_relay *r = relay();
    struct op_batch_spec b = {.port = 1, .session_id = "s", .repository_root = "/r"};
    uint64_t id;
    cr_assert_eq(op_relay_submit(r, &b, on_done, NULL, &id), -K8S_EINVAL);
    op_relay_free(r);
}
