/*
 * k8s_lines — newline framing of a byte stream (a watch response: one
 * JSON event per line, split across chunks and reads at random places).
 * Bytes are fed as they arrive; each complete line is handed to a callback
 * without its '\n' (a trailing '\r' is kept: JSON ignores it).
 *
 * Bounded: a line longer than max_line is an error, not unbounded growth.
 * Thread-safety: a framer belongs to one stream.
 */
#ifndef K8S_LINES_H
#define K8S_LINES_H

#include <stddef.h>

#include "k8s_buf.h"
#include "k8s_err.h"

typedef int (*k8s_lines_fn)(void *ud, const char *line, size_t len);

struct k8s_lines {
    struct k8s_buf partial; /* the start of a line not yet complete */
};

void k8s_lines_init(struct k8s_lines *l, size_t max_line);
void k8s_lines_done(struct k8s_lines *l);

/* Feed n bytes. Returns 0; 1 when fn returned non-zero (the rest is not
 * delivered); -K8S_ETOOBIG when a line exceeds max_line (the framer is
 * reset). Empty lines are skipped. */
int k8s_lines_feed(struct k8s_lines *l, const char *data, size_t n, k8s_lines_fn fn,
                   void *ud) K8S_MUST_CHECK;

/* Bytes of an unfinished line held back. */
size_t k8s_lines_pending(const struct k8s_lines *l);

#endif
