#include "k8s_codec.h"

#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Nettle (GnuTLS's crypto library) rather than OpenSSL: no provider
 * initialisation, no allocation, and already loaded by the TLS server.
 * Encoding is our own (issue 14): Nettle's encoder goes a byte at a time
 * (~10 instructions a byte, a tenth of an admission); this one takes 24
 * input bytes per step with AVX2, 12 with SSSE3 (chosen at run time), and
 * looks up two characters per 12 bits, six bytes per step, for the rest. */

static const char alphabet[65] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static uint16_t pairs[4096]; /* the two characters of each 12-bit value, in memory order */
static pthread_once_t pairs_once = PTHREAD_ONCE_INIT;

static void pairs_init(void)
{
    for (unsigned v = 0; v < 4096; v++) {
        const char two[2] = {alphabet[v >> 6], alphabet[v & 63]};
        memcpy(&pairs[v], two, 2);
    }
}

static uint64_t load_be64(const unsigned char *p) /* p[0..8), p[0] the top byte */
{
    uint64_t x;
    memcpy(&x, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    x = __builtin_bswap64(x);
#endif
    return x;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_SSSE3_PATH 1 /* and AVX2's, both chosen at run time */

/* 12 bytes -> 16 characters per step with SSSE3 (W. Mula and D. Lemire,
 * "Faster Base64 Encoding and Decoding Using AVX2 Instructions", 2018: the
 * shuffle, the multiply-shift split into 6-bit indices and the pshufb
 * offset lookup). Reads 16 bytes per step; returns the bytes consumed. */
__attribute__((target("ssse3"))) static size_t encode_ssse3(char *out, const unsigned char *in,
                                                            size_t n)
{
    const __m128i shuf = _mm_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    const __m128i offsets =
        _mm_setr_epi8('a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                      '0' - 52, '0' - 52, '0' - 52, '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0);
    size_t done = 0;
    for (; n - done >= 16; done += 12, out += 16) {
        __m128i x = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(in + done)), shuf);
        __m128i hi = _mm_mulhi_epu16(_mm_and_si128(x, _mm_set1_epi32(0x0fc0fc00)),
                                     _mm_set1_epi32(0x04000040));
        __m128i lo = _mm_mullo_epi16(_mm_and_si128(x, _mm_set1_epi32(0x003f03f0)),
                                     _mm_set1_epi32(0x01000010));
        __m128i idx = _mm_or_si128(hi, lo); /* 16 indices 0..63 */
        __m128i k = _mm_subs_epu8(idx, _mm_set1_epi8(51));
        k = _mm_or_si128(k,
                         _mm_and_si128(_mm_cmpgt_epi8(_mm_set1_epi8(26), idx), _mm_set1_epi8(13)));
        _mm_storeu_si128((__m128i *)out, _mm_add_epi8(_mm_shuffle_epi8(offsets, k), idx));
    }
    return done;
}

/* The same arithmetic on 24 bytes -> 32 characters per step with AVX2:
 * each 128-bit lane takes the 12 bytes of one SSSE3 step. Reads 28 bytes
 * per step; returns the bytes consumed. */
__attribute__((target("avx2"))) static size_t encode_avx2(char *out, const unsigned char *in,
                                                          size_t n)
{
    const __m256i shuf = _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10, 1, 0,
                                          2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    const __m256i offsets = _mm256_broadcastsi128_si256(
        _mm_setr_epi8('a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                      '0' - 52, '0' - 52, '0' - 52, '0' - 52, '+' - 62, '/' - 63, 'A', 0, 0));
    size_t done = 0;
    for (; n - done >= 28; done += 24, out += 32) {
        __m256i x = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(in + done))),
            _mm_loadu_si128((const __m128i *)(in + done + 12)), 1);
        x = _mm256_shuffle_epi8(x, shuf);
        __m256i hi = _mm256_mulhi_epu16(_mm256_and_si256(x, _mm256_set1_epi32(0x0fc0fc00)),
                                        _mm256_set1_epi32(0x04000040));
        __m256i lo = _mm256_mullo_epi16(_mm256_and_si256(x, _mm256_set1_epi32(0x003f03f0)),
                                        _mm256_set1_epi32(0x01000010));
        __m256i idx = _mm256_or_si256(hi, lo); /* 32 indices 0..63 */
        __m256i k = _mm256_subs_epu8(idx, _mm256_set1_epi8(51));
        k = _mm256_or_si256(k, _mm256_and_si256(_mm256_cmpgt_epi8(_mm256_set1_epi8(26), idx),
                                                _mm256_set1_epi8(13)));
        _mm256_storeu_si256((__m256i *)out, _mm256_add_epi8(_mm256_shuffle_epi8(offsets, k), idx));
    }
    return done;
}
#endif

/* Standard padded base64 of in[0..n) into out[0..BASE64_ENCODE_RAW_LENGTH(n)). */
static void encode(char *out, const unsigned char *in, size_t n)
{
    pthread_once(&pairs_once, pairs_init);
#ifdef HAVE_SSSE3_PATH
    if (n >= 28 && __builtin_cpu_supports("avx2")) {
        size_t done = encode_avx2(out, in, n);
        in += done;
        out += done / 3 * 4;
        n -= done;
    }
    if (n >= 16 && __builtin_cpu_supports("ssse3")) {
        size_t done = encode_ssse3(out, in, n);
        in += done;
        out += done / 3 * 4;
        n -= done;
    }
#endif
    for (; n >= 8; n -= 6, in += 6, out += 8) { /* reads 8, uses the first 6 */
        uint64_t x = load_be64(in);
        memcpy(out, &pairs[x >> 52], 2);
        memcpy(out + 2, &pairs[(x >> 40) & 4095], 2);
        memcpy(out + 4, &pairs[(x >> 28) & 4095], 2);
        memcpy(out + 6, &pairs[(x >> 16) & 4095], 2);
    }
    for (; n >= 3; n -= 3, in += 3, out += 4) {
        uint32_t x = (uint32_t)in[0] << 16 | (uint32_t)in[1] << 8 | in[2];
        memcpy(out, &pairs[x >> 12], 2);
        memcpy(out + 2, &pairs[x & 4095], 2);
    }
    if (n) {
        uint32_t x = (uint32_t)in[0] << 16 | (n == 2 ? (uint32_t)in[1] << 8 : 0);
        out[0] = alphabet[x >> 18];
        out[1] = alphabet[(x >> 12) & 63];
        out[2] = n == 2 ? alphabet[(x >> 6) & 63] : '=';
        out[3] = '=';
    }
}

char *k8s_base64_encode(const void *in, size_t n, size_t *ret_len)
{
    if (n > (size_t)1 << 30)
        return NULL;
    size_t len = BASE64_ENCODE_RAW_LENGTH(n);
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    encode(out, in, n);
    out[len] = '\0';
    if (ret_len)
        *ret_len = len;
    return out;
}

int k8s_base64_append(struct k8s_buf *out, const void *in, size_t n)
{
    char *tail;
    if (n > (size_t)1 << 30)
        return -K8S_ETOOBIG;
    size_t len = BASE64_ENCODE_RAW_LENGTH(n);
    int r = k8s_buf_reserve(out, len, &tail);
    if (r < 0)
        return r;
    encode(tail, in, n);
    k8s_buf_commit(out, len);
    return 0;
}

unsigned char *k8s_base64_decode(const char *in, size_t n, size_t *ret_len)
{
    struct base64_decode_ctx ctx;
    unsigned char *out = malloc(BASE64_DECODE_LENGTH(n) + 1);
    size_t len = 0;
    if (!out)
        return NULL;
    base64_decode_init(&ctx);
    for (size_t i = 0; i < n; i++) { /* whitespace is allowed between groups */
        if (in[i] == '\n' || in[i] == '\r' || in[i] == ' ' || in[i] == '\t')
            continue;
        size_t got = 0;
        if (!base64_decode_update(&ctx, &got, out + len, 1, in + i))
            goto fail;
        len += got;
    }
    if (!base64_decode_final(&ctx))
        goto fail;
    out[len] = '\0';
    if (ret_len)
        *ret_len = len;
    return out;
fail:
    free(out);
    return NULL;
}

_Static_assert(K8S_SHA256_HEX_SIZE == 2 * SHA256_DIGEST_SIZE + 1, "hex digest size");

void k8s_sha256_hex(const void *in, size_t n, char out[static K8S_SHA256_HEX_SIZE])
{
    struct sha256_ctx ctx;
    uint8_t md[SHA256_DIGEST_SIZE];
    static const char hex[] = "0123456789abcdef";
    sha256_init(&ctx);
    sha256_update(&ctx, n, in);
    sha256_digest(&ctx, sizeof(md), md);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[2 * SHA256_DIGEST_SIZE] = '\0';
}
