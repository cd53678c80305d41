/*
 * wh_gke — find the cluster name on the GKE metadata server when neither
 * --cluster-name nor $CLUSTER_NAME gives it (DESIGN §3.5): one short try at
 * start, then a background thread retries every 30 s until it succeeds.
 * The edge for that thread: it logs the outcome once.
 *
 * Thread-safety: start/stop from main; the name lands in the config
 * atomically (wh_config_found_cluster).
 */
#ifndef WH_GKE_H
#define WH_GKE_H

#include "k8s_err.h"
#include "wh_config.h"

struct wh_gke;

/* Nothing to do (returns 0, *ret NULL) when the config already names the
 * cluster. cfg must outlive the finder. */
int wh_gke_start(struct wh_config *cfg, struct wh_gke **ret) K8S_MUST_CHECK;
void wh_gke_free(struct wh_gke *g);

#endif
