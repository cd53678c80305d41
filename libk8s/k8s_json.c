#include "k8s_json.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "plain_run() finds the first byte to escape in a word as its lowest bits"
#endif

/* 1 for bytes that must be escaped in a JSON string (jansson's set). */
static const unsigned char needs_escape[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,         1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, ['"'] = 1, ['\\'] = 1,
};

static int escape_byte(unsigned char c, struct k8s_buf *out)
{
    switch (c) {
    case '"':
        return k8s_buf_append(out, "\\\"", 2);
    case '\\':
        return k8s_buf_append(out, "\\\\", 2);
    case '\b':
        return k8s_buf_append(out, "\\b", 2);
    case '\f':
        return k8s_buf_append(out, "\\f", 2);
    case '\n':
        return k8s_buf_append(out, "\\n", 2);
    case '\r':
        return k8s_buf_append(out, "\\r", 2);
    case '\t':
        return k8s_buf_append(out, "\\t", 2);
    default:
        return k8s_buf_printf(out, "\\u%04X", c);
    }
}

/* The high bit of each byte of x that needs escaping (a quote, a
 * backslash, a control character); the lowest set bit is exact. */
static uint64_t word_needs_escape(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    return (((q - ones) & ~q) | ((b - ones) & ~b) | ((x - ones * 0x20) & ~x)) & highs;
}

/* The first byte in [p, end) that needs escaping, or end: 16 bytes per
 * test with SSE2, 8 with the word test, then one by one. */
static const unsigned char *plain_run(const unsigned char *p, const unsigned char *end)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                  ctl = _mm_set1_epi8(0x1F);
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        __m128i esc =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                         _mm_cmpeq_epi8(_mm_max_epu8(x, ctl), ctl)); /* x <= 0x1F */
        unsigned mask = (unsigned)_mm_movemask_epi8(esc);
        if (mask)
            return p + __builtin_ctz(mask);
        p += 16;
    }
#endif
    uint64_t w, m;
    while (end - p >= 8) {
        memcpy(&w, p, 8);
        if ((m = word_needs_escape(w)))
            return p + (__builtin_ctzll(m) >> 3); /* little-endian: lowest = first */
        p += 8;
    }
    while (p < end && !needs_escape[*p])
        p++;
    return p;
}

/* The common case, a string with nothing to escape: quote, bytes, quote
 * in one copy when they fit (n + 2 < room: room for the NUL too). */
static bool write_plain(const char *s, size_t n, struct k8s_buf *out)
{
    if (n + 2 >= out->alloc - out->len || n + 2 > out->max - out->len ||
        plain_run((const unsigned char *)s, (const unsigned char *)s + n) !=
            (const unsigned char *)s + n)
        return false;
    char *t = out->data + out->len;
    t[0] = '"';
    memcpy(t + 1, s, n);
    t[n + 1] = '"';
    t[n + 2] = '\0';
    out->len += n + 2;
    return true;
}

int k8s_json_write_string(const char *s, size_t n, struct k8s_buf *out)
{
    if (n < out->alloc && write_plain(s, n, out)) /* n < alloc: no overflow in n + 2 */
        return 0;
    int r = k8s_buf_append(out, "\"", 1);
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (r == 0 && p < end) {
        const unsigned char *run = p;
        p = plain_run(p, end);
        if (p > run)
            r = k8s_buf_append(out, run, (size_t)(p - run));
        if (r == 0 && p < end)
            r = escape_byte(*p++, out);
    }
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
