/*
 * k8s_store — a thread-safe cache of Kubernetes objects keyed by
 * "namespace/name" (or "name" for cluster-scoped objects), fed by a watch
 * (k8s_watch) and read by request handlers and reconcilers.
 *
 * Objects are immutable once stored: writers replace them, readers get a
 * NEW reference that stays valid however long they hold it, even if the
 * watch replaces or deletes the object meanwhile (jansson's reference
 * counts are atomic). A reader-writer lock guards the map.
 *
 * A relist can report what it changed (k8s_store_replace_diff): every key
 * added, removed or whose stored form changed, so that a watch's handlers
 * see the events a gap in the watch hid (client-go's DeltaFIFO Replace).
 *
 * Ownership: functions named *_new steal the object(s) they are given;
 * k8s_store_get and k8s_store_put_if_absent_new return a new reference.
 * Drop those, and any reference taken on an object k8s_store_each lends,
 * with k8s_store_release, never json_decref: whichever thread drops the
 * last reference frees what the others read (see k8s_store_release).
 * Memory: the store keeps what jansson allocates while it runs, so a
 * caller that routes jansson into a request's arena (k8s_arena_enter)
 * pauses that routing around the calls that store (k8s_arena_pause); a
 * lookup (k8s_store_get) or a release allocates nothing.
 * Thread-safety: every function may be called from any thread. Failure:
 * allocation failures keep the content as it was (or, for a relist, leave
 * differences unreported).
 */
#ifndef K8S_STORE_H
#define K8S_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "k8s_err.h"

struct k8s_store;

struct k8s_store *k8s_store_new(void);
void k8s_store_free(struct k8s_store *s);

/* "ns/name" or "name" of an object; false when it has no name. */
bool k8s_store_key(const json_t *obj, char *out, size_t cap);

/* Keep another representation of each object instead of the object
 * itself (client-go's SetTransform): fn gets each object as it arrives
 * (borrowed) and returns what to store (new reference; NULL: store
 * nothing). Readers then see only what fn returned. Set it before the
 * first object arrives. */
typedef json_t *(*k8s_store_transform_fn)(json_t *obj);
void k8s_store_set_transform(struct k8s_store *s, k8s_store_transform_fn fn);

/* A relist, built while the pages arrive so only the kept form of each
 * object stays in memory: stage every object (borrowed) into `staging`
 * (a json_object()), then replace the content with it (stolen; NULL keeps
 * the content, as after an allocation failure). */
void k8s_store_stage(struct k8s_store *s, json_t *staging, json_t *obj);
void k8s_store_replace_staged(struct k8s_store *s, json_t *staging);

/* One difference a relist made: the key, the stored form before (NULL:
 * added) and after (NULL: removed); both borrowed for the call. */
typedef void (*k8s_store_diff_fn)(void *ud, const char *key, const json_t *before,
                                  const json_t *after);
/* k8s_store_replace_staged, then fn for every key added, removed or whose
 * stored form changed (not json_equal), after the swap, with no lock
 * held (fn may read the store). fn NULL: no differences computed. Out of
 * memory: the content is replaced and some differences go unreported. */
void k8s_store_replace_diff(struct k8s_store *s, json_t *staging, k8s_store_diff_fn fn, void *ud);

/* Replace the whole content with the objects of `items` (an array; steals
 * it): a (re)list. */
void k8s_store_replace_new(struct k8s_store *s, json_t *items);
/* Add or replace one object (steals it). */
void k8s_store_put_new(struct k8s_store *s, json_t *obj);
/* Add the object only when no object has its key (steals it); returns the
 * stored object as a NEW reference (the existing one when present). */
json_t *k8s_store_put_if_absent_new(struct k8s_store *s, json_t *obj);
/* Remove the object with obj's key. */
void k8s_store_remove(struct k8s_store *s, const json_t *obj);

/* The object ns/name (ns "" for cluster-scoped) as a new reference, or
 * NULL. */
json_t *k8s_store_get(struct k8s_store *s, const char *ns, const char *name);

/* Drop a reference to a stored object (NULL-safe): json_decref with
 * acquire-release order. jansson's decrement is release-only, so the
 * thread whose decrement frees an object shared between threads would not
 * have acquired the other holders' reads of it (a data race in C11 terms,
 * and ThreadSanitizer reports it). Any value may be dropped this way. */
void k8s_store_release(json_t *obj);

size_t k8s_store_size(struct k8s_store *s);

/* Call fn for every object (borrowed for the call) under the read lock;
 * fn must not call back into the store. */
typedef void (*k8s_store_each_fn)(void *ud, const char *key, const json_t *obj);
void k8s_store_each(struct k8s_store *s, k8s_store_each_fn fn, void *ud);

#endif
