/*
 * k8s_ticker — a job run every period on a thread of its own, beside the
 * watches (controller-runtime's periodic runnables: a rescan, a resync
 * safety net). The job is told whether this replica leads; the period is
 * counted from the end of a run.
 *
 * A job started with at_once runs when started, and again at once when
 * this replica comes to lead (the audit then posts its Events); without
 * it the first run is one period after the start, and leading changes
 * nothing of when it runs.
 *
 * Thread-safety: k8s_ticker_lead from any thread; start and free from one.
 * Ownership: the job's ud is borrowed and must outlive the ticker.
 * Failure: k8s_ticker_start leaves nothing behind.
 */
#ifndef K8S_TICKER_H
#define K8S_TICKER_H

#include <stdbool.h>
#include <stdint.h>

#include "k8s_err.h"

struct k8s_ticker_job {
    void (*run)(void *ud, bool leading); /* on the ticker's thread */
    void *ud;
    int64_t period_ns; /* > 0 */
    bool at_once;      /* run at the start and when leading begins */
};

struct k8s_ticker;

/* Start the job's thread. -K8S_EINVAL when the period is not positive,
 * -K8S_ENOMEM, -K8S_EIO when no thread can be started. */
int k8s_ticker_start(const struct k8s_ticker_job *job, struct k8s_ticker **ret) K8S_MUST_CHECK;

/* Whether this replica leads, as the next runs are told. */
void k8s_ticker_lead(struct k8s_ticker *t, bool leading);

/* Stop: wait for a run in progress to end, join, free. NULL-safe. */
void k8s_ticker_free(struct k8s_ticker *t);

#endif
