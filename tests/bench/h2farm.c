/*
 * h2farm — many fake JAX profiler servers in one epoll thread, for the
 * operator benchmark: what a slice of 1,536 real hosts looks like to the
 * operator (each host answers its own RPC at once), without the
 * per-request cost of a Python gRPC server blurring the arrival times.
 *
 * Pod i (FIRST <= i < FIRST+N) listens on 127.10.<i/250>.<i%250+1>:PORT,
 * speaks HTTP/2 over cleartext (nghttp2), and for POST
 * /tensorflow.ProfilerService/Profile records the moment the whole request
 * arrived (CLOCK_REALTIME), decodes session_id, host_name and
 * opts.start_timestamp_ns / opts.duration_ms, "profiles" from the start
 * timestamp for the duration, then answers an empty ProfileResponse with
 * grpc-status 0 in trailers. Same stdin/stdout protocol as
 * profiler_farm.py: prints "ready" once listening; on a "dump" line (or
 * EOF) prints every request as a JSON array and exits.
 *
 *     h2farm PORT FIRST N PREFIX
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_REQ  (1 << 16) /* requests recorded: 42 rounds of 1,536 */
#define PATH_OK  "/tensorflow.ProfilerService/Profile"
#define BODY_CAP 4096

struct request {
    int pod;
    int64_t received_ns, started_ns, due_ns;
    char session[64], host[128];
    int32_t stream_id;
    struct conn *conn;
    int answered;
};

enum kind { STDIN, LISTENER, CONN };

struct listener {
    enum kind kind;
    int fd, pod;
};

struct conn {
    enum kind kind;
    int fd, pod;
    nghttp2_session *h2;
    unsigned char body[BODY_CAP];
    size_t body_len;
    int path_ok;
};

static struct request reqs[MAX_REQ];
static int nreq;
static const char *prefix;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Protocol buffers wire walk: the few ProfileRequest fields we report. */
static int varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        unsigned char b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

static void copy_str(char *dst, size_t cap, const unsigned char *s, uint64_t n)
{
    size_t k = n < cap - 1 ? (size_t)n : cap - 1;
    memcpy(dst, s, k);
    dst[k] = '\0';
}

static void parse_opts(const unsigned char *p, const unsigned char *end, struct request *r,
                       uint64_t *duration_ms, uint64_t *start_ns)
{
    while (p < end) {
        uint64_t key, v;
        if (varint(&p, end, &key) < 0 || (key & 7) != 0 || varint(&p, end, &v) < 0)
            return;
        if (key >> 3 == 8)
            *start_ns = v;
        else if (key >> 3 == 9)
            *duration_ms = v;
    }
    (void)r;
}

static void parse_request(const unsigned char *p, size_t n, struct request *r)
{
    const unsigned char *end = p + n;
    uint64_t duration_ms = 0, start_ns = 0;
    while (p < end) {
        uint64_t key, v;
        if (varint(&p, end, &key) < 0)
            break;
        if ((key & 7) == 0) {
            if (varint(&p, end, &v) < 0)
                break;
            continue;
        }
        if ((key & 7) != 2 || varint(&p, end, &v) < 0 || v > (uint64_t)(end - p))
            break;
        if (key >> 3 == 4)
            parse_opts(p, p + v, r, &duration_ms, &start_ns);
        else if (key >> 3 == 6)
            copy_str(r->session, sizeof(r->session), p, v);
        else if (key >> 3 == 7)
            copy_str(r->host, sizeof(r->host), p, v);
        p += v;
    }
    r->started_ns = (int64_t)start_ns > r->received_ns ? (int64_t)start_ns : r->received_ns;
    r->due_ns = r->started_ns + (int64_t)duration_ms * 1000000;
}

static ssize_t send_cb(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *ud)
{
    struct conn *c = ud;
    ssize_t w = send(c->fd, data, len, MSG_NOSIGNAL);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return NGHTTP2_ERR_WOULDBLOCK;
    return w < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : w;
}

static int header_cb(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    struct conn *c = ud;
    if (namelen == 5 && !memcmp(name, ":path", 5))
        c->path_ok = valuelen == strlen(PATH_OK) && !memcmp(value, PATH_OK, valuelen);
    return 0;
}

static int data_cb(nghttp2_session *s, uint8_t flags, int32_t stream_id, const uint8_t *data,
                   size_t len, void *ud)
{
    struct conn *c = ud;
    if (c->body_len + len <= BODY_CAP) {
        memcpy(c->body + c->body_len, data, len);
        c->body_len += len;
    }
    return 0;
}

static int frame_cb(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    struct conn *c = ud;
    if (!(f->hd.flags & NGHTTP2_FLAG_END_STREAM) ||
        (f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS) || nreq == MAX_REQ)
        return 0;
    struct request *r = &reqs[nreq++];
    memset(r, 0, sizeof(*r));
    r->received_ns = now_ns();
    r->pod = c->pod;
    r->stream_id = f->hd.stream_id;
    r->conn = c;
    if (c->path_ok && c->body_len >= 5)
        parse_request(c->body + 5, c->body_len - 5, r);
    else
        r->due_ns = r->received_ns;
    c->body_len = 0;
    return 0;
}

static ssize_t body_read(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    static const nghttp2_nv trailer[] = {
        {(uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, NGHTTP2_NV_FLAG_NONE}};
    memset(buf, 0, 5); /* an empty ProfileResponse in its gRPC frame */
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    nghttp2_submit_trailer(s, stream_id, trailer, 1);
    return 5;
}

static void answer(struct request *r)
{
    static const nghttp2_nv head[] = {
        {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE}};
    nghttp2_data_provider prd = {.read_callback = body_read};
    r->answered = 1;
    if (!r->conn)
        return;
    nghttp2_submit_response(r->conn->h2, r->stream_id, head, 2, &prd);
    nghttp2_session_send(r->conn->h2);
}

static void close_conn(int ep, struct conn *c)
{
    for (int i = 0; i < nreq; i++)
        if (reqs[i].conn == c)
            reqs[i].conn = NULL;
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    nghttp2_session_del(c->h2);
    free(c);
}

static struct conn *new_conn(int fd, int pod, nghttp2_session_callbacks *cbs)
{
    struct conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->kind = CONN;
    c->fd = fd;
    c->pod = pod;
    nghttp2_settings_entry iv = {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100};
    if (nghttp2_session_server_new(&c->h2, cbs, c) != 0 ||
        nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, &iv, 1) != 0) {
        free(c);
        return NULL;
    }
    nghttp2_session_send(c->h2);
    return c;
}

/* One readable connection; -1 when it is finished. */
static int on_readable(struct conn *c)
{
    unsigned char buf[16384];
    for (;;) {
        ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
        if (n == 0)
            return -1;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        if (nghttp2_session_mem_recv(c->h2, buf, (size_t)n) < 0 || nghttp2_session_send(c->h2) != 0)
            return -1;
    }
}

static int listen_on(int i, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    char ip[32];
    snprintf(ip, sizeof(ip), "127.10.%d.%d", i / 250, i % 250 + 1);
    inet_pton(AF_INET, ip, &a.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0) {
        fprintf(stderr, "h2farm: cannot listen on %s:%d: %s\n", ip, port, strerror(errno));
        exit(1);
    }
    return fd;
}

static void dump(void)
{
    printf("[");
    for (int i = 0; i < nreq; i++) {
        const struct request *r = &reqs[i];
        printf("%s{\"pod\":\"%s-%d\",\"received_ns\":%lld,\"started_ns\":%lld,"
               "\"session_id\":\"%s\",\"host_name\":\"%s\",\"outcome\":\"OK\"}",
               i ? "," : "", prefix, r->pod, (long long)r->received_ns, (long long)r->started_ns,
               r->session, r->host);
    }
    printf("]\n");
    fflush(stdout);
}

static void on_accept(int ep, const struct listener *l, nghttp2_session_callbacks *cbs)
{
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
        if (fd < 0)
            return;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = new_conn(fd, l->pod, cbs);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (!c || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            free(c);
        }
    }
}

/* Answer what is due; the epoll timeout until the next one. */
static int answer_due(void)
{
    int64_t next = 0, now = now_ns();
    for (int i = 0; i < nreq; i++) {
        if (reqs[i].answered)
            continue;
        if (reqs[i].due_ns <= now)
            answer(&reqs[i]);
        else if (!next || reqs[i].due_ns < next)
            next = reqs[i].due_ns;
    }
    return next ? (int)((next - now) / 1000000) + 1 : 1000;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: h2farm PORT FIRST N PREFIX\n");
        return 2;
    }
    int port = atoi(argv[1]), first = atoi(argv[2]), n = atoi(argv[3]);
    prefix = argv[4];
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    nghttp2_session_callbacks *cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_send_callback(cbs, send_cb);
    nghttp2_session_callbacks_set_on_header_callback(cbs, header_cb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, data_cb);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, frame_cb);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    static enum kind stdin_kind = STDIN;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &stdin_kind};
    epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev); /* stdin: "dump" or EOF */
    struct listener *ls = calloc((size_t)n, sizeof(*ls));
    for (int i = 0; ls && i < n; i++) {
        ls[i] = (struct listener){LISTENER, listen_on(first + i, port), first + i};
        ev.data.ptr = &ls[i];
        epoll_ctl(ep, EPOLL_CTL_ADD, ls[i].fd, &ev);
    }
    printf("ready\n");
    fflush(stdout);
    struct epoll_event evs[256];
    for (;;) {
        int k = epoll_wait(ep, evs, 256, answer_due());
        for (int j = 0; j < k; j++) {
            enum kind *kind = evs[j].data.ptr;
            if (*kind == STDIN) {
                char line[64];
                if (!fgets(line, sizeof(line), stdin) || !strncmp(line, "dump", 4)) {
                    dump();
                    return 0;
                }
            } else if (*kind == LISTENER) {
                on_accept(ep, (struct listener *)kind, cbs);
            } else if (on_readable((struct conn *)kind) < 0) {
                close_conn(ep, (struct conn *)kind);
            }
        }
    }
}
