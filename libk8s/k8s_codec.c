#include "k8s_codec.h"

#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <stdlib.h>
#include <string.h>

/* Nettle (GnuTLS's crypto library) rather than OpenSSL: no provider
 * initialisation, no allocation, and already loaded by the TLS server. */

char *k8s_base64_encode(const void *in, size_t n, size_t *ret_len)
{
    if (n > (size_t)1 << 30)
        return NULL;
    size_t len = BASE64_ENCODE_RAW_LENGTH(n);
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    base64_encode_raw(out, n, in);
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
    base64_encode_raw(tail, n, in);
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
