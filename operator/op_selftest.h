/*
 * op_selftest — `mldiagnostics-operator selftest`, the operator chart's
 * `helm test` (DESIGN §5): the MLDiagnosticsConnection CRD is served
 * (diagon.gke.io/v1alpha1 mldiagnosticsconnections can be listed in the
 * release namespace) and the operator's Deployment has ready replicas
 * (its readiness is its caches synced). A failure names what is wrong:
 * the CRD not served (not installed, or crds.install=false without it),
 * the Deployment missing, or its replicas not ready (with the
 * Deployment's own condition messages).
 *
 * Retries every interval until timeout (after an install the pod starts
 * and syncs). Uses the client it is given (in-cluster service account or
 * --kubeconfig, as the operator does).
 *
 * Thread-safety: single-threaded command. Ownership: plain result struct.
 */
#ifndef OP_SELFTEST_H
#define OP_SELFTEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_client.h"
#include "k8s_err.h"

enum op_selftest_cause {
    OP_SELFTEST_OK,
    OP_SELFTEST_NO_CRD,        /* the MLDiagnosticsConnection API is not served */
    OP_SELFTEST_NO_DEPLOYMENT, /* the operator's Deployment does not exist */
    OP_SELFTEST_NOT_READY,     /* it has no ready replica */
};

struct op_selftest_opts {
    const char *namespace;  /* the release namespace */
    const char *deployment; /* the operator's Deployment */
    int64_t timeout_ns;     /* keep trying this long; 0: once */
    int64_t interval_ns;
    int64_t request_timeout_ms;
};

struct op_selftest_result {
    enum op_selftest_cause cause;
    int attempts;
    char message[1024]; /* one line */
};

/* Readiness of a Deployment object: 1 when status.readyReplicas >= 1,
 * else 0; msg gets "N of M replicas ready" plus the Available and
 * Progressing conditions' messages when not ready. */
int op_selftest_deployment_ready(const json_t *deployment, char *msg, size_t cap);

/* Run the check. 0 with *ret filled (ret->cause says pass or why not);
 * a negative error when a check cannot be made (e.g. forbidden), reterr
 * naming the request. */
int op_selftest_run(struct k8s_client *c, const struct op_selftest_opts *o,
                    struct op_selftest_result *ret, struct k8s_error *reterr) K8S_MUST_CHECK;

/* The command: flags after argv[argi]; prints one line; exit code 0, 1
 * (failed) or 2 (bad flags). */
int op_selftest_main(int argc, char **argv, int argi);

#endif
