/*
 * k8s_metrics — a small Prometheus registry: counters, gauges (set or
 * computed at scrape time) and histograms with fixed buckets, rendered in
 * the text exposition format (version 0.0.4).
 *
 * Registration happens at startup, before threads use the registry;
 * updates (k8s_metric_add/set/observe) are lock-free atomics and may be
 * called from any thread; rendering may run concurrently with updates.
 * Several series may share a name with different constant label sets
 * (e.g. outcome="injected"); HELP/TYPE are written once per name.
 *
 * Ownership: the registry owns every metric; pointers returned by the
 * register functions stay valid until k8s_metrics_free.
 */
#ifndef K8S_METRICS_H
#define K8S_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "k8s_buf.h"
#include "k8s_err.h"

struct k8s_metrics;
struct k8s_metric;

typedef double (*k8s_gauge_fn)(void *ud);

struct k8s_metrics *k8s_metrics_new(void);
void k8s_metrics_free(struct k8s_metrics *m);

/* labels: a constant label set such as `outcome="injected"`, or NULL.
 * All return NULL only on OOM. Names and help are copied. */
struct k8s_metric *k8s_metrics_counter(struct k8s_metrics *m, const char *name, const char *help,
                                       const char *labels);
struct k8s_metric *k8s_metrics_gauge(struct k8s_metrics *m, const char *name, const char *help,
                                     const char *labels);
struct k8s_metric *k8s_metrics_gauge_fn(struct k8s_metrics *m, const char *name, const char *help,
                                        const char *labels, k8s_gauge_fn fn, void *ud);
struct k8s_metric *k8s_metrics_counter_fn(struct k8s_metrics *m, const char *name, const char *help,
                                          const char *labels, k8s_gauge_fn fn, void *ud);
/* bounds: ascending upper bounds in seconds (copied); +Inf is implicit. */
struct k8s_metric *k8s_metrics_histogram(struct k8s_metrics *m, const char *name, const char *help,
                                         const char *labels, const double *bounds, size_t n);

/* A gauge family whose series are only known at scrape time (e.g. one per
 * workload): fn appends them with k8s_metrics_family_value, under the
 * caller's own locking; it runs during k8s_metrics_render. */
typedef int (*k8s_family_fn)(void *ud, const char *name, struct k8s_buf *out);
struct k8s_metric *k8s_metrics_gauge_family(struct k8s_metrics *m, const char *name,
                                            const char *help, k8s_family_fn fn, void *ud);
/* One series of a family: `name{labels} v`; labels already escaped
 * (k8s_metrics_label_escape), may be NULL. */
int k8s_metrics_family_value(struct k8s_buf *out, const char *name, const char *labels,
                             double v) K8S_MUST_CHECK;

/* Escape a label value (backslash, quote, newline) into out (cut to fit,
 * NUL-terminated). */
void k8s_metrics_label_escape(const char *v, char *out, size_t cap);

void k8s_metric_add(struct k8s_metric *c, uint64_t n);        /* counters; NULL-safe */
void k8s_metric_set(struct k8s_metric *g, double v);          /* gauges; NULL-safe */
void k8s_metric_inc(struct k8s_metric *g, double d);          /* gauges: +d (may be negative) */
void k8s_metric_observe_ns(struct k8s_metric *h, int64_t ns); /* histograms; NULL-safe */

/* Append the exposition text to out. */
int k8s_metrics_render(struct k8s_metrics *m, struct k8s_buf *out) K8S_MUST_CHECK;

/* Sub-millisecond latency buckets (seconds), for request handlers. */
extern const double k8s_metrics_latency_buckets[];
extern const size_t k8s_metrics_latency_nbuckets;

#endif
