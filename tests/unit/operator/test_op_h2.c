/* op_h2 against an independent HTTP/2 implementation: an nghttp2 server
 * session in memory reads what the client writes and answers as a gRPC
 * server would (headers, message, trailers; trailers-only; resets; GOAWAY;
 * PING; small windows; padding; CONTINUATION; 1xx), its bytes fed to the
 * client whole or one byte at a time. */
#include <criterion/criterion.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_h2.h"

enum answer {
    A_FULL,          /* headers, a message, trailers */
    A_TRAILERS_ONLY, /* one HEADERS with END_STREAM */
    A_RESET,         /* RST_STREAM REFUSED_STREAM */
    A_INFORMATIONAL, /* 100, then the full answer */
    A_NONE,          /* nothing: the test drives the server */
};

struct server {
    nghttp2_session *s;
    enum answer answer;
    const char *message; /* grpc-message of the answers */
    char fields[16][2][64];
    size_t n_fields;
    uint8_t body[70000];
    size_t body_len, sent;
    uint8_t reply[8];
    bool ended, ping_acked;
    uint32_t closed_with; /* stream close error code + 1; 0: open */
};

struct client {
    struct op_h2 h2;
    char fields[16][2][64];
    bool trailer[16];
    size_t n_fields;
    char *long_value; /* a field longer than 64 bytes */
    uint8_t data[64];
    size_t data_len;
    bool refuse;
};

/* ---------- the server ---------- */

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE                 \
    }

static ssize_t reply_read(nghttp2_session *s, int32_t sid, uint8_t *buf, size_t len,
                          uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    struct server *sv = ud;
    size_t take = sizeof(sv->reply) - sv->sent < len ? sizeof(sv->reply) - sv->sent : len;
    memcpy(buf, sv->reply + sv->sent, take);
    sv->sent += take;
    if (sv->sent == sizeof(sv->reply)) { /* the trailers follow the message */
        nghttp2_nv tail[] = {NV("grpc-status", "0"), NV("grpc-message", sv->message)};
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        cr_assert_eq(nghttp2_submit_trailer(s, sid, tail, 2), 0);
    }
    return (ssize_t)take;
}

static void answer(struct server *sv, int32_t sid)
{
    nghttp2_nv head[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
    nghttp2_nv only[] = {NV(":status", "200"), NV("content-type", "application/grpc"),
                         NV("grpc-status", "13"), NV("grpc-message", sv->message)};
    nghttp2_nv info[] = {NV(":status", "100")};
    nghttp2_data_provider dp = {.read_callback = reply_read};
    memcpy(sv->reply, "\0\0\0\0\3\x38\x01\x00", 8); /* gRPC frame of a 3-byte message */
    if (sv->answer == A_INFORMATIONAL)
        cr_assert_eq(nghttp2_submit_headers(sv->s, 0, sid, NULL, info, 1, NULL), 0);
    if (sv->answer == A_FULL || sv->answer == A_INFORMATIONAL) {
        cr_assert_eq(nghttp2_submit_response(sv->s, sid, head, 2, &dp), 0);
    } else if (sv->answer == A_TRAILERS_ONLY) {
        cr_assert_eq(nghttp2_submit_response(sv->s, sid, only, 4, NULL), 0);
    } else if (sv->answer == A_RESET) {
        cr_assert_eq(nghttp2_submit_rst_stream(sv->s, 0, sid, NGHTTP2_REFUSED_STREAM), 0);
    }
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *ud)
{
    struct server *sv = ud;
    cr_assert_lt(sv->n_fields, 16);
    snprintf(sv->fields[sv->n_fields][0], 64, "%.*s", (int)nlen, name);
    snprintf(sv->fields[sv->n_fields++][1], 64, "%.*s", (int)vlen, value);
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t sid, const uint8_t *data, size_t len,
                   void *ud)
{
    struct server *sv = ud;
    cr_assert_leq(sv->body_len + len, sizeof(sv->body));
    memcpy(sv->body + sv->body_len, data, len);
    sv->body_len += len;
    return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
    struct server *sv = ud;
    if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK))
        sv->ping_acked = true;
    if (f->hd.stream_id == 1 && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
        (f->hd.type == NGHTTP2_DATA || f->hd.type == NGHTTP2_HEADERS)) {
        sv->ended = true;
        answer(sv, 1);
    }
    return 0;
}

static int on_close(nghttp2_session *s, int32_t sid, uint32_t code, void *ud)
{
    ((struct server *)ud)->closed_with = code + 1;
    return 0;
}

static ssize_t padding(nghttp2_session *s, const nghttp2_frame *f, size_t max, void *ud)
{
    return (ssize_t)(f->hd.length + 7 < max ? f->hd.length + 7 : max);
}

static void server_new(struct server *sv, enum answer a, bool padded,
                       const nghttp2_settings_entry *iv, size_t niv)
{
    memset(sv, 0, sizeof(*sv));
    sv->answer = a;
    sv->message = "done";
    nghttp2_session_callbacks *cb;
    cr_assert_eq(nghttp2_session_callbacks_new(&cb), 0);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    if (padded)
        nghttp2_session_callbacks_set_select_padding_callback(cb, padding);
    cr_assert_eq(nghttp2_session_server_new(&sv->s, cb, sv), 0);
    nghttp2_session_callbacks_del(cb);
    cr_assert_eq(nghttp2_submit_settings(sv->s, 0, iv, niv), 0);
}

/* ---------- the client ---------- */

static void on_field(void *ud, const char *name, size_t nlen, const char *value, size_t vlen,
                     bool trailer)
{
    struct client *cl = ud;
    cr_assert_lt(cl->n_fields, 16);
    if (vlen >= 64) {
        free(cl->long_value);
        cl->long_value = strndup(value, vlen);
    }
    snprintf(cl->fields[cl->n_fields][0], 64, "%.*s", (int)nlen, name);
    snprintf(cl->fields[cl->n_fields][1], 64, "%.*s", (int)vlen, value);
    cl->trailer[cl->n_fields++] = trailer;
}

static bool on_reply(void *ud, const uint8_t *p, size_t n)
{
    struct client *cl = ud;
    if (cl->refuse || cl->data_len + n > sizeof(cl->data))
        return false;
    memcpy(cl->data + cl->data_len, p, n);
    cl->data_len += n;
    return true;
}

static const struct op_h2_callbacks callbacks = {on_field, on_reply};

static const struct op_h2_field request[] = {
    {":method", "POST"},
    {":scheme", "http"},
    {":authority", "127.10.0.1:9999"},
    {":path", "/tensorflow.ProfilerService/Profile"},
    {"content-type", "application/grpc"},
    {"te", "trailers"},
    {"grpc-timeout", "65000m"},
    {"user-agent", "mldiagnostics-operator/test"},
};

static void client_start(struct client *cl)
{
    memset(cl, 0, sizeof(*cl));
    cr_assert_eq(op_h2_start(&cl->h2, request, sizeof(request) / sizeof(request[0]), 4 << 20,
                             &callbacks, cl),
                 0);
}

/* Move bytes both ways until neither side has anything to say. */
static void pump(struct client *cl, struct server *sv, bool bytewise)
{
    for (int round = 0; round < 1000; round++) {
        size_t n;
        const void *out = op_h2_out(&cl->h2, &n);
        bool moved = out != NULL;
        if (out) {
            cr_assert_eq(nghttp2_session_mem_recv(sv->s, out, n), (ssize_t)n);
            op_h2_consumed(&cl->h2, n);
        }
        const uint8_t *data;
        ssize_t got;
        while ((got = nghttp2_session_mem_send(sv->s, &data)) > 0) {
            moved = true;
            for (ssize_t i = 0; bytewise && i < got; i++)
                op_h2_recv(&cl->h2, data + i, 1);
            if (!bytewise)
                op_h2_recv(&cl->h2, data, (size_t)got);
        }
        cr_assert_geq(got, 0);
        if (!moved)
            return;
    }
    cr_assert_fail("the exchange never settled");
}

static const char *field_of(const struct client *cl, const char *name, bool trailer)
{
    for (size_t i = 0; i < cl->n_fields; i++)
        if (!strcmp(cl->fields[i][0], name) && cl->trailer[i] == trailer)
            return cl->fields[i][1];
    return NULL;
}

static void finish(struct client *cl, struct server *sv)
{
    op_h2_done(&cl->h2);
    free(cl->long_value);
    nghttp2_session_del(sv->s);
}

static const char body[] = "\0\0\0\0\x0a\x08\xe8\x07\x10\xc0\x84\x3d\x2a\x00";

/* ---------- tests ---------- */

static void full_exchange(bool bytewise, bool padded)
{
    struct client cl;
    struct server sv;
    server_new(&sv, A_FULL, padded, NULL, 0);
    client_start(&cl);
    pump(&cl, &sv, bytewise);
    cr_expect_eq(cl.h2.state, OP_H2_OPEN, "nothing before the body");
    op_h2_send_body(&cl.h2, body, sizeof(body) - 1);
    cr_expect(op_h2_body_sent(&cl.h2));
    pump(&cl, &sv, bytewise);
    cr_assert_eq(cl.h2.state, OP_H2_DONE, "%s", cl.h2.why);
    cr_expect_eq(cl.h2.status, 200);
    cr_assert_eq(sv.n_fields, sizeof(request) / sizeof(request[0]));
    for (size_t i = 0; i < sv.n_fields; i++) {
        cr_expect_str_eq(sv.fields[i][0], request[i].name);
        cr_expect_str_eq(sv.fields[i][1], request[i].value);
    }
    cr_assert_eq(sv.body_len, sizeof(body) - 1);
    cr_expect(!memcmp(sv.body, body, sv.body_len));
    cr_expect_str_eq(field_of(&cl, "content-type", false), "application/grpc");
    cr_expect_str_eq(field_of(&cl, "grpc-status", true), "0");
    cr_expect_str_eq(field_of(&cl, "grpc-message", true), "done");
    cr_assert_eq(cl.data_len, 8, "%zu bytes, state %d %s", cl.data_len, cl.h2.state, cl.h2.why);
    cr_expect(!memcmp(cl.data, "\0\0\0\0\3\x38\x01\x00", 8));
    cr_expect_null(cl.h2.in.data, "no bytes held once the frames are complete");
    cr_expect_null(cl.h2.block.data);
    finish(&cl, &sv);
}

Test(op_h2, request_and_response_round_trip)
{
    full_exchange(false, false);
}

Test(op_h2, frames_cut_at_every_byte)
{
    full_exchange(true, false);
}

Test(op_h2, padded_frames)
{
    full_exchange(true, true);
}

Test(op_h2, trailers_only_reply)
{
    struct client cl;
    struct server sv;
    server_new(&sv, A_TRAILERS_ONLY, false, NULL, 0);
    sv.message = "Another profiling session active.";
    client_start(&cl);
    op_h2_send_body(&cl.h2, body, sizeof(body) - 1);
    pump(&cl, &sv, false);
    cr_assert_eq(cl.h2.state, OP_H2_DONE, "%s", cl.h2.why);
    cr_expect_eq(cl.h2.status, 200);
    cr_expect_str_eq(field_of(&cl, "grpc-status", false), "13");
    cr_expect_str_eq(field_of(&cl, "grpc-message", false), "Another profiling session active.");
    cr_expect_eq(cl.data_len, 0);
    finish(&cl, &sv);
}

Test(op_h2, reply_before_the_body_ends_the_call)
{
    struct client cl;
    struct server sv;
    server_new(&sv, A_NONE, false, NULL, 0);
    client_start(&cl);
    pump(&cl, &sv, false); /* headers only: the body is held */
    sv.answer = A_TRAILERS_ONLY;
    answer(&sv, 1);
    pump(&cl, &sv, false);
    cr_assert_eq(cl.h2.state, OP_H2_DONE, "%s", cl.h2.why);
    cr_expect_str_eq(field_of(&cl, "grpc-status", false), "13");
    finish(&cl, &sv);
}

Test(op_h2, informational_reply_is_passed_over)
{
    struct client cl;
    struct server sv;
    server_new(&sv, A_INFORMATIONAL, false, NULL, 0);
    client_start(&cl);
    op_h2_send_body(&cl.h2, body, sizeof(body) - 1);
    pump(&cl, &sv, false);
    cr_assert_eq(cl.h2.state, OP_H2_DONE, "%s", cl.h2.why);
    cr_expect_eq(cl.h2.status, 200);
    cr_expect_str_eq(field_of(&cl, "grpc-status", true), "0");
    finish(&cl, &sv);
}

Test(op_h2, reset_stream)
{
    struct client cl;
    struct server sv;
    server_new(&sv, A_RESET, false, NULL, 0);
    client_start(&cl);
    op_h2_send_body(&cl.h2, body, sizeof(body) - 1);
    pump(&cl, &sv, false);
    cr_assert_eq(cl.h2.state, OP_H2_RESET);
    cr_expect_eq(cl.h2.reset_code, OP_H2_REFUSED_STREAM);
    cr_expect_str_eq(op_h2_error_name(cl.h2.reset_code), "REFUSED_STREAM");
    cr_expect_str_eq(op_h2_error_name(99), "UNKNOWN");
    finish(&cl, &sv);
}

Test(op_h2, goaway_before_the_stream_refuses_it)
{
    struct client cl;
    struct server sv;
    server_new(&sv, A_NONE, false, NULL, 0);
    cr_assert_eq(nghttp2_submit_goaway(sv.s, 0, 0, NGHTTP2_NO_ERROR, NULL, 0), 0);
    client_start(&cl);
    const uint8_t *data;
    ssize_t got;
    while ((got = nghttp2_session_mem_send(sv.s, &data)) > 0) /* before it reads our HEADERS */
        op_h2_recv(&cl.h2, data, (size_t)got);
    cr_assert_eq(cl.h2.state, OP_H2_REFUSED);
    finish(&cl, &sv);
}

Test(op_h2, goaway_after_the_stream_lets_it_finish)
{
    struct client cl;
    struct server sv;
    server_new(&sv, A_FULL, false, NULL, 0);
    client_start(&cl);
    pump(&cl, &sv, false);
    cr_assert_eq(nghttp2_submit_goaway(sv.s, 0, 1, NGHTTP2_NO_ERROR, NULL, 0), 0);
    pump(&cl, &sv, false);
    cr_expect_eq(cl.h2.state, OP_H2_OPEN);
    op_h2_send_body(&cl.h2, body, sizeof(body) - 1);
    pump(&cl, &sv, false);
    cr_expect_eq(cl.h2.state, OP_H2_DONE, "%s", cl.h2.why);
    finish(&cl, &sv);
}

Test(op_h2, pings_are_answered)
{
    struct client cl;
    struct server sv;
    server_new(&sv, A_NONE, false, NULL, 0);
    client_start(&cl);
    cr_assert_eq(nghttp2_submit_ping(sv.s, 0, (const uint8_t *)"12345678"), 0);
    pump(&cl, &sv, false);
    cr_expect(sv.ping_acked);
    cr_expect_eq(cl.h2.state, OP_H2_OPEN);
    finish(&cl, &sv);
}

Test(op_h2, small_windows_send_the_body_in_pieces)
{
    static char big[60000];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)(i * 7);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1000}};
    struct client cl;
    struct server sv;
    server_new(&sv, A_FULL, false, iv, 1);
    client_start(&cl);
    pump(&cl, &sv, false); /* the server's SETTINGS arrive first */
    op_h2_send_body(&cl.h2, big, sizeof(big));
    cr_expect(!op_h2_body_sent(&cl.h2), "the window holds most of it back");
    pump(&cl, &sv, false); /* WINDOW_UPDATEs let the rest out */
    cr_assert_eq(cl.h2.state, OP_H2_DONE, "%s", cl.h2.why);
    cr_assert_eq(sv.body_len, sizeof(big));
    cr_expect(!memcmp(sv.body, big, sizeof(big)));
    finish(&cl, &sv);
}

Test(op_h2, header_block_across_continuation_frames)
{
    char *msg = malloc(40001);
    memset(msg, 'm', 40000);
    msg[40000] = '\0';
    struct client cl;
    struct server sv;
    server_new(&sv, A_TRAILERS_ONLY, false, NULL, 0);
    sv.message = msg;
    client_start(&cl);
    op_h2_send_body(&cl.h2, body, sizeof(body) - 1);
    pump(&cl, &sv, false);
    cr_assert_eq(cl.h2.state, OP_H2_DONE, "%s", cl.h2.why);
    cr_assert_not_null(cl.long_value);
    cr_expect_str_eq(cl.long_value, msg);
    cr_expect_null(cl.h2.block.data);
    finish(&cl, &sv);
    free(msg);
}

Test(op_h2, refused_data_fails)
{
    struct client cl;
    struct server sv;
    server_new(&sv, A_FULL, false, NULL, 0);
    client_start(&cl);
    cl.refuse = true;
    op_h2_send_body(&cl.h2, body, sizeof(body) - 1);
    pump(&cl, &sv, false);
    cr_assert_eq(cl.h2.state, OP_H2_FAILED);
    cr_expect_str_eq(cl.h2.why, "the reply's data was refused");
    finish(&cl, &sv);
}

Test(op_h2, cancel_resets_the_stream)
{
    struct client cl;
    struct server sv;
    server_new(&sv, A_NONE, false, NULL, 0);
    client_start(&cl);
    pump(&cl, &sv, false);
    op_h2_cancel(&cl.h2);
    pump(&cl, &sv, false);
    cr_expect_eq(sv.closed_with, NGHTTP2_CANCEL + 1);
    finish(&cl, &sv);
}

/* Bytes no server should send: each fails the connection with a reason. */
Test(op_h2, protocol_violations_fail)
{
    static const struct {
        const char *bytes;
        size_t len;
        const char *why;
    } cases[] = {
        {"\x00\x40\x01\x00\x00\x00\x00\x00\x00", 9, "over SETTINGS_MAX_FRAME_SIZE"},
        {"\x00\x00\x04\x05\x04\x00\x00\x00\x01\x00\x00\x00\x02", 13, "PUSH_PROMISE"},
        {"\x00\x00\x01\x00\x01\x00\x00\x00\x01x", 10, "DATA before the response's HEADERS"},
        {"\x00\x00\x05\x04\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00", 14, "SETTINGS of 5 bytes"},
        {"\x00\x00\x03\x06\x00\x00\x00\x00\x00"
         "abc",
         12, "a malformed PING"},
        {"\x00\x00\x04\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00", 13, "a malformed WINDOW_UPDATE"},
        {"\x00\x00\x01\x01\x00\x00\x00\x00\x01\x88\x00\x00\x00\x00\x00\x00\x00\x00\x01", 19,
         "a frame inside a header block"},
        {"\x00\x00\x01\x01\x04\x00\x00\x00\x01\xff", 10, "cannot decode a header block"},
        {"\x00\x00\x01\x01\x0c\x00\x00\x00\x01\x05", 10, "padding longer than its frame"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct client cl;
        client_start(&cl);
        op_h2_recv(&cl.h2, cases[i].bytes, cases[i].len);
        cr_expect_eq(cl.h2.state, OP_H2_FAILED, "case %zu", i);
        cr_expect(strstr(cl.h2.why, cases[i].why), "case %zu: %s", i, cl.h2.why);
        op_h2_recv(&cl.h2, "more", 4); /* ignored once failed */
        cr_expect_eq(cl.h2.state, OP_H2_FAILED);
        op_h2_done(&cl.h2);
        op_h2_done(NULL);
    }
}

Test(op_h2, fields_too_large_for_one_frame)
{
    static char value[20000];
    memset(value, 'v', sizeof(value) - 1);
    const struct op_h2_field big[] = {{":method", "POST"}, {"x-big", value}};
    struct op_h2 h2;
    cr_expect_eq(op_h2_start(&h2, big, 2, 1024, &callbacks, NULL), -K8S_EINVAL);
    op_h2_done(&h2);
}
