/* k8s_metrics: Prometheus text exposition (0.0.4), byte for byte. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_metrics.h"
#include "k8s_time.h"
#include "test_support.h"

static char *render(struct k8s_metrics *m)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    cr_assert_eq(k8s_metrics_render(m, &b), 0);
    return k8s_buf_take(&b, NULL);
}

static void expect_fixture(struct k8s_metrics *m, const char *rel)
{
    char *want = ts_read_fixture(rel, NULL);
    char *got = render(m);
    cr_expect_str_eq(got, want, "%s:\n--- got ---\n%s--- want ---\n%s", rel, got, want);
    free(got);
    free(want);
}

static double read_double(void *ud)
{
    return *(double *)ud;
}

Test(k8s_metrics, full_registry_exposition)
{
    static const double bounds[] = {0.25, 0.5, 1};
    static double expiry = 86400;
    struct k8s_metrics *m = k8s_metrics_new();
    cr_assert_not_null(m);
    struct k8s_metric *inj = k8s_metrics_counter(
        m, "mld_requests_total", "Admission requests by outcome.", "outcome=\"injected\"");
    struct k8s_metric *fl = k8s_metrics_gauge(m, "mld_in_flight", "Requests being served.", NULL);
    struct k8s_metric *skip =
        k8s_metrics_counter(m, "mld_requests_total", "ignored", "outcome=\"skipped\"");
    cr_assert_not_null(k8s_metrics_gauge_fn(m, "mld_cert_expiry_seconds",
                                            "Seconds until the serving certificate expires.", NULL,
                                            read_double, &expiry));
    struct k8s_metric *lat = k8s_metrics_histogram(m, "mld_latency_seconds", "Admission latency.",
                                                   "route=\"mutate\"", bounds, 3);
    cr_assert_not_null(
        k8s_metrics_counter(m, "mld_requests_total", "ignored", "outcome=\"error\""));
    struct k8s_metric *plain = k8s_metrics_counter(m, "mld_plain_total", "Plain.", "");
    cr_assert(inj && fl && skip && lat && plain);

    k8s_metric_add(inj, 2);
    k8s_metric_add(inj, 1);
    k8s_metric_add(skip, 1);
    k8s_metric_set(fl, 7);
    k8s_metric_set(fl, 2.5);
    k8s_metric_add(plain, 7);
    k8s_metric_observe_ns(lat, 125 * K8S_NSEC_PER_MSEC);
    k8s_metric_observe_ns(lat, 250 * K8S_NSEC_PER_MSEC); /* le is inclusive */
    k8s_metric_observe_ns(lat, 500 * K8S_NSEC_PER_MSEC);
    k8s_metric_observe_ns(lat, 750 * K8S_NSEC_PER_MSEC);
    k8s_metric_observe_ns(lat, 2 * K8S_NSEC_PER_SEC);
    expect_fixture(m, "unit/metrics/registry.prom");
    k8s_metrics_free(m);
}

Test(k8s_metrics, histogram_without_labels_and_observations)
{
    static const double bounds[] = {0.001};
    struct k8s_metrics *m = k8s_metrics_new();
    cr_assert_not_null(k8s_metrics_histogram(m, "h_seconds", "H.", NULL, bounds, 1));
    expect_fixture(m, "unit/metrics/histogram_nolabels.prom");
    k8s_metrics_free(m);
}

Test(k8s_metrics, two_histogram_series_share_help_type)
{
    double bounds[] = {0.5};
    struct k8s_metrics *m = k8s_metrics_new();
    struct k8s_metric *a =
        k8s_metrics_histogram(m, "lat_seconds", "Latency.", "code=\"200\"", bounds, 1);
    bounds[0] = 99; /* bounds are copied */
    struct k8s_metric *b = k8s_metrics_histogram(m, "lat_seconds", "Other help.", "code=\"500\"",
                                                 (const double[]){0.5}, 1);
    k8s_metric_observe_ns(a, 500 * K8S_NSEC_PER_MSEC);
    k8s_metric_observe_ns(b, K8S_NSEC_PER_SEC);
    k8s_metric_observe_ns(b, 3 * K8S_NSEC_PER_SEC);
    expect_fixture(m, "unit/metrics/two_histograms.prom");
    k8s_metrics_free(m);
}

Test(k8s_metrics, counter_labels_single_line)
{
    struct k8s_metrics *m = k8s_metrics_new();
    struct k8s_metric *c = k8s_metrics_counter(m, "c_total", "C.", "a=\"1\",b=\"x y\"");
    k8s_metric_add(c, 41);
    k8s_metric_add(c, 1);
    char *got = render(m);
    cr_expect_str_eq(got,
                     "# HELP c_total C.\n# TYPE c_total counter\nc_total{a=\"1\",b=\"x y\"} 42\n");
    free(got);
    k8s_metrics_free(m);
}

Test(k8s_metrics, counter_large_value_exact)
{
    struct k8s_metrics *m = k8s_metrics_new();
    struct k8s_metric *c = k8s_metrics_counter(m, "big_total", "B.", NULL);
    k8s_metric_add(c, 123456789012345ULL);
    char *got = render(m);
    cr_expect_str_eq(got,
                     "# HELP big_total B.\n# TYPE big_total counter\nbig_total 123456789012345\n");
    free(got);
    k8s_metrics_free(m);
}

Test(k8s_metrics, gauge_inc_and_special_values)
{
    struct k8s_metrics *m = k8s_metrics_new();
    struct k8s_metric *g = k8s_metrics_gauge(m, "g", "G.", NULL);
    k8s_metric_set(g, 1);
    k8s_metric_inc(g, 2.5);
    k8s_metric_inc(g, -6);
    char *got = render(m);
    cr_expect_str_eq(got, "# HELP g G.\n# TYPE g gauge\ng -2.5\n");
    free(got);
    k8s_metric_set(g, INFINITY);
    got = render(m);
    cr_expect_str_eq(got, "# HELP g G.\n# TYPE g gauge\ng +Inf\n");
    free(got);
    k8s_metric_set(g, -INFINITY);
    got = render(m);
    cr_expect_str_eq(got, "# HELP g G.\n# TYPE g gauge\ng -Inf\n");
    free(got);
    k8s_metric_set(g, NAN);
    got = render(m);
    cr_expect_str_eq(got, "# HELP g G.\n# TYPE g gauge\ng NaN\n");
    free(got);
    k8s_metrics_free(m);
}

Test(k8s_metrics, gauge_fn_called_at_scrape)
{
    double v = 1;
    struct k8s_metrics *m = k8s_metrics_new();
    cr_assert_not_null(
        k8s_metrics_gauge_fn(m, "cache_objects", "Objects.", "kind=\"jobs\"", read_double, &v));
    v = 12;
    char *got = render(m);
    cr_expect_str_eq(got, "# HELP cache_objects Objects.\n# TYPE cache_objects gauge\n"
                          "cache_objects{kind=\"jobs\"} 12\n");
    free(got);
    k8s_metrics_free(m);
}

Test(k8s_metrics, render_appends)
{
    struct k8s_metrics *m = k8s_metrics_new();
    k8s_metric_add(k8s_metrics_counter(m, "x_total", "X.", NULL), 1);
    struct k8s_buf b;
    k8s_buf_init(&b, 4096);
    cr_assert_eq(k8s_buf_appends(&b, "prefix\n"), 0);
    cr_assert_eq(k8s_metrics_render(m, &b), 0);
    cr_expect_str_eq(k8s_buf_str(&b),
                     "prefix\n# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n");
    k8s_buf_done(&b);
    k8s_metrics_free(m);
}

Test(k8s_metrics, render_past_cap_fails)
{
    struct k8s_metrics *m = k8s_metrics_new();
    k8s_metrics_counter(m, "x_total", "X.", NULL);
    struct k8s_buf b;
    k8s_buf_init(&b, 10);
    cr_expect_eq(k8s_metrics_render(m, &b), -K8S_ETOOBIG);
    cr_expect_eq(b.len, 0);
    k8s_buf_done(&b);
    k8s_metrics_free(m);
}

Test(k8s_metrics, empty_registry_renders_nothing)
{
    struct k8s_metrics *m = k8s_metrics_new();
    char *got = render(m);
    cr_expect_str_eq(got, "");
    free(got);
    k8s_metrics_free(m);
    k8s_metrics_free(NULL);
}

Test(k8s_metrics, null_metric_updates_are_noops)
{
    struct k8s_metrics *m = k8s_metrics_new();
    struct k8s_metric *c = k8s_metrics_counter(m, "n_total", "N.", NULL);
    k8s_metric_add(c, 2);
    k8s_metric_add(NULL, 1);
    k8s_metric_set(NULL, 1);
    k8s_metric_inc(NULL, 1);
    k8s_metric_observe_ns(NULL, 1);
    char *got = render(m);
    cr_expect_str_eq(got, "# HELP n_total N.\n# TYPE n_total counter\nn_total 2\n");
    free(got);
    k8s_metrics_free(m);
}

Test(k8s_metrics, negative_observation_counts_in_first_bucket)
{
    struct k8s_metrics *m = k8s_metrics_new();
    struct k8s_metric *h =
        k8s_metrics_histogram(m, "n_seconds", "N.", NULL, (const double[]){0.5}, 1);
    k8s_metric_observe_ns(h, -5);
    char *got = render(m);
    cr_expect_str_eq(got, "# HELP n_seconds N.\n# TYPE n_seconds histogram\n"
                          "n_seconds_bucket{le=\"0.5\"} 1\nn_seconds_bucket{le=\"+Inf\"} 1\n"
                          "n_seconds_sum 0\nn_seconds_count 1\n");
    free(got);
    k8s_metrics_free(m);
}

Test(k8s_metrics, latency_buckets_sub_millisecond_ascending)
{
    cr_assert_gt(k8s_metrics_latency_nbuckets, 3);
    cr_expect_lt(k8s_metrics_latency_buckets[0], 0.001);
    cr_expect_lt(k8s_metrics_latency_buckets[1], 0.001);
    for (size_t i = 1; i < k8s_metrics_latency_nbuckets; i++)
        cr_expect_gt(k8s_metrics_latency_buckets[i], k8s_metrics_latency_buckets[i - 1]);
    /* the 2 s admission budget lands in a finite bucket */
    cr_expect_geq(k8s_metrics_latency_buckets[k8s_metrics_latency_nbuckets - 1], 2.0);
}

static struct k8s_metric *shared_counter, *shared_hist;

static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100000; i++) {
        k8s_metric_add(shared_counter, 1);
        k8s_metric_observe_ns(shared_hist, 1000);
    }
    return NULL;
}

Test(k8s_metrics, concurrent_updates_are_not_lost)
{
    struct k8s_metrics *m = k8s_metrics_new();
    shared_counter = k8s_metrics_counter(m, "t_total", "T.", NULL);
    shared_hist = k8s_metrics_histogram(m, "t_seconds", "T.", NULL, (const double[]){1e-3}, 1);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, hammer, NULL), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    char *got = render(m);
    cr_expect_not_null(strstr(got, "\nt_total 400000\n"), "%s", got);
    cr_expect_not_null(strstr(got, "\nt_seconds_bucket{le=\"0.001\"} 400000\n"), "%s", got);
    cr_expect_not_null(strstr(got, "\nt_seconds_count 400000\n"), "%s", got);
    cr_expect_not_null(strstr(got, "\nt_seconds_sum 0.40000000000000002\n") ||
                           strstr(got, "\nt_seconds_sum 0.4\n"),
                       "%s", got);
    free(got);
    k8s_metrics_free(m);
}

/* Text format 0.0.4: in HELP text, backslash is written "\\" and a line
 * feed "\n", so a help string can never break a line. */
Test(k8s_metrics, help_text_escaped,
     .disabled = false /* was BUG: HELP text is written raw; "a\nb" splits the line */)
{
    struct k8s_metrics *m = k8s_metrics_new();
    k8s_metrics_counter(m, "e_total", "a\\b\nc", NULL);
    char *got = render(m);
    cr_expect_str_eq(got, "# HELP e_total a\\\\b\\nc\n# TYPE e_total counter\ne_total 0\n");
    free(got);
    k8s_metrics_free(m);
}

static double seven(void *ud)
{
    (void)ud;
    return 7;
}

static int two_series(void *ud, const char *name, struct k8s_buf *out)
{
    char esc[64];
    int r = k8s_metrics_family_value(out, name, "kind=\"JobSet\",name=\"a\"", 2);
    k8s_metrics_label_escape((const char *)ud, esc, sizeof(esc));
    char labels[96];
    snprintf(labels, sizeof(labels), "name=\"%s\"", esc);
    return r ? r : k8s_metrics_family_value(out, name, labels, 1);
}

/* Counters read at scrape time, and families whose series appear and go. */
Test(k8s_metrics, counter_fn_and_families)
{
    struct k8s_metrics *m = k8s_metrics_new();
    k8s_metrics_counter_fn(m, "w_restarts_total", "W.", "resource=\"pods\"", seven, NULL);
    k8s_metrics_gauge_family(m, "u_pods", "U.", two_series, "q\"uo\\te\nnl");
    char *got = render(m);
    cr_expect_str_eq(got, "# HELP w_restarts_total W.\n# TYPE w_restarts_total counter\n"
                          "w_restarts_total{resource=\"pods\"} 7\n"
                          "# HELP u_pods U.\n# TYPE u_pods gauge\n"
                          "u_pods{kind=\"JobSet\",name=\"a\"} 2\n"
                          "u_pods{name=\"q\\\"uo\\\\te\\nnl\"} 1\n");
    free(got);
    k8s_metrics_free(m);
}
