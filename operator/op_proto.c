#include "op_proto.h"

#include <stdio.h>
#include <string.h>

/* ---------- encoding ---------- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

static size_t put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static int varint(struct k8s_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    return k8s_buf_append(b, tmp, put_varint(tmp, v));
}

static int field_varint(struct k8s_buf *b, unsigned field, uint64_t v)
{
    int r = varint(b, (uint64_t)field << 3 | WT_VARINT);
    return r ? r : varint(b, v);
}

static int field_bytes(struct k8s_buf *b, unsigned field, const void *p, size_t n)
{
    int r = varint(b, (uint64_t)field << 3 | WT_LEN);
    r = r ? r : varint(b, n);
    return r ? r : k8s_buf_append(b, p, n);
}

static int field_string(struct k8s_buf *b, unsigned field, const char *s)
{
    return s && *s ? field_bytes(b, field, s, strlen(s)) : 0;
}

/* ProfileOptions, in field order. */
static int encode_options(const struct op_profile_request *rq, struct k8s_buf *b)
{
    int r = field_varint(b, 1, 1); /* include_dataset_ops */
    /* proto3: a level of 0 is the field's default, left out as protobuf does */
    r = r || !rq->levels.host ? r : field_varint(b, 2, rq->levels.host);
    r = r || !rq->levels.device ? r : field_varint(b, 3, rq->levels.device);
    r = r || !rq->levels.python ? r : field_varint(b, 4, rq->levels.python);
    r = r ? r : field_varint(b, 5, 1); /* version */
    if (r == 0 && rq->start_timestamp_ns)
        r = field_varint(b, 8, rq->start_timestamp_ns);
    return r ? r : field_varint(b, 9, rq->duration_ms);
}

int op_proto_encode_request(const struct op_profile_request *rq, struct k8s_buf *out)
{
    struct k8s_buf opts, msg;
    k8s_buf_init(&opts, 4096);
    k8s_buf_init(&msg, 1 << 20);
    int r = encode_options(rq, &opts);
    r = r ? r : field_varint(&msg, 1, rq->duration_ms);
    r = r ? r : field_varint(&msg, 2, OP_PROFILE_MAX_EVENTS);
    r = r ? r : field_bytes(&msg, 4, opts.data, opts.len);
    r = r ? r : field_string(&msg, 5, rq->repository_root);
    r = r ? r : field_string(&msg, 6, rq->session_id);
    r = r ? r : field_string(&msg, 7, rq->host_name);
    if (r == 0) {
        uint8_t head[5] = {0, (uint8_t)(msg.len >> 24), (uint8_t)(msg.len >> 16),
                           (uint8_t)(msg.len >> 8), (uint8_t)msg.len};
        r = k8s_buf_append(out, head, sizeof(head));
        r = r ? r : k8s_buf_append(out, msg.data ? msg.data : "", msg.len);
    }
    k8s_buf_done(&opts);
    k8s_buf_done(&msg);
    return r;
}

/* ---------- decoding ---------- */

struct rd {
    const uint8_t *p, *end;
};

static int get_varint(struct rd *d, uint64_t *ret)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (d->p >= d->end)
            return -1;
        uint8_t c = *d->p++;
        if (shift == 63 && c > 1)
            return -1; /* more than 64 bits */
        v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) {
            *ret = v;
            return 0;
        }
    }
    return -1;
}

/* Skip one value of wire type wt; for WT_LEN, *ret_sub gets its bytes. */
static int skip_value(struct rd *d, unsigned wt, struct rd *ret_sub)
{
    uint64_t n;
    switch (wt) {
    case WT_VARINT:
        return get_varint(d, &n);
    case WT_I64:
        n = 8;
        break;
    case WT_I32:
        n = 4;
        break;
    case WT_LEN:
        if (get_varint(d, &n) < 0)
            return -1;
        break;
    default:
        return -1; /* groups (3, 4) are not proto3; 6, 7 do not exist */
    }
    if (n > (uint64_t)(d->end - d->p))
        return -1;
    if (ret_sub)
        *ret_sub = (struct rd){d->p, d->p + n};
    d->p += n;
    return 0;
}

/* Walk every field of a message; depth-limited check of nested tool data
 * (ProfileToolData: 1 name string, 2 data bytes). */
static int check_tool_data(struct rd d)
{
    while (d.p < d.end) {
        uint64_t tag;
        if (get_varint(&d, &tag) < 0 || (tag >> 3) == 0 || tag >> 32)
            return -1;
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if ((field == 1 || field == 2) && wt != WT_LEN)
            return -1;
        if (skip_value(&d, wt, NULL) < 0)
            return -1;
    }
    return 0;
}

static int parse_fail(struct k8s_error *reterr, const struct rd *d, const uint8_t *start,
                      const char *what)
{
    return k8s_error_set(reterr, -K8S_EPARSE, "ProfileResponse: %s at byte %zu", what,
                         (size_t)(d->p - start));
}

int op_proto_decode_response(const void *msg, size_t n, struct op_profile_response *ret,
                             struct k8s_error *reterr)
{
    const uint8_t *start = msg ? msg : (const uint8_t *)"";
    struct rd d = {start, start + n};
    struct op_profile_response out = {0};
    while (d.p < d.end) {
        uint64_t tag, v;
        struct rd sub;
        if (get_varint(&d, &tag) < 0)
            return parse_fail(reterr, &d, start, "truncated tag");
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if (field == 0 || tag >> 32)
            return parse_fail(reterr, &d, start, "invalid field number");
        if ((field == 6 || field == 8) && wt != WT_LEN)
            return parse_fail(reterr, &d, start, "wrong wire type for a message field");
        if (field == 7 && wt != WT_VARINT)
            return parse_fail(reterr, &d, start, "wrong wire type for empty_trace");
        if (field == 7) {
            if (get_varint(&d, &v) < 0)
                return parse_fail(reterr, &d, start, "truncated varint");
            out.empty_trace = v != 0;
            continue;
        }
        if (skip_value(&d, wt, &sub) < 0)
            return parse_fail(reterr, &d, start, "truncated or invalid field");
        if (field == 6 && check_tool_data(sub) < 0)
            return parse_fail(reterr, &d, start, "malformed tool_data");
        out.tool_data += field == 6;
        out.has_xspace |= field == 8;
    }
    *ret = out;
    return 0;
}

int op_grpc_unframe(const void *body, size_t n, const uint8_t **ret_msg, size_t *ret_len,
                    struct k8s_error *reterr)
{
    const uint8_t *b = body;
    if (n == 0) {
        *ret_msg = NULL;
        *ret_len = 0;
        return 0;
    }
    if (n < 5)
        return k8s_error_set(reterr, -K8S_EPARSE, "gRPC reply: truncated frame header (%zu bytes)",
                             n);
    if (b[0] != 0)
        return k8s_error_set(reterr, -K8S_EPARSE,
                             "gRPC reply: compressed message (flag %u) without grpc-encoding",
                             b[0]);
    size_t len = (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4];
    if (len > n - 5)
        return k8s_error_set(reterr, -K8S_EPARSE,
                             "gRPC reply: frame of %zu bytes but only %zu received", len, n - 5);
    if (len < n - 5)
        return k8s_error_set(reterr, -K8S_EPARSE,
                             "gRPC reply: %zu bytes after the message of a unary call",
                             n - 5 - len);
    *ret_msg = b + 5;
    *ret_len = len;
    return 0;
}

/* ---------- text formats ---------- */

void op_grpc_timeout(int64_t ms, char out[static 16])
{
    static const struct {
        int64_t per;
        char unit;
    } units[] = {{1, 'm'}, {1000, 'S'}, {60000, 'M'}, {3600000, 'H'}};
    if (ms < 1)
        ms = 1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        int64_t v = (ms + units[i].per - 1) / units[i].per; /* never shorter than asked */
        if (v <= 99999999 || i == 3) {
            snprintf(out, 16, "%lld%c", (long long)(v > 99999999 ? 99999999 : v), units[i].unit);
            return;
        }
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void op_grpc_message_decode(const char *in, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    if (!cap)
        return;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)in[i];
        int hi, lo;
        if (c == '%' && i + 2 < n && (hi = hexval(in[i + 1])) >= 0 &&
            (lo = hexval(in[i + 2])) >= 0) {
            c = (unsigned char)(hi << 4 | lo);
            i += 2;
        }
        out[o++] = c < 0x20 || c == 0x7F ? ' ' : (char)c;
    }
    out[o] = '\0';
}

const char *op_grpc_code_name(int code)
{
    static const char *const names[] = {"OK",
                                        "CANCELLED",
                                        "UNKNOWN",
                                        "INVALID_ARGUMENT",
                                        "DEADLINE_EXCEEDED",
                                        "NOT_FOUND",
                                        "ALREADY_EXISTS",
                                        "PERMISSION_DENIED",
                                        "RESOURCE_EXHAUSTED",
                                        "FAILED_PRECONDITION",
                                        "ABORTED",
                                        "OUT_OF_RANGE",
                                        "UNIMPLEMENTED",
                                        "INTERNAL",
                                        "UNAVAILABLE",
                                        "DATA_LOSS",
                                        "UNAUTHENTICATED"};
    return code >= 0 && code <= 16 ? names[code] : "UNKNOWN_CODE";
}
