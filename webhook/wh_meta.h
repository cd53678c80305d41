/*
 * wh_meta — the few fields of an object's metadata the webhook reads, as
 * plain structs: name, generateName, namespace, creationTimestamp, the
 * labels and annotations as maps sorted by key, and the controller owner
 * reference. With wh_podspec it makes struct wh_pod, the pod as the
 * mutation core reads it. Nothing else of the metadata is kept.
 *
 * Two readers fill the same struct, as for wh_podspec:
 *   - wh_meta_pull: a k8s_jsonload pull reader, so the admission reads the
 *     pod's metadata while the review is validated, with no DOM and no
 *     hash table (wh_review);
 *   - wh_meta_from_json: from a jansson tree (the cache's workloads and
 *     namespaces, the offline `inject` command, tests).
 * Both follow jansson's reading of a document: of duplicate keys the last
 * counts; a member of the wrong type reads as absent (a string field as
 * NULL), a map of the wrong type as WH_SHAPE_OTHER with no entries.
 *
 * Maps keep the order the document gives, duplicates included, and are
 * searched from the end (of duplicate keys the last counts) with the
 * key's length first, which for the usual few dozen labels costs less
 * than sorting them; a map of more than 32 entries is sorted by key once
 * (duplicates dropped) and binary-searched. wh_map_ordered gives the
 * entries in key order (strcmp: byte order), as DESIGN §3.5's sorted
 * label list needs.
 *
 * Thread-safety: reentrant; a filled struct is read-only and may be
 * shared. Ownership: the struct owns its arrays and, from wh_meta_pull,
 * the decoded strings, all taken from its arena (the request's, set by the
 * caller; NULL: malloc'd, as wh_meta_from_json always is, whose strings
 * are borrowed from the tree). wh_meta_done / wh_pod_done release them
 * (safe on a zeroed struct; a no-op for an arena's memory, which returns
 * at the arena's reset, so the arena must outlive the struct) and keep
 * the struct's arena. Failure: -K8S_ENOMEM (the struct is left empty), or
 * the pull reader's -1 (the struct is to be freed).
 */
#ifndef WH_META_H
#define WH_META_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "k8s_err.h"
#include "k8s_jsonload.h"
#include "wh_podspec.h"

struct wh_kv {
    const char *key;
    const char *val; /* NULL unless a string */
    size_t klen;     /* strlen(key) */
};

struct wh_map {
    enum wh_shape shape; /* LIST: an object (only then are there entries) */
    struct wh_kv *kv;    /* in document order, or sorted (keys unique) */
    size_t n;
    bool sorted;
};

struct wh_meta {
    enum wh_shape shape;                             /* of metadata: LIST = an object */
    const char *name, *generate_name, *ns, *created; /* NULL unless strings */
    struct wh_map labels, annotations;
    /* the first owner reference with controller: true and string kind and
     * name; all NULL when there is none (owner_api_version also when the
     * reference has none) */
    const char *owner_kind, *owner_name, *owner_api_version;
    char *pool;              /* wh_meta_pull: the decoded strings */
    struct k8s_arena *arena; /* where the arrays and strings come from (NULL: malloc) */
};

/* A pod (or pod template) as the mutation reads it. */
struct wh_pod {
    enum wh_shape shape; /* of the pod: LIST = an object */
    struct wh_meta meta;
    struct wh_podspec spec;
};

/* The entry of key (NULL when absent); its value (NULL when absent or not
 * a string). m may be NULL. */
const struct wh_kv *wh_map_find(const struct wh_map *m, const char *key);
const char *wh_map_get(const struct wh_map *m, const char *key);
/* The entries in key order, of equal keys the last: a new array (free())
 * of *ret_n entries whose strings are m's; NULL on OOM. */
struct wh_kv *wh_map_ordered(const struct wh_map *m, size_t *ret_n);

/* Label and annotation values of a metadata (NULL-safe). */
static inline const char *wh_meta_label(const struct wh_meta *m, const char *key)
{
    return m ? wh_map_get(&m->labels, key) : NULL;
}
static inline const char *wh_meta_annotation(const struct wh_meta *m, const char *key)
{
    return m ? wh_map_get(&m->annotations, key) : NULL;
}

/* The pull reader (k8s_json_pull_fn) for a metadata member, p at its
 * value; arg is the struct wh_meta, zeroed but for its arena before the
 * first call (a later call, for a duplicate member, replaces what it
 * holds). */
int wh_meta_pull(struct k8s_jpull *p, void *arg);
/* Read a metadata tree (NULL: absent). */
int wh_meta_from_json(const json_t *meta, struct wh_meta *ret) K8S_MUST_CHECK;
void wh_meta_done(struct wh_meta *m);

/* Read a pod tree (NULL: absent): its metadata and spec. */
int wh_pod_from_json(const json_t *pod, struct wh_pod *ret) K8S_MUST_CHECK;
void wh_pod_done(struct wh_pod *pod);

#endif
