/*
 * k8s_mlrun — what the google-cloud-mldiagnostics SDK reads from the
 * identity the webhook injects (DESIGN §3.5): the fields it requires (one
 * table), which of them an identity lacks, and the ML run id it derives
 * (its _gke_run_identifier): the lowercase hex SHA-256 of
 *   <cluster short name>_<namespace>_<Kind>_<name>_<%Y%m%d-%H%M%S UTC>
 * with the Kind as written and nothing lower-cased or sanitised. The SDK
 * refuses to start a run when a field is missing or its creation
 * timestamp cannot be read; so does k8s_mlrun_id. Test vectors computed by
 * the SDK itself: tests/fixtures/unit/mlrun/.
 *
 * Both programs use it: the webhook for rl.run.id and its
 * incomplete-identity counter, the operator's audit for its Warning Event.
 *
 * Thread-safety: reentrant. Ownership: nothing allocated survives a call.
 * Failure: k8s_mlrun_id* return 0 or a negative k8s_err (no detail struct:
 * k8s_mlrun_missing says which field is absent).
 */
#ifndef K8S_MLRUN_H
#define K8S_MLRUN_H

#include <stdbool.h>
#include <stddef.h>

#include "k8s_codec.h"
#include "k8s_err.h"

/* The fields the SDK requires, in the order of its error message. */
enum k8s_mlrun_field {
    K8S_MLRUN_NAMESPACE,
    K8S_MLRUN_CLUSTER,
    K8S_MLRUN_KIND,
    K8S_MLRUN_NAME,
    K8S_MLRUN_CREATED,
    K8S_MLRUN_NFIELDS
};

struct k8s_mlrun_field_info {
    const char *key; /* its key in the injected JSON, e.g. "clustername" */
    const char *var; /* the variable holding it: GKE_DIAGON_IDENTIFIER or _METADATA */
    const char *sdk; /* the SDK's name for it (its "missing properties" message) */
};

extern const struct k8s_mlrun_field_info k8s_mlrun_fields[K8S_MLRUN_NFIELDS];

/* Bytes of a run id with its NUL. */
#define K8S_MLRUN_ID_SIZE K8S_SHA256_HEX_SIZE

/* Bit (1u << field) for every required field the two JSON values lack:
 * absent, not a string or empty, as the SDK tests them. A value that is
 * not a JSON object lacks every field it should hold. */
unsigned k8s_mlrun_missing(const char *identifier_json, const char *metadata_json);

/* "key, key" of the fields in mask (the JSON keys, or with sdk_names the
 * SDK's names), truncated to cap; "" for an empty mask. */
void k8s_mlrun_names(unsigned mask, bool sdk_names, char *out, size_t cap);

/* The last '/'-separated segment of a cluster name (borrowed). */
const char *k8s_mlrun_cluster_short(const char *cluster);

/* The run id of these parts; created is the creation timestamp as the
 * webhook writes it (RFC 3339 ending in Z). 0; -K8S_EINVAL when a part is
 * empty or the SDK could not read the timestamp (out is then ""). */
int k8s_mlrun_id(const char *cluster, const char *ns, const char *kind, const char *name,
                 const char *created, char out[static K8S_MLRUN_ID_SIZE]) K8S_MUST_CHECK;

/* The same, read from GKE_DIAGON_IDENTIFIER and GKE_DIAGON_METADATA values
 * as the SDK reads them. -K8S_EINVAL as above (also for malformed JSON). */
int k8s_mlrun_id_json(const char *identifier_json, const char *metadata_json,
                      char out[static K8S_MLRUN_ID_SIZE]) K8S_MUST_CHECK;

#endif
