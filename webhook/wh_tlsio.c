#include "wh_tlsio.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct wh_tlsio {
    int fd;
    unsigned char *buf; /* WH_TLSIO_READAHEAD bytes while data is held, else NULL */
    size_t off, len;    /* unread bytes: buf[off..len) */
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
    /* receive through io; send keeps the descriptor and GnuTLS's sendmsg */
    gnutls_transport_set_ptr2(session, io, (gnutls_transport_ptr_t)(intptr_t)fd);
    gnutls_transport_set_pull_function(session, wh_tlsio_pull);
    gnutls_transport_set_pull_timeout_function(session, wh_tlsio_pull_timeout);
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
