/*
 * k8s_json — a fast compact writer for jansson values, byte-for-byte the
 * output of json_dumps(v, JSON_COMPACT) (tests hold it to that).
 *
 * Why not json_dumps: jansson 2.14 runs a cycle check per object and array
 * (snprintf("%p") plus a hashtable insert and delete) and decodes UTF-8 one
 * code point at a time through function calls while escaping; on the
 * admission path that was ~40% of all instructions. This writer copies
 * runs of bytes that need no escaping with memcpy, and escapes a string
 * 16 bytes at a time (SSE2) into room reserved once. Values built by jansson
 * are valid UTF-8 and acyclic by construction, so neither check is needed.
 *
 * Thread-safety: reentrant. Ownership: appends to the caller's buffer.
 */
#ifndef K8S_JSON_H
#define K8S_JSON_H

#include <jansson.h>

#include "k8s_buf.h"
#include "k8s_err.h"

/* Append the compact JSON text of v to out. -K8S_EINVAL for NaN/infinite
 * reals (as json_dumps refuses them), k8s_buf errors otherwise; on failure
 * out has been reset (k8s_buf rules). */
int k8s_json_write(const json_t *v, struct k8s_buf *out) K8S_MUST_CHECK;

/* Append s as a JSON string literal (quotes included). s must be valid
 * UTF-8 of length n. */
int k8s_json_write_string(const char *s, size_t n, struct k8s_buf *out) K8S_MUST_CHECK;
/* The same without the quotes: the escaped content alone, for a string
 * written in pieces (a JSON Pointer built segment by segment). */
int k8s_json_write_chars(const char *s, size_t n, struct k8s_buf *out) K8S_MUST_CHECK;

/* For writers that reserve once for many pieces: s as a JSON string
 * literal stored at t, which must have K8S_JSON_STRING_MAX(n) bytes of
 * room (the worst case, and the writer's 16-byte stores); returns the end
 * of what it wrote. */
#define K8S_JSON_STRING_MAX(n) (6 * (size_t)(n) + 18)
char *k8s_json_put_string(char *t, const char *s, size_t n);

#endif
