/* wh_tlsio: the read-ahead buffer behaves like more socket buffer. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wh_tlsio.h"

static int sv[2]; /* sv[0]: the io's end (non-blocking); sv[1]: the peer */

static void pair(void)
{
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    cr_assert_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
}

static void unpair(void)
{
    close(sv[0]);
    close(sv[1]);
}

TestSuite(tlsio, .init = pair, .fini = unpair);

Test(tlsio, small_reads_come_from_one_recv)
{
    struct wh_tlsio *io;
    cr_assert_eq(wh_tlsio_new(sv[0], &io), 0);
    cr_assert_eq(write(sv[1], "hello, world", 12), 12);
    char b[8];
    cr_assert_eq(wh_tlsio_pull(io, b, 5), 5); /* a record header's worth */
    cr_assert_eq(memcmp(b, "hello", 5), 0);
    cr_assert_eq(wh_tlsio_buffered(io), 7, "the rest was read ahead");
    cr_assert_eq(write(sv[1], "!", 1), 1);    /* arrives meanwhile */
    cr_assert_eq(wh_tlsio_pull(io, b, 8), 7); /* the buffer first, without recv */
    cr_assert_eq(memcmp(b, ", world", 7), 0);
    cr_assert_eq(wh_tlsio_buffered(io), 0);
    cr_assert_eq(wh_tlsio_pull(io, b, 8), 1); /* then the socket */
    cr_assert_eq(b[0], '!');
    wh_tlsio_free(io);
}

Test(tlsio, eagain_only_when_buffer_and_socket_are_empty)
{
    struct wh_tlsio *io;
    cr_assert_eq(wh_tlsio_new(sv[0], &io), 0);
    char b[4];
    errno = 0;
    cr_assert_eq(wh_tlsio_pull(io, b, 4), -1);
    cr_assert_eq(errno, EAGAIN);
    cr_assert_eq(wh_tlsio_pull_timeout(io, 0), 0, "nothing to read");
    cr_assert_eq(write(sv[1], "abcdef", 6), 6);
    cr_assert_eq(wh_tlsio_pull(io, b, 2), 2);
    cr_assert_eq(wh_tlsio_pull_timeout(io, 0), 1, "buffered bytes are readable");
    cr_assert_eq(wh_tlsio_pull(io, b, 4), 4);
    cr_assert_eq(memcmp(b, "cdef", 4), 0);
    errno = 0;
    cr_assert_eq(wh_tlsio_pull(io, b, 4), -1);
    cr_assert_eq(errno, EAGAIN);
    wh_tlsio_free(io);
}

Test(tlsio, end_of_stream_passes_through)
{
    struct wh_tlsio *io;
    cr_assert_eq(wh_tlsio_new(sv[0], &io), 0);
    cr_assert_eq(write(sv[1], "xy", 2), 2);
    shutdown(sv[1], SHUT_WR);
    char b[4];
    cr_assert_eq(wh_tlsio_pull(io, b, 1), 1);
    cr_assert_eq(wh_tlsio_pull(io, b, 4), 1, "buffered bytes before the end");
    cr_assert_eq(wh_tlsio_pull(io, b, 4), 0);
    wh_tlsio_free(io);
}

Test(tlsio, a_read_larger_than_the_buffer_goes_straight_to_the_socket)
{
    struct wh_tlsio *io;
    cr_assert_eq(wh_tlsio_new(sv[0], &io), 0);
    cr_assert_eq(write(sv[1], "0123456789", 10), 10);
    char *big = malloc(WH_TLSIO_READAHEAD);
    cr_assert_eq(wh_tlsio_pull(io, big, WH_TLSIO_READAHEAD), 10);
    cr_assert_eq(memcmp(big, "0123456789", 10), 0);
    cr_assert_eq(wh_tlsio_buffered(io), 0);
    free(big);
    wh_tlsio_free(io);
}

/* ---------- a real TLS session on top ---------- */

static gnutls_certificate_credentials_t server_creds(void)
{
    gnutls_certificate_credentials_t c;
    gnutls_x509_privkey_t k;
    gnutls_x509_crt_t crt;
    cr_assert_eq(gnutls_certificate_allocate_credentials(&c), 0);
    cr_assert_eq(gnutls_x509_privkey_init(&k), 0);
    cr_assert_eq(gnutls_x509_privkey_generate(k, GNUTLS_PK_ECDSA,
                                              GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
                 0);
    cr_assert_eq(gnutls_x509_crt_init(&crt), 0);
    cr_assert_eq(gnutls_x509_crt_set_version(crt, 3), 0);
    cr_assert_eq(gnutls_x509_crt_set_serial(crt, "\x01", 1), 0);
    cr_assert_eq(gnutls_x509_crt_set_activation_time(crt, time(NULL) - 60), 0);
    cr_assert_eq(gnutls_x509_crt_set_expiration_time(crt, time(NULL) + 3600), 0);
    cr_assert_eq(gnutls_x509_crt_set_dn(crt, "CN=tlsio", NULL), 0);
    cr_assert_eq(gnutls_x509_crt_set_key(crt, k), 0);
    cr_assert_eq(gnutls_x509_crt_sign2(crt, crt, k, GNUTLS_DIG_SHA256, 0), 0);
    cr_assert_eq(gnutls_certificate_set_x509_key(c, &crt, 1, k), 0);
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(k);
    return c;
}

static gnutls_session_t session(unsigned flags, gnutls_certificate_credentials_t creds, int fd)
{
    gnutls_session_t s;
    cr_assert_eq(gnutls_init(&s, flags | GNUTLS_NONBLOCK), 0);
    cr_assert_eq(gnutls_set_default_priority(s), 0);
    cr_assert_eq(gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, creds), 0);
    gnutls_transport_set_int(s, fd);
    return s;
}

/* Drive both handshakes on one thread until both are done. */
static void handshake(gnutls_session_t a, gnutls_session_t b)
{
    int ra = GNUTLS_E_AGAIN, rb = GNUTLS_E_AGAIN;
    for (int i = 0; i < 1000 && (ra != 0 || rb != 0); i++) {
        if (ra != 0)
            ra = gnutls_handshake(a);
        if (rb != 0)
            rb = gnutls_handshake(b);
        cr_assert(ra == 0 || ra == GNUTLS_E_AGAIN, "server handshake: %s", gnutls_strerror(ra));
        cr_assert(rb == 0 || rb == GNUTLS_E_AGAIN, "client handshake: %s", gnutls_strerror(rb));
    }
    cr_assert_eq(ra, 0);
    cr_assert_eq(rb, 0);
}

/* Several records sent at once are all delivered: the server reads them
 * through the buffer, record by record, and only then sees EAGAIN. */
Test(tlsio, tls_records_arriving_together_are_all_delivered)
{
    cr_assert_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
    gnutls_certificate_credentials_t creds = server_creds(), none;
    cr_assert_eq(gnutls_certificate_allocate_credentials(&none), 0);
    gnutls_session_t srv = session(GNUTLS_SERVER, creds, sv[0]);
    gnutls_session_t cli = session(GNUTLS_CLIENT, none, sv[1]);
    struct wh_tlsio *io;
    cr_assert_eq(wh_tlsio_attach(srv, sv[0], &io), 0);
    handshake(srv, cli);

    enum { N = 40000 };
    char *msg = malloc(N), *got = malloc(N);
    for (int i = 0; i < N; i++)
        msg[i] = (char)('a' + i % 26);
    for (int off = 0; off < N; off += 10000) /* four records in the socket at once */
        cr_assert_eq(gnutls_record_send(cli, msg + off, 10000), 10000);
    size_t n = 0;
    int recvs = 0;
    while (n < N) {
        ssize_t r = gnutls_record_recv(srv, got + n, N - n);
        cr_assert_gt(r, 0, "record %d: %s", recvs, gnutls_strerror((int)r));
        n += (size_t)r;
        recvs++;
    }
    char b[2];
    cr_assert_eq(gnutls_record_recv(srv, b, sizeof(b)), GNUTLS_E_AGAIN, "then, and only then");
    cr_assert_eq(memcmp(got, msg, N), 0);
    cr_assert_geq(recvs, 4);
    cr_assert_eq(wh_tlsio_buffered(io), 0);

    /* the reply goes out on the descriptor as before */
    cr_assert_eq(gnutls_record_send(srv, "ok", 2), 2);
    cr_assert_eq(gnutls_record_recv(cli, b, 2), 2);
    cr_assert_eq(memcmp(b, "ok", 2), 0);

    free(msg);
    free(got);
    gnutls_deinit(srv);
    gnutls_deinit(cli);
    wh_tlsio_free(io); /* after the session, as libmicrohttpd does */
    gnutls_certificate_free_credentials(creds);
    gnutls_certificate_free_credentials(none);
}

/* ---------- sends: a held push leaves with the next one ---------- */

static ssize_t push(struct wh_tlsio *io, const char *s)
{
    giovec_t v = {(void *)s, strlen(s)};
    return wh_tlsio_vec_push(io, &v, 1);
}

static ssize_t peer_read(char *b, size_t cap)
{
    ssize_t n = recv(sv[1], b, cap, MSG_DONTWAIT);
    if (n >= 0)
        b[n] = 0;
    return n;
}

Test(tlsio, a_held_push_leaves_with_the_next_in_one_send)
{
    struct wh_tlsio *io;
    char b[64];
    cr_assert_eq(wh_tlsio_new(sv[0], &io), 0);
    wh_tlsio_hold_next(io);
    cr_assert_eq(push(io, "head|"), 5, "counted as sent");
    cr_assert_eq(wh_tlsio_held(io), 5);
    cr_assert_eq(peer_read(b, sizeof(b)), -1, "nothing on the wire yet");
    cr_assert_eq(push(io, "body"), 4);
    cr_assert_eq(wh_tlsio_held(io), 0);
    cr_assert_eq(peer_read(b, sizeof(b)), 9, "both in one send: one read gets them");
    cr_assert_str_eq(b, "head|body");
    cr_assert_eq(push(io, "next"), 4, "unarmed: straight out");
    cr_assert_eq(peer_read(b, sizeof(b)), 4);
    wh_tlsio_free(io);
}

Test(tlsio, only_the_next_push_is_held_and_only_if_small)
{
    struct wh_tlsio *io;
    cr_assert_eq(wh_tlsio_new(sv[0], &io), 0);
    static char big[WH_TLSIO_HOLD_MAX + 2];
    memset(big, 'x', sizeof(big) - 1);
    wh_tlsio_hold_next(io);
    cr_assert_eq(push(io, big), (ssize_t)sizeof(big) - 1, "too big to hold: sent");
    cr_assert_eq(wh_tlsio_held(io), 0);
    cr_assert_eq(push(io, "a"), 1, "the hold was used up by that push");
    cr_assert_eq(wh_tlsio_held(io), 0);
    char b[sizeof(big) + 8];
    cr_assert_eq(peer_read(b, sizeof(b)), (ssize_t)sizeof(big));
    wh_tlsio_free(io);
}

Test(tlsio, flush_sends_held_bytes_and_disarms)
{
    struct wh_tlsio *io;
    char b[16];
    cr_assert_eq(wh_tlsio_new(sv[0], &io), 0);
    cr_assert_eq(wh_tlsio_flush(io), 0, "nothing held");
    wh_tlsio_hold_next(io);
    cr_assert_eq(push(io, "hdr"), 3);
    cr_assert_eq(wh_tlsio_flush(io), 0);
    cr_assert_eq(peer_read(b, sizeof(b)), 3);
    cr_assert_str_eq(b, "hdr");
    wh_tlsio_hold_next(io);
    cr_assert_eq(wh_tlsio_flush(io), 0);
    cr_assert_eq(push(io, "x"), 1, "a flush disarms an unused hold");
    cr_assert_eq(peer_read(b, sizeof(b)), 1);
    cr_assert_eq(wh_tlsio_flush(NULL), 0);
    wh_tlsio_free(io);
}

/* A full socket: held bytes stay held (in order, before anything newer)
 * and the push reports EAGAIN, as a full socket does. */
Test(tlsio, held_bytes_wait_in_order_when_the_socket_is_full)
{
    struct wh_tlsio *io;
    cr_assert_eq(wh_tlsio_new(sv[0], &io), 0);
    static char fill[4096];
    memset(fill, 'f', sizeof(fill));
    size_t queued = 0;
    while (send(sv[0], fill, sizeof(fill), MSG_DONTWAIT) > 0)
        queued += sizeof(fill);
    wh_tlsio_hold_next(io);
    cr_assert_eq(push(io, "HEAD"), 4);
    errno = 0;
    cr_assert_eq(push(io, "BODY"), -1);
    cr_assert_eq(errno, EAGAIN);
    cr_assert_eq(wh_tlsio_held(io), 4, "still held");
    cr_assert_eq(wh_tlsio_flush(io), -K8S_EIO, "still full");
    static char sink[1 << 16];
    size_t drained = 0;
    while (drained < queued) {
        ssize_t n =
            recv(sv[1], sink, sizeof(sink) < queued - drained ? sizeof(sink) : queued - drained, 0);
        cr_assert_gt(n, 0);
        drained += (size_t)n;
    }
    cr_assert_eq(push(io, "BODY"), 4, "retried, as GnuTLS does");
    char b[16];
    size_t got = 0;
    while (got < 8) {
        ssize_t n = recv(sv[1], b + got, 8 - got, 0);
        cr_assert_gt(n, 0);
        got += (size_t)n;
    }
    cr_assert_eq(memcmp(b, "HEADBODY", 8), 0);
    wh_tlsio_free(io);
}
