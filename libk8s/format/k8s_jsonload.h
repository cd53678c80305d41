/*
 * k8s_jsonload — a validating JSON reader that builds jansson values only
 * for the members a filter names and skips the rest without allocating.
 *
 * Why: an admission webhook reads a few dozen fields of a pod that may be
 * 64 KiB or more (scripts, env lists, managedFields). jansson builds every
 * value, validating UTF-8 one code point at a time; this reader checks the
 * whole document just as strictly (RFC 8259 grammar, UTF-8 without
 * overlongs or surrogates, \u escapes with pairs, no NUL, nesting at most
 * K8S_JSONLOAD_MAX_DEPTH) but materialises only what the filter keeps, so
 * skipped bytes cost a table lookup each. Kept values are ordinary jansson
 * values (one JSON library for everything downstream). With a NULL filter
 * the result equals json_loadb's (tests hold it to that).
 *
 * Filter: an array of {key, keep} ended by {NULL}. key is a member name or
 * "*" (any member). keep NULL keeps the whole value; otherwise keep is the
 * filter for the value: for an object, its members; for an array, each
 * element's members. Scalars named by a filter are always kept.
 *
 * Readers of their own: k8s_json_pull_text hands the whole document to a
 * pull function, which walks it with the k8s_jpull calls below; they
 * validate every byte they pass as the loader does, and build no value.
 * The function must read the value to its end (the loader checks) and
 * returns 0, or -1 after a k8s_jpull call failed or k8s_jpull_fail.
 *
 * Semantics that differ from jansson only for skipped members: their
 * numbers are checked for syntax, not range.
 *
 * Thread-safety: reentrant. Ownership: *ret is a new reference.
 */
#ifndef K8S_JSONLOAD_H
#define K8S_JSONLOAD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "k8s_err.h"

#define K8S_JSONLOAD_MAX_DEPTH 2048

struct k8s_jpull; /* a reader positioned in a document being validated */
typedef int k8s_json_pull_fn(struct k8s_jpull *p, void *arg);

struct k8s_json_filter {
    const char *key;
    const struct k8s_json_filter *keep;
};

/* Parse buf[0..len) as one JSON document. On failure returns -K8S_EPARSE
 * with reterr->message "<problem> (line L, column C)", -K8S_ENOMEM, and
 * *ret is untouched. */
int k8s_json_load_filtered(const char *buf, size_t len, const struct k8s_json_filter *filter,
                           json_t **ret, struct k8s_error *reterr) K8S_MUST_CHECK;

/* A whole document read by fn alone (validated as above; fn must read the
 * one value to its end). Errors as k8s_json_load_filtered's. */
int k8s_json_pull_text(const char *buf, size_t len, k8s_json_pull_fn *fn, void *arg,
                       struct k8s_error *reterr) K8S_MUST_CHECK;

/* ---------- walking a value (inside a pull reader) ----------
 * Each call validates what it passes; on failure it returns -1 and the
 * document is refused. Keys and strings are decoded views valid until
 * the next call. */
enum k8s_jtype { K8S_J_OBJECT, K8S_J_ARRAY, K8S_J_STRING, K8S_J_NULL, K8S_J_OTHER };

/* The type of the value at the cursor (by its first byte). */
enum k8s_jtype k8s_jpull_peek(struct k8s_jpull *p);
/* Skip the value at the cursor. */
int k8s_jpull_skip(struct k8s_jpull *p) K8S_MUST_CHECK;
/* The string at the cursor: 1 with it; 0 when the value is of another
 * type (then skipped). */
int k8s_jpull_string(struct k8s_jpull *p, const char **s, size_t *n) K8S_MUST_CHECK;
/* The same, the decoded text copied into dst and NUL-terminated (*n its
 * length). dst must have room for k8s_jpull_left(p) + 1 bytes as it is
 * before the call: bytes past the NUL, up to that bound, may be written. */
int k8s_jpull_string_to(struct k8s_jpull *p, char *dst, size_t *n) K8S_MUST_CHECK;
/* Strings a pull reader keeps: one buffer made with room for
 * k8s_jpull_left(p) + 1 bytes when the reader starts. What a text decodes
 * to never takes more room than the text, so whatever is kept while
 * reading it fits. */
struct k8s_jpool {
    char *base;
    size_t used;
};
/* The string at the cursor, kept in pool: 1 with *out NUL-terminated (and
 * *n its length when n is not NULL); 0 when the value is of another type
 * (skipped; *out NULL, *n 0); -1 as for the others. */
K8S_MUST_CHECK static inline int k8s_jpull_keep(struct k8s_jpull *p, struct k8s_jpool *pool,
                                                const char **out, size_t *n)
{
    size_t len = 0;
    char *o = pool->base + pool->used;
    int is_string = k8s_jpull_string_to(p, o, &len);
    *out = is_string > 0 ? o : NULL;
    pool->used += is_string > 0 ? len + 1 : 0;
    if (n)
        *n = is_string > 0 ? len : 0;
    return is_string;
}
/* n bytes of text already read (a key's view) kept in pool: the copy,
 * NUL-terminated. */
static inline const char *k8s_jpool_put(struct k8s_jpool *pool, const char *s, size_t n)
{
    char *o = pool->base + pool->used;
    memcpy(o, s, n);
    o[n] = '\0';
    pool->used += n + 1;
    return o;
}
/* Is the key k[0..n) (a k8s_jpull_member view) name? */
static inline bool k8s_jkey_is(const char *k, size_t n, const char *name)
{
    return strlen(name) == n && !memcmp(k, name, n);
}
/* Walk the object at the cursor: *state = 0 first; 1 with the next key,
 * the cursor at its value (read it before the next call); 0 after '}'. */
int k8s_jpull_member(struct k8s_jpull *p, int *state, const char **key,
                     size_t *klen) K8S_MUST_CHECK;
/* Walk the array at the cursor likewise: 1 at the next element, 0 after ']'. */
int k8s_jpull_element(struct k8s_jpull *p, int *state) K8S_MUST_CHECK;
/* Bytes from the cursor to the end of the document (a bound on what the
 * rest of the value decodes to). */
size_t k8s_jpull_left(const struct k8s_jpull *p);
/* The cursor's place in the document's text (a view into the buffer given
 * to k8s_json_pull_text): after k8s_jpull_peek, the first byte of the
 * value there; right after reading a value, the byte past its end. So a
 * value's raw text is what lies between the two (trailing whitespace of
 * a document that has it included). */
const char *k8s_jpull_pos(const struct k8s_jpull *p);
/* Is the value at the cursor `true`? 1 when it is, 0 for any other value
 * (skipped); -1 as for the others. */
int k8s_jpull_true(struct k8s_jpull *p) K8S_MUST_CHECK;
/* Refuse the document with what (static text); returns -1. */
int k8s_jpull_fail(struct k8s_jpull *p, const char *what);

#endif
