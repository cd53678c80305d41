/*
 * wh_attrs — OpenTelemetry resource attributes in the
 * OTEL_RESOURCE_ATTRIBUTES form "k1=v1,k2=v2": parse, set with
 * precedence, percent-encode what we write (DESIGN §3.5), and merge into a
 * value the user already set (user keys win, user pairs kept as written).
 *
 * Keys and values are stored in the form written into the variable. What
 * we write is text that must reach the process literally, so the encoder
 * escapes every octet outside the W3C baggage value octets (space, '"',
 * ',', ';', '\\', controls, DEL, non-ASCII) and also '%' (so input that
 * looks encoded stays what it was), '=' (older opentelemetry-python splits
 * on every '=') and '$' (so the kubelet expands no "$(VAR)" of an
 * annotation). The only references we write are our own
 * $(OTEL_RESOURCE_ATTRIBUTES_*), through wh_attrs_set_ref.
 *
 * Thread-safety: a struct wh_attrs belongs to one thread. Ownership: the
 * struct owns its strings, all in one allocation with the pair array (kv:
 * no allocation per pair); wh_attrs_done releases it (NULL-safe). The
 * struct may be moved (copied by value, then the old one re-initialised):
 * nothing points into the struct itself. Pointers to keys and values
 * (wh_attrs_get, kv) are valid until the next set/put/parse on the set.
 * Failure: -K8S_ENOMEM (the set is left as it was).
 */
#ifndef WH_ATTRS_H
#define WH_ATTRS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "k8s_buf.h"
#include "k8s_err.h"

struct wh_attr {
    char *key;   /* as written into the variable; NUL-terminated, in the set's block */
    char *value; /* as written into the variable; likewise */
    size_t key_len, value_len;
};

struct wh_attrs {
    struct wh_attr *kv; /* the set's one block: kv[cap], then the text */
    size_t n, cap;
    char *text;        /* the pairs' text, "key\0value\0" each, inside kv's block */
    size_t used, room; /* bytes of text used and available */
};

void wh_attrs_init(struct wh_attrs *a);
void wh_attrs_done(struct wh_attrs *a);

/* Set key to value, both literal text (encoded here); an existing key is
 * replaced in place. */
int wh_attrs_set(struct wh_attrs *a, const char *key, const char *value) K8S_MUST_CHECK;
/* Set key to the reference "$(var)" (written as it is: the kubelet
 * expands it). For our own OTEL_RESOURCE_ATTRIBUTES_* variables only. */
int wh_attrs_set_ref(struct wh_attrs *a, const char *key, const char *var) K8S_MUST_CHECK;
/* Set key to value, both already in written form (copied as they are). */
int wh_attrs_put(struct wh_attrs *a, const char *key, const char *value) K8S_MUST_CHECK;

/* Written value of key (borrowed), or NULL. key in written form. */
const char *wh_attrs_get(const struct wh_attrs *a, const char *key);
bool wh_attrs_has_prefix(const struct wh_attrs *a, const char *prefix);

/* Parse annotation text "k=v,..." (literal text, split at ',' and at the
 * first '=' of each item, items trimmed) and set every pair, encoded
 * (later pairs and later calls win). Items without '=' or with an empty
 * key are skipped and named in `warnings` (an array, may be NULL) with
 * `where` as context. */
int wh_attrs_parse(struct wh_attrs *a, const char *s, const char *where,
                   json_t *warnings) K8S_MUST_CHECK;

/* Read a user's OTEL_RESOURCE_ATTRIBUTES value: every "k=v" item, trimmed,
 * kept as written (later pairs win); other items are ignored. */
int wh_attrs_parse_user(struct wh_attrs *a, const char *s) K8S_MUST_CHECK;

/* "k1=v1,k2=v2" in insertion order. New string (free()), NULL on OOM. */
char *wh_attrs_format(const struct wh_attrs *a);
/* The same appended to out (k8s_buf error rules). */
int wh_attrs_write(const struct wh_attrs *a, struct k8s_buf *out) K8S_MUST_CHECK;

/* The user's value with ",k=v" appended for each of ours whose key the
 * user did not set. New string (free()), NULL on OOM. */
char *wh_attrs_merge_into(const char *user, const struct wh_attrs *ours);

/* Append the encoded form of the literal text v to out. */
int wh_attrs_encode(const char *v, struct k8s_buf *out) K8S_MUST_CHECK;

#endif
