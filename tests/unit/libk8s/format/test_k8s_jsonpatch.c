/* JSON Pointer building and the RFC 6902 applier, including the whole
 * json-patch-tests conformance suite (tests.json and spec_tests.json). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jsonpatch.h"
#include "test_support.h"

static void run_suite(const char *rel)
{
    json_t *suite = ts_load_json(rel);
    size_t i, ran = 0;
    json_t *t;
    json_array_foreach(suite, i, t)
    {
        if (json_is_true(json_object_get(t, "disabled")))
            continue;
        const char *comment = json_string_value(json_object_get(t, "comment"));
        json_t *doc = json_object_get(t, "doc");
        json_t *patch = json_object_get(t, "patch");
        json_t *expected = json_object_get(t, "expected");
        json_t *error = json_object_get(t, "error");
        json_t *out = NULL;
        struct k8s_error err;
        int r = k8s_jsonpatch_apply(doc, patch, &out, &err);
        if (error) {
            cr_expect_lt(r, 0, "%s #%zu (%s): expected error \"%s\"", rel, i,
                         comment ? comment : "", json_string_value(error));
        } else {
            cr_expect_eq(r, 0, "%s #%zu (%s): %s", rel, i, comment ? comment : "",
                         r < 0 ? err.message : "");
            if (r == 0 && expected)
                cr_expect(k8s_json_equal(out, expected), "%s #%zu (%s): wrong result", rel, i,
                          comment ? comment : "");
        }
        json_decref(out);
        ran++;
    }
    cr_expect_gt(ran, 10);
    json_decref(suite);
}

Test(k8s_jsonpatch, rfc6902_tests_json)
{
    run_suite("upstream/json-patch-tests/tests.json");
}

Test(k8s_jsonpatch, rfc6902_spec_tests_json)
{
    run_suite("upstream/json-patch-tests/spec_tests.json");
}

Test(k8s_jsonpatch, pointer_escaping)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1024);
    cr_assert_eq(k8s_jsonptr_push(&b, "metadata"), 0);
    cr_assert_eq(k8s_jsonptr_push(&b, "annotations"), 0);
    cr_assert_eq(k8s_jsonptr_push(&b, "diagon.gke.io/a~b"), 0);
    cr_assert_str_eq(k8s_buf_str(&b), "/metadata/annotations/diagon.gke.io~1a~0b");
    k8s_buf_reset(&b);
    cr_assert_eq(k8s_jsonptr_push(&b, "~/~/"), 0);
    cr_assert_eq(k8s_jsonptr_push_index(&b, 12), 0);
    cr_assert_eq(k8s_jsonptr_push_end(&b), 0);
    cr_assert_str_eq(k8s_buf_str(&b), "/~0~1~0~1/12/-");
    k8s_buf_reset(&b);
    cr_assert_eq(k8s_jsonptr_push(&b, ""), 0);
    cr_assert_str_eq(k8s_buf_str(&b), "/");
    k8s_buf_done(&b);
}

Test(k8s_jsonpatch, pointer_round_trip_through_get)
{
    json_t *doc = json_pack("{s:{s:i}, s:[i,i]}", "a/b", "m~n", 7, "arr", 1, 2);
    struct k8s_buf b;
    k8s_buf_init(&b, 1024);
    cr_assert_eq(k8s_jsonptr_push(&b, "a/b"), 0);
    cr_assert_eq(k8s_jsonptr_push(&b, "m~n"), 0);
    cr_assert_eq(json_integer_value(k8s_jsonptr_get(doc, k8s_buf_str(&b))), 7);
    cr_assert_eq(json_integer_value(k8s_jsonptr_get(doc, "/arr/1")), 2);
    cr_assert_null(k8s_jsonptr_get(doc, "/arr/01"));
    cr_assert_null(k8s_jsonptr_get(doc, "/arr/2"));
    cr_assert_null(k8s_jsonptr_get(doc, "arr"));
    cr_assert_null(k8s_jsonptr_get(doc, "/a~2b"));
    cr_assert_eq(k8s_jsonptr_get(doc, ""), doc);
    k8s_buf_done(&b);
    json_decref(doc);
}

Test(k8s_jsonpatch, failed_patch_leaves_input_untouched)
{
    json_t *doc = json_pack("{s:[i]}", "a", 1);
    json_t *patch = json_pack("[{s:s,s:s,s:i},{s:s,s:s}]", "op", "add", "path", "/a/-", "value", 2,
                              "op", "remove", "path", "/nope");
    json_t *out = (json_t *)0x1;
    struct k8s_error err;
    cr_assert_lt(k8s_jsonpatch_apply(doc, patch, &out, &err), 0);
    cr_assert_eq(out, (json_t *)0x1, "output must be untouched on failure");
    cr_assert_eq(json_array_size(json_object_get(doc, "a")), 1);
    cr_assert(strstr(err.message, "operation 1 (remove /nope)"), "%s", err.message);
    json_decref(doc);
    json_decref(patch);
}

Test(k8s_jsonpatch, add_requires_parent)
{
    json_t *doc = json_object();
    json_t *patch =
        json_pack("[{s:s,s:s,s:s}]", "op", "add", "path", "/metadata/labels", "value", "x");
    json_t *out = NULL;
    struct k8s_error err;
    cr_assert_lt(k8s_jsonpatch_apply(doc, patch, &out, &err), 0);
    cr_assert(strstr(err.message, "parent does not exist"), "%s", err.message);
    json_decref(doc);
    json_decref(patch);
}
