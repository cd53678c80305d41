/*
 * k8s_watch — keeps a k8s_store in step with one resource collection, the
 * way client-go's reflector and kube-rs's watcher do:
 *
 *   list (paged, limit 500, "continue") → replace the store, synced;
 *   every difference between the store and the list (added, changed,
 *   removed: what a gap in the watch hid) goes to the relisted hook;
 *   watch from the list's resourceVersion with allowWatchBookmarks and a
 *   timeoutSeconds in [5, 10] min; every event updates the store and the
 *   resourceVersion (BOOKMARKs only the latter); the resourceVersion only
 *   ever comes from an event applied or a bookmark, so a watch resumed
 *   from it misses nothing;
 *   stream ends normally → watch again from the last resourceVersion,
 *   without listing; ERROR 410 / HTTP 410 → list again;
 *   429, 5xx, connection loss → jittered backoff (800 ms doubling to 30 s,
 *   never sooner than Retry-After; reset after 2 min healthy or a stream
 *   that delivered events) and watch again; other failures → backoff and
 *   list again; a watch that ends within 1 s with no event counts as a
 *   failure; lists that fail back off and retry for as long as it runs;
 *   404 (the CRD is not installed) → an empty store that counts as synced,
 *   listed again every absent_retry_ms (10 s), so a CRD created later is
 *   served within about that — never fatal.
 *
 * One thread per watch. Library code: nothing is logged; state changes are
 * reported to an optional callback for the caller to log.
 *
 * Thread-safety: start/stop from one thread; the query functions from any.
 */
#ifndef K8S_WATCH_H
#define K8S_WATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "k8s_client.h"
#include "k8s_err.h"
#include "k8s_jsonload.h"
#include "k8s_store.h"

enum k8s_watch_state {
    K8S_WATCH_SYNCED,   /* a list succeeded: the store is complete */
    K8S_WATCH_ABSENT,   /* the resource is not served (404): empty, synced */
    K8S_WATCH_FAILED,   /* a list or watch failed; err says why; retrying */
    K8S_WATCH_RELISTING /* resourceVersion expired (410): listing again */
};

enum k8s_watch_event_type { K8S_EV_ADDED, K8S_EV_MODIFIED, K8S_EV_DELETED };

/* The timeout of each list request (one page). With backoff_max_ms it
 * bounds how long a change takes to reach the store after a fault. */
#define K8S_WATCH_LIST_TIMEOUT_MS 60000

struct k8s_watch_spec {
    const char *resource;       /* for messages, e.g. "jobsets.jobset.x-k8s.io" */
    const char *path;           /* collection path, e.g. "/apis/jobset.x-k8s.io/v1alpha2/jobsets" */
    const char *label_selector; /* NULL: all */
    bool metadata_only;         /* ask for PartialObjectMetadata */
    const struct k8s_json_filter *filter; /* members of each object to keep; NULL: all */
    int64_t absent_retry_ms;              /* 0: 10 s */
    int64_t watch_timeout_min_s, watch_timeout_max_s; /* 0: 300 and 600 */
    int64_t backoff_initial_ms, backoff_max_ms;       /* 0: 800 and 30000 */
};

struct k8s_watch_hooks {
    /* every state change (log it) */
    void (*state)(void *ud, enum k8s_watch_state st, const struct k8s_error *err);
    /* every watch event after it reached the store (obj borrowed, as
     * received: the spec's filter applied, not the store's transform) */
    void (*changed)(void *ud, enum k8s_watch_event_type ev, const json_t *obj);
    /* after each (re)list replaced the store (and relisted was called) */
    void (*listed)(void *ud);
    void *ud;
    /* each difference a (re)list found between the store and the list,
     * after the store was replaced: key, and obj as stored (the new form;
     * the removed one for DELETED), borrowed. NULL: none computed. */
    void (*relisted)(void *ud, enum k8s_watch_event_type ev, const char *key, const json_t *obj);
};

struct k8s_watch;

/* Start watching into store (borrowed; must outlive the watch). hooks may
 * be NULL. -K8S_ENOMEM / -K8S_EIO (thread). */
int k8s_watch_start(struct k8s_client *c, const struct k8s_watch_spec *spec,
                    struct k8s_store *store, const struct k8s_watch_hooks *hooks,
                    struct k8s_watch **ret) K8S_MUST_CHECK;

/* Stop the thread (ends a stream within ~100 ms) and free. NULL-safe. */
void k8s_watch_free(struct k8s_watch *w);

/* Publication order (acquire loads; the store's lock orders the rest):
 * synced turns true only once the store holds the first list's objects;
 * a reader that saw an object of this collection in the store then reads
 * absent false (absent is cleared before a list's objects are stored and
 * set only after the store was emptied). */
bool k8s_watch_synced(const struct k8s_watch *w);
bool k8s_watch_absent(const struct k8s_watch *w);
/* Counters for metrics: lists done, watches (re)started, failures. */
uint64_t k8s_watch_lists(const struct k8s_watch *w);
uint64_t k8s_watch_restarts(const struct k8s_watch *w);
uint64_t k8s_watch_failures(const struct k8s_watch *w);

/* ---- the wire format, exposed for tests and the fuzzer ---- */

enum k8s_watch_wire {
    K8S_WIRE_ADDED,
    K8S_WIRE_MODIFIED,
    K8S_WIRE_DELETED,
    K8S_WIRE_BOOKMARK,
    K8S_WIRE_ERROR
};

struct k8s_watch_event {
    enum k8s_watch_wire type;
    json_t *object; /* new reference (kept members only); the Status for ERROR */
    char rv[64];    /* object.metadata.resourceVersion, "" when absent */
    int code;       /* ERROR: the Status code (410 when expired) */
};

/* Decode one line of a watch stream. -K8S_EPARSE with reterr on a
 * malformed line or unknown type; *ret untouched on failure. */
int k8s_watch_decode(const char *line, size_t len, const struct k8s_json_filter *filter,
                     struct k8s_watch_event *ret, struct k8s_error *reterr) K8S_MUST_CHECK;

#endif
