#include "k8s_jsonload.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_buf.h"
#include "k8s_jsonskip.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "k8s_json_plain_run() finds the first special byte of a word as its lowest bits"
#endif

/* Byte classes inside a string literal. */
enum { C_PLAIN = 0, C_QUOTE, C_BACKSLASH, C_CONTROL, C_HIGH };

static const unsigned char str_class[256] = {
    [0x00 ... 0x1F] = C_CONTROL,
    ['"'] = C_QUOTE,
    ['\\'] = C_BACKSLASH,
    [0x80 ... 0xFF] = C_HIGH,
};

struct k8s_jpull {
    const unsigned char *start, *p, *end;
    int depth;
    const char *err; /* static text of the first problem */
    const unsigned char *err_at;
    struct k8s_buf text; /* decoded string (with escapes) or number text */
    const char *s;       /* the last kept string: a view of the input, or text */
    size_t n;
};

static int fail(struct k8s_jpull *r, const char *what)
{
    if (!r->err) {
        r->err = what;
        r->err_at = r->p;
    }
    return -1;
}

static inline void skip_ws(struct k8s_jpull *r)
{
    if (r->p<r->end && * r->p> ' ') /* compact JSON: the common case */
        return;
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

/* Length of the valid UTF-8 sequence at p (2-4), or 0. */
static int utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xBF;
    int n;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return 0;
    if (end - p < n || p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

static int hex4(struct k8s_jpull *r, unsigned *ret)
{
    unsigned v = 0;
    if (r->end - r->p < 4)
        return fail(r, "invalid \\u escape");
    for (int i = 0; i < 4; i++) {
        unsigned char c = r->p[i];
        unsigned d = c >= '0' && c <= '9'   ? c - '0'
                     : c >= 'a' && c <= 'f' ? c - 'a' + 10
                     : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                            : 16;
        if (d == 16)
            return fail(r, "invalid \\u escape");
        v = v * 16 + d;
    }
    r->p += 4;
    *ret = v;
    return 0;
}

static int put_utf8(struct k8s_jpull *r, unsigned cp)
{
    unsigned char b[4];
    int n;
    if (cp < 0x80)
        b[0] = (unsigned char)cp, n = 1;
    else if (cp < 0x800)
        b[0] = (unsigned char)(0xC0 | cp >> 6), b[1] = (unsigned char)(0x80 | (cp & 0x3F)), n = 2;
    else if (cp < 0x10000)
        b[0] = (unsigned char)(0xE0 | cp >> 12), b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)),
        b[2] = (unsigned char)(0x80 | (cp & 0x3F)), n = 3;
    else
        b[0] = (unsigned char)(0xF0 | cp >> 18), b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F)),
        b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), b[3] = (unsigned char)(0x80 | (cp & 0x3F)),
        n = 4;
    return k8s_buf_append(&r->text, b, (size_t)n);
}

/* \uXXXX (after the 'u'), with surrogate pairs; NUL is refused like jansson. */
static int unicode_escape(struct k8s_jpull *r, bool keep)
{
    unsigned cp, lo;
    if (hex4(r, &cp) < 0)
        return -1;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail(r, "invalid Unicode: lone low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
            return fail(r, "invalid Unicode: high surrogate without a low one");
        r->p += 2;
        if (hex4(r, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
            return fail(r, "invalid Unicode: high surrogate without a low one");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (cp == 0)
        return fail(r, "\\u0000 is not allowed");
    return keep && put_utf8(r, cp) < 0 ? fail(r, "out of memory") : 0;
}

static int escape(struct k8s_jpull *r, bool keep)
{
    static const char to[256] = {['"'] = '"',  ['\\'] = '\\', ['/'] = '/',  ['b'] = '\b',
                                 ['f'] = '\f', ['n'] = '\n',  ['r'] = '\r', ['t'] = '\t'};
    r->p++; /* the backslash */
    if (r->p >= r->end)
        return fail(r, "unterminated string");
    unsigned char c = *r->p++;
    if (c == 'u')
        return unicode_escape(r, keep);
    if (!to[c])
        return fail(r, "invalid escape");
    return keep && k8s_buf_append(&r->text, &to[c], 1) < 0 ? fail(r, "out of memory") : 0;
}

static __attribute__((noinline)) int escaped_lit(struct k8s_jpull *r, bool keep);

/* A string literal at r->p (the opening quote). When keep, its decoded
 * text is r->s/r->n (not NUL-terminated): a view of the input when the
 * literal has no escapes, else r->text, valid until the next literal. */
static inline int string_lit(struct k8s_jpull *r, bool keep)
{
    /* most literals hold plain bytes alone: a view of the input at once */
    const unsigned char *begin = r->p + 1, *q = k8s_json_plain_run(begin, r->end);
    if (q < r->end && *q == '"') {
        r->s = (const char *)begin;
        r->n = (size_t)(q - begin);
        r->p = q + 1;
        return 0;
    }
    return escaped_lit(r, keep);
}

/* The general case: escapes, non-ASCII bytes, errors. */
static int escaped_lit(struct k8s_jpull *r, bool keep)
{
    const unsigned char *begin = ++r->p;
    bool copy = false; /* decoding into r->text since the first escape */
    for (;;) {
        const unsigned char *run = r->p;
        r->p = k8s_json_plain_run(r->p, r->end);
        if (copy && r->p > run && k8s_buf_append(&r->text, run, (size_t)(r->p - run)) < 0)
            return fail(r, "out of memory");
        if (r->p >= r->end)
            return fail(r, "unterminated string");
        switch (str_class[*r->p]) {
        case C_QUOTE:
            r->s = copy ? r->text.data : (const char *)begin;
            r->n = copy ? r->text.len : (size_t)(r->p - begin);
            r->p++;
            return 0;
        case C_BACKSLASH:
            if (keep && !copy) {
                copy = true;
                k8s_buf_reset(&r->text);
                if (k8s_buf_append(&r->text, begin, (size_t)(r->p - begin)) < 0)
                    return fail(r, "out of memory");
            }
            if (escape(r, keep) < 0)
                return -1;
            break;
        case C_CONTROL:
            return fail(r, "control character in string");
        default: {
            int n = utf8_len(r->p, r->end);
            if (!n)
                return fail(r, "invalid UTF-8 in string");
            if (copy && k8s_buf_append(&r->text, r->p, (size_t)n) < 0)
                return fail(r, "out of memory");
            r->p += n;
        }
        }
    }
}

static bool digit(const struct k8s_jpull *r)
{
    return r->p < r->end && *r->p >= '0' && *r->p <= '9';
}

static int number(struct k8s_jpull *r, bool keep, json_t **out)
{
    const unsigned char *s = r->p;
    bool real = false;
    if (*r->p == '-')
        r->p++;
    if (!digit(r))
        return fail(r, "invalid number");
    if (*r->p++ != '0')
        while (digit(r))
            r->p++;
    if (r->p < r->end && *r->p == '.') {
        r->p++, real = true;
        if (!digit(r))
            return fail(r, "invalid number");
        while (digit(r))
            r->p++;
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        r->p++, real = true;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
            r->p++;
        if (!digit(r))
            return fail(r, "invalid number");
        while (digit(r))
            r->p++;
    }
    if (!keep)
        return 0;
    k8s_buf_reset(&r->text);
    if (k8s_buf_append(&r->text, s, (size_t)(r->p - s)) < 0)
        return fail(r, "out of memory");
    errno = 0;
    if (!real) {
        long long v = strtoll(r->text.data, NULL, 10);
        if (errno == ERANGE)
            return r->p = s, fail(r, "too big integer");
        *out = json_integer(v);
    } else {
        double v = strtod(r->text.data, NULL);
        if (errno == ERANGE && isinf(v))
            return r->p = s, fail(r, "real number overflow");
        *out = json_real(v);
    }
    return *out ? 0 : fail(r, "out of memory");
}

static int literal(struct k8s_jpull *r, bool keep, json_t **out)
{
    static const struct {
        const char *word;
        json_type type;
    } lits[] = {{"true", JSON_TRUE}, {"false", JSON_FALSE}, {"null", JSON_NULL}};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(lits[i].word);
        if ((size_t)(r->end - r->p) >= n && !memcmp(r->p, lits[i].word, n)) {
            r->p += n;
            if (keep)
                *out = lits[i].type == JSON_TRUE    ? json_true()
                       : lits[i].type == JSON_FALSE ? json_false()
                                                    : json_null();
            return 0;
        }
    }
    return fail(r, "invalid token");
}

static int value(struct k8s_jpull *r, const struct k8s_json_filter *f, bool keep, json_t **out);

/* The filter entry for key (NULL: skip the member). */
static const struct k8s_json_filter *match(const struct k8s_json_filter *f, const char *key,
                                           size_t len)
{
    for (; f->key; f++) /* first bytes compared inline: most keys differ there */
        if ((len && f->key[0] == key[0] && !strncmp(f->key, key, len) && !f->key[len]) ||
            (f->key[0] == '*' && !f->key[1]) || (!len && !f->key[0]))
            return f;
    return NULL;
}

/* One "key": value member of an object being built (obj NULL: skipping). */
static int member(struct k8s_jpull *r, const struct k8s_json_filter *f, json_t *obj)
{
    const struct k8s_json_filter *e = NULL;
    bool keep = obj != NULL;
    char *owned = NULL;
    if (r->p >= r->end || *r->p != '"')
        return fail(r, "string or '}' expected");
    if (string_lit(r, keep) < 0)
        return -1;
    const char *key = r->s;
    size_t klen = r->n;
    /* a decoded key lives in r->text, which the value may overwrite */
    if (keep && key == r->text.data && !(key = owned = strndup(key, klen)))
        return fail(r, "out of memory");
    if (keep && f)
        keep = (e = match(f, key, klen)) != NULL;
    skip_ws(r);
    json_t *v = NULL;
    int rc = r->p < r->end && *r->p == ':' ? 0 : fail(r, "':' expected");
    if (rc == 0)
        r->p++, rc = value(r, e ? e->keep : NULL, keep, &v);
    if (rc == 0 && v && json_object_setn_new_nocheck(obj, key, klen, v) < 0)
        rc = fail(r, "out of memory");
    free(owned);
    return rc;
}

static int container(struct k8s_jpull *r, const struct k8s_json_filter *f, bool keep, json_t **out,
                     bool is_object)
{
    unsigned char close = is_object ? '}' : ']';
    json_t *c = NULL;
    if (++r->depth > K8S_JSONLOAD_MAX_DEPTH)
        return fail(r, "maximum parsing depth reached");
    if (keep && !(c = is_object ? json_object() : json_array()))
        return fail(r, "out of memory");
    r->p++;
    skip_ws(r);
    bool first = true;
    int rc = 0;
    while (rc == 0) {
        if (r->p < r->end && *r->p == close && first) {
            r->p++;
            break;
        }
        if (is_object) {
            rc = member(r, f, c);
        } else {
            json_t *v = NULL;
            rc = value(r, f, keep, &v);
            if (rc == 0 && v && json_array_append_new(c, v) < 0)
                rc = fail(r, "out of memory");
        }
        skip_ws(r);
        if (rc == 0 && r->p < r->end && *r->p == ',')
            r->p++, skip_ws(r), first = false;
        else if (rc == 0 && r->p < r->end && *r->p == close)
            r->p++, first = true, rc = 1;
        else if (rc == 0)
            rc = fail(r, is_object ? "',' or '}' expected" : "',' or ']' expected");
    }
    r->depth--;
    if (rc < 0) {
        json_decref(c);
        return -1;
    }
    *out = c;
    return 0;
}

static int value(struct k8s_jpull *r, const struct k8s_json_filter *f, bool keep, json_t **out)
{
    skip_ws(r);
    if (r->p >= r->end)
        return fail(r, "unexpected end of input");
    const unsigned char *end; /* a skipped value written compactly: the fast lane */
    if (!keep && (end = k8s_json_skip_compact(r->p, r->end, r->depth, K8S_JSONLOAD_MAX_DEPTH)))
        return r->p = end, 0;
    switch (*r->p) {
    case '{':
        return container(r, f, keep, out, true);
    case '[':
        return container(r, f, keep, out, false);
    case '"':
        if (string_lit(r, keep) < 0)
            return -1;
        if (keep && !(*out = json_stringn_nocheck(r->n ? r->s : "", r->n)))
            return fail(r, "out of memory");
        return 0;
    case 't':
    case 'f':
    case 'n':
        return literal(r, keep, out);
    default:
        if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9'))
            return number(r, keep, out);
        return fail(r, "invalid token");
    }
}

static int report(struct k8s_jpull *r, struct k8s_error *reterr)
{
    int line = 1, col = 1;
    for (const unsigned char *q = r->start; q < r->err_at; q++, col++)
        if (*q == '\n')
            line++, col = 0;
    bool oom = !strcmp(r->err, "out of memory");
    return k8s_error_set(reterr, oom ? -K8S_ENOMEM : -K8S_EPARSE, "%s (line %d, column %d)", r->err,
                         line, col);
}

static void reader_init(struct k8s_jpull *r, const char *buf, size_t len)
{
    *r = (struct k8s_jpull){.start = (const unsigned char *)buf,
                            .p = (const unsigned char *)buf,
                            .end = (const unsigned char *)buf + len};
    k8s_buf_init(&r->text, len + 1);
}

int k8s_json_load_filtered(const char *buf, size_t len, const struct k8s_json_filter *filter,
                           json_t **ret, struct k8s_error *reterr)
{
    struct k8s_jpull r;
    reader_init(&r, buf, len);
    json_t *doc = NULL;
    skip_ws(&r);
    int rc = r.p < r.end && (*r.p == '{' || *r.p == '[') ? value(&r, filter, true, &doc)
                                                         : fail(&r, "'[' or '{' expected");
    skip_ws(&r);
    if (rc == 0 && r.p != r.end)
        rc = fail(&r, "end of input expected");
    k8s_buf_done(&r.text);
    if (rc < 0) {
        json_decref(doc);
        return report(&r, reterr);
    }
    *ret = doc;
    return 0;
}

/* ---------- readers of their own ---------- */

int k8s_json_pull_text(const char *buf, size_t len, k8s_json_pull_fn *fn, void *arg,
                       struct k8s_error *reterr)
{
    struct k8s_jpull r;
    reader_init(&r, buf, len);
    skip_ws(&r);
    int rc = fn(&r, arg) < 0 ? (r.err ? -1 : fail(&r, "out of memory")) : 0;
    skip_ws(&r);
    if (rc == 0 && r.depth)
        rc = fail(&r, "value not read to its end");
    if (rc == 0 && r.p != r.end)
        rc = fail(&r, "end of input expected");
    k8s_buf_done(&r.text);
    return rc < 0 ? report(&r, reterr) : 0;
}

enum k8s_jtype k8s_jpull_peek(struct k8s_jpull *r)
{
    skip_ws(r);
    switch (r->p < r->end ? *r->p : 0) {
    case '{':
        return K8S_J_OBJECT;
    case '[':
        return K8S_J_ARRAY;
    case '"':
        return K8S_J_STRING;
    case 'n':
        return K8S_J_NULL;
    default:
        return K8S_J_OTHER;
    }
}

size_t k8s_jpull_left(const struct k8s_jpull *r)
{
    return (size_t)(r->end - r->p);
}

const char *k8s_jpull_pos(const struct k8s_jpull *r)
{
    return (const char *)r->p;
}

int k8s_jpull_fail(struct k8s_jpull *r, const char *what)
{
    return fail(r, what);
}

int k8s_jpull_skip(struct k8s_jpull *r)
{
    json_t *none = NULL;
    return value(r, NULL, false, &none);
}

int k8s_jpull_string(struct k8s_jpull *r, const char **s, size_t *n)
{
    skip_ws(r);
    if (r->p >= r->end || *r->p != '"') {
        json_t *none = NULL;
        return value(r, NULL, false, &none) < 0 ? -1 : 0;
    }
    if (string_lit(r, true) < 0)
        return -1;
    *s = r->s;
    *n = r->n;
    return 1;
}

/* Copy the plain bytes at p to dst, 16 at a time, until the first byte a
 * scan stops at, which is returned; NULL when fewer than 16 bytes are left
 * before one (the caller's slow path then). dst may be written up to
 * (end - p) bytes. No calls: the callers' fast paths need no saved
 * registers. */
static inline const unsigned char *copy_plain_run(const unsigned char *p, const unsigned char *end,
                                                  char *dst)
{
#ifdef __SSE2__
    if (end - p < 16)
        return NULL;
    for (size_t i = 0, starts = (size_t)(end - p) - 15; i < starts; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(p + i));
        _mm_storeu_si128((__m128i *)(dst + i), x);
        unsigned mask = k8s_json_mask16(x, K8S_JSON_HIGH_STOPS);
        if (mask)
            return p + i + __builtin_ctz(mask);
    }
#else
    (void)p, (void)end, (void)dst;
#endif
    return NULL;
}

/* The first byte a scan stops at in the 16 at p (which lie before the
 * end), or NULL: short keys, inline and without calls. */
static inline const unsigned char *stop16(const unsigned char *p)
{
#ifdef __SSE2__
    unsigned mask = k8s_json_mask16(_mm_loadu_si128((const __m128i *)p), K8S_JSON_HIGH_STOPS);
    return mask ? p + __builtin_ctz(mask) : NULL;
#else
    const unsigned char *q = k8s_json_plain_run(p, p + 16);
    return q < p + 16 ? q : NULL;
#endif
}

/* k8s_jpull_string_to past the fast case: whitespace, another type,
 * escapes, non-ASCII bytes, errors (the general reader, then a copy). */
static __attribute__((noinline)) int string_to_slow(struct k8s_jpull *r, char *dst, size_t *n)
{
    const char *s;
    size_t len;
    int is_string = k8s_jpull_string(r, &s, &len);
    if (is_string > 0) {
        memcpy(dst, s, len);
        dst[len] = '\0';
        *n = len;
    }
    return is_string;
}

#ifdef __x86_64__
/* k8s_jpull_string_to's fast case 32 bytes at a time. */
__attribute__((target("avx2"))) static int string_to_avx2(struct k8s_jpull *r, char *dst, size_t *n)
{
    const unsigned char *begin = r->p + 1;
    if (r->p >= r->end || *r->p != '"' || r->end - begin < 32)
        return string_to_slow(r, dst, n);
    for (size_t i = 0, starts = (size_t)(r->end - begin) - 31; i < starts; i += 32) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(begin + i));
        _mm256_storeu_si256((__m256i *)(dst + i), x);
        unsigned mask = k8s_json_mask32(x, K8S_JSON_HIGH_STOPS);
        if (!mask)
            continue;
        const unsigned char *q = begin + i + __builtin_ctz(mask);
        if (*q != '"')
            break;
        *n = (size_t)(q - begin); /* plain bytes alone: copied already */
        dst[*n] = '\0';
        r->p = q + 1;
        return 1;
    }
    return string_to_slow(r, dst, n);
}
#endif

int k8s_jpull_string_to(struct k8s_jpull *r, char *dst, size_t *n)
{
#ifdef __x86_64__
    if (__builtin_cpu_supports("avx2"))
        return string_to_avx2(r, dst, n);
#endif
    const unsigned char *begin = r->p + 1, *q;
    if (r->p < r->end && *r->p == '"' && (q = copy_plain_run(begin, r->end, dst)) &&
        *q == '"') { /* plain bytes alone: copied already */
        *n = (size_t)(q - begin);
        dst[*n] = '\0';
        r->p = q + 1;
        return 1;
    }
    return string_to_slow(r, dst, n);
}

/* step past the fast case: opening, whitespace, errors. */
static __attribute__((noinline)) int step_slow(struct k8s_jpull *r, int *state, unsigned char open,
                                               unsigned char close)
{
    skip_ws(r);
    if (*state == 0) {
        if (r->p >= r->end || *r->p != open)
            return fail(r, open == '{' ? "'{' expected" : "'[' expected");
        if (++r->depth > K8S_JSONLOAD_MAX_DEPTH)
            return fail(r, "maximum parsing depth reached");
        r->p++;
        skip_ws(r);
        *state = 1;
        if (r->p < r->end && *r->p == close)
            return r->p++, r->depth--, 0;
        return 1;
    }
    if (r->p < r->end && *r->p == close)
        return r->p++, r->depth--, 0;
    if (r->p >= r->end || *r->p != ',')
        return fail(r, close == '}' ? "',' or '}' expected" : "',' or ']' expected");
    r->p++;
    skip_ws(r);
    return 1;
}

/* Open the container at the cursor, or step past the ',' after an item:
 * 1 at the next item, 0 after the closing byte. */
static inline int step(struct k8s_jpull *r, int *state, unsigned char open, unsigned char close)
{
    const unsigned char *p = r->p; /* compact JSON: the ',' or close right after an item */
    if (*state && p < r->end) {
        if (*p == close)
            return r->p = p + 1, r->depth--, 0;
        if (*p == ',' && (r->end - p < 2 || p[1] > ' '))
            return r->p = p + 1, 1;
    }
    return step_slow(r, state, open, close);
}

/* k8s_jpull_member past the fast case: whitespace, escaped keys, errors. */
static __attribute__((noinline)) int member_slow(struct k8s_jpull *r, int *state, const char **key,
                                                 size_t *klen)
{
    int s = step(r, state, '{', '}');
    if (s <= 0)
        return s;
    if (r->p >= r->end || *r->p != '"')
        return fail(r, "string or '}' expected");
    if (string_lit(r, true) < 0)
        return -1;
    *key = r->s;
    *klen = r->n;
    skip_ws(r);
    if (r->p >= r->end || *r->p != ':')
        return fail(r, "':' expected");
    r->p++;
    return 1;
}

int k8s_jpull_member(struct k8s_jpull *r, int *state, const char **key, size_t *klen)
{
    /* compact JSON, the common case: ,"key": or {"key": with a plain key of
     * at most 15 bytes (not at the very end of the text), or } */
    const unsigned char *p = r->p, *end = r->end, *q;
    if (end - p >= 19 && p[0] == (*state ? ',' : '{') && p[1] == '"' &&
        (*state || r->depth < K8S_JSONLOAD_MAX_DEPTH) && (q = stop16(p + 2)) && q[0] == '"' &&
        q[1] == ':') {
        r->depth += !*state;
        *state = 1;
        *key = (const char *)p + 2;
        *klen = (size_t)(q - p - 2);
        r->p = q + 2;
        return 1;
    }
    if (*state && p < end && *p == '}')
        return r->p = p + 1, r->depth--, 0;
    return member_slow(r, state, key, klen);
}

int k8s_jpull_element(struct k8s_jpull *r, int *state)
{
    return step(r, state, '[', ']');
}

int k8s_jpull_true(struct k8s_jpull *r)
{
    skip_ws(r);
    bool is_true = r->end - r->p >= 4 && !memcmp(r->p, "true", 4);
    json_t *none = NULL;
    return value(r, NULL, false, &none) < 0 ? -1 : is_true;
}
