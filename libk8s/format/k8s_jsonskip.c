#include "k8s_jsonskip.h"

#include <stdbool.h>

/* The escapes taken here (\u is left to the general reader). */
static const bool simple_escape[256] = {
    ['"'] = 1, ['\\'] = 1, ['/'] = 1, ['b'] = 1, ['f'] = 1, ['n'] = 1, ['r'] = 1, ['t'] = 1};

/* ---------- the scan ---------- */

/* Fewer than 16 bytes left: 8 at a time, then 1. */
static __attribute__((noinline)) const unsigned char *scan_tail(const unsigned char *p,
                                                                const unsigned char *end, bool high)
{
    uint64_t w, m;
    while (end - p >= 8) {
        memcpy(&w, p, 8);
        if ((m = k8s_json_word_special(w, high)))
            return p + (__builtin_ctzll(m) >> 3); /* little-endian: lowest = first */
        p += 8;
    }
    while (p < end && *p >= 0x20 && (!high || *p < 0x80) && *p != '"' && *p != '\\')
        p++;
    return p;
}

#ifdef __x86_64__
#define REP32(c)                                                                                   \
    {                                                                                              \
        (c) * 0x0101010101010101LL, (c)*0x0101010101010101LL, (c)*0x0101010101010101LL,            \
            (c)*0x0101010101010101LL                                                               \
    }
const __m256i k8s_json_mask32_k[5] = {REP32(2), REP32(0x21), REP32(0x1F), REP32('"'), REP32('\\')};

/* Bit i set when byte i of the 32 at p is one a scan stops at. */
__attribute__((target("avx2"), always_inline)) static inline unsigned mask32(const unsigned char *p,
                                                                             bool high)
{
    return k8s_json_mask32(_mm256_loadu_si256((const __m256i *)p), high);
}

/* The whole 32-byte blocks from p: the first stop in them, or where they end. */
__attribute__((target("avx2"), always_inline)) static inline const unsigned char *
scan_avx2(const unsigned char *p, const unsigned char *end, bool high)
{
    for (const unsigned char *last = end - 32; p <= last; p += 32) {
        unsigned mask = mask32(p, high);
        if (mask)
            return p + __builtin_ctz(mask);
    }
    return p;
}

__attribute__((target("avx2"))) static const unsigned char *
scan_avx2_stops(const unsigned char *p, const unsigned char *end)
{
    return scan_avx2(p, end, K8S_JSON_HIGH_STOPS);
}

__attribute__((target("avx2"))) static const unsigned char *
scan_avx2_plain(const unsigned char *p, const unsigned char *end)
{
    return scan_avx2(p, end, K8S_JSON_HIGH_PLAIN);
}
#endif

static inline __attribute__((always_inline)) const unsigned char *
scan_rest(const unsigned char *p, const unsigned char *end, bool high)
{
#ifdef __x86_64__
    if (end - p >= 32 && __builtin_cpu_supports("avx2")) {
        p = high ? scan_avx2_stops(p, end) : scan_avx2_plain(p, end);
        if (end - p >= 32)
            return p; /* a stop; else fewer than 32 bytes are left */
    }
#endif
#ifdef __SSE2__
    if (end - p >= 16) {
        for (const unsigned char *last = end - 16; p <= last; p += 16) {
            unsigned mask = k8s_json_mask16(_mm_loadu_si128((const __m128i *)p), high);
            if (mask)
                return p + __builtin_ctz(mask);
        }
    }
#endif
    return scan_tail(p, end, high);
}

const unsigned char *k8s_json_scan_rest(const unsigned char *p, const unsigned char *end, bool high)
{
    return high ? scan_rest(p, end, K8S_JSON_HIGH_STOPS) : scan_rest(p, end, K8S_JSON_HIGH_PLAIN);
}

/* ---------- strings ---------- */

/* The whole blocks of w bytes from p (mask: the reader's stops in the w
 * bytes at p): a block's stops are taken in turn, so simple escapes cost
 * a few instructions each. *done when the string ended (one past its
 * quote) or is not for this lane (NULL); else fewer than w bytes are left
 * from the result. */
#define STRING_BLOCKS(p, end, w, mask, done)                                                       \
    do {                                                                                           \
        for (; (end) - (p) >= (w);) {                                                              \
            unsigned m_ = (mask);                                                                  \
            const unsigned char *next_ = (p) + (w);                                                \
            while (m_) {                                                                           \
                unsigned i_ = (unsigned)__builtin_ctz(m_);                                         \
                const unsigned char *s_ = (p) + i_;                                                \
                if (*s_ == '"')                                                                    \
                    return *(done) = true, s_ + 1;                                                 \
                if (*s_ != '\\' || (end)-s_ < 2 || !simple_escape[s_[1]])                          \
                    return *(done) = true, NULL;                                                   \
                if (i_ + 2 >= (w)) { /* the escape ends past the block */                          \
                    next_ = s_ + 2;                                                                \
                    break;                                                                         \
                }                                                                                  \
                m_ &= ~0u << (i_ + 2); /* the escaped byte is no stop */                           \
            }                                                                                      \
            (p) = next_;                                                                           \
        }                                                                                          \
    } while (0)

#ifdef __x86_64__
__attribute__((target("avx2"))) static const unsigned char *
string_avx2(const unsigned char *p, const unsigned char *end, bool *done)
{
    STRING_BLOCKS(p, end, 32, mask32(p, K8S_JSON_HIGH_STOPS), done);
    *done = false;
    return p;
}
#endif

/* The string's bytes from p, past its first 16: blocks of 32 with AVX2,
 * then 16 with SSE2, then a byte scan. */
static __attribute__((noinline)) const unsigned char *string_rest(const unsigned char *p,
                                                                  const unsigned char *end)
{
    bool done = false;
#ifdef __x86_64__
    if (end - p >= 32 && __builtin_cpu_supports("avx2") && (p = string_avx2(p, end, &done), done))
        return p;
#endif
#ifdef __SSE2__
    STRING_BLOCKS(p, end, 16,
                  k8s_json_mask16(_mm_loadu_si128((const __m128i *)p), K8S_JSON_HIGH_STOPS), &done);
#endif
    for (;;) {
        p = k8s_json_plain_run(p, end);
        if (p >= end)
            return NULL;
        if (*p == '"')
            return p + 1;
        if (*p != '\\' || end - p < 2 || !simple_escape[p[1]])
            return NULL;
        p += 2;
    }
}

/* A string literal at p (its quote): one past its closing quote. Most end
 * within 16 bytes, plain: looked at inline. */
static const unsigned char *string(const unsigned char *p, const unsigned char *end)
{
    p++;
#ifdef __SSE2__
    if (end - p >= 16) {
        unsigned m = k8s_json_mask16(_mm_loadu_si128((const __m128i *)p), K8S_JSON_HIGH_STOPS);
        if (m && p[__builtin_ctz(m)] == '"')
            return p + __builtin_ctz(m) + 1;
    }
#endif
    return string_rest(p, end);
}

/* A member's "key": at p: one past the colon. */
static const unsigned char *key(const unsigned char *p, const unsigned char *end)
{
    if (p >= end || *p != '"' || !(p = string(p, end)) || p >= end || *p != ':')
        return NULL;
    return p + 1;
}

static bool digit(const unsigned char *p, const unsigned char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

/* RFC 8259's number at p: one past it. */
static const unsigned char *number(const unsigned char *p, const unsigned char *end)
{
    if (*p == '-')
        p++;
    if (!digit(p, end))
        return NULL;
    if (*p++ != '0')
        while (digit(p, end))
            p++;
    if (p < end && *p == '.') {
        if (!digit(++p, end))
            return NULL;
        while (digit(p, end))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!digit(p, end))
            return NULL;
        while (digit(p, end))
            p++;
    }
    return p;
}

static const unsigned char *word(const unsigned char *p, const unsigned char *end, const char *w,
                                 size_t n)
{
    return (size_t)(end - p) >= n && !memcmp(p, w, n) ? p + n : NULL;
}

/* A scalar at p: one past it. */
static const unsigned char *scalar(const unsigned char *p, const unsigned char *end)
{
    switch (*p) {
    case '"':
        return string(p, end);
    case 't':
        return word(p, end, "true", 4);
    case 'f':
        return word(p, end, "false", 5);
    case 'n':
        return word(p, end, "null", 4);
    default:
        return *p == '-' || (*p >= '0' && *p <= '9') ? number(p, end) : NULL;
    }
}

const unsigned char *k8s_json_skip_compact(const unsigned char *p, const unsigned char *end,
                                           int depth, int max_depth)
{
    uint64_t objects = 0; /* bit i: the container at level i is an object */
    int open = 0;
    for (;;) {
        if (p >= end)
            return NULL;
        if (*p == '{' || *p == '[') { /* a container: its first item, or its end */
            bool obj = *p++ == '{';
            if (open == 63 || depth + open + 1 > max_depth)
                return NULL;
            objects = objects << 1 | obj;
            open++;
            if (p < end && *p == (obj ? '}' : ']')) {
                p++;
                open--, objects >>= 1;
            } else {
                if (obj && !(p = key(p, end)))
                    return NULL;
                continue;
            }
        } else if (!(p = scalar(p, end))) {
            return NULL;
        }
        for (;;) { /* after a value: the next item, or the ends of containers */
            if (!open)
                return p;
            if (p >= end)
                return NULL;
            if (*p == ',') {
                p++;
                if ((objects & 1) && !(p = key(p, end)))
                    return NULL;
                break;
            }
            if (*p != ((objects & 1) ? '}' : ']'))
                return NULL;
            p++;
            open--, objects >>= 1;
        }
    }
}
