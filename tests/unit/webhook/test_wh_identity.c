/* wh_identity: GKE_DIAGON_IDENTIFIER / GKE_DIAGON_METADATA exact bytes and
 * key order (DESIGN §3.5), omissions with warnings, the SDK's run id (the
 * value google-cloud-mldiagnostics computed: tests/fixtures/unit/mlrun/)
 * and the fields it would miss. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_time.h"
#include "wh_identity.h"
#include "wh_workload.h"
#include "test_support.h"

#define CLUSTER           "projects/p/locations/us-central1/clusters/prod"
#define T_20240305_070809 ((time_t)1709622489)
#define BIT(f)            (1u << K8S_MLRUN_##f)

/* The run id the SDK computed for a vector of tests/fixtures/unit/mlrun. */
static const char *sdk_run_id(const char *vector)
{
    static __thread char id[K8S_MLRUN_ID_SIZE];
    char rel[256];
    snprintf(rel, sizeof(rel), "unit/mlrun/vectors/%s.json", vector);
    json_t *v = ts_load_json(rel);
    const char *s = json_string_value(json_object_get(v, "run_id"));
    cr_assert_not_null(s, "%s: the SDK refuses it", rel);
    snprintf(id, sizeof(id), "%s", s);
    json_decref(v);
    return id;
}

static void from_doc(const char *rel, const char *ns, const char *parent, struct wh_workload *w)
{
    json_t *doc = ts_load_json(rel);
    cr_assert_eq(wh_workload_from_doc(doc, ns, parent, w), 0);
    json_decref(doc);
}

/* The workload of a pod document: meta holds its metadata as read. */
static void resolve(json_t *pod, struct wh_meta *meta, struct wh_workload *w)
{
    cr_assert_eq(wh_meta_from_json(json_object_get(pod, "metadata"), meta), 0);
    cr_assert_eq(wh_workload_resolve(meta, "team-a", NULL, T_20240305_070809, 0, w), 0);
}

/* A metadata document read as the webhook reads it. */
static void meta_of(json_t *meta_doc, struct wh_meta *ret)
{
    cr_assert_eq(wh_meta_from_json(meta_doc, ret), 0);
}

static void expect_warnings(json_t *w, const char *const *want, size_t n)
{
    cr_expect_eq(json_array_size(w), n, "warnings: %zu, want %zu", json_array_size(w), n);
    for (size_t i = 0; i < n && i < json_array_size(w); i++)
        cr_expect_str_eq(json_string_value(json_array_get(w, i)), want[i]);
}

Test(wh_identity, jobset_all_known)
{
    struct wh_workload w;
    from_doc("unit/identity/jobset.json", "team-a", "Job/train-7-workers-0", &w);
    json_t *warn = json_array();
    struct wh_identity id = {0};
    cr_assert_eq(wh_identity_build(&w, CLUSTER, warn, &id), 0);
    cr_expect_str_eq(id.identifier, "{\"metadata.name\":\"train-7\",\"metadata.kind\":\"JobSet\","
                                    "\"clustername\":\"" CLUSTER "\",\"namespace\":\"team-a\"}");
    cr_expect_str_eq(id.metadata, "{\"parent-workload\":\"Job/train-7-workers-0\","
                                  "\"creation-timestamp\":\"2024-03-05T07:08:09Z\","
                                  "\"associated-labels\":\"alpha=1,app.kubernetes.io/name=trainer,"
                                  "managed-mldiagnostics-gke=true,zeta=z\"}");
    /* prod_team-a_JobSet_train-7_20240305-070809, hashed as the SDK does */
    cr_expect_str_eq(id.run_id, sdk_run_id("jobset"));
    cr_expect_eq(id.missing, 0);
    cr_expect_eq(json_array_size(warn), 0);
    /* what the SDK derives from the env values is the same id */
    char rid[K8S_MLRUN_ID_SIZE];
    cr_expect_eq(k8s_mlrun_id_json(id.identifier, id.metadata, rid), 0);
    cr_expect_str_eq(rid, id.run_id);
    wh_identity_done(&id);
    cr_expect_null(id.identifier);
    cr_expect_null(id.metadata);
    wh_identity_done(&id);
    wh_identity_done(NULL);
    json_decref(warn);
    wh_workload_done(&w);
}

Test(wh_identity, two_pods_of_one_workload_share_identifier)
{
    struct wh_workload a, b;
    from_doc("unit/identity/jobset.json", "team-a", "Job/train-7-workers-0", &a);
    from_doc("unit/identity/jobset.json", "team-a", "Job/train-7-workers-1", &b);
    struct wh_identity ia = {0}, ib = {0};
    cr_assert_eq(wh_identity_build(&a, CLUSTER, NULL, &ia), 0);
    cr_assert_eq(wh_identity_build(&b, CLUSTER, NULL, &ib), 0);
    cr_expect_str_eq(ia.identifier, ib.identifier);
    cr_expect_str_eq(ia.run_id, ib.run_id);
    cr_expect_str_neq(ia.metadata, ib.metadata); /* parent-workload differs */
    json_t *ma = json_loads(ia.metadata, 0, NULL), *mb = json_loads(ib.metadata, 0, NULL);
    cr_expect(json_equal(json_object_get(ma, "creation-timestamp"),
                         json_object_get(mb, "creation-timestamp")));
    cr_expect(json_equal(json_object_get(ma, "associated-labels"),
                         json_object_get(mb, "associated-labels")));
    json_decref(ma);
    json_decref(mb);
    wh_identity_done(&ia);
    wh_identity_done(&ib);
    wh_workload_done(&a);
    wh_workload_done(&b);
}

Test(wh_identity, unknown_cluster_omitted_with_warning)
{
    struct wh_workload w;
    from_doc("unit/identity/jobset.json", "team-a", "Job/train-7-workers-0", &w);
    json_t *warn = json_array();
    struct wh_identity id = {0};
    cr_assert_eq(wh_identity_build(&w, "", warn, &id), 0);
    cr_expect_str_eq(id.identifier, "{\"metadata.name\":\"train-7\",\"metadata.kind\":\"JobSet\","
                                    "\"namespace\":\"team-a\"}");
    cr_expect_str_eq(id.run_id, "", "no run id without a cluster");
    cr_expect_eq(id.missing, BIT(CLUSTER));
    const char *want[] = {"cluster name unknown: GKE_DIAGON_IDENTIFIER omits clustername "
                          "(set --cluster-name or CLUSTER_NAME)"};
    expect_warnings(warn, want, 1);
    wh_identity_done(&id);
    json_decref(warn);
    wh_workload_done(&w);
}

Test(wh_identity, unknown_labels_and_timestamp_standalone)
{
    json_t *pod = ts_load_json("unit/identity/jobset-pod.json");
    struct wh_workload w;
    struct wh_meta m;
    resolve(pod, &m, &w);
    json_t *warn = json_array();
    struct wh_identity id = {0};
    cr_assert_eq(wh_identity_build(&w, CLUSTER, warn, &id), 0);
    cr_expect_str_eq(id.identifier, "{\"metadata.name\":\"train-7\",\"metadata.kind\":\"JobSet\","
                                    "\"clustername\":\"" CLUSTER "\",\"namespace\":\"team-a\"}");
    cr_expect_str_eq(id.metadata, "{\"parent-workload\":\"Job/train-7-workers-0\"}");
    cr_expect_str_eq(id.run_id, "");
    cr_expect_eq(id.missing, BIT(CREATED), "standalone: the SDK would refuse to start");
    const char *want[] = {"GKE_DIAGON_METADATA omits creation-timestamp and associated-labels: "
                          "standalone: JobSet team-a/train-7 not looked up"};
    expect_warnings(warn, want, 1);
    wh_identity_done(&id);
    json_decref(warn);
    wh_workload_done(&w);
    wh_meta_done(&m);
    json_decref(pod);
}

Test(wh_identity, unknown_timestamp_only)
{
    struct wh_workload w;
    from_doc("unit/identity/jobset-nolabels.json", "team-a", NULL, &w);
    json_t *warn = json_array();
    struct wh_identity id = {0};
    cr_assert_eq(wh_identity_build(&w, CLUSTER, warn, &id), 0);
    /* labels are known to be empty: "" is the truth, not an omission */
    cr_expect_str_eq(id.metadata, "{\"associated-labels\":\"\"}");
    const char *want[] = {"GKE_DIAGON_METADATA omits creation-timestamp: offline: JobSet "
                          "train-8 has no creationTimestamp"};
    expect_warnings(warn, want, 1);
    cr_expect_str_eq(id.run_id, "");
    wh_identity_done(&id);
    json_decref(warn);
    wh_workload_done(&w);
}

Test(wh_identity, unknown_labels_only)
{
    struct wh_workload w;
    from_doc("unit/identity/jobset.json", "team-a", "Job/j", &w);
    w.labels = NULL;
    snprintf(w.unknown_why, sizeof(w.unknown_why), "lookup of JobSet team-a/train-7: timed out");
    json_t *warn = json_array();
    struct wh_identity id = {0};
    cr_assert_eq(wh_identity_build(&w, CLUSTER, warn, &id), 0);
    cr_expect_str_eq(id.metadata, "{\"parent-workload\":\"Job/j\","
                                  "\"creation-timestamp\":\"2024-03-05T07:08:09Z\"}");
    const char *want[] = {"GKE_DIAGON_METADATA omits associated-labels: lookup of JobSet "
                          "team-a/train-7: timed out"};
    expect_warnings(warn, want, 1);
    /* the run id needs no labels */
    cr_expect_str_eq(id.run_id, sdk_run_id("jobset"));
    cr_expect_eq(id.missing, 0);
    wh_identity_done(&id);
    json_decref(warn);
    wh_workload_done(&w);
}

Test(wh_identity, nothing_known_is_empty_object)
{
    struct wh_workload w = {0};
    snprintf(w.kind, sizeof(w.kind), "Job");
    snprintf(w.name, sizeof(w.name), "j");
    snprintf(w.ns, sizeof(w.ns), "n");
    json_t *warn = json_array();
    struct wh_identity id = {0};
    cr_assert_eq(wh_identity_build(&w, "c", warn, &id), 0);
    cr_expect_str_eq(id.metadata, "{}");
    const char *want[] = {"GKE_DIAGON_METADATA omits creation-timestamp and associated-labels: "
                          "unknown"};
    expect_warnings(warn, want, 1);
    wh_identity_done(&id);
    json_decref(warn);
}

Test(wh_identity, bare_pod)
{
    json_t *pod = ts_load_json("unit/identity/bare-pod.json");
    struct wh_workload w;
    struct wh_meta m;
    resolve(pod, &m, &w);
    json_t *warn = json_array();
    struct wh_identity id = {0};
    cr_assert_eq(wh_identity_build(&w, "prod", warn, &id), 0);
    cr_expect_str_eq(id.identifier, "{\"metadata.name\":\"debug-shell\",\"metadata.kind\":\"Pod\","
                                    "\"clustername\":\"prod\",\"namespace\":\"team-a\"}");
    cr_expect_str_eq(id.metadata, "{\"creation-timestamp\":\"2024-03-05T07:08:09Z\","
                                  "\"associated-labels\":\"managed-mldiagnostics-gke=true,"
                                  "run=debug\"}");
    /* prod_team-a_Pod_debug-shell_20240305-070809: the bare-pod vector */
    cr_expect_str_eq(id.run_id, sdk_run_id("bare-pod"));
    cr_expect_eq(json_array_size(warn), 0);
    wh_identity_done(&id);
    json_decref(warn);
    wh_workload_done(&w);
    wh_meta_done(&m);
    json_decref(pod);
}

Test(wh_identity, json_escaping_of_odd_values)
{
    struct wh_workload w;
    json_t *doc = ts_load_json("unit/identity/jobset.json");
    json_object_set_new(json_object_get(json_object_get(doc, "metadata"), "labels"), "q",
                        json_string("a\"b\\c\xc3\xa9"));
    cr_assert_eq(wh_workload_from_doc(doc, "team-a", "Job/x", &w), 0);
    json_decref(doc);
    const char *cluster = "weird \"cluster\"\\\xe2\x98\x83/\ttab";
    struct wh_identity id = {0};
    cr_assert_eq(wh_identity_build(&w, cluster, NULL, &id), 0);
    json_error_t e;
    json_t *ident = json_loads(id.identifier, 0, &e);
    cr_assert_not_null(ident, "%s: %s", id.identifier, e.text);
    cr_expect_str_eq(json_string_value(json_object_get(ident, "clustername")), cluster);
    json_t *md = json_loads(id.metadata, 0, &e);
    cr_assert_not_null(md, "%s: %s", id.metadata, e.text);
    cr_expect_str_eq(json_string_value(json_object_get(md, "associated-labels")),
                     "alpha=1,app.kubernetes.io/name=trainer,managed-mldiagnostics-gke=true,"
                     "q=a\"b\\c\xc3\xa9,zeta=z");
    /* compact: exactly jansson's compact rendering, keys in contract order */
    char *again = json_dumps(ident, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cr_expect_str_eq(again, id.identifier);
    free(again);
    json_decref(ident);
    json_decref(md);
    wh_identity_done(&id);
    wh_workload_done(&w);
}

/* DESIGN §3.5: "A value that is not known ... is omitted from the JSON,
 * never invented, and a warning names it." */
Test(wh_identity, unknown_namespace_warned)
{
    struct wh_workload w;
    from_doc("unit/identity/jobset.json", "", "Job/x", &w);
    json_t *warn = json_array();
    struct wh_identity id = {0};
    cr_assert_eq(wh_identity_build(&w, CLUSTER, warn, &id), 0);
    cr_expect_str_eq(id.identifier, "{\"metadata.name\":\"train-7\",\"metadata.kind\":\"JobSet\","
                                    "\"clustername\":\"" CLUSTER "\"}");
    cr_assert_eq(json_array_size(warn), 1);
    cr_expect_not_null(strstr(json_string_value(json_array_get(warn, 0)), "namespace"));
    cr_expect_eq(id.missing, BIT(NAMESPACE));
    cr_expect_str_eq(id.run_id, "");
    wh_identity_done(&id);
    json_decref(warn);
    wh_workload_done(&w);
}

static char *sorted(json_t *labels)
{
    json_t *doc = json_pack("{s:o}", "labels", labels);
    struct wh_meta m;
    meta_of(doc, &m);
    char *s = wh_sorted_labels(&m.labels);
    wh_meta_done(&m);
    json_decref(doc);
    return s;
}

Test(wh_identity, sorted_labels)
{
    char *s = sorted(json_pack("{s:s,s:s,s:s,s:s}", "b", "2", "a.b/c", "3", "a", "1", "B", "0"));
    cr_expect_str_eq(s, "B=0,a=1,a.b/c=3,b=2"); /* byte order, not locale */
    free(s);
    s = sorted(json_object());
    cr_expect_str_eq(s, "");
    free(s);
    s = sorted(json_pack("{s:i}", "n", 5));
    cr_expect_str_eq(s, "n=");
    free(s);
}

Test(wh_identity, adopt_keeps_bytes)
{
    json_t *meta = ts_load_json("unit/identity/adopt-meta.json");
    struct wh_identity id = {0};
    struct wh_meta m;
    meta_of(meta, &m);
    cr_assert_eq(wh_identity_adopt(&m, &id), 0);
    wh_meta_done(&m);
    cr_expect_str_eq(id.identifier,
                     json_string_value(json_object_get(json_object_get(meta, "annotations"),
                                                       "diagon.gke.io/identifier")));
    cr_expect_str_eq(id.metadata,
                     json_string_value(json_object_get(json_object_get(meta, "annotations"),
                                                       "diagon.gke.io/metadata")));
    /* its creation timestamp has an offset, which the SDK cannot read */
    cr_expect_str_eq(id.run_id, "");
    cr_expect_eq(id.missing, BIT(CREATED));
    wh_identity_done(&id);
    json_decref(meta);
}

Test(wh_identity, adopt_derives_the_sdks_run_id)
{
    json_t *meta = ts_load_json("unit/identity/adopt-utc.json");
    struct wh_identity id = {0};
    struct wh_meta m;
    meta_of(meta, &m);
    cr_assert_eq(wh_identity_adopt(&m, &id), 0);
    wh_meta_done(&m);
    cr_expect_str_eq(id.run_id, sdk_run_id("jobset"));
    cr_expect_eq(id.missing, 0);
    cr_expect_str_eq(id.cluster, CLUSTER);
    wh_identity_done(&id);
    json_decref(meta);
}

Test(wh_identity, adopt_partial_identity_has_no_run_id)
{
    json_t *meta = ts_load_json("unit/identity/adopt-partial.json");
    struct wh_identity id = {0};
    struct wh_meta m;
    meta_of(meta, &m);
    cr_assert_eq(wh_identity_adopt(&m, &id), 0);
    wh_meta_done(&m);
    cr_expect_str_eq(id.metadata, "{\"parent-workload\":\"Job/train-7-workers-1\"}");
    cr_expect_str_eq(id.run_id, "");
    cr_expect_eq(id.missing, BIT(CLUSTER) | BIT(CREATED));
    wh_identity_done(&id);
    json_decref(meta);
}

Test(wh_identity, adopt_not_found)
{
    struct wh_identity id = {.identifier = (char *)"sentinel"};
    json_t *meta = ts_load_json("unit/identity/adopt-missing.json");
    struct wh_meta m;
    meta_of(meta, &m);
    cr_expect_eq(wh_identity_adopt(&m, &id), -K8S_ENOTFOUND);
    wh_meta_done(&m);
    cr_expect_str_eq(id.identifier, "sentinel", "untouched");
    json_decref(meta);
    cr_expect_eq(wh_identity_adopt(NULL, &id), -K8S_ENOTFOUND);
    struct wh_meta empty = {0};
    cr_expect_eq(wh_identity_adopt(&empty, &id), -K8S_ENOTFOUND);
}
