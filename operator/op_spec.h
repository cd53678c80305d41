/*
 * op_spec — an MLDiagnosticsConnection's spec.triggerCapture, parsed and
 * validated (DESIGN §4.1, §4.2). Every problem is reported with a message
 * that names the field, e.g.
 *   "spec.triggerCapture.capturePort: must be between 1 and 65535 (got 0)".
 *
 * Also the rule that ties a capture to --sidecar-timeout: the RPC deadline
 * is capped by it, and a profiler cut short saves nothing, so a capture
 * whose duration plus start delay (the common start is set in the future
 * by op_start_delay_ms, so that every host starts together, or further by
 * options.delayMs) does not fit
 * in it could never save a profile and is invalid.
 *
 * Thread-safety: reentrant; a struct op_spec belongs to its caller.
 */
#ifndef OP_SPEC_H
#define OP_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"
#include "k8s_kinds.h"
#include "op_hosts.h"

#define OP_MAX_TARGETS 20000
/* storageLocation's length: GCS object names are at most 1,024 bytes, and
 * the RPC's repository_root and the status's paths are built from it */
#define OP_MAX_STORAGE 1024

/* spec.triggerCapture.options: what the profiler records, sent in every
 * request's ProfileOptions, and how far ahead the common start is set.
 * Each absent field keeps its default (the table in op_spec.c). */
struct op_options {
    int64_t host_tracer_level;   /* 0-3, default 2 */
    int64_t device_tracer_level; /* 0-1, default 1 */
    int64_t python_tracer_level; /* 0-1, default 1 */
    int64_t delay_ms;            /* 0-3,600,000; the start at least this far ahead; default 0 */
};

struct op_spec {
    struct op_options options;
    int port;
    int64_t duration_s;
    char **pods; /* podName split on commas, trimmed, duplicates dropped */
    size_t n_pods;
    char *pod_namespace;             /* podNamespace, or the resource's namespace when empty */
    char *storage;                   /* storageLocation without trailing slashes */
    const struct k8s_kind *ref_kind; /* workloadRef: a K8S_KIND_WORKLOAD_REF row; NULL: podName */
    char *ref_name;
    struct op_hosts hosts; /* which of the workload's hosts (workloadRef only) */
};

struct op_spec_limits {
    int64_t max_duration_ns;    /* --max-capture-duration */
    bool allow_cross_namespace; /* --allow-cross-namespace */
    int64_t sidecar_timeout_ns; /* --sidecar-timeout; 0: not checked */
};

/* Parse obj (an MLDiagnosticsConnection, borrowed). On success *ret owns
 * new strings (op_spec_done). -K8S_EINVAL with reterr naming the field;
 * -K8S_ENOMEM; *ret untouched on failure. The sidecar-timeout rule is
 * checked for the pods podName lists, or one pod for a workloadRef (the
 * caller checks again once it knows how many: op_spec_check_sidecar). */
int op_spec_parse(const json_t *obj, const struct op_spec_limits *lim, struct op_spec *ret,
                  struct k8s_error *reterr) K8S_MUST_CHECK;

void op_spec_done(struct op_spec *s);

/* How far in the future a capture over `hosts` pods sets its common start
 * (time to open every connection first), in milliseconds. */
int64_t op_start_delay_ms(size_t hosts);

/* The start delay of s over `hosts` pods: op_start_delay_ms(hosts), or
 * options.delayMs when that is longer. */
int64_t op_spec_start_delay_ms(const struct op_spec *s, size_t hosts);

/* Does the capture fit in the sidecar timeout over `hosts` pods
 * (durationSeconds + op_spec_start_delay_ms(s, hosts) <= sidecar_timeout_ns)?
 * -K8S_EINVAL when not, reterr naming durationSeconds (or options.delayMs
 * when the user's delay is the larger part) and --sidecar-timeout
 * with both values. sidecar_timeout_ns 0: always fits. */
int op_spec_check_sidecar(const struct op_spec *s, size_t hosts, int64_t sidecar_timeout_ns,
                          struct k8s_error *reterr) K8S_MUST_CHECK;

/* The workloadRef kind's name ("JobSet", ...), "" for none. */
const char *op_ref_kind_name(const struct k8s_kind *k);

/* Is s a DNS-1123 subdomain (pod names) / label (namespaces)? */
bool op_dns_subdomain(const char *s, size_t n);
bool op_dns_label(const char *s, size_t n);

#endif
