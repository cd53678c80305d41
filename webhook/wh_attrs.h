/*
 * wh_attrs — OpenTelemetry resource attributes in the
 * OTEL_RESOURCE_ATTRIBUTES form "k1=v1,k2=v2": parse, set with
 * precedence, percent-encode values as the OTel specification requires,
 * and merge into a value the user already set (user keys win).
 *
 * Values are stored encoded. Encoding keeps "$(VAR)" references and
 * existing %XX escapes intact, and escapes everything outside the W3C
 * baggage value octets (space, '"', ',', ';', '\\', controls, non-ASCII)
 * and lone '%', so encoding is idempotent.
 *
 * Thread-safety: a struct wh_attrs belongs to one thread. Ownership: the
 * struct owns its strings; wh_attrs_done releases them (NULL-safe).
 */
#ifndef WH_ATTRS_H
#define WH_ATTRS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "k8s_buf.h"
#include "k8s_err.h"

struct wh_attr {
    char *key;
    char *value; /* encoded */
};

struct wh_attrs {
    struct wh_attr *kv;
    size_t n, cap;
};

void wh_attrs_init(struct wh_attrs *a);
void wh_attrs_done(struct wh_attrs *a);

/* Set key to value (encoding it); replaces an existing key in place. */
int wh_attrs_set(struct wh_attrs *a, const char *key, const char *value) K8S_MUST_CHECK;
/* Encoded value of key (borrowed), or NULL. */
const char *wh_attrs_get(const struct wh_attrs *a, const char *key);
bool wh_attrs_has_prefix(const struct wh_attrs *a, const char *prefix);

/* Parse "k=v,..." and set every pair (later pairs and later calls win).
 * Malformed items (no '=', empty or invalid key) are skipped and named in
 * `warnings` (an array, may be NULL) with `where` as context. */
int wh_attrs_parse(struct wh_attrs *a, const char *s, const char *where,
                   json_t *warnings) K8S_MUST_CHECK;

/* "k1=v1,k2=v2" in insertion order. New string (free()), NULL on OOM. */
char *wh_attrs_format(const struct wh_attrs *a);

/* The user's value with ",k=v" appended for each of ours whose key the
 * user did not set. New string (free()), NULL on OOM. */
char *wh_attrs_merge_into(const char *user, const struct wh_attrs *ours);

/* Append the encoded form of v to out. */
int wh_attrs_encode(const char *v, struct k8s_buf *out) K8S_MUST_CHECK;

/* true when key is acceptable as a resource attribute key. */
bool wh_attrs_valid_key(const char *key);

#endif
