/*
 * k8s_buf — a growable byte buffer with a hard size cap (curl's dynbuf).
 *
 * The buffer is always NUL-terminated after its contents (the terminator is
 * not counted in len and not counted against the cap). On any failure the
 * buffer frees its memory and resets to empty, so callers never clean up
 * half-built data; appends report -K8S_ETOOBIG past the cap, -K8S_ENOMEM when
 * allocation fails.
 *
 * Thread-safety: none; a buffer belongs to one thread at a time
 * (k8s_strjoin is reentrant).
 */
#ifndef K8S_BUF_H
#define K8S_BUF_H

#include <stddef.h>
#include <string.h>

#include "k8s_err.h"

struct k8s_buf {
    char *data; /* NULL while empty */
    size_t len;
    size_t alloc;
    size_t max; /* cap on len */
};

void k8s_buf_init(struct k8s_buf *b, size_t max);
/* Free the contents; the buffer is empty and reusable. NULL-safe. */
void k8s_buf_done(struct k8s_buf *b);
/* Keep the memory, drop the contents. */
void k8s_buf_reset(struct k8s_buf *b);
/* Drop the first n bytes (at most len), keeping the rest; once nothing is
 * left the memory is freed too, so a buffer that holds bytes only while
 * they are in flight costs nothing between times. */
void k8s_buf_consume(struct k8s_buf *b, size_t n);

int k8s_buf_append_slow(struct k8s_buf *b, const void *p, size_t n) K8S_MUST_CHECK;

/* Append n bytes (inline when they fit: the JSON writer's hot path). */
K8S_MUST_CHECK static inline int k8s_buf_append(struct k8s_buf *b, const void *p, size_t n)
{
    if (n < b->alloc - b->len && n <= b->max - b->len) { /* no overflow: len <= alloc, max */
        memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
        return 0;
    }
    return k8s_buf_append_slow(b, p, n);
}

/* Append the string s (inline: a literal's length is known at the call). */
K8S_MUST_CHECK static inline int k8s_buf_appends(struct k8s_buf *b, const char *s)
{
    return k8s_buf_append(b, s, strlen(s));
}

/* Append each string of the NULL-ended array parts in turn. */
K8S_MUST_CHECK static inline int k8s_buf_catv(struct k8s_buf *b, const char *const parts[])
{
    int r = 0;
    for (const char *const *s = parts; *s && r == 0; s++)
        r = k8s_buf_append(b, *s, strlen(*s));
    return r;
}

/* Append each string argument in turn: k8s_buf_cat(b, a, c, NULL). A macro
 * over k8s_buf_catv (no va_list to walk); it ends the list with NULL
 * itself, so the caller's NULL is optional. */
#define k8s_buf_cat(b, ...) k8s_buf_catv((b), (const char *const[]){__VA_ARGS__, NULL})
/* Append the decimal digits of v (a '-' first when negative). */
int k8s_buf_append_int(struct k8s_buf *b, long long v) K8S_MUST_CHECK;
int k8s_buf_printf(struct k8s_buf *b, const char *fmt, ...) K8S_PRINTF(2, 3) K8S_MUST_CHECK;

int k8s_buf_reserve_slow(struct k8s_buf *b, size_t n, char **ret_tail) K8S_MUST_CHECK;

/* Make room for n more bytes and point *ret_tail at where they go (valid
 * until the next call); then k8s_buf_commit(b, m) with m <= n adds them.
 * Inline when they fit: writers reserve once and store bytes directly. */
K8S_MUST_CHECK static inline int k8s_buf_reserve(struct k8s_buf *b, size_t n, char **ret_tail)
{
    if (n < b->alloc - b->len && n <= b->max - b->len) {
        *ret_tail = b->data + b->len;
        return 0;
    }
    return k8s_buf_reserve_slow(b, n, ret_tail);
}

static inline void k8s_buf_commit(struct k8s_buf *b, size_t n)
{
    b->len += n;
    b->data[b->len] = '\0';
}

/* For writers that reserve room once (k8s_buf_reserve, or a bounded
 * array) and store into it: n bytes of s at t, returning their end. */
static inline char *k8s_put(char *t, const void *s, size_t n)
{
    memcpy(t, s, n);
    return t + n;
}

/* The most bytes k8s_put_int writes: "-9223372036854775808". */
#define K8S_INT_CHARS 20
/* The decimal digits of v at t (a '-' first when negative; no NUL),
 * returning their end. */
char *k8s_put_int(char *t, long long v);

/* Hand the contents out (caller frees with free(); never NULL unless OOM:
 * an empty buffer yields ""). The buffer is reset to empty. */
char *k8s_buf_take(struct k8s_buf *b, size_t *ret_len);

/* Read a whole file (at most max bytes). New buffer (free()),
 * NUL-terminated; -K8S_EIO / -K8S_ETOOBIG with reterr naming the path,
 * outputs untouched on failure. */
int k8s_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len,
                  struct k8s_error *reterr) K8S_MUST_CHECK;

/* Contents as a C string; "" while empty. Borrowed until the next call. */
const char *k8s_buf_str(const struct k8s_buf *b);

/* Not a k8s_buf: the strings of the NULL-ended array parts, one after the
 * other, into the fixed array out[0..cap), cut and NUL-terminated as
 * snprintf(out, cap, "%s%s...") would (cap > 0). Returns the length
 * written. For fixed fields on the admission path, where printf's own
 * cost was most of the copy; inline, so a literal piece's length is known
 * where it is written. */
static inline size_t k8s_strjoinv(char *out, size_t cap, const char *const parts[])
{
    size_t len = 0;
    for (const char *const *s = parts; *s && len + 1 < cap; s++) {
        size_t n = strnlen(*s, cap - 1 - len);
        memcpy(out + len, *s, n);
        len += n;
    }
    out[len] = '\0';
    return len;
}

/* k8s_strjoinv of the argument strings: k8s_strjoin(out, cap, a, b, NULL).
 * A macro (the list as an array, no va_list to walk); it ends the list
 * with NULL itself, so the caller's NULL is optional. */
#define k8s_strjoin(out, cap, ...)                                                                 \
    k8s_strjoinv((out), (cap), (const char *const[]){__VA_ARGS__, NULL})

#endif
