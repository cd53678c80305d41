/*
 * op_lease — leader election with a coordination.k8s.io/v1 Lease, the way
 * client-go's leaderelection package does it:
 *
 *   every retry period (2 s) a candidate reads the Lease; it takes it when
 *   it does not exist, names nobody, or has not been renewed for the lease
 *   duration (15 s) as measured by the candidate's own clock since it last
 *   saw the record change (no clock-skew assumptions); the holder renews
 *   every retry period and gives up when it could not renew for the renew
 *   deadline (10 s). Writes use the resourceVersion, so of two candidates
 *   one wins. On release the holder writes an empty holderIdentity with a
 *   1 s duration, so a successor takes over at once.
 *
 * One thread per election. Library code: transitions are reported through
 * the callback (on the election thread), not logged.
 */
#ifndef OP_LEASE_H
#define OP_LEASE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "k8s_client.h"
#include "k8s_err.h"

struct op_lease_opts {
    const char *namespace, *name, *identity;       /* copied */
    int64_t lease_ns, renew_deadline_ns, retry_ns; /* 0: 15 s, 10 s, 2 s */
};

/* leading: true once acquired, false when lost (never called for a
 * release). err: why it was lost, or NULL. */
typedef void (*op_lease_fn)(void *ud, bool leading, const struct k8s_error *err);

struct op_lease;

/* Start campaigning (client borrowed). -K8S_ENOMEM / -K8S_EIO. */
int op_lease_start(struct k8s_client *c, const struct op_lease_opts *opts, op_lease_fn fn, void *ud,
                   struct op_lease **ret) K8S_MUST_CHECK;

bool op_lease_leading(const struct op_lease *l);

/* Stop the thread; when leading, release the Lease (bounded by the renew
 * deadline). NULL-safe. */
void op_lease_free(struct op_lease *l);

/* ---- the decision, exposed for tests ---- */

struct op_lease_observed {
    json_t *spec;    /* the last spec seen (owned), NULL before the first read */
    int64_t seen_ns; /* monotonic time it was first seen with this content */
};

/* May `me` take or renew a Lease whose current spec is `spec` (borrowed),
 * at monotonic now? Updates *obs when the record changed. */
bool op_lease_may_acquire(const json_t *spec, const char *me, struct op_lease_observed *obs,
                          int64_t now_ns);

#endif
