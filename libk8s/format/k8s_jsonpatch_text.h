/*
 * k8s_jsonpatch_text — an RFC 6902 patch written straight as compact JSON
 * text, one operation at a time: the bytes k8s_json_write gives for the
 * tree that k8s_jsonpatch_append_new builds, without the tree. The
 * admission path writes a few dozen operations per pod, and building the
 * tree and serialising it were half of an admission's cost (issue 14).
 * Those that apply or inspect a patch get the tree from the text
 * (k8s_jsonpatch_text_tree).
 *
 * Writing an operation: k8s_jsonpatch_text_begin (op and path), then the
 * value written into t->buf with k8s_json_write_string or literal
 * k8s_buf_append calls, then k8s_jsonpatch_text_end. Values must be
 * compact JSON, members in the order a tree would hold them. A path built
 * from pieces goes straight into the text, without a pointer buffer:
 * k8s_jsonpatch_text_open, then _path / _path_seg / _path_index calls,
 * then k8s_jsonpatch_text_value (what _begin does for a whole path).
 *
 * Thread-safety: none; a patch belongs to one thread at a time.
 * Ownership: the struct owns its buffer (release with
 * k8s_jsonpatch_text_done; safe on a zeroed struct). Failure: -K8S_ENOMEM
 * or -K8S_ETOOBIG; the text is then empty (k8s_buf rules) and the caller
 * drops it.
 */
#ifndef K8S_JSONPATCH_TEXT_H
#define K8S_JSONPATCH_TEXT_H

#include <jansson.h>
#include <stddef.h>

#include "k8s_buf.h"
#include "k8s_err.h"

struct k8s_jsonpatch_text {
    struct k8s_buf buf; /* "[op,op,..." (and "]" after k8s_jsonpatch_text_json) */
    size_t n;           /* operations written */
    size_t at;          /* where the operation begun last starts (its "{") */
    int closed;         /* the "]" is there */
};

void k8s_jsonpatch_text_init(struct k8s_jsonpatch_text *t);
void k8s_jsonpatch_text_done(struct k8s_jsonpatch_text *t);

/* {"op":<op>,"path":<path>,"value": — the value follows in t->buf. */
int k8s_jsonpatch_text_begin(struct k8s_jsonpatch_text *t, const char *op,
                             const char *path) K8S_MUST_CHECK;

/* What _open, _path(base), _path(mid), _path_seg(seg) and _value write,
 * in one reservation: base and mid are pointer text (NULL for none), seg
 * a member name (NULL for none). The value follows. */
int k8s_jsonpatch_text_begin_at(struct k8s_jsonpatch_text *t, const char *op, const char *base,
                                const char *mid, const char *seg) K8S_MUST_CHECK;

/* {"op":<op>,"path":" — the path's pieces follow. */
int k8s_jsonpatch_text_open(struct k8s_jsonpatch_text *t, const char *op) K8S_MUST_CHECK;
/* Open an operation with the len bytes at `at` of the text: the beginning
 * of an earlier one (t->at then), its op and path so far, copied rather
 * than written again — the many operations on one container's env.
 * -K8S_EINVAL when they are not in the text. */
int k8s_jsonpatch_text_open_as(struct k8s_jsonpatch_text *t, size_t at, size_t len) K8S_MUST_CHECK;
/* Pointer text ptr[0..n) as it is ("/spec/containers/0"; JSON-escaped here). */
int k8s_jsonpatch_text_path(struct k8s_jsonpatch_text *t, const char *ptr, size_t n) K8S_MUST_CHECK;
/* "/" and the reference token of seg ('~' as "~0", '/' as "~1"). */
int k8s_jsonpatch_text_path_seg(struct k8s_jsonpatch_text *t, const char *seg) K8S_MUST_CHECK;

#define K8S_JSONPATCH_TEXT_END ((size_t)-1) /* the index "-": past the last element */

/* "/<i>", or "/-" for K8S_JSONPATCH_TEXT_END. */
int k8s_jsonpatch_text_path_index(struct k8s_jsonpatch_text *t, size_t i) K8S_MUST_CHECK;
/* End the path: ","value": — the value follows. (Inline: one append.) */
K8S_MUST_CHECK static inline int k8s_jsonpatch_text_value(struct k8s_jsonpatch_text *t)
{
    return k8s_buf_append(&t->buf, "\",\"value\":", 10);
}

/* Close the operation begun last. */
K8S_MUST_CHECK static inline int k8s_jsonpatch_text_end(struct k8s_jsonpatch_text *t)
{
    t->n++;
    return k8s_buf_append(&t->buf, "}", 1);
}
/* One operation whose value is the string value. */
int k8s_jsonpatch_text_string(struct k8s_jsonpatch_text *t, const char *op, const char *path,
                              const char *value) K8S_MUST_CHECK;

/* The patch as a JSON array ("[]" when empty): borrowed, valid until the
 * next call on t; its length in *ret_len. NULL on OOM. */
const char *k8s_jsonpatch_text_json(struct k8s_jsonpatch_text *t, size_t *ret_len);

/* The patch as a jansson array (new reference), or NULL on OOM. */
json_t *k8s_jsonpatch_text_tree(struct k8s_jsonpatch_text *t);

#endif
