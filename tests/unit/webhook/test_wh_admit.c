/* wh_admit: the admission edge counts what the core reports; here the
 * incomplete-identity counter by missing field (DESIGN §3.5) and the
 * warning that names the field. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_metrics.h"
#include "k8s_time.h"
#include "wh_admit.h"
#include "test_support.h"

#define REVIEW  "unit/review/pod-create-v1.json" /* a JobSet pod, opted in by its label */
#define CLUSTER "projects/p/locations/us-central1/clusters/prod"

static json_t *admit(const struct wh_admit_ctx *ctx)
{
    size_t len;
    char *body = ts_read_fixture(REVIEW, &len);
    struct wh_admit_result res;
    cr_assert_eq(wh_admit(ctx, body, len, k8s_mono_ns(), &res), 0);
    free(body);
    cr_assert_eq(res.status, 200);
    cr_expect_eq(res.outcome, WH_OUT_INJECTED);
    json_t *doc = json_loadb(res.body, res.len, 0, NULL);
    free(res.body);
    cr_assert_not_null(doc);
    return doc;
}

static bool warned(const json_t *doc, const char *text)
{
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(json_object_get(doc, "response"), "warnings"), i, w)
    {
        if (strstr(json_string_value(w), text))
            return true;
    }
    return false;
}

static char *metrics(struct k8s_metrics *m)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    cr_assert_eq(k8s_metrics_render(m, &b), 0);
    return k8s_buf_take(&b, NULL);
}

#define SERIES "mldiagnostics_webhook_incomplete_identity_total{field=\""

Test(wh_admit, incomplete_identity_counted_by_field_and_warned)
{
    struct wh_config cfg;
    wh_config_init(&cfg);
    cfg.cluster_name = CLUSTER;
    cr_assert_eq(wh_config_finish(&cfg, NULL), 0);
    struct k8s_metrics *m = k8s_metrics_new();
    struct wh_admit_ctx ctx;
    wh_admit_init(&ctx, &cfg, NULL, m); /* standalone: no creation timestamp */
    json_t *doc = admit(&ctx);
    cr_expect(warned(doc, "the identity lacks creation-timestamp: the "
                          "google-cloud-mldiagnostics SDK will refuse to start a run"));
    json_decref(doc);
    char *text = metrics(m);
    cr_expect_not_null(strstr(text, SERIES "creation-timestamp\"} 1\n"), "%s", text);
    cr_expect_not_null(strstr(text, SERIES "clustername\"} 0\n"), "%s", text);
    cr_expect_not_null(strstr(text, SERIES "namespace\"} 0\n"), "%s", text);
    free(text);
    /* no cluster name either: both fields, each counted */
    wh_config_done(&cfg);
    wh_config_init(&cfg); /* the same address: ctx keeps pointing at it */
    cfg.cluster_name = "";
    cr_assert_eq(wh_config_finish(&cfg, NULL), 0);
    doc = admit(&ctx);
    cr_expect(warned(doc, "the identity lacks clustername, creation-timestamp"));
    json_decref(doc);
    text = metrics(m);
    cr_expect_not_null(strstr(text, SERIES "creation-timestamp\"} 2\n"), "%s", text);
    cr_expect_not_null(strstr(text, SERIES "clustername\"} 1\n"), "%s", text);
    free(text);
    k8s_metrics_free(m);
    wh_config_done(&cfg);
}
