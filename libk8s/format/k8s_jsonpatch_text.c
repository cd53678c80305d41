#include "k8s_jsonpatch_text.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "k8s_json.h"
#include "k8s_jsonskip.h"

#define PATCH_MAX ((size_t)1 << 28) /* as the review's response writer */

void k8s_jsonpatch_text_init(struct k8s_jsonpatch_text *t)
{
    memset(t, 0, sizeof(*t));
    k8s_buf_init(&t->buf, PATCH_MAX);
}

void k8s_jsonpatch_text_done(struct k8s_jsonpatch_text *t)
{
    if (!t)
        return;
    k8s_buf_done(&t->buf);
    t->n = 0;
    t->at = 0;
    t->closed = 0;
}

/* Reopen the array for another operation and make room for its first
 * `extra` bytes, at *ret_tail: after the "[" of the first operation (the
 * typical patch, a few KiB, in one allocation) or the "," after the last.
 * t->at is where they go. */
static int reopen_slow(struct k8s_jsonpatch_text *t, size_t extra, char **ret_tail)
{
    struct k8s_buf *b = &t->buf;
    if (t->closed) {
        b->data[--b->len] = '\0';
        t->closed = 0;
    }
    size_t lead = b->len == 0 || t->n ? 1 : 0; /* "[" or "," */
    char *tail;
    int r = k8s_buf_reserve(b, b->len || extra + 1 > 8192 ? extra + 1 : 8192, &tail);
    if (r)
        return r;
    *tail = b->len ? ',' : '[';
    k8s_buf_commit(b, lead);
    t->at = b->len;
    *ret_tail = tail + lead;
    return 0;
}

static inline int reopen(struct k8s_jsonpatch_text *t, size_t extra, char **ret_tail)
{
    struct k8s_buf *b = &t->buf;
    if (t->closed || !t->n || extra + 1 >= b->alloc - b->len || extra + 1 > b->max - b->len)
        return reopen_slow(t, extra, ret_tail);
    char *p = b->data + b->len; /* the usual: a "," after the last, room there */
    p[0] = ',';
    p[1] = '\0';
    t->at = ++b->len;
    *ret_tail = p + 1;
    return 0;
}

/* Whether the n bytes at s need no JSON escape: a word at a time, the
 * last word overlapping; under 8 bytes, two overlapping halves (or the
 * first, middle and last byte) in one word. Nothing beyond s + n is read. */
static bool json_plain(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    uint64_t w, any = 0;
    if (n < 8) {
        uint32_t lo, hi;
        if (n >= 4) {
            memcpy(&lo, p, 4);
            memcpy(&hi, p + n - 4, 4);
            w = lo | (uint64_t)hi << 32;
        } else { /* the other bytes 'a': plain */
            w = n ? 0x6161616161000000ULL | p[0] | (uint64_t)p[n / 2] << 8 |
                        (uint64_t)p[n - 1] << 16
                  : 0x6161616161616161ULL;
        }
        return !k8s_json_word_special(w, K8S_JSON_HIGH_PLAIN);
    }
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        any |= k8s_json_word_special(w, K8S_JSON_HIGH_PLAIN);
    }
    memcpy(&w, p + n - 8, 8); /* the tail, overlapping */
    return !(any | k8s_json_word_special(w, K8S_JSON_HIGH_PLAIN));
}

int k8s_jsonpatch_text_open(struct k8s_jsonpatch_text *t, const char *op)
{
    static const char head[] = "{\"op\":\"", tail[] = "\",\"path\":\"";
    size_t n = strlen(op), h = sizeof(head) - 1, e = sizeof(tail) - 1;
    char *p;
    if (n < 64 && json_plain(op, n)) { /* the usual op: one copy of all of it */
        int r = reopen(t, h + n + e, &p);
        if (r == 0) {
            memcpy(p, head, h);
            memcpy(p + h, op, n);
            memcpy(p + h + n, tail, e);
            k8s_buf_commit(&t->buf, h + n + e);
        }
        return r;
    }
    int r = reopen(t, 6, &p);
    r = r ? r : k8s_buf_append(&t->buf, "{\"op\":", 6);
    r = r ? r : k8s_json_write_string(op, n, &t->buf);
    return r ? r : k8s_buf_append(&t->buf, ",\"path\":\"", 9);
}

int k8s_jsonpatch_text_open_as(struct k8s_jsonpatch_text *t, size_t at, size_t len)
{
    size_t end = t->buf.len - (t->closed ? 1 : 0); /* without the "]" */
    if (at > end || len > end - at)
        return -K8S_EINVAL;
    char *tail;
    int r = reopen(t, len, &tail);
    if (r == 0) {
        memcpy(tail, t->buf.data + at, len); /* the data as it is after the reservation */
        k8s_buf_commit(&t->buf, len);
    }
    return r;
}

int k8s_jsonpatch_text_path(struct k8s_jsonpatch_text *t, const char *ptr, size_t n)
{
    struct k8s_buf *b = &t->buf;
    if (n < b->alloc - b->len && n <= b->max - b->len && json_plain(ptr, n)) {
        memcpy(b->data + b->len, ptr, n); /* room for the NUL too */
        k8s_buf_commit(b, n);
        return 0;
    }
    return k8s_json_write_chars(ptr, n, b);
}

/* What a byte of a segment becomes: itself, "~0"/"~1", or a JSON escape. */
enum { SEG_PLAIN, SEG_TILDE, SEG_SLASH, SEG_JSON };
static const unsigned char seg_class[256] = {
    [0 ... 0x1F] = SEG_JSON, ['"'] = SEG_JSON,  ['\\'] = SEG_JSON,
    ['~'] = SEG_TILDE,       ['/'] = SEG_SLASH,
};

/* The general case: runs between '~' and '/' JSON-escaped. */
static int path_seg_slow(struct k8s_buf *b, const char *seg)
{
    int r = k8s_buf_append(b, "/", 1);
    for (const char *run = seg; r == 0; run++) {
        size_t n = strcspn(run, "~/");
        r = k8s_json_write_chars(run, n, b);
        if (r < 0 || !run[n])
            break;
        run += n;
        r = k8s_buf_append(b, *run == '~' ? "~0" : "~1", 2);
    }
    return r;
}

/* The high bit of each byte of w that is '~' or '/' or needs a JSON
 * escape (exact up to the lowest, as k8s_json_word_special). */
static uint64_t seg_special(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t tilde = w ^ (ones * '~'), slash = w ^ (ones * '/');
    return k8s_json_word_special(w, K8S_JSON_HIGH_PLAIN) | (((tilde - ones) & ~tilde) & highs) |
           (((slash - ones) & ~slash) & highs);
}

/* seg's reference token at o, which has room for 2n + 8; the end, or NULL
 * when a byte needs a JSON escape. Plain runs go 8 bytes at a time. */
static char *put_seg(char *o, const char *seg, size_t n)
{
    const char *p = seg, *end = seg + n;
    while (p < end) {
        uint64_t w, m = 0;
        if (end - p >= 8) {
            memcpy(&w, p, 8);
            memcpy(o, &w, 8);
            m = seg_special(w);
            unsigned k = m ? (unsigned)__builtin_ctzll(m) >> 3 : 8;
            p += k;
            o += k;
            if (!m)
                continue;
        }
        unsigned char k = seg_class[(unsigned char)*p];
        if (k == SEG_JSON)
            return NULL;
        o[0] = k ? '~' : *p;
        o[1] = k == SEG_TILDE ? '0' : '1';
        o += k ? 2 : 1;
        p++;
    }
    return o;
}

int k8s_jsonpatch_text_path_seg(struct k8s_jsonpatch_text *t, const char *seg)
{
    struct k8s_buf *b = &t->buf;
    size_t n = strlen(seg);
    char *p;
    /* at most 2n + 1 bytes without JSON escapes: written in one pass */
    if (n >= 1 << 20 || 2 * n + 9 > b->max - b->len)
        return path_seg_slow(b, seg);
    int r = k8s_buf_reserve(b, 2 * n + 9, &p);
    if (r < 0)
        return r;
    *p = '/';
    char *o = put_seg(p + 1, seg, n);
    if (!o)
        return path_seg_slow(b, seg);
    k8s_buf_commit(b, (size_t)(o - p));
    return 0;
}

int k8s_jsonpatch_text_path_index(struct k8s_jsonpatch_text *t, size_t i)
{
    if (i == K8S_JSONPATCH_TEXT_END)
        return k8s_buf_append(&t->buf, "/-", 2);
    char d[1 + K8S_INT_CHARS] = "/";
    return k8s_buf_append(&t->buf, d, (size_t)(k8s_put_int(d + 1, (long long)i) - d));
}

int k8s_jsonpatch_text_begin(struct k8s_jsonpatch_text *t, const char *op, const char *path)
{
    int r = k8s_jsonpatch_text_open(t, op);
    r = r ? r : k8s_jsonpatch_text_path(t, path, strlen(path));
    return r ? r : k8s_jsonpatch_text_value(t);
}

/* _begin_at's pieces one call each: a piece to JSON-escape, or too long. */
static int begin_at_slow(struct k8s_jsonpatch_text *t, const char *op, const char *base, size_t nb,
                         const char *mid, size_t nm, const char *seg)
{
    int r = k8s_jsonpatch_text_open(t, op);
    r = r ? r : k8s_jsonpatch_text_path(t, base, nb);
    r = r ? r : k8s_jsonpatch_text_path(t, mid, nm);
    r = r || !seg ? r : k8s_jsonpatch_text_path_seg(t, seg);
    return r ? r : k8s_jsonpatch_text_value(t);
}

int k8s_jsonpatch_text_begin_at(struct k8s_jsonpatch_text *t, const char *op, const char *base,
                                const char *mid, const char *seg)
{
    static const char head[] = "{\"op\":\"", path[] = "\",\"path\":\"", value[] = "\",\"value\":";
    base = base ? base : "";
    mid = mid ? mid : "";
    size_t no = strlen(op), nb = strlen(base), nm = strlen(mid), ns = seg ? strlen(seg) : 0;
    if ((no | nb | nm | ns) >= 1 << 20 || !json_plain(op, no) || !json_plain(base, nb) ||
        !json_plain(mid, nm))
        return begin_at_slow(t, op, base, nb, mid, nm, seg);
    size_t need = sizeof(head) + no + sizeof(path) + nb + nm + 2 * ns + 9 + sizeof(value);
    char *p, *o;
    int r = reopen(t, need, &p);
    if (r)
        return r;
    o = k8s_put(k8s_put(p, head, sizeof(head) - 1), op, no);
    o = k8s_put(k8s_put(k8s_put(o, path, sizeof(path) - 1), base, nb), mid, nm);
    char *s = o;
    if (seg) {
        *o = '/';
        o = put_seg(o + 1, seg, ns);
    }
    if (!o) { /* the segment needs JSON escapes: written the general way */
        k8s_buf_commit(&t->buf, (size_t)(s - p));
        r = path_seg_slow(&t->buf, seg);
        return r ? r : k8s_jsonpatch_text_value(t);
    }
    o = k8s_put(o, value, sizeof(value) - 1);
    k8s_buf_commit(&t->buf, (size_t)(o - p));
    return 0;
}

int k8s_jsonpatch_text_string(struct k8s_jsonpatch_text *t, const char *op, const char *path,
                              const char *value)
{
    int r = k8s_jsonpatch_text_begin(t, op, path);
    r = r ? r : k8s_json_write_string(value, strlen(value), &t->buf);
    return r ? r : k8s_jsonpatch_text_end(t);
}

const char *k8s_jsonpatch_text_json(struct k8s_jsonpatch_text *t, size_t *ret_len)
{
    if (!t->closed) {
        int r = t->buf.len ? 0 : k8s_buf_append(&t->buf, "[", 1);
        if (r || k8s_buf_append(&t->buf, "]", 1))
            return NULL;
        t->closed = 1;
    }
    *ret_len = t->buf.len;
    return t->buf.data;
}

json_t *k8s_jsonpatch_text_tree(struct k8s_jsonpatch_text *t)
{
    size_t len;
    const char *s = k8s_jsonpatch_text_json(t, &len);
    return s ? json_loadb(s, len, JSON_ALLOW_NUL, NULL) : NULL;
}
