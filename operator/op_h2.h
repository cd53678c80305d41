/*
 * op_h2 — the client side of one cleartext HTTP/2 connection (prior
 * knowledge, RFC 9113 §3.3) that carries one request: a byte-level state
 * machine. The caller owns the socket: it feeds what it reads to
 * op_h2_recv and writes what op_h2_out holds.
 *
 * Why not libcurl (the API client's) or an nghttp2 session: a capture holds
 * one connection per host open for its whole duration, and 1,536 of them
 * must fit in the operator's 32 MiB with 10,000 pods cached (DESIGN §6).
 * Measured with 1,536 connections (tests/bench/README.md): libcurl 7.88
 * keeps ~40 KiB resident per connection (a 32 KiB HTTP/2 input buffer, a
 * 16 KiB upload buffer, the easy handle, an nghttp2 session), an nghttp2
 * session alone ~14 KiB (its 16 KiB frame buffer, HPACK tables). This
 * state is ~200 bytes; its buffers hold only bytes in flight (a frame cut
 * by a read, a header block in pieces, output the socket did not take) and
 * are freed as soon as they are empty. Header blocks are decoded by
 * nghttp2's HPACK inflater, made when a block arrives and freed with the
 * connection; our SETTINGS ask the server for no dynamic table, and the
 * request's fields are literals without indexing, so no HPACK state lasts.
 *
 * Scope: stream 1 only. Our receive windows are opened at once to what a
 * reply may carry (max_reply), so we never send WINDOW_UPDATE; the server's
 * SETTINGS are acknowledged, PINGs answered, its windows and frame size
 * honoured for the body; GOAWAY, RST_STREAM, CONTINUATION, padding,
 * priority and informational (1xx) responses handled; push disabled.
 *
 * Thread-safety: none; a connection belongs to one thread.
 * Ownership: the header values are copied into the output at op_h2_start;
 * the body passed to op_h2_send_body is borrowed until the connection is
 * done.
 * Failure: a broken protocol, or a data callback saying no, ends in
 * OP_H2_FAILED with `why`; out of memory too ("out of memory").
 */
#ifndef OP_H2_H
#define OP_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_buf.h"
#include "k8s_err.h"

/* RFC 9113 §7 error codes. */
enum op_h2_error {
    OP_H2_NO_ERROR,
    OP_H2_PROTOCOL_ERROR,
    OP_H2_INTERNAL_ERROR,
    OP_H2_FLOW_CONTROL_ERROR,
    OP_H2_SETTINGS_TIMEOUT,
    OP_H2_STREAM_CLOSED,
    OP_H2_FRAME_SIZE_ERROR,
    OP_H2_REFUSED_STREAM,
    OP_H2_CANCEL,
    OP_H2_COMPRESSION_ERROR,
    OP_H2_CONNECT_ERROR,
    OP_H2_ENHANCE_YOUR_CALM,
    OP_H2_INADEQUATE_SECURITY,
    OP_H2_HTTP_1_1_REQUIRED,
};

enum op_h2_state {
    OP_H2_OPEN,    /* the response is not complete */
    OP_H2_DONE,    /* the server ended the stream: status, fields and data are in */
    OP_H2_RESET,   /* the server reset the stream (reset_code) */
    OP_H2_REFUSED, /* GOAWAY before the server took the stream: never processed */
    OP_H2_FAILED,  /* the protocol broke, or a callback refused data (why) */
};

struct op_h2_field {
    const char *name; /* lower case */
    const char *value;
};

struct op_h2_callbacks {
    /* A response field (trailer: after the data), not NUL-terminated.
     * Pseudo-fields are not passed; :status is in op_h2.status. */
    void (*field)(void *ud, const char *name, size_t nlen, const char *value, size_t vlen,
                  bool trailer);
    /* DATA payload; false ends the connection in OP_H2_FAILED. */
    bool (*data)(void *ud, const uint8_t *p, size_t n);
};

struct nghttp2_hd_inflater;

struct op_h2 {
    enum op_h2_state state;
    int status;          /* :status of the response; 0 until its header block */
    uint32_t reset_code; /* OP_H2_RESET, and OP_H2_REFUSED: the server's code */
    char why[120];       /* OP_H2_FAILED */
    /* private */
    const struct op_h2_callbacks *cb;
    void *ud;
    struct k8s_buf out, in, block; /* to send; an incomplete frame; a header block */
    struct nghttp2_hd_inflater *hd;
    const uint8_t *body;
    size_t body_len, body_off;
    int64_t window, conn_window; /* what the server lets us send */
    uint32_t peer_initial, max_frame;
    bool body_set, body_ended, in_block, block_ends_stream, got_headers;
};

/* Begin: the connection preface, our SETTINGS and window, and a HEADERS
 * frame of the fields (pseudo-fields first, as RFC 9113 §8.3 requires)
 * into the output; the request's body follows by op_h2_send_body.
 * -K8S_ENOMEM, -K8S_EINVAL (the fields do not fit one frame). */
int op_h2_start(struct op_h2 *c, const struct op_h2_field *fields, size_t n, size_t max_reply,
                const struct op_h2_callbacks *cb, void *ud) K8S_MUST_CHECK;

/* Send the body (borrowed) and end the stream, as far as the server's
 * windows allow now; the rest follows as it opens them. */
void op_h2_send_body(struct op_h2 *c, const void *body, size_t len);

/* Has every byte of the body been queued (op_h2_out)? */
bool op_h2_body_sent(const struct op_h2 *c);

/* Bytes read from the socket. Frames are acted on as they complete; the
 * state says where the response is. */
void op_h2_recv(struct op_h2 *c, const void *data, size_t len);

/* What to write to the socket (NULL when nothing), and how much of it the
 * socket took. */
const void *op_h2_out(const struct op_h2 *c, size_t *ret_len);
void op_h2_consumed(struct op_h2 *c, size_t n);

/* Reset the stream (CANCEL) if it is still open: the server stops the
 * call. Queued into the output. */
void op_h2_cancel(struct op_h2 *c);

/* Free what the connection holds; it can be started again. NULL-safe. */
void op_h2_done(struct op_h2 *c);

/* "CANCEL", "REFUSED_STREAM", ...; "0x.." is not written: unknown codes
 * give "UNKNOWN". */
const char *op_h2_error_name(uint32_t code);

#endif
