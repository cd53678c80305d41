/*
 * k8s_gce — the cluster's full name from the GKE metadata server, as
 * Google's client libraries find it: GET http://<host>/computeMetadata/v1/
 * {instance/attributes/cluster-name, instance/attributes/cluster-location,
 * project/project-id} with "Metadata-Flavor: Google", where <host> is
 * $GCE_METADATA_HOST or metadata.google.internal. The result is
 * "projects/<project>/locations/<location>/clusters/<name>".
 *
 * Thread-safety: reentrant; loads libcurl on first use (k8s_curl).
 */
#ifndef K8S_GCE_H
#define K8S_GCE_H

#include <stdint.h>

#include "k8s_err.h"

/* New string (free()) in *ret; -K8S_EIO/-K8S_ETIMEDOUT/-K8S_ENOTFOUND with
 * reterr when the metadata server is unreachable or lacks an attribute. */
int k8s_gce_cluster_name(int64_t timeout_ms, char **ret, struct k8s_error *reterr) K8S_MUST_CHECK;

#endif
