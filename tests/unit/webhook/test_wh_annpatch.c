/* wh_annpatch: the pod's annotations set in one operation written whole
 * (the pod's own in order, of duplicates the last, ours replaced in place
 * or added after), added where there are none, per key when a value of
 * the pod's is not a string; a refreshed value replaced when stale, a kept
 * one left; nothing when nothing changes. Each patch is also applied. */
#include <criterion/criterion.h>
#include <string.h>

#include "k8s_jsonpatch.h"
#include "wh_annpatch.h"

static const struct wh_ann set[] = {{"a/id", "new-id", true}, {"a/inj", "1.0;abc", false}};
#define N (sizeof(set) / sizeof(set[0]))

/* The patch for the pod's metadata text (read with the pull reader, as
 * admission does), its warnings, and the pod it gives. */
static json_t *run(const char *meta_text, json_t **warnings, json_t **after)
{
    struct wh_meta m = {0};
    struct k8s_error err;
    cr_assert_eq(k8s_json_pull_text(meta_text, strlen(meta_text), wh_meta_pull, &m, &err), 0);
    struct k8s_jsonpatch_text t;
    k8s_jsonpatch_text_init(&t);
    *warnings = json_array();
    cr_assert_eq(wh_annpatch(&m, "", set, N, &t, *warnings), 0);
    json_t *patch = k8s_jsonpatch_text_tree(&t);
    cr_assert_not_null(patch);
    k8s_jsonpatch_text_done(&t);
    wh_meta_done(&m);
    json_t *pod = json_pack("{s:o}", "metadata", json_loads(meta_text, 0, NULL));
    cr_assert_eq(k8s_jsonpatch_apply(pod, patch, after, &err), 0, "%s", err.message);
    json_decref(pod);
    return patch;
}

static void expect_op(const json_t *patch, size_t i, const char *op, const char *path)
{
    const json_t *o = json_array_get(patch, i);
    cr_expect_str_eq(json_string_value(json_object_get(o, "op")), op, "op %zu", i);
    cr_expect_str_eq(json_string_value(json_object_get(o, "path")), path, "path %zu", i);
}

static void expect_json(const json_t *got, const char *want_text)
{
    json_t *want = json_loads(want_text, JSON_DECODE_ANY, NULL);
    char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
    cr_expect(json_equal(got, want), "got %s, want %s", g, want_text);
    free(g);
    json_decref(want);
}

Test(wh_annpatch, whole_in_one_operation_the_pods_own_kept_in_order)
{
    json_t *w, *after, *patch = run("{\"annotations\":{\"z\":\"1\",\"a\":\"2\"}}", &w, &after);
    cr_assert_eq(json_array_size(patch), 1);
    expect_op(patch, 0, "add", "/metadata/annotations");
    const json_t *v = json_object_get(json_array_get(patch, 0), "value");
    expect_json(v, "{\"z\":\"1\",\"a\":\"2\",\"a/id\":\"new-id\",\"a/inj\":\"1.0;abc\"}");
    const char *key;
    json_t *val;
    const char *order[] = {"z", "a", "a/id", "a/inj"};
    size_t i = 0;
    json_object_foreach((json_t *)v, key, val) cr_expect_str_eq(key, order[i++]);
    cr_expect_eq(json_array_size(w), 0);
    json_decref(patch), json_decref(w), json_decref(after);
}

Test(wh_annpatch, none_yet_one_add_of_ours)
{
    json_t *w, *after, *patch = run("{\"name\":\"p\"}", &w, &after);
    cr_assert_eq(json_array_size(patch), 1);
    expect_op(patch, 0, "add", "/metadata/annotations");
    expect_json(json_object_get(json_array_get(patch, 0), "value"),
                "{\"a/id\":\"new-id\",\"a/inj\":\"1.0;abc\"}");
    json_decref(patch), json_decref(w), json_decref(after);
}

Test(wh_annpatch, stale_refreshed_in_place_kept_one_left)
{
    json_t *w, *after,
        *patch = run("{\"annotations\":{\"a/id\":\"old\",\"x\":\"y\",\"a/inj\":\"0.9;def\"}}", &w,
                     &after);
    cr_assert_eq(json_array_size(patch), 1);
    expect_json(json_object_get(after, "metadata"),
                "{\"annotations\":{\"a/id\":\"new-id\",\"x\":\"y\",\"a/inj\":\"0.9;def\"}}");
    json_decref(patch), json_decref(w), json_decref(after);
}

Test(wh_annpatch, nothing_when_nothing_changes)
{
    json_t *w, *after,
        *patch = run("{\"annotations\":{\"a/id\":\"new-id\",\"a/inj\":\"0.9;def\"}}", &w, &after);
    cr_expect_eq(json_array_size(patch), 0);
    json_decref(patch), json_decref(w), json_decref(after);
}

Test(wh_annpatch, duplicate_keys_the_last_counts)
{
    json_t *w, *after, *patch = run("{\"annotations\":{\"d\":\"1\",\"d\":\"2\"}}", &w, &after);
    cr_assert_eq(json_array_size(patch), 1);
    expect_json(json_object_get(json_array_get(patch, 0), "value"),
                "{\"d\":\"2\",\"a/id\":\"new-id\",\"a/inj\":\"1.0;abc\"}");
    json_decref(patch), json_decref(w), json_decref(after);
}

Test(wh_annpatch, a_value_not_a_string_one_operation_per_change)
{
    json_t *w, *after, *patch = run("{\"annotations\":{\"n\":5,\"a/id\":\"old\"}}", &w, &after);
    cr_assert_eq(json_array_size(patch), 2);
    expect_op(patch, 0, "replace", "/metadata/annotations/a~1id");
    expect_op(patch, 1, "add", "/metadata/annotations/a~1inj");
    expect_json(json_object_get(after, "metadata"),
                "{\"annotations\":{\"n\":5,\"a/id\":\"new-id\",\"a/inj\":\"1.0;abc\"}}");
    json_decref(patch), json_decref(w), json_decref(after);
}

Test(wh_annpatch, not_a_map_warns_and_writes_nothing)
{
    json_t *w, *after, *patch = run("{\"annotations\":[1]}", &w, &after);
    cr_expect_eq(json_array_size(patch), 0);
    cr_assert_eq(json_array_size(w), 1);
    cr_expect(strstr(json_string_value(json_array_get(w, 0)), "not a map") != NULL);
    json_decref(patch), json_decref(w), json_decref(after);
}
