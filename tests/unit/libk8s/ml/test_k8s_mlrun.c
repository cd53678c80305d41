/* k8s_mlrun: the SDK's required fields and its run id (DESIGN §3.5),
 * checked against vectors the google-cloud-mldiagnostics SDK computed
 * (tests/fixtures/unit/mlrun/make_vectors.py): every file in
 * tests/fixtures/unit/mlrun/vectors/ is read. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_mlrun.h"
#include "test_support.h"

#define VECTORS "unit/mlrun/vectors"

/* "a, b" of a JSON array of strings. */
static void joined(const json_t *arr, char *out, size_t cap)
{
    size_t i, len = 0;
    json_t *s;
    out[0] = '\0';
    json_array_foreach(arr, i, s) len +=
        (size_t)snprintf(out + len, cap - len, "%s%s", i ? ", " : "", json_string_value(s));
}

static void check_vector(const char *file)
{
    char rel[512], want_missing[256] = "", got_missing[256], id[K8S_MLRUN_ID_SIZE];
    snprintf(rel, sizeof(rel), VECTORS "/%s", file);
    json_t *v = ts_load_json(rel);
    const char *ident = json_string_value(json_object_get(v, "identifier"));
    const char *meta = json_string_value(json_object_get(v, "metadata"));
    const char *want_id = json_string_value(json_object_get(v, "run_id"));
    cr_assert(ident && meta, "%s: no identifier/metadata", file);
    joined(json_object_get(v, "missing"), want_missing, sizeof(want_missing));
    k8s_mlrun_names(k8s_mlrun_missing(ident, meta), true, got_missing, sizeof(got_missing));
    cr_expect_str_eq(got_missing, want_missing, "%s: missing fields", file);
    int r = k8s_mlrun_id_json(ident, meta, id);
    if (want_id) {
        cr_expect_eq(r, 0, "%s: the SDK starts, we refuse", file);
        cr_expect_str_eq(id, want_id, "%s: run id", file);
    } else {
        cr_expect_eq(r, -K8S_EINVAL, "%s: the SDK refuses (%s), we derive %s", file,
                     want_missing[0] ? want_missing : "invalid timestamp", id);
        cr_expect_str_eq(id, "", "%s", file);
    }
    json_decref(v);
}

Test(k8s_mlrun, every_sdk_vector)
{
    char *root = ts_fixture_path(VECTORS);
    DIR *d = opendir(root);
    cr_assert_not_null(d, "%s", root);
    size_t n = 0, ok = 0, refused = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
            continue;
        check_vector(e->d_name);
        char rel[512];
        snprintf(rel, sizeof(rel), VECTORS "/%s", e->d_name);
        json_t *v = ts_load_json(rel);
        *(json_object_get(v, "run_id") ? &ok : &refused) += 1;
        json_decref(v);
        n++;
    }
    closedir(d);
    free(root);
    cr_expect_geq(ok, 10, "%zu vectors the SDK accepts", ok);
    cr_expect_geq(refused, 10, "%zu vectors the SDK refuses", refused);
    cr_expect_eq(n, ok + refused);
}

/* The parts, as the webhook passes them, give the SDK's id for jobset.json. */
Test(k8s_mlrun, id_of_parts_equals_the_sdk)
{
    json_t *v = ts_load_json(VECTORS "/jobset.json");
    char id[K8S_MLRUN_ID_SIZE];
    cr_assert_eq(k8s_mlrun_id("projects/p/locations/us-central1/clusters/prod", "team-a", "JobSet",
                              "train-7", "2024-03-05T07:08:09Z", id),
                 0);
    cr_expect_str_eq(id, json_string_value(json_object_get(v, "run_id")));
    cr_expect_eq(strlen(id), K8S_MLRUN_ID_SIZE - 1);
    json_decref(v);
}

Test(k8s_mlrun, id_of_empty_part_refused)
{
    const char *p[5] = {"c", "ns", "Job", "j", "2024-03-05T07:08:09Z"};
    for (int i = 0; i < 5; i++) {
        const char *q[5];
        memcpy(q, p, sizeof(q));
        q[i] = "";
        char id[K8S_MLRUN_ID_SIZE] = "junk";
        cr_expect_eq(k8s_mlrun_id(q[0], q[1], q[2], q[3], q[4], id), -K8S_EINVAL, "part %d", i);
        cr_expect_str_eq(id, "");
    }
}

Test(k8s_mlrun, table_is_the_sdks_order)
{
    json_t *v = ts_load_json(VECTORS "/nothing.json");
    const json_t *want = json_object_get(v, "missing");
    cr_assert_eq(json_array_size(want), K8S_MLRUN_NFIELDS);
    for (size_t i = 0; i < K8S_MLRUN_NFIELDS; i++)
        cr_expect_str_eq(k8s_mlrun_fields[i].sdk, json_string_value(json_array_get(want, i)));
    json_decref(v);
}

Test(k8s_mlrun, missing_of_malformed_json)
{
    unsigned all = (1u << K8S_MLRUN_NFIELDS) - 1;
    cr_expect_eq(k8s_mlrun_missing(NULL, NULL), all);
    cr_expect_eq(k8s_mlrun_missing("[", "{}"), all);
    cr_expect_eq(k8s_mlrun_missing("{\"namespace\":5}", "[]"), all, "not a string is missing");
}

Test(k8s_mlrun, names_by_key_and_truncated)
{
    char out[64];
    unsigned mask = 1u << K8S_MLRUN_CLUSTER | 1u << K8S_MLRUN_CREATED;
    k8s_mlrun_names(mask, false, out, sizeof(out));
    cr_expect_str_eq(out, "clustername, creation-timestamp");
    k8s_mlrun_names(mask, true, out, sizeof(out));
    cr_expect_str_eq(out, "cluster, creation-timestamp");
    k8s_mlrun_names(0, false, out, sizeof(out));
    cr_expect_str_eq(out, "");
    char small[8];
    k8s_mlrun_names(mask, false, small, sizeof(small));
    cr_expect_str_eq(small, "cluster");
}

Test(k8s_mlrun, cluster_short)
{
    cr_expect_str_eq(k8s_mlrun_cluster_short("projects/p/locations/l/clusters/N"), "N");
    cr_expect_str_eq(k8s_mlrun_cluster_short("plain"), "plain");
    cr_expect_str_eq(k8s_mlrun_cluster_short(""), "");
    cr_expect_str_eq(k8s_mlrun_cluster_short("a/"), "");
}
