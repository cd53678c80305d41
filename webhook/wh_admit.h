/*
 * wh_admit — one admission request, transport aside: body bytes in,
 * HTTP status and body out. Decodes the AdmissionReview (400 with a
 * one-line reason when it is not one), runs the mutation core within the
 * admission budget, encodes the response, logs one JSON line and counts
 * the outcome. Never denies: internal problems yield allowed=true with a
 * warning naming the reason.
 *
 * This is the request-handling edge, so it logs (once per request).
 * Thread-safety: reentrant; the context is shared read-only and its
 * metrics are atomic.
 */
#ifndef WH_ADMIT_H
#define WH_ADMIT_H

#include <stddef.h>
#include <stdint.h>

#include "k8s_metrics.h"
#include "k8s_mlrun.h"
#include "wh_config.h"
#include "wh_lookup.h"

enum wh_outcome {
    WH_OUT_INJECTED,  /* patched */
    WH_OUT_UNCHANGED, /* opted in, already injected */
    WH_OUT_SKIPPED,   /* not opted in / not a pod CREATE */
    WH_OUT_ERROR,     /* allowed without a patch because of an internal problem */
    WH_OUT_INVALID,   /* 400 */
    WH_OUT_TOO_LARGE, /* 413 */
    WH_OUT_COUNT
};

struct wh_admit_ctx {
    const struct wh_config *cfg;
    const struct wh_lookup *lookup; /* NULL: standalone */
    struct k8s_metric *outcomes[WH_OUT_COUNT];
    struct k8s_metric *latency;
    struct k8s_metric *incomplete[K8S_MLRUN_NFIELDS]; /* injected pods lacking each field */
};

struct wh_admit_result {
    int status; /* HTTP status */
    char *body; /* new (free()) */
    size_t len;
    const char *content_type; /* static */
    enum wh_outcome outcome;
};

/* Register the admission metrics in m (m may be NULL: no metrics). */
void wh_admit_init(struct wh_admit_ctx *ctx, const struct wh_config *cfg,
                   const struct wh_lookup *lookup, struct k8s_metrics *m);

/* Handle one request body. start_ns (monotonic) is when the request
 * arrived; the budget runs from there. Returns 0, or -K8S_ENOMEM when not
 * even an error response could be built (*ret untouched). */
int wh_admit(const struct wh_admit_ctx *ctx, const char *body, size_t len, int64_t start_ns,
             struct wh_admit_result *ret) K8S_MUST_CHECK;

/* A plain-text one-line answer (404/405/413 from the transport). */
int wh_admit_text(int status, const char *line, enum wh_outcome outcome,
                  struct wh_admit_result *ret) K8S_MUST_CHECK;

/* Count and log a transport-level refusal (413) like an admission. */
void wh_admit_note(const struct wh_admit_ctx *ctx, enum wh_outcome outcome, const char *reason,
                   int64_t start_ns);

#endif
