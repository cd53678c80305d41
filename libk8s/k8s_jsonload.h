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
 * Spans: an entry with span = i > 0 keeps no value; the member is
 * validated like any other and spans[i - 1] gets its text (the value's
 * bytes in buf, from its first to its last byte), for a reader of its own.
 * The last occurrence counts, as for kept members: a span starts absent
 * (p NULL) with each object its entry's parent filter applies to. Name
 * span members through objects only (inside an array each element would
 * overwrite the last).
 *
 * Semantics that differ from jansson only for skipped members: their
 * numbers are checked for syntax, not range.
 *
 * Thread-safety: reentrant. Ownership: *ret is a new reference.
 */
#ifndef K8S_JSONLOAD_H
#define K8S_JSONLOAD_H

#include <jansson.h>
#include <stddef.h>

#include "k8s_err.h"

#define K8S_JSONLOAD_MAX_DEPTH 2048

struct k8s_json_filter {
    const char *key;
    const struct k8s_json_filter *keep;
    int span; /* > 0: not kept; its text goes to spans[span - 1] */
};

struct k8s_json_span {
    const char *p; /* NULL: the member was absent */
    size_t n;
};

/* Parse buf[0..len) as one JSON document. On failure returns -K8S_EPARSE
 * with reterr->message "<problem> (line L, column C)", -K8S_ENOMEM, and
 * *ret is untouched. */
int k8s_json_load_filtered(const char *buf, size_t len, const struct k8s_json_filter *filter,
                           json_t **ret, struct k8s_error *reterr) K8S_MUST_CHECK;

/* The same, and spans[0..nspans) receive the members the filter names
 * with a span (each absent, p NULL, when not met). Borrowed from buf. On
 * failure the spans are unspecified. */
int k8s_json_load_spans(const char *buf, size_t len, const struct k8s_json_filter *filter,
                        struct k8s_json_span *spans, size_t nspans, json_t **ret,
                        struct k8s_error *reterr) K8S_MUST_CHECK;

#endif
