#include "op_http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_buf.h"
#include "op_config.h"

struct op_http {
    struct MHD_Daemon *d;
    struct k8s_metrics *m;
    op_ready_fn ready;
    void *ud;
    int port;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ok = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result metrics(struct op_http *h, struct MHD_Connection *conn)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 64 << 20);
    if (k8s_metrics_render(h->m, &b) < 0)
        return reply(conn, 500, "text/plain", "cannot render metrics\n", 22,
                     MHD_RESPMEM_PERSISTENT);
    size_t len;
    char *body = k8s_buf_take(&b, &len);
    if (!body)
        return MHD_NO;
    return reply(conn, 200, "text/plain; version=0.0.4", body, len, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **state)
{
    (void)version;
    (void)upload;
    struct op_http *h = cls;
    if (!*state) { /* first call: headers only */
        *state = h;
        return MHD_YES;
    }
    if (*upload_len) {
        *upload_len = 0; /* bodies are ignored */
        return MHD_YES;
    }
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return reply(conn, 405, "text/plain", "method not allowed\n", 19, MHD_RESPMEM_PERSISTENT);
    if (!strcmp(url, "/healthz"))
        return reply(conn, 200, "text/plain", "ok\n", 3, MHD_RESPMEM_PERSISTENT);
    if (!strcmp(url, "/readyz")) {
        char why[256] = "";
        if (h->ready(h->ud, why, sizeof(why)))
            return reply(conn, 200, "text/plain", "ok\n", 3, MHD_RESPMEM_PERSISTENT);
        char *msg = NULL;
        int n = asprintf(&msg, "not ready: %s\n", why);
        return n < 0 ? MHD_NO
                     : reply(conn, 503, "text/plain", msg, (size_t)n, MHD_RESPMEM_MUST_FREE);
    }
    if (!strcmp(url, "/metrics") && h->m)
        return metrics(h, conn);
    return reply(conn, 404, "text/plain", "not found\n", 10, MHD_RESPMEM_PERSISTENT);
}

static int listen_on(struct op_http *h, const char *host, int port, const char *flag,
                     struct k8s_error *reterr)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    const struct sockaddr *sa = NULL;
    if (!*host || !strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
        flags |= MHD_USE_DUAL_STACK;
    else if (inet_pton(AF_INET, host, &a4.sin_addr) == 1)
        sa = (const struct sockaddr *)&a4;
    else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1)
        sa = (const struct sockaddr *)&a6, flags |= MHD_USE_IPv6;
    else
        return k8s_error_set(reterr, -K8S_EINVAL, "%s: %s is not an IP address", flag, host);
    struct MHD_Daemon *d =
        sa ? MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
                              sa, MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END)
           : MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, h,
                              MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    if (!d)
        return k8s_error_set(reterr, -K8S_EIO, "%s: cannot listen on %s:%d", flag,
                             *host ? host : "*", port);
    h->d = d;
    return 0;
}

int op_http_start(const char *flag, const char *addr, struct k8s_metrics *m, op_ready_fn ready,
                  void *ud, struct op_http **ret, struct k8s_error *reterr)
{
    char host[256];
    int port;
    int r = op_parse_bind(flag, addr, host, sizeof(host), &port, reterr);
    if (r < 0)
        return r;
    struct op_http *h = calloc(1, sizeof(*h));
    if (!h)
        return k8s_error_set(reterr, -K8S_ENOMEM, "out of memory");
    *h = (struct op_http){.m = m, .ready = ready, .ud = ud, .port = port};
    if ((r = listen_on(h, host, port, flag, reterr)) < 0) {
        free(h);
        return r;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    if (info)
        h->port = info->port;
    *ret = h;
    return 0;
}

int op_http_port(const struct op_http *h)
{
    return h ? h->port : 0;
}

void op_http_free(struct op_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}
