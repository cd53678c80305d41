#include "wh_tlsio.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define PUSH_IOV 16 /* iovecs per sendmsg: the held bytes and GnuTLS's records */

struct wh_tlsio {
    int fd;
    unsigned char *buf; /* WH_TLSIO_READAHEAD bytes while data is held, else NULL */
    size_t off, len;    /* unread bytes: buf[off..len) */
    bool hold;          /* hold the next push for the one after it */
    size_t held_len;    /* pushed bytes not yet sent: held[0..held_len) */
    unsigned char held[WH_TLSIO_HOLD_MAX];
};

int wh_tlsio_new(int fd, struct wh_tlsio **ret)
{
    struct wh_tlsio *io = calloc(1, sizeof(*io));
    if (!io)
        return -K8S_ENOMEM;
    io->fd = fd;
    *ret = io;
    return 0;
}

int wh_tlsio_attach(gnutls_session_t session, int fd, struct wh_tlsio **ret)
{
    struct wh_tlsio *io;
    int r = wh_tlsio_new(fd, &io);
    if (r < 0)
        return r;
    gnutls_transport_set_ptr(session, io);
    gnutls_transport_set_pull_function(session, wh_tlsio_pull);
    gnutls_transport_set_pull_timeout_function(session, wh_tlsio_pull_timeout);
    gnutls_transport_set_vec_push_function(session, wh_tlsio_vec_push);
    *ret = io;
    return 0;
}

void wh_tlsio_free(struct wh_tlsio *io)
{
    if (!io)
        return;
    free(io->buf);
    free(io);
}

size_t wh_tlsio_buffered(const struct wh_tlsio *io)
{
    return io->len - io->off;
}

size_t wh_tlsio_held(const struct wh_tlsio *io)
{
    return io->held_len;
}

static size_t take(struct wh_tlsio *io, void *data, size_t size)
{
    size_t n = io->len - io->off < size ? io->len - io->off : size;
    memcpy(data, io->buf + io->off, n);
    io->off += n;
    if (io->off == io->len) { /* drained: an idle connection holds no buffer */
        free(io->buf);
        io->buf = NULL;
        io->off = io->len = 0;
    }
    return n;
}

ssize_t wh_tlsio_pull(gnutls_transport_ptr_t ptr, void *data, size_t size)
{
    struct wh_tlsio *io = ptr;
    if (io->off < io->len)
        return (ssize_t)take(io, data, size);
    if (size >= WH_TLSIO_READAHEAD) /* a big read needs no buffer */
        return recv(io->fd, data, size, 0);
    if (!io->buf && !(io->buf = malloc(WH_TLSIO_READAHEAD))) {
        errno = ENOMEM;
        return -1;
    }
    ssize_t n = recv(io->fd, io->buf, WH_TLSIO_READAHEAD, 0);
    if (n <= 0) { /* EOF or error (EAGAIN included): errno as recv left it */
        int e = errno;
        free(io->buf);
        io->buf = NULL;
        errno = e;
        return n;
    }
    io->off = 0;
    io->len = (size_t)n;
    return (ssize_t)take(io, data, size);
}

int wh_tlsio_pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms)
{
    struct wh_tlsio *io = ptr;
    if (io->off < io->len)
        return 1;
    struct pollfd p = {.fd = io->fd, .events = POLLIN};
    int timeout = ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : ms > INT32_MAX ? INT32_MAX : (int)ms;
    int r;
    do
        r = poll(&p, 1, timeout);
    while (r < 0 && errno == EINTR);
    return r;
}

void wh_tlsio_hold_next(struct wh_tlsio *io)
{
    if (io)
        io->hold = true;
}

static size_t iov_total(const giovec_t *iov, int iovcnt)
{
    size_t n = 0;
    for (int i = 0; i < iovcnt; i++)
        n += iov[i].iov_len;
    return n;
}

/* The held bytes, then as many of iov as fit in one sendmsg. Returns what
 * the socket took of iov (held bytes are not counted), or -1 with errno;
 * EAGAIN when it took only held bytes, which then stay held. */
static ssize_t send_after_held(struct wh_tlsio *io, const giovec_t *iov, int iovcnt)
{
    struct iovec v[PUSH_IOV];
    int n = 0;
    if (io->held_len)
        v[n++] = (struct iovec){io->held, io->held_len};
    for (int i = 0; i < iovcnt && n < PUSH_IOV; i++)
        v[n++] = iov[i];
    struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)n};
    ssize_t w = sendmsg(io->fd, &m, MSG_NOSIGNAL);
    if (w < 0 || !io->held_len)
        return w;
    size_t sent_held = (size_t)w < io->held_len ? (size_t)w : io->held_len;
    memmove(io->held, io->held + sent_held, io->held_len - sent_held);
    io->held_len -= sent_held;
    if ((size_t)w == sent_held && iovcnt > 0) {
        errno = EAGAIN; /* the socket is full: its writability will be signalled */
        return -1;
    }
    return w - (ssize_t)sent_held;
}

ssize_t wh_tlsio_vec_push(gnutls_transport_ptr_t ptr, const giovec_t *iov, int iovcnt)
{
    struct wh_tlsio *io = ptr;
    size_t total = iov_total(iov, iovcnt);
    bool hold = io->hold;
    io->hold = false;
    if (hold && total <= sizeof(io->held) - io->held_len) {
        for (int i = 0; i < iovcnt; i++) {
            memcpy(io->held + io->held_len, iov[i].iov_base, iov[i].iov_len);
            io->held_len += iov[i].iov_len;
        }
        return (ssize_t)total;
    }
    return send_after_held(io, iov, iovcnt);
}

int wh_tlsio_flush(struct wh_tlsio *io)
{
    if (!io)
        return 0;
    io->hold = false;
    if (io->held_len && send_after_held(io, NULL, 0) < 0)
        return -K8S_EIO;
    return io->held_len ? -K8S_EIO : 0;
}
