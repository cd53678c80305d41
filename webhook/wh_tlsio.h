/*
 * wh_tlsio — a read-ahead transport under a GnuTLS server session.
 *
 * Why: GnuTLS pulls each record with two recv() calls (the 5-byte header,
 * then the rest) and libmicrohttpd asks for one record at a time, so a
 * 64 KiB review costs nine recv() calls and a 5 KiB one two; in a VM a
 * system call is the dearest thing the webhook does. This transport reads
 * up to WH_TLSIO_READAHEAD bytes per recv() and serves GnuTLS's small
 * reads from that buffer (OpenSSL's "read ahead", which GnuTLS lacks).
 *
 * The buffer is an extension of the socket's receive queue: the pull
 * function reports EAGAIN only when both are empty, and EAGAIN is the only
 * signal libmicrohttpd's edge-triggered epoll loop uses to stop reading,
 * so no byte can be stranded in it. The buffer is allocated when a recv()
 * is made and freed as soon as it is drained, so an idle connection holds
 * only the small struct.
 *
 * Sends: libmicrohttpd hands GnuTLS an answer's headers and its body in
 * two calls, so each answer left as two records in two sendmsg(); over
 * loopback or a VM's network a send is mostly per-call cost (~2 µs here),
 * twice nginx's one write. wh_tlsio_hold_next() makes the next push's
 * bytes (the headers' record) wait in a small buffer for the push after
 * it (the body's), and both leave in one sendmsg(). Only arm it when a
 * push surely follows within the same call of libmicrohttpd's, as the
 * body of a non-HEAD answer with a body does; any later push sends held
 * bytes first, and wh_tlsio_flush() sends them on demand.
 *
 * Thread-safety: a wh_tlsio belongs to one connection and is used by the
 * thread that runs that connection.
 */
#ifndef WH_TLSIO_H
#define WH_TLSIO_H

#include <gnutls/gnutls.h>
#include <stddef.h>
#include <sys/types.h>

#include "k8s_err.h"

#define WH_TLSIO_READAHEAD (64 * 1024)
#define WH_TLSIO_HOLD_MAX  512 /* a push larger than this is never held */

struct wh_tlsio;

/* Put session's transport on fd: receives through a read-ahead buffer,
 * sends through wh_tlsio_vec_push (sendmsg, MSG_NOSIGNAL). *ret is
 * new, owned by the caller, and must outlive every receive on the
 * session. -K8S_ENOMEM and *ret untouched on failure; the session is then
 * unchanged. */
int wh_tlsio_attach(gnutls_session_t session, int fd, struct wh_tlsio **ret) K8S_MUST_CHECK;

/* Free io and any bytes still buffered. Touches neither the session nor
 * the descriptor: call it once the session is deinitialised or will not
 * receive again (libmicrohttpd's CLOSED notice comes after gnutls_deinit).
 * NULL-safe. */
void wh_tlsio_free(struct wh_tlsio *io);

/* The transport functions, exposed for the unit test: they follow
 * gnutls_pull_func, gnutls_pull_timeout_func and gnutls_vec_push_func
 * (errno set on -1; EAGAIN when the socket takes nothing more now). */
ssize_t wh_tlsio_pull(gnutls_transport_ptr_t io, void *data, size_t size);
int wh_tlsio_pull_timeout(gnutls_transport_ptr_t io, unsigned int ms);
ssize_t wh_tlsio_vec_push(gnutls_transport_ptr_t io, const giovec_t *iov, int iovcnt);

/* Hold the next push (if at most WH_TLSIO_HOLD_MAX bytes) until the push
 * after it, so that both leave in one sendmsg(). NULL-safe. */
void wh_tlsio_hold_next(struct wh_tlsio *io);

/* Send held bytes now, without blocking, and disarm a hold not yet used.
 * 0 when none are left; -K8S_EIO when the socket took only part or
 * failed (the rest stays held for the next push). NULL-safe. */
int wh_tlsio_flush(struct wh_tlsio *io) K8S_MUST_CHECK;

/* For tests: an io on fd without a session (wh_tlsio_free frees it). */
int wh_tlsio_new(int fd, struct wh_tlsio **ret) K8S_MUST_CHECK;

/* Bytes read from the socket and not yet handed to GnuTLS. */
size_t wh_tlsio_buffered(const struct wh_tlsio *io);
/* Bytes pushed by GnuTLS and held, not yet sent. */
size_t wh_tlsio_held(const struct wh_tlsio *io);

#endif
