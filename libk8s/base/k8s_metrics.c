#include "k8s_metrics.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { COUNTER, GAUGE, GAUGE_FN, HISTOGRAM, FAMILY, COUNTER_FN };

struct k8s_metric {
    enum kind kind;
    char *name, *help, *labels;
    uint64_t count;  /* counter value / histogram count (atomic) */
    uint64_t bits;   /* gauge value as double bits (atomic) */
    uint64_t sum_ns; /* histogram sum (atomic) */
    double *bounds;
    uint64_t *buckets; /* per bucket, not cumulative (atomic) */
    size_t nb;
    k8s_gauge_fn fn;
    k8s_family_fn family;
    void *ud;
    struct k8s_metric *next;
};

struct k8s_metrics {
    struct k8s_metric *head, *tail;
};

const double k8s_metrics_latency_buckets[] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                              0.0025,  0.005,  0.01,    0.025,  0.05,
                                              0.1,     0.25,   0.5,     1,      2.5};
const size_t k8s_metrics_latency_nbuckets =
    sizeof(k8s_metrics_latency_buckets) / sizeof(k8s_metrics_latency_buckets[0]);

struct k8s_metrics *k8s_metrics_new(void)
{
    return calloc(1, sizeof(struct k8s_metrics));
}

static void metric_free(struct k8s_metric *x)
{
    free(x->name);
    free(x->help);
    free(x->labels);
    free(x->bounds);
    free(x->buckets);
    free(x);
}

void k8s_metrics_free(struct k8s_metrics *m)
{
    if (!m)
        return;
    for (struct k8s_metric *x = m->head, *n; x; x = n) {
        n = x->next;
        metric_free(x);
    }
    free(m);
}

/* HELP text escapes '\\' and newlines (text format 0.0.4). */
static char *escape_help(const char *help)
{
    char *out = malloc(2 * strlen(help) + 1), *w = out;
    for (const char *p = help; out && *p; p++) {
        if (*p == '\\' || *p == '\n')
            *w++ = '\\';
        *w++ = *p == '\n' ? 'n' : *p;
    }
    if (out)
        *w = '\0';
    return out;
}

static struct k8s_metric *reg(struct k8s_metrics *m, enum kind kind, const char *name,
                              const char *help, const char *labels)
{
    struct k8s_metric *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->kind = kind;
    x->name = strdup(name);
    x->help = escape_help(help);
    x->labels = labels ? strdup(labels) : NULL;
    if (!x->name || !x->help || (labels && !x->labels)) {
        metric_free(x);
        return NULL;
    }
    /* keep series of one name together so HELP/TYPE print once */
    struct k8s_metric **pp = &m->head, *last_same = NULL;
    for (struct k8s_metric *y = m->head; y; y = y->next)
        if (!strcmp(y->name, name))
            last_same = y;
    if (last_same) {
        x->next = last_same->next;
        last_same->next = x;
        if (m->tail == last_same)
            m->tail = x;
        return x;
    }
    while (*pp)
        pp = &(*pp)->next;
    *pp = x;
    m->tail = x;
    return x;
}

struct k8s_metric *k8s_metrics_counter(struct k8s_metrics *m, const char *name, const char *help,
                                       const char *labels)
{
    return reg(m, COUNTER, name, help, labels);
}

struct k8s_metric *k8s_metrics_gauge(struct k8s_metrics *m, const char *name, const char *help,
                                     const char *labels)
{
    return reg(m, GAUGE, name, help, labels);
}

struct k8s_metric *k8s_metrics_gauge_fn(struct k8s_metrics *m, const char *name, const char *help,
                                        const char *labels, k8s_gauge_fn fn, void *ud)
{
    struct k8s_metric *x = reg(m, GAUGE_FN, name, help, labels);
    if (x) {
        x->fn = fn;
        x->ud = ud;
    }
    return x;
}

struct k8s_metric *k8s_metrics_counter_fn(struct k8s_metrics *m, const char *name, const char *help,
                                          const char *labels, k8s_gauge_fn fn, void *ud)
{
    struct k8s_metric *x = reg(m, COUNTER_FN, name, help, labels);
    if (x) {
        x->fn = fn;
        x->ud = ud;
    }
    return x;
}

struct k8s_metric *k8s_metrics_histogram(struct k8s_metrics *m, const char *name, const char *help,
                                         const char *labels, const double *bounds, size_t n)
{
    struct k8s_metric *x = reg(m, HISTOGRAM, name, help, labels);
    if (!x)
        return NULL;
    x->bounds = malloc(n * sizeof(double));
    x->buckets = calloc(n + 1, sizeof(uint64_t));
    if (!x->bounds || !x->buckets)
        return NULL; /* stays registered, renders as empty: only on OOM at startup */
    memcpy(x->bounds, bounds, n * sizeof(double));
    x->nb = n;
    return x;
}

void k8s_metric_add(struct k8s_metric *c, uint64_t n)
{
    if (c)
        __atomic_add_fetch(&c->count, n, __ATOMIC_RELAXED);
}

static uint64_t dbits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof(b));
    return b;
}

static double bitsd(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof(v));
    return v;
}

void k8s_metric_set(struct k8s_metric *g, double v)
{
    if (g)
        __atomic_store_n(&g->bits, dbits(v), __ATOMIC_RELAXED);
}

void k8s_metric_inc(struct k8s_metric *g, double d)
{
    if (!g)
        return;
    uint64_t old = __atomic_load_n(&g->bits, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&g->bits, &old, dbits(bitsd(old) + d), true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void k8s_metric_observe_ns(struct k8s_metric *h, int64_t ns)
{
    if (!h || !h->buckets)
        return;
    double s = (double)ns / 1e9;
    size_t i = 0;
    while (i < h->nb && s > h->bounds[i])
        i++;
    __atomic_add_fetch(&h->buckets[i], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&h->count, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&h->sum_ns, (uint64_t)(ns > 0 ? ns : 0), __ATOMIC_RELAXED);
}

static int render_value(struct k8s_buf *o, const char *name, const char *suffix, const char *labels,
                        const char *extra, double v)
{
    bool any = (labels && *labels) || extra;
    char num[64];
    if (isinf(v))
        strcpy(num, v > 0 ? "+Inf" : "-Inf");
    else if (isnan(v))
        strcpy(num, "NaN");
    else if (snprintf(num, sizeof(num), "%.15g", v), strtod(num, NULL) != v)
        snprintf(num, sizeof(num), "%.17g", v); /* shortest text that reads back exactly */
    return k8s_buf_printf(o, "%s%s%s%s%s%s%s %s\n", name, suffix, any ? "{" : "",
                          labels ? labels : "", labels && *labels && extra ? "," : "",
                          extra ? extra : "", any ? "}" : "", num);
}

static int render_histogram(struct k8s_buf *o, const struct k8s_metric *h)
{
    uint64_t cum = 0;
    char le[64];
    int r = 0;
    for (size_t i = 0; i <= h->nb && r == 0; i++) {
        cum += __atomic_load_n(&h->buckets[i], __ATOMIC_RELAXED);
        if (i < h->nb)
            snprintf(le, sizeof(le), "le=\"%g\"", h->bounds[i]);
        else
            strcpy(le, "le=\"+Inf\"");
        r = render_value(o, h->name, "_bucket", h->labels, le, (double)cum);
    }
    double sum = (double)__atomic_load_n(&h->sum_ns, __ATOMIC_RELAXED) / 1e9;
    if (r == 0)
        r = render_value(o, h->name, "_sum", h->labels, NULL, sum);
    if (r == 0)
        r = render_value(o, h->name, "_count", h->labels, NULL, (double)cum);
    return r;
}

struct k8s_metric *k8s_metrics_gauge_family(struct k8s_metrics *m, const char *name,
                                            const char *help, k8s_family_fn fn, void *ud)
{
    struct k8s_metric *x = reg(m, FAMILY, name, help, NULL);
    if (x) {
        x->family = fn;
        x->ud = ud;
    }
    return x;
}

void k8s_metrics_label_escape(const char *v, char *out, size_t cap)
{
    size_t o = 0;
    for (; *v && o + 2 < cap; v++) {
        if (*v == '\\' || *v == '"' || *v == '\n')
            out[o++] = '\\';
        out[o++] = *v == '\n' ? 'n' : *v;
    }
    out[o < cap ? o : cap - 1] = '\0';
}

int k8s_metrics_family_value(struct k8s_buf *out, const char *name, const char *labels, double v)
{
    return render_value(out, name, "", labels, NULL, v);
}

static int render_one(struct k8s_buf *o, const struct k8s_metric *x)
{
    switch (x->kind) {
    case FAMILY:
        return x->family(x->ud, x->name, o);
    case COUNTER:
        return render_value(o, x->name, "", x->labels, NULL,
                            (double)__atomic_load_n(&x->count, __ATOMIC_RELAXED));
    case GAUGE:
        return render_value(o, x->name, "", x->labels, NULL,
                            bitsd(__atomic_load_n(&x->bits, __ATOMIC_RELAXED)));
    case GAUGE_FN:
    case COUNTER_FN:
        return render_value(o, x->name, "", x->labels, NULL, x->fn(x->ud));
    case HISTOGRAM:
        return x->buckets ? render_histogram(o, x) : 0;
    }
    return 0;
}

int k8s_metrics_render(struct k8s_metrics *m, struct k8s_buf *out)
{
    static const char *const types[] = {"counter",   "gauge", "gauge",
                                        "histogram", "gauge", "counter"};
    const char *prev = NULL;
    int r = 0;
    for (struct k8s_metric *x = m->head; x && r == 0; x = x->next) {
        if (!prev || strcmp(prev, x->name))
            r = k8s_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", x->name, x->help, x->name,
                               types[x->kind]);
        if (r == 0)
            r = render_one(out, x);
        prev = x->name;
    }
    return r;
}
