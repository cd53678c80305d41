#include "k8s_json.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "k8s_jsonskip.h"

/* The first byte in [p, end) that needs escaping, or end. */
static const unsigned char *plain_run(const unsigned char *p, const unsigned char *end)
{
    return k8s_json_scan(p, end, K8S_JSON_HIGH_PLAIN);
}

/* 1 for bytes that must be escaped in a JSON string (jansson's set). */
static const unsigned char needs_escape[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,         1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, ['"'] = 1, ['\\'] = 1,
};

/* The letter of the two-character escapes (\b \f \n \r \t, \" \\); others
 * are \u00XX. */
static const char short_form[128] = {['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r',
                                     ['\t'] = 't', ['"'] = '"',  ['\\'] = '\\'};

static size_t escape_len(unsigned char c)
{
    return short_form[c] ? 2 : 6;
}

/* The escape of c (a byte needs_escape marks) at t; returns its end. */
static char *escape_into(char *t, unsigned char c)
{
    static const char hex[] = "0123456789ABCDEF";
    t[0] = '\\';
    if (short_form[c]) {
        t[1] = short_form[c];
        return t + 2;
    }
    memcpy(t + 1, "u00", 3); /* jansson's "\\u%04X" */
    t[4] = hex[c >> 4];
    t[5] = hex[c & 15];
    return t + 6;
}

/* The escaped form of [p, end) at t, which has room for ESCAPED_MAX of
 * it; returns the end. With SSE2 each 16 bytes are stored whole and the
 * output advances to the first byte to escape, so a string with many
 * quotes (our JSON-in-JSON values) costs a few instructions per escape. */
#define ESCAPED_MAX(n) (6 * (n) + 16)
_Static_assert(K8S_JSON_STRING_MAX(1) == ESCAPED_MAX(1) + 2, "the quotes beside");

static char *escape_to(char *t, const unsigned char *p, const unsigned char *end)
{
#ifdef __SSE2__
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        unsigned mask = k8s_json_mask16(x, K8S_JSON_HIGH_PLAIN);
        _mm_storeu_si128((__m128i *)t, x);
        unsigned k = mask ? (unsigned)__builtin_ctz(mask) : 16;
        p += k;
        t += k;
        if (mask)
            t = escape_into(t, *p++);
    }
#endif
    uint64_t w, m;
    while (end - p >= 8) { /* the same a word at a time */
        memcpy(&w, p, 8);
        memcpy(t, &w, 8);
        m = k8s_json_word_special(w, K8S_JSON_HIGH_PLAIN);
        unsigned k = m ? (unsigned)__builtin_ctzll(m) >> 3 : 8;
        p += k;
        t += k;
        if (m)
            t = escape_into(t, *p++);
    }
    for (; p < end; p++)
        if (needs_escape[*p])
            t = escape_into(t, *p);
        else
            *t++ = (char)*p;
    return t;
}

/* The common case, a string with nothing to escape: [quote,] bytes[,
 * quote] in one copy when they fit (room for the NUL too). */
static bool write_plain(const char *s, size_t n, bool quoted, struct k8s_buf *out)
{
    size_t q = quoted ? 1 : 0, m = n + 2 * q; /* n < alloc (callers): no overflow */
    if (m >= out->alloc - out->len || m > out->max - out->len ||
        plain_run((const unsigned char *)s, (const unsigned char *)s + n) !=
            (const unsigned char *)s + n)
        return false;
    char *t = out->data + out->len;
    t[0] = '"';
    memcpy(t + q, s, n);
    t[n + q] = '"';
    t[m] = '\0';
    out->len += m;
    return true;
}

char *k8s_json_put_string(char *t, const char *s, size_t n)
{
    *t++ = '"';
    t = escape_to(t, (const unsigned char *)s, (const unsigned char *)s + n);
    *t++ = '"';
    return t;
}

/* Within 6n + 16 bytes of the cap: each run of plain bytes and the
 * escape after it reserved exactly. */
static int write_exact(const unsigned char *p, const unsigned char *end, struct k8s_buf *out)
{
    while (p < end) {
        const unsigned char *run = p;
        p = plain_run(p, end);
        size_t m = (size_t)(p - run), esc = p == end ? 0 : escape_len(*p);
        char *t;
        int r = k8s_buf_reserve(out, m + esc, &t);
        if (r < 0)
            return r;
        memcpy(t, run, m);
        char *e = esc ? escape_into(t + m, *p++) : t + m;
        k8s_buf_commit(out, (size_t)(e - t));
    }
    return 0;
}

#define CHUNK 4096 /* input bytes per reservation: bounds the room reserved beyond need */

int k8s_json_write_chars(const char *s, size_t n, struct k8s_buf *out)
{
    if (n < out->alloc && write_plain(s, n, false, out))
        return 0;
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        size_t m = (size_t)(end - p) < CHUNK ? (size_t)(end - p) : CHUNK;
        if (ESCAPED_MAX(m) > out->max - out->len)
            return write_exact(p, end, out);
        char *t;
        int r = k8s_buf_reserve(out, ESCAPED_MAX(m), &t);
        if (r < 0)
            return r;
        k8s_buf_commit(out, (size_t)(escape_to(t, p, p + m) - t));
        p += m;
    }
    return 0;
}

int k8s_json_write_string(const char *s, size_t n, struct k8s_buf *out)
{
    if (n < out->alloc && write_plain(s, n, true, out))
        return 0;
    int r = k8s_buf_append(out, "\"", 1);
    r = r ? r : k8s_json_write_chars(s, n, out);
    return r ? r : k8s_buf_append(out, "\"", 1);
}

/* jansson's jsonp_dtostr: "%.17g", then a ".0" when the text would read
 * back as an integer, and no '+' or leading zeros in the exponent. */
static int write_real(double v, struct k8s_buf *out)
{
    char buf[64], fixed[64];
    if (isnan(v) || isinf(v)) {
        k8s_buf_done(out);
        return -K8S_EINVAL;
    }
    int n = snprintf(buf, sizeof(buf), "%.17g", v);
    if (!strchr(buf, '.') && !strchr(buf, 'e') && n + 2 < (int)sizeof(buf))
        strcat(buf, ".0");
    char *e = strchr(buf, 'e');
    if (!e)
        return k8s_buf_appends(out, buf);
    size_t k = (size_t)(e - buf) + 1;
    memcpy(fixed, buf, k);
    const char *q = e + 1;
    if (*q == '+')
        q++;
    else if (*q == '-')
        fixed[k++] = *q++;
    while (*q == '0' && q[1])
        q++;
    snprintf(fixed + k, sizeof(fixed) - k, "%s", q);
    return k8s_buf_appends(out, fixed);
}

static int write_object(const json_t *v, struct k8s_buf *out)
{
    int r = k8s_buf_append(out, "{", 1);
    bool first = true;
    const char *key;
    size_t klen;
    json_t *val;
    json_object_keylen_foreach((json_t *)v, key, klen, val)
    {
        if (r == 0 && !first)
            r = k8s_buf_append(out, ",", 1);
        if (r == 0)
            r = k8s_json_write_string(key, klen, out);
        if (r == 0)
            r = k8s_buf_append(out, ":", 1);
        if (r == 0)
            r = k8s_json_write(val, out);
        first = false;
        if (r)
            return r;
    }
    return k8s_buf_append(out, "}", 1);
}

static int write_array(const json_t *v, struct k8s_buf *out)
{
    int r = k8s_buf_append(out, "[", 1);
    for (size_t i = 0; r == 0 && i < json_array_size(v); i++) {
        if (i)
            r = k8s_buf_append(out, ",", 1);
        if (r == 0)
            r = k8s_json_write(json_array_get(v, i), out);
    }
    return r ? r : k8s_buf_append(out, "]", 1);
}

int k8s_json_write(const json_t *v, struct k8s_buf *out)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return write_object(v, out);
    case JSON_ARRAY:
        return write_array(v, out);
    case JSON_STRING:
        return k8s_json_write_string(json_string_value(v), json_string_length(v), out);
    case JSON_INTEGER:
        return k8s_buf_append_int(out, json_integer_value(v));
    case JSON_REAL:
        return write_real(json_real_value(v), out);
    case JSON_TRUE:
        return k8s_buf_append(out, "true", 4);
    case JSON_FALSE:
        return k8s_buf_append(out, "false", 5);
    case JSON_NULL:
        return k8s_buf_append(out, "null", 4);
    }
    return -K8S_EINVAL;
}
