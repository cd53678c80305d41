/*
 * k8s_log — JSON-lines logging to stderr, for the edges of the programs
 * (request handlers, reconcile loops, main). Library modules never log.
 *
 * Each call writes exactly one line with a single write(2), so lines from
 * concurrent threads never interleave. With k8s_log_buffer on, the
 * per-request lines (k8s_log_fields at info and finer) are gathered and
 * written whole, in order, many per write(2): when the buffer fills and
 * at the interval; any other line first writes out what is gathered. Fields: "ts" (RFC 3339,
 * microseconds, UTC), "level", "msg", then the caller's fields in insertion order.
 *
 * Globals: the level (set once in main, read atomically) and the output fd.
 * Thread-safety: all functions may be called from any thread.
 */
#ifndef K8S_LOG_H
#define K8S_LOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "k8s_err.h"

enum k8s_log_level {
    K8S_LOG_ERROR = 0,
    K8S_LOG_WARN = 1,
    K8S_LOG_INFO = 2, /* default: one line per admission / reconcile outcome */
    K8S_LOG_DEBUG = 3,
    K8S_LOG_TRACE = 4,
};

void k8s_log_set_level(int level);
/* Redirect output (default 2). For tests. */
void k8s_log_set_fd(int fd);
bool k8s_log_enabled(int level);

/* Log msg with the fields of `fields` (steals the reference; may be NULL). */
void k8s_log_json(int level, const char *msg, json_t *fields);
/* A field of k8s_log_fields: a string (str != NULL) or an integer. */
struct k8s_log_field {
    const char *key;
    const char *str;
    long long num;
};

/* Log msg with n fields, written straight into the line (no JSON values
 * built, no allocation for a line under 2 KiB): for per-request lines.
 * Keys are plain names (letters, digits, '_', '-', '.'), written as they
 * are; string values are escaped. At most K8S_LOG_FIELDS_MAX fields are
 * written; more are dropped. */
#define K8S_LOG_FIELDS_MAX 32
void k8s_log_fields(int level, const char *msg, const struct k8s_log_field *f, size_t n);

/* Gather per-request lines for up to interval_ns (a thread writes them
 * out; nginx's access_log buffer=/flush=). Call with the signals the
 * program waits for already blocked (the thread inherits the mask).
 * -K8S_EINVAL for interval_ns <= 0, -K8S_ENOMEM; 0 when already on. */
int k8s_log_buffer(int64_t interval_ns) K8S_MUST_CHECK;
/* Write out what is gathered now (any thread). */
void k8s_log_flush(void);
/* Write out what is gathered, stop the thread; lines are written at once
 * again. Before the program exits. */
void k8s_log_unbuffer(void);

/* printf-style message with no extra fields. */
void k8s_logf(int level, const char *fmt, ...) K8S_PRINTF(2, 3);

#endif
