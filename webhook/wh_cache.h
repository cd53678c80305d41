/*
 * wh_cache — the webhook's view of the cluster: list+watch caches of the
 * metadata of namespaces and of the workload kinds the kind table
 * (k8s_kinds) marks watched (PartialObjectMetadata, managedFields
 * dropped), serving the mutation core's lookups (wh_lookup) with no API
 * call in steady state.
 *
 * A miss — the watch can lag a workload created a moment ago, and the
 * table's other kinds (Deployments, StatefulSets, ReplicaSets) are not
 * watched — costs one GET
 * with a short timeout inside the admission budget, single-flight per
 * object (a burst of pods of one new JobSet waits on the one GET), and the
 * answer is cached (watched kinds: in their store; others for 60 s; "not
 * found" for 5 s). A kind whose CRD is absent is an empty, synced cache,
 * listed again every absent_retry_ms (10 s) so that a CRD created later is
 * watched within that; meanwhile a lookup of such a kind is a miss like
 * any other (one GET, single-flight, "not found" cached 5 s): a pod
 * naming a RayCluster says KubeRay may have just been installed. Its
 * "not found" is -K8S_EUNAVAIL ("not served"), as in standalone mode.
 * Every relist replaces a store with what the API server lists.
 *
 * Thread-safety: lookups from any number of admission threads; start/free
 * from the main thread. The edge for its watches: state changes are logged
 * here, once each.
 */
#ifndef WH_CACHE_H
#define WH_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "k8s_client.h"
#include "k8s_err.h"
#include "k8s_metrics.h"
#include "wh_lookup.h"

struct wh_cache;

struct wh_cache_opts {
    int64_t fetch_timeout_ms;                         /* cap for one cache-miss GET (0: 1000) */
    int64_t absent_retry_ms;                          /* CRD-absent relist period (0: 10 s) */
    int64_t watch_timeout_min_s, watch_timeout_max_s; /* 0: 300..600 */
    struct k8s_metrics *metrics;                      /* may be NULL */
};

/* Start the watches (client borrowed; must outlive the cache). */
int wh_cache_start(struct k8s_client *client, const struct wh_cache_opts *opts,
                   struct wh_cache **ret) K8S_MUST_CHECK;
void wh_cache_free(struct wh_cache *c);

/* Every initial list done (readiness). */
bool wh_cache_synced(void *cache);

/* The lookup ops the mutation core uses (borrowed, valid with the cache). */
const struct wh_lookup *wh_cache_lookup(struct wh_cache *c);

#endif
