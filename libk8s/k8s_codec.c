#include "k8s_codec.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

char *k8s_base64_encode(const void *in, size_t n, size_t *ret_len)
{
    if (n > (size_t)1 << 30)
        return NULL;
    size_t cap = 4 * ((n + 2) / 3) + 1;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    int len = n ? EVP_EncodeBlock((unsigned char *)out, in, (int)n) : 0;
    out[len] = '\0';
    if (ret_len)
        *ret_len = (size_t)len;
    return out;
}

unsigned char *k8s_base64_decode(const char *in, size_t n, size_t *ret_len)
{
    /* EVP_DecodeBlock rejects whitespace; strip it first. */
    char *clean = malloc(n + 1);
    if (!clean)
        return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (in[i] != '\n' && in[i] != '\r' && in[i] != ' ' && in[i] != '\t')
            clean[m++] = in[i];
    unsigned char *out = NULL;
    if (m % 4 != 0 || m > (size_t)1 << 30)
        goto out_free_clean;
    out = malloc(m / 4 * 3 + 1);
    if (!out)
        goto out_free_clean;
    int len = m ? EVP_DecodeBlock(out, (unsigned char *)clean, (int)m) : 0;
    if (len < 0) {
        free(out);
        out = NULL;
        goto out_free_clean;
    }
    /* EVP_DecodeBlock counts padding bytes as output; drop them. */
    if (m >= 1 && clean[m - 1] == '=')
        len--;
    if (m >= 2 && clean[m - 2] == '=')
        len--;
    out[len] = '\0';
    if (ret_len)
        *ret_len = (size_t)len;
out_free_clean:
    free(clean);
    return out;
}

void k8s_sha256_hex(const void *in, size_t n, char out[static 65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(in, n, md, &mdlen, EVP_sha256(), NULL);
    static const char hex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < mdlen && i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}
