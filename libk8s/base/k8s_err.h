/*
 * k8s_err — the one error convention of the tree.
 *
 * Every fallible function returns int: 0 (or a count >= 0) on success, a
 * negative enum k8s_err on failure. Detail travels in an optional,
 * caller-provided struct k8s_error (NULL allowed), modelled on jansson's
 * json_error_t: it is written only on failure, never allocated, and carries
 * the API server's Status reason/message when there is one.
 *
 * Thread-safety: all functions are reentrant; a struct k8s_error belongs to
 * its caller.
 */
#ifndef K8S_ERR_H
#define K8S_ERR_H

#include <stdbool.h>
#include <stddef.h>

#define K8S_MUST_CHECK   __attribute__((warn_unused_result))
#define K8S_PRINTF(a, b) __attribute__((format(printf, a, b)))

enum k8s_err {
    K8S_OK = 0,
    K8S_ENOMEM,     /* allocation failed */
    K8S_EINVAL,     /* bad argument or bad input (user error) */
    K8S_EIO,        /* I/O or connection failure */
    K8S_ETIMEDOUT,  /* deadline passed */
    K8S_ETLS,       /* TLS / certificate problem */
    K8S_EPARSE,     /* malformed JSON/YAML/protocol data */
    K8S_ENOTFOUND,  /* 404 / no such object */
    K8S_ECONFLICT,  /* 409 */
    K8S_EGONE,      /* 410: resourceVersion too old */
    K8S_ETHROTTLED, /* 429 */
    K8S_ESERVER,    /* 5xx */
    K8S_EINVALID,   /* 422: the server rejected the object */
    K8S_EFORBIDDEN, /* 401/403 */
    K8S_ETOOBIG,    /* size cap exceeded */
    K8S_EUNAVAIL,   /* value not available (standalone, not watched) */
    K8S_ETERMINAL,  /* do not retry */
    K8S_ERR_MAX
};

struct k8s_error {
    int err;           /* negative enum k8s_err */
    int http_status;   /* HTTP status when the failure came from a server, else 0 */
    int retry_after_s; /* Retry-After seconds, 0 when absent */
    char reason[64];   /* machine-readable reason (Status.reason), may be "" */
    char message[512]; /* human-readable, one line */
};

/* Static string naming err (negative or positive); never NULL. */
const char *k8s_strerror(int err);

/* Fill *reterr (when not NULL) and return err, so callers can write
 * `return k8s_error_set(reterr, -K8S_EINVAL, "bad %s", x);`. The message
 * is always one line of valid UTF-8 without control characters, whatever
 * went into it: each control character or invalid byte becomes '?', and a
 * multi-byte character cut by the 511-byte bound is dropped whole (the
 * message goes into JSON: a status, an Event, a log line). */
int k8s_error_set(struct k8s_error *reterr, int err, const char *fmt, ...) K8S_PRINTF(3, 4);

/* Prefix reterr->message with "<prefix>: " (no-op when reterr is NULL). */
void k8s_error_prefix(struct k8s_error *reterr, const char *fmt, ...) K8S_PRINTF(2, 3);

/* A user's value (n bytes at s), shown in a message: at most K8S_QUOTE_SHOWN bytes of it,
 * control characters and invalid UTF-8 escaped (\n, \t, \r, \xNN,
 * \u0085), and when s is longer, "..." and its length in bytes. Writes
 * into out (K8S_QUOTE_CAP bytes) and returns it, for a printf argument:
 *   char q[K8S_QUOTE_CAP];
 *   k8s_error_set(err, -K8S_EINVAL, "name: \"%s\" is not valid", k8s_quote(q, name, strlen(name)));
 */
#define K8S_QUOTE_SHOWN 48
#define K8S_QUOTE_CAP   (K8S_QUOTE_SHOWN * 6 + 40)
const char *k8s_quote(char out[K8S_QUOTE_CAP], const char *s, size_t n);

/* true for errors worth retrying with backoff (I/O, timeouts, 429, 5xx). */
bool k8s_err_is_transient(int err);

#endif
