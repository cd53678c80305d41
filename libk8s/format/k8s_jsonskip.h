/*
 * k8s_jsonskip — scanning JSON text fast: the byte scan the reader
 * (k8s_jsonload) and the writer (k8s_json) share, and the reader's fast
 * lane for finding where a value ends when it is written the way the API
 * server writes (compact, plain ASCII strings, simple escapes), checking
 * it on the way.
 *
 * k8s_json_scan finds the first byte of a string that needs attention:
 * for the writer the bytes JSON must escape, for the reader those and
 * non-ASCII bytes (k8s_json_plain_run). Its first 16 bytes are looked at
 * inline with SSE2, the rest out of line, 32 at a time with AVX2 when the
 * CPU has it (chosen at run time), else 16 with SSE2, 8, 1.
 * k8s_json_skip_compact passes one value that holds nothing else: no
 * whitespace, no \u escape, no non-ASCII byte. It answers only "valid,
 * ends here" or "not for me" — never "invalid": on anything it does not
 * take (including every error) it returns NULL and the caller's general
 * reader reads the value from its start and reports what is wrong. Every
 * value it accepts is one RFC 8259 accepts, with the same nesting limit.
 *
 * Thread-safety: pure functions.
 */
#ifndef K8S_JSONSKIP_H
#define K8S_JSONSKIP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#ifdef __x86_64__
#include <immintrin.h>
#endif
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "k8s_json_scan finds the first special byte of a word as its lowest bits"
#endif

/* The two sets of bytes a scan stops at: K8S_JSON_HIGH_PLAIN, the writer's
 * (a quote, a backslash, a control byte: what JSON must escape), and
 * K8S_JSON_HIGH_STOPS, the reader's (those and every non-ASCII byte, which
 * it validates as UTF-8). The flag is a constant at each call site. */
#define K8S_JSON_HIGH_PLAIN false
#define K8S_JSON_HIGH_STOPS true

/* Word-at-a-time test: the high bit of each byte of x a scan stops at.
 * Bits above the lowest may be false positives; the lowest is exact. */
static inline uint64_t k8s_json_word_special(uint64_t x, bool high)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t quote = x ^ (ones * '"'), bslash = x ^ (ones * '\\');
    uint64_t zero_q = (quote - ones) & ~quote, zero_b = (bslash - ones) & ~bslash;
    uint64_t ctrl = (x - ones * 0x20) & ~x; /* bytes < 0x20 */
    return (zero_q | zero_b | ctrl | (high ? x : 0)) & highs;
}

#ifdef __SSE2__
/* Bit i set when byte i of x is one a scan stops at. For the reader's set
 * one signed compare takes three of its four parts: x ^ 2 maps a quote to
 * 0x20 and keeps control bytes below it, and as signed bytes every
 * non-ASCII byte is below 0 — so x ^ 2 < 0x21 means control, quote or
 * non-ASCII. */
static inline unsigned k8s_json_mask16(__m128i x, bool high)
{
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    __m128i bs = _mm_cmpeq_epi8(x, bslash);
    if (high)
        return (unsigned)_mm_movemask_epi8(_mm_or_si128(
            bs, _mm_cmplt_epi8(_mm_xor_si128(x, _mm_set1_epi8(2)), _mm_set1_epi8(0x21))));
    __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(x, _mm_set1_epi8(0x1F)), _mm_set1_epi8(0x1F));
    return (unsigned)_mm_movemask_epi8(
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), bs), ctl));
}
#endif

#ifdef __x86_64__
/* The constants of k8s_json_mask32, in memory (defined out of line so a
 * caller loads them rather than builds them in registers, which costs
 * more than the test on a short string): 2, 0x21, 0x1F, '"', '\\'. */
extern const __m256i k8s_json_mask32_k[5];

/* k8s_json_mask16's test, 32 bytes wide (for functions built for AVX2,
 * called when the CPU has it). */
__attribute__((target("avx2"), always_inline)) static inline unsigned k8s_json_mask32(__m256i x,
                                                                                      bool high)
{
    const __m256i *k = k8s_json_mask32_k;
    __m256i bs = _mm256_cmpeq_epi8(x, k[4]);
    if (high)
        return (unsigned)_mm256_movemask_epi8(
            _mm256_or_si256(bs, _mm256_cmpgt_epi8(k[1], _mm256_xor_si256(x, k[0]))));
    __m256i ctl = _mm256_cmpeq_epi8(_mm256_max_epu8(x, k[2]), k[2]);
    return (unsigned)_mm256_movemask_epi8(
        _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(x, k[3]), bs), ctl));
}
#endif

/* The scan out of line, for what lies past a first block of 16 bytes (or
 * a text shorter than one): 32 bytes at a time with AVX2 when the CPU has
 * it (decided at run time), else 16 with SSE2, then 8, then 1. */
const unsigned char *k8s_json_scan_rest(const unsigned char *p, const unsigned char *end,
                                        bool high);

/* The first byte at or after p that a scan stops at (end when none). The
 * first 16 bytes are looked at inline (most strings end there), the rest
 * by k8s_json_scan_rest. */
static inline const unsigned char *k8s_json_scan(const unsigned char *p, const unsigned char *end,
                                                 bool high)
{
#ifdef __SSE2__
    if (end - p >= 16) {
        unsigned mask = k8s_json_mask16(_mm_loadu_si128((const __m128i *)p), high);
        if (mask)
            return p + __builtin_ctz(mask);
        p += 16;
    }
#endif
    return k8s_json_scan_rest(p, end, high);
}

/* The reader's scan: the first byte of a string literal that needs a
 * closer look (quote, backslash, control or non-ASCII byte). */
static inline const unsigned char *k8s_json_plain_run(const unsigned char *p,
                                                      const unsigned char *end)
{
    return k8s_json_scan(p, end, K8S_JSON_HIGH_STOPS);
}

/* The end of the value at p (one past its last byte), or NULL when the
 * value is not one this lane takes (see above). depth: containers already
 * open around it; the value may open up to max_depth - depth more. */
const unsigned char *k8s_json_skip_compact(const unsigned char *p, const unsigned char *end,
                                           int depth, int max_depth);

#endif
