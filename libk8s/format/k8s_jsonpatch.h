/*
 * k8s_jsonpatch — JSON Pointer (RFC 6901) and JSON Patch (RFC 6902) on
 * jansson values: building patches (pointer escaping) and applying them.
 *
 * Ownership: functions named *_new steal the value they are given (jansson
 * style); k8s_jsonptr_get returns a borrowed reference; k8s_jsonpatch_apply
 * returns a new document and never modifies its input.
 *
 * Thread-safety: reentrant; a json_t must not be mutated concurrently.
 */
#ifndef K8S_JSONPATCH_H
#define K8S_JSONPATCH_H

#include <jansson.h>
#include <stddef.h>

#include "k8s_buf.h"
#include "k8s_err.h"

/* Append "/" + seg to a pointer under construction, escaping '~' as "~0"
 * and '/' as "~1". On failure the buffer is reset (k8s_buf rules). */
int k8s_jsonptr_push(struct k8s_buf *ptr, const char *seg) K8S_MUST_CHECK;
/* Append "/<idx>". */
int k8s_jsonptr_push_index(struct k8s_buf *ptr, size_t idx) K8S_MUST_CHECK;
/* Append "/-" (the end of an array, for "add"). */
int k8s_jsonptr_push_end(struct k8s_buf *ptr) K8S_MUST_CHECK;

/* Resolve ptr within doc. Borrowed reference, or NULL when the pointer is
 * malformed or names nothing. "" is the whole document. */
json_t *k8s_jsonptr_get(const json_t *doc, const char *ptr);

/* Append {"op": op, "path": path[, "value": value]} to the patch array.
 * Steals value (which may be NULL for "remove"); on failure value is
 * released and the patch is unchanged. */
int k8s_jsonpatch_append_new(json_t *patch, const char *op, const char *path,
                             json_t *value) K8S_MUST_CHECK;

/* Apply an RFC 6902 patch (an array of operations) to doc. On success
 * *ret_doc is a new document; doc is never modified. On failure *ret_doc is
 * untouched, -K8S_EINVAL is returned and reterr names the failing
 * operation (its index, op and path) and the reason. */
int k8s_jsonpatch_apply(const json_t *doc, const json_t *patch, json_t **ret_doc,
                        struct k8s_error *reterr) K8S_MUST_CHECK;

/* RFC 6902 equality: numbers compare by value (1 == 1.0), objects by
 * members regardless of order, arrays element-wise. */
int k8s_json_equal(const json_t *a, const json_t *b);

#endif
