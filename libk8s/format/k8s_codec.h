/*
 * k8s_codec — base64 and SHA-256: decoding and hashing through Nettle;
 * base64 encoding table-driven here (Nettle's goes a byte at a time and
 * was a tenth of an admission's cost).
 *
 * Thread-safety: all functions are reentrant.
 */
#ifndef K8S_CODEC_H
#define K8S_CODEC_H

#include <stddef.h>

#include "k8s_buf.h"
#include "k8s_err.h"

/* Standard base64 (RFC 4648, padded, no line breaks) of in[0..n).
 * Returns new NUL-terminated string (free()), NULL on OOM. */
char *k8s_base64_encode(const void *in, size_t n, size_t *ret_len);

/* Append the standard base64 of in[0..n) to out (k8s_buf error rules). */
int k8s_base64_append(struct k8s_buf *out, const void *in, size_t n) K8S_MUST_CHECK;

/* Decode standard base64 (whitespace ignored). Returns new buffer (free()),
 * NUL-terminated for convenience, length in *ret_len; NULL when malformed
 * or on OOM. */
unsigned char *k8s_base64_decode(const char *in, size_t n, size_t *ret_len);

/* Bytes of a lower-case hex SHA-256 with its NUL. */
#define K8S_SHA256_HEX_SIZE 65

/* Lower-case hex SHA-256 of in[0..n) into out. */
void k8s_sha256_hex(const void *in, size_t n, char out[static K8S_SHA256_HEX_SIZE]);

#endif
