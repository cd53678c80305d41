#include "op_h2.h"

#include <nghttp2/nghttp2.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PREFACE        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define FRAME_HEADER   9
#define MAX_FRAME      16384 /* ours: SETTINGS_MAX_FRAME_SIZE left at its default */
#define DEFAULT_WINDOW 65535
#define MAX_WINDOW     0x7fffffff
#define STREAM         1u
#define HPACK_INT_MAX  5          /* bytes of a length in HPACK's integer coding */
#define BLOCK_MAX      (64 << 10) /* a response's header block */
#define IN_MAX         (1 << 24)  /* an incomplete frame and the read that followed it */
#define OUT_MAX        (1 << 24)

enum frame_type {
    T_DATA,
    T_HEADERS,
    T_PRIORITY,
    T_RST_STREAM,
    T_SETTINGS,
    T_PUSH_PROMISE,
    T_PING,
    T_GOAWAY,
    T_WINDOW_UPDATE,
    T_CONTINUATION,
};

enum frame_flag {
    F_END_STREAM = 0x1,
    F_ACK = 0x1,
    F_END_HEADERS = 0x4,
    F_PADDED = 0x8,
    F_PRIO = 0x20
};

enum setting_id {
    S_HEADER_TABLE_SIZE = 1,
    S_ENABLE_PUSH = 2,
    S_INITIAL_WINDOW_SIZE = 4,
    S_MAX_FRAME_SIZE = 5,
};

static const char *const error_names[] = {
    [OP_H2_NO_ERROR] = "NO_ERROR",
    [OP_H2_PROTOCOL_ERROR] = "PROTOCOL_ERROR",
    [OP_H2_INTERNAL_ERROR] = "INTERNAL_ERROR",
    [OP_H2_FLOW_CONTROL_ERROR] = "FLOW_CONTROL_ERROR",
    [OP_H2_SETTINGS_TIMEOUT] = "SETTINGS_TIMEOUT",
    [OP_H2_STREAM_CLOSED] = "STREAM_CLOSED",
    [OP_H2_FRAME_SIZE_ERROR] = "FRAME_SIZE_ERROR",
    [OP_H2_REFUSED_STREAM] = "REFUSED_STREAM",
    [OP_H2_CANCEL] = "CANCEL",
    [OP_H2_COMPRESSION_ERROR] = "COMPRESSION_ERROR",
    [OP_H2_CONNECT_ERROR] = "CONNECT_ERROR",
    [OP_H2_ENHANCE_YOUR_CALM] = "ENHANCE_YOUR_CALM",
    [OP_H2_INADEQUATE_SECURITY] = "INADEQUATE_SECURITY",
    [OP_H2_HTTP_1_1_REQUIRED] = "HTTP_1_1_REQUIRED",
};

const char *op_h2_error_name(uint32_t code)
{
    return code < sizeof(error_names) / sizeof(error_names[0]) ? error_names[code] : "UNKNOWN";
}

/* ---------- bytes ---------- */

static uint32_t get24(const uint8_t *p)
{
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void frame_header(uint8_t *h, size_t len, uint8_t type, uint8_t flags, uint32_t sid)
{
    h[0] = (uint8_t)(len >> 16);
    h[1] = (uint8_t)(len >> 8);
    h[2] = (uint8_t)len;
    h[3] = type;
    h[4] = flags;
    put32(h + 5, sid & MAX_WINDOW);
}

K8S_PRINTF(2, 3) static bool fail(struct op_h2 *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof(c->why), fmt, ap);
    va_end(ap);
    c->state = OP_H2_FAILED;
    return false;
}

static bool put_frame(struct op_h2 *c, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
                      size_t n)
{
    uint8_t h[FRAME_HEADER];
    frame_header(h, n, type, flags, sid);
    if (k8s_buf_append(&c->out, h, sizeof(h)) < 0 || (n && k8s_buf_append(&c->out, p, n) < 0))
        return fail(c, "out of memory");
    return true;
}

/* ---------- what we send ---------- */

/* RFC 7541 §5.1: v with an n-bit prefix under the first byte's bits `high`. */
static void hpack_int(uint8_t **w, unsigned n, uint8_t high, size_t v)
{
    size_t max = (1u << n) - 1;
    if (v < max) {
        *(*w)++ = (uint8_t)(high | v);
        return;
    }
    *(*w)++ = (uint8_t)(high | max);
    for (v -= max; v >= 128; v >>= 7)
        *(*w)++ = (uint8_t)(v % 128 + 128);
    *(*w)++ = (uint8_t)v;
}

/* RFC 7541 §5.2: a string literal, not Huffman-coded. */
static void hpack_str(uint8_t **w, const char *s)
{
    size_t n = strlen(s);
    hpack_int(w, 7, 0, n);
    memcpy(*w, s, n);
    *w += n;
}

/* One HEADERS frame, every field a "literal without indexing, new name"
 * (RFC 7541 §6.2.2): no HPACK table on either side is touched. */
static int put_headers(struct op_h2 *c, const struct op_h2_field *f, size_t n)
{
    size_t bound = 0;
    for (size_t i = 0; i < n; i++)
        bound += 1 + 2 * HPACK_INT_MAX + strlen(f[i].name) + strlen(f[i].value);
    if (bound > MAX_FRAME)
        return -K8S_EINVAL;
    char *tail;
    if (k8s_buf_reserve(&c->out, FRAME_HEADER + bound, &tail) < 0)
        return -K8S_ENOMEM;
    uint8_t *start = (uint8_t *)tail, *w = start + FRAME_HEADER;
    for (size_t i = 0; i < n; i++) {
        *w++ = 0x00;
        hpack_str(&w, f[i].name);
        hpack_str(&w, f[i].value);
    }
    size_t len = (size_t)(w - start) - FRAME_HEADER;
    frame_header(start, len, T_HEADERS, F_END_HEADERS, STREAM);
    k8s_buf_commit(&c->out, FRAME_HEADER + len);
    return 0;
}

/* No dynamic table for the server's encoder, no push, and a stream window
 * as large as a reply may be. */
static bool put_settings(struct op_h2 *c, uint32_t window)
{
    const struct {
        uint16_t id;
        uint32_t value;
    } s[] = {{S_HEADER_TABLE_SIZE, 0}, {S_ENABLE_PUSH, 0}, {S_INITIAL_WINDOW_SIZE, window}};
    uint8_t p[sizeof(s) / sizeof(s[0]) * 6];
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        p[6 * i] = (uint8_t)(s[i].id >> 8);
        p[6 * i + 1] = (uint8_t)s[i].id;
        put32(p + 6 * i + 2, s[i].value);
    }
    return put_frame(c, T_SETTINGS, 0, 0, p, sizeof(p));
}

/* As much of the body as the windows allow; END_STREAM with the last. */
static void flush_body(struct op_h2 *c)
{
    while (c->state == OP_H2_OPEN && c->body_set && !c->body_ended) {
        size_t left = c->body_len - c->body_off;
        int64_t room = c->window < c->conn_window ? c->window : c->conn_window;
        room = room < 0 ? 0 : room > c->max_frame ? c->max_frame : room;
        if (left && !room)
            return; /* until a WINDOW_UPDATE */
        size_t take = left < (size_t)room ? left : (size_t)room;
        bool last = take == left;
        if (!put_frame(c, T_DATA, last ? F_END_STREAM : 0, STREAM, c->body + c->body_off, take))
            return;
        c->body_off += take;
        c->window -= (int64_t)take;
        c->conn_window -= (int64_t)take;
        c->body_ended = last;
    }
}

int op_h2_start(struct op_h2 *c, const struct op_h2_field *fields, size_t n, size_t max_reply,
                const struct op_h2_callbacks *cb, void *ud)
{
    *c = (struct op_h2){.cb = cb,
                        .ud = ud,
                        .window = DEFAULT_WINDOW,
                        .conn_window = DEFAULT_WINDOW,
                        .peer_initial = DEFAULT_WINDOW,
                        .max_frame = MAX_FRAME};
    k8s_buf_init(&c->out, OUT_MAX);
    k8s_buf_init(&c->in, IN_MAX);
    k8s_buf_init(&c->block, BLOCK_MAX);
    uint32_t window =
        max_reply > MAX_WINDOW - MAX_FRAME ? MAX_WINDOW : (uint32_t)max_reply + MAX_FRAME;
    uint8_t inc[4];
    put32(inc, window > DEFAULT_WINDOW ? window - DEFAULT_WINDOW : 0);
    if (k8s_buf_append(&c->out, PREFACE, sizeof(PREFACE) - 1) < 0 || !put_settings(c, window) ||
        (window > DEFAULT_WINDOW && !put_frame(c, T_WINDOW_UPDATE, 0, 0, inc, sizeof(inc)))) {
        op_h2_done(c);
        return -K8S_ENOMEM;
    }
    int r = put_headers(c, fields, n);
    if (r < 0)
        op_h2_done(c);
    return r;
}

void op_h2_send_body(struct op_h2 *c, const void *body, size_t len)
{
    if (c->body_set)
        return;
    c->body = body;
    c->body_len = len;
    c->body_set = true;
    flush_body(c);
}

bool op_h2_body_sent(const struct op_h2 *c)
{
    return c->body_ended;
}

void op_h2_cancel(struct op_h2 *c)
{
    uint8_t code[4];
    put32(code, OP_H2_CANCEL);
    if (c->state == OP_H2_OPEN)
        put_frame(c, T_RST_STREAM, 0, STREAM, code, sizeof(code));
}

const void *op_h2_out(const struct op_h2 *c, size_t *ret_len)
{
    *ret_len = c->out.len;
    return c->out.len ? c->out.data : NULL;
}

void op_h2_consumed(struct op_h2 *c, size_t n)
{
    k8s_buf_consume(&c->out, n);
}

void op_h2_done(struct op_h2 *c)
{
    if (!c)
        return;
    k8s_buf_done(&c->out);
    k8s_buf_done(&c->in);
    k8s_buf_done(&c->block);
    if (c->hd)
        nghttp2_hd_inflate_del(c->hd);
    c->hd = NULL;
}

/* ---------- header blocks ---------- */

/* RFC 9113 §8.3.2: three digits. */
static int status_of(const uint8_t *v, size_t n)
{
    int s = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return 0;
        s = s * 10 + (v[i] - '0');
    }
    return n == 3 ? s : 0;
}

static void field(struct op_h2 *c, const nghttp2_nv *nv, bool trailer)
{
    if (nv->namelen && nv->name[0] == ':') { /* of the pseudo-fields, :status matters */
        if (!trailer && nv->namelen == 7 && !memcmp(nv->name, ":status", 7))
            c->status = status_of(nv->value, nv->valuelen);
        return;
    }
    c->cb->field(c->ud, (const char *)nv->name, nv->namelen, (const char *)nv->value, nv->valuelen,
                 trailer);
}

static bool decode(struct op_h2 *c, const uint8_t *p, size_t n)
{
    bool trailer = c->got_headers;
    if (!c->hd && nghttp2_hd_inflate_new(&c->hd) != 0)
        return fail(c, "out of memory");
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        ssize_t r = nghttp2_hd_inflate_hd2(c->hd, &nv, &flags, p, n, 1);
        if (r < 0)
            return fail(c, "cannot decode a header block: %s", nghttp2_strerror((int)r));
        p += r;
        n -= (size_t)r;
        if (flags & NGHTTP2_HD_INFLATE_EMIT)
            field(c, &nv, trailer);
        if (flags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(c->hd);
            return true;
        }
        if (!r && !(flags & NGHTTP2_HD_INFLATE_EMIT))
            return fail(c, "a truncated header block");
    }
}

/* A whole header block: the response's fields, or (after them) its
 * trailers. An informational (1xx) response is passed over. */
static void end_block(struct op_h2 *c, const uint8_t *p, size_t n)
{
    c->in_block = false;
    bool ok = decode(c, p, n);
    k8s_buf_done(&c->block);
    if (!ok || c->got_headers) {
        if (ok && c->block_ends_stream)
            c->state = OP_H2_DONE;
        return;
    }
    if (c->status >= 100 && c->status < 200 && !c->block_ends_stream) {
        c->status = 0; /* the response follows */
        return;
    }
    if (!c->status) {
        fail(c, "a response without a valid :status");
        return;
    }
    c->got_headers = true;
    if (c->block_ends_stream)
        c->state = OP_H2_DONE;
}

static void fragment(struct op_h2 *c, uint8_t flags, const uint8_t *p, size_t n)
{
    if ((flags & F_END_HEADERS) && !c->block.len) { /* whole in one frame: no copy */
        end_block(c, p, n);
        return;
    }
    int r = k8s_buf_append(&c->block, p, n);
    if (r == -K8S_ETOOBIG) {
        fail(c, "a header block larger than %d bytes", BLOCK_MAX);
        return;
    }
    if (r < 0) {
        fail(c, "out of memory");
        return;
    }
    if (flags & F_END_HEADERS)
        end_block(c, (const uint8_t *)c->block.data, c->block.len);
}

/* ---------- frames ---------- */

static bool strip_padding(struct op_h2 *c, uint8_t flags, const uint8_t **p, size_t *n)
{
    if (!(flags & F_PADDED))
        return true;
    if (!*n || (*p)[0] >= *n)
        return fail(c, "padding longer than its frame");
    *n -= 1 + (*p)[0];
    (*p)++;
    return true;
}

static void on_data(struct op_h2 *c, uint8_t flags, uint32_t sid, const uint8_t *p, size_t n)
{
    if (sid != STREAM) {
        fail(c, "DATA on stream %u", sid);
        return;
    }
    if (!c->got_headers) {
        fail(c, "DATA before the response's HEADERS");
        return;
    }
    if (!strip_padding(c, flags, &p, &n))
        return;
    if (n && !c->cb->data(c->ud, p, n)) {
        fail(c, "the reply's data was refused");
        return;
    }
    if (flags & F_END_STREAM)
        c->state = OP_H2_DONE;
}

static void on_headers(struct op_h2 *c, uint8_t flags, uint32_t sid, const uint8_t *p, size_t n)
{
    if (sid != STREAM) {
        fail(c, "HEADERS on stream %u", sid);
        return;
    }
    if (!strip_padding(c, flags, &p, &n))
        return;
    if (flags & F_PRIO) {
        if (n < 5) {
            fail(c, "HEADERS too short for its priority");
            return;
        }
        p += 5;
        n -= 5;
    }
    c->in_block = true;
    c->block_ends_stream = flags & F_END_STREAM;
    fragment(c, flags, p, n);
}

static void on_continuation(struct op_h2 *c, uint8_t flags, uint32_t sid, const uint8_t *p,
                            size_t n)
{
    if (!c->in_block || sid != STREAM) {
        fail(c, "CONTINUATION outside a header block");
        return;
    }
    fragment(c, flags, p, n);
}

static void on_rst_stream(struct op_h2 *c, uint32_t sid, const uint8_t *p, size_t n)
{
    if (!sid || n != 4) {
        fail(c, "a malformed RST_STREAM");
        return;
    }
    if (sid != STREAM)
        return;
    c->reset_code = get32(p);
    c->state = OP_H2_RESET;
}

static bool setting(struct op_h2 *c, uint16_t id, uint32_t v)
{
    if (id == S_INITIAL_WINDOW_SIZE) {
        if (v > MAX_WINDOW)
            return fail(c, "SETTINGS_INITIAL_WINDOW_SIZE of %u", v);
        c->window += (int64_t)v - c->peer_initial;
        c->peer_initial = v;
    } else if (id == S_MAX_FRAME_SIZE) {
        if (v < MAX_FRAME || v > 0xffffff)
            return fail(c, "SETTINGS_MAX_FRAME_SIZE of %u", v);
        c->max_frame = v;
    } else if (id == S_ENABLE_PUSH && v > 1) {
        return fail(c, "SETTINGS_ENABLE_PUSH of %u", v);
    }
    return true; /* the others do not concern one small request */
}

static void on_settings(struct op_h2 *c, uint8_t flags, uint32_t sid, const uint8_t *p, size_t n)
{
    if (sid) {
        fail(c, "SETTINGS on stream %u", sid);
        return;
    }
    if (flags & F_ACK) {
        if (n)
            fail(c, "a SETTINGS ACK with a payload");
        return;
    }
    if (n % 6) {
        fail(c, "SETTINGS of %zu bytes", n);
        return;
    }
    for (size_t i = 0; i < n; i += 6)
        if (!setting(c, (uint16_t)(p[i] << 8 | p[i + 1]), get32(p + i + 2)))
            return;
    if (put_frame(c, T_SETTINGS, F_ACK, 0, NULL, 0))
        flush_body(c);
}

static void on_ping(struct op_h2 *c, uint8_t flags, uint32_t sid, const uint8_t *p, size_t n)
{
    if (sid || n != 8)
        fail(c, "a malformed PING");
    else if (!(flags & F_ACK))
        put_frame(c, T_PING, F_ACK, 0, p, n);
}

static void on_goaway(struct op_h2 *c, uint32_t sid, const uint8_t *p, size_t n)
{
    if (sid || n < 8) {
        fail(c, "a malformed GOAWAY");
        return;
    }
    if ((get32(p) & MAX_WINDOW) < STREAM) { /* our stream was never taken */
        c->reset_code = get32(p + 4);
        c->state = OP_H2_REFUSED;
    }
}

static void on_window_update(struct op_h2 *c, uint32_t sid, const uint8_t *p, size_t n)
{
    uint32_t inc = n == 4 ? get32(p) & MAX_WINDOW : 0;
    if (!inc) {
        fail(c, "a malformed WINDOW_UPDATE");
        return;
    }
    int64_t *w = !sid ? &c->conn_window : sid == STREAM ? &c->window : NULL;
    if (w && *w + inc > MAX_WINDOW) {
        fail(c, "a window over 2^31-1");
        return;
    }
    if (w)
        *w += inc;
    flush_body(c);
}

static void frame(struct op_h2 *c, uint8_t type, uint8_t flags, uint32_t sid, const uint8_t *p,
                  size_t n)
{
    if (c->in_block && type != T_CONTINUATION) {
        fail(c, "a frame inside a header block");
        return;
    }
    switch (type) {
    case T_DATA:
        on_data(c, flags, sid, p, n);
        break;
    case T_HEADERS:
        on_headers(c, flags, sid, p, n);
        break;
    case T_RST_STREAM:
        on_rst_stream(c, sid, p, n);
        break;
    case T_SETTINGS:
        on_settings(c, flags, sid, p, n);
        break;
    case T_PUSH_PROMISE:
        fail(c, "PUSH_PROMISE, though push is disabled");
        break;
    case T_PING:
        on_ping(c, flags, sid, p, n);
        break;
    case T_GOAWAY:
        on_goaway(c, sid, p, n);
        break;
    case T_WINDOW_UPDATE:
        on_window_update(c, sid, p, n);
        break;
    case T_CONTINUATION:
        on_continuation(c, flags, sid, p, n);
        break;
    default:
        break; /* PRIORITY and unknown types are ignored (RFC 9113 §4.1, §5.3.2) */
    }
}

/* Act on the complete frames in p; the bytes used. */
static size_t frames(struct op_h2 *c, const uint8_t *p, size_t n)
{
    size_t at = 0;
    while (c->state == OP_H2_OPEN && n - at >= FRAME_HEADER) {
        uint32_t len = get24(p + at);
        if (len > MAX_FRAME) {
            fail(c, "a frame of %u bytes, over SETTINGS_MAX_FRAME_SIZE", len);
            break;
        }
        if (n - at < FRAME_HEADER + len)
            break;
        frame(c, p[at + 3], p[at + 4], get32(p + at + 5) & MAX_WINDOW, p + at + FRAME_HEADER, len);
        at += FRAME_HEADER + len;
    }
    return at;
}

void op_h2_recv(struct op_h2 *c, const void *data, size_t len)
{
    const uint8_t *p = data;
    size_t n = len;
    if (c->state != OP_H2_OPEN)
        return;
    if (c->in.len) { /* the start of a frame came before */
        if (k8s_buf_append(&c->in, data, len) < 0) {
            fail(c, "out of memory");
            return;
        }
        p = (const uint8_t *)c->in.data;
        n = c->in.len;
    }
    size_t used = frames(c, p, n);
    if (c->state != OP_H2_OPEN)
        k8s_buf_done(&c->in);
    else if (p != data)
        k8s_buf_consume(&c->in, used);
    else if (used < n && k8s_buf_append(&c->in, p + used, n - used) < 0)
        fail(c, "out of memory");
}
