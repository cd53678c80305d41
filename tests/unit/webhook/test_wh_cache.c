/* wh_cache against the fake API server (tests/fakes/serve.py, a
 * subprocess): it watches exactly the kinds the kind table marks watched,
 * serves lookups from them without an API call, answers a miss of an
 * unwatched kind with one GET and caches it, and says "not served" for a
 * kind whose CRD is absent. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "k8s_buf.h"
#include "k8s_client.h"
#include "k8s_kinds.h"
#include "k8s_metrics.h"
#include "k8s_time.h"
#include "wh_cache.h"
#include "test_support.h"

static struct ts_fake fake;
static struct k8s_client *client;
static struct k8s_metrics *metrics;
static struct wh_cache *cache;

static void command(const char *cmd)
{
    ts_fake_command(&fake, cmd);
}

static void setup(void)
{
    ts_fake_start(&fake);
    char server[64];
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", fake.port);
    struct k8s_config cfg = {.server = server};
    struct k8s_error err;
    cr_assert_eq(k8s_client_new(&cfg, &client, &err), 0, "%s", err.message);
}

static void start_cache(void)
{
    metrics = k8s_metrics_new();
    struct wh_cache_opts o = {.absent_retry_ms = 200, .metrics = metrics};
    cr_assert_eq(wh_cache_start(client, &o, &cache), 0);
    int64_t until = k8s_mono_ns() + 20 * K8S_NSEC_PER_SEC;
    while (!wh_cache_synced(cache) && k8s_mono_ns() < until)
        usleep(20000);
    cr_assert(wh_cache_synced(cache), "the caches did not sync");
}

static void teardown(void)
{
    wh_cache_free(cache);
    cache = NULL;
    k8s_metrics_free(metrics);
    k8s_client_free(client);
    ts_fake_stop(&fake);
}

TestSuite(wh_cache, .init = setup, .fini = teardown, .timeout = 60);

static char *render(void)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    cr_assert_eq(k8s_metrics_render(metrics, &b), 0);
    return k8s_buf_take(&b, NULL);
}

/* kind: "Namespace" or a kind name the table has once (NULL row otherwise:
 * a kind it lacks) */
static int lookup(const char *kind, const char *ns, const char *name, json_t **meta,
                  struct k8s_error *err)
{
    *meta = NULL;
    const struct k8s_kind *k =
        !strcmp(kind, "Namespace") ? &k8s_kind_namespace : k8s_kind_named(kind, 0, NULL);
    return wh_lookup_meta(wh_cache_lookup(cache), k, ns, name, k8s_mono_ns() + 5 * K8S_NSEC_PER_SEC,
                          meta, err);
}

Test(wh_cache, watches_the_tables_watched_kinds)
{
    start_cache();
    char *text = render();
    char want[160];
    for (int i = 0; i < K8S_KIND_COUNT; i++) {
        snprintf(want, sizeof(want), "mldiagnostics_webhook_cache_synced{resource=\"%s\"} 1\n",
                 k8s_kinds[i].plural);
        if (k8s_kinds[i].flags & K8S_KIND_WEBHOOK_WATCH)
            cr_expect_not_null(strstr(text, want), "%s:\n%s", k8s_kinds[i].kind, text);
        else
            cr_expect_null(strstr(text, want), "%s is looked up, not watched", k8s_kinds[i].kind);
    }
    cr_expect_not_null(
        strstr(text, "mldiagnostics_webhook_cache_synced{resource=\"namespaces\"} 1"));
    free(text);
}

Test(wh_cache, lookups_from_the_watch_and_on_a_miss)
{
    command("object trainer.kubeflow.org v1alpha1 trainjobs TrainJob ml tj-1");
    command("object apps v1 deployments Deployment ml web");
    start_cache();
    json_t *meta;
    struct k8s_error err = {0};
    cr_assert_eq(lookup("TrainJob", "ml", "tj-1", &meta, &err), 0, "%s", err.message);
    cr_expect_str_eq(json_string_value(json_object_get(meta, "name")), "tj-1");
    json_decref(meta);
    cr_assert_eq(lookup("Namespace", "", "ml", &meta, &err), 0, "%s", err.message);
    json_decref(meta);
    /* not watched: one GET, then the cached answer */
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(lookup("Deployment", "ml", "web", &meta, &err), 0, "%s", err.message);
        json_decref(meta);
    }
    cr_expect_eq(lookup("Deployment", "ml", "nope", &meta, &err), -K8S_ENOTFOUND);
    char *text = render();
    cr_expect_not_null(
        strstr(text, "mldiagnostics_webhook_api_lookups_total{result=\"found\"} 1\n"), "%s", text);
    cr_expect_not_null(
        strstr(text, "mldiagnostics_webhook_api_lookups_total{result=\"not_found\"} 1\n"), "%s",
        text);
    free(text);
    /* kinds outside the table have no row: never asked for */
    cr_expect_eq(lookup("DaemonSet", "ml", "agent", &meta, &err), -K8S_EUNAVAIL);
    cr_expect_str_eq(err.message, "(no kind) is not looked up");
    cr_expect_eq(lookup("TrainJob", "ml", "", &meta, &err), -K8S_EUNAVAIL);
}

Test(wh_cache, a_kind_whose_crd_is_absent_is_not_served)
{
    command("unregister kubeflow.org v1 pytorchjobs");
    start_cache();
    json_t *meta;
    struct k8s_error err = {0};
    cr_expect_eq(lookup("PyTorchJob", "ml", "pt-1", &meta, &err), -K8S_EUNAVAIL);
    cr_expect_str_eq(err.message, "pytorchjobs is not served (CRD not installed)");
}
