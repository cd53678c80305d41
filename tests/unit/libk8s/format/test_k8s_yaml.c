/* YAML <-> jansson: scalar typing, multi-document streams, anchors and merge
 * keys, the limits (billion laughs, nesting), error reporting, and dump ->
 * load round trips over the upstream manifests and ambiguous strings. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_yaml.h"
#include "test_support.h"

#define SENTINEL ((json_t *)0x1)

/* Load a fixture that must parse; new array of documents. */
static json_t *load_fixture(const char *rel)
{
    size_t len;
    char *buf = ts_read_fixture(rel, &len);
    json_t *docs = NULL;
    struct k8s_error err = {0};
    int r = k8s_yaml_load_all(buf, len, &docs, &err);
    cr_assert_eq(r, 0, "%s: %s", rel, err.message);
    free(buf);
    return docs;
}

/* Parse buf expecting failure; returns the error, asserts *ret_docs was
 * left alone. */
static struct k8s_error load_fail(const char *buf, size_t len)
{
    json_t *docs = SENTINEL;
    struct k8s_error err = {0};
    int r = k8s_yaml_load_all(buf, len, &docs, &err);
    cr_assert_lt(r, 0, "expected failure for %.60s", buf);
    cr_assert_eq(err.err, r);
    cr_assert_eq(docs, SENTINEL, "*ret_docs modified on failure");
    return err;
}

static struct k8s_error load_fixture_fail(const char *rel)
{
    size_t len;
    char *buf = ts_read_fixture(rel, &len);
    struct k8s_error err = load_fail(buf, len);
    free(buf);
    return err;
}

/* Single document from a one-line string. New reference. */
static json_t *load_one(const char *s)
{
    json_t *docs = NULL;
    struct k8s_error err = {0};
    cr_assert_eq(k8s_yaml_load_all(s, strlen(s), &docs, &err), 0, "%s: %s", s, err.message);
    cr_assert_eq(json_array_size(docs), 1, "%s", s);
    json_t *doc = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return doc;
}

static char *dump(const json_t *doc)
{
    struct k8s_buf b;
    struct k8s_error err = {0};
    k8s_buf_init(&b, 1 << 24);
    cr_assert_eq(k8s_yaml_dump(doc, &b, &err), 0, "dump: %s", err.message);
    return k8s_buf_take(&b, NULL);
}

/* dump -> load gives back an equal value. */
static void assert_round_trip(const json_t *doc, const char *what)
{
    char *yaml = dump(doc);
    cr_assert(strncmp(yaml, "---", 3) != 0, "%s: output starts with ---", what);
    json_t *docs = NULL;
    struct k8s_error err = {0};
    cr_assert_eq(k8s_yaml_load_all(yaml, strlen(yaml), &docs, &err), 0, "%s: reload: %s\n%s", what,
                 err.message, yaml);
    cr_assert_eq(json_array_size(docs), 1, "%s:\n%s", what, yaml);
    cr_assert(json_equal(json_array_get(docs, 0), (json_t *)doc), "%s: round trip differs:\n%s",
              what, yaml);
    json_decref(docs);
    free(yaml);
}

static void assert_matches_json(const char *yaml_rel, const char *json_rel)
{
    json_t *docs = load_fixture(yaml_rel);
    json_t *want = ts_load_json(json_rel);
    char *got = json_dumps(docs, JSON_ENCODE_ANY | JSON_SORT_KEYS);
    cr_assert(json_equal(json_array_get(docs, 0), want), "%s: got %s", yaml_rel, got);
    free(got);
    json_decref(want);
    json_decref(docs);
}

Test(k8s_yaml, scalar_table_matches_json)
{
    assert_matches_json("yaml/scalars.yaml", "yaml/scalars.json");
}

Test(k8s_yaml, scalar_typing_one_liners)
{
    struct {
        const char *yaml;
        const char *json;
    } cases[] = {
        {"v: true", "true"},
        {"v: \"true\"", "\"true\""},
        {"v: 'true'", "\"true\""},
        {"v: 123", "123"},
        {"v: \"123\"", "\"123\""},
        {"v: 1.5", "1.5"},
        {"v: ~", "null"},
        {"v: null", "null"},
        {"v:", "null"},
        {"v: yes", "\"yes\""},
        {"v: 0644", "420"},
        {"v: 0x10", "16"},
        {"v: -0", "0"},
        {"v: 1e3", "1000.0"},
        {"v: |\n  true\n", "\"true\\n\""},
        {"v: >-\n  1\n", "\"1\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *doc = load_one(cases[i].yaml);
        json_t *want = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        cr_assert_not_null(want);
        json_t *got = json_object_get(doc, "v");
        char *s = json_dumps(got, JSON_ENCODE_ANY);
        cr_expect(json_equal(got, want), "%s: got %s, want %s", cases[i].yaml, s, cases[i].json);
        cr_expect_eq(json_typeof(got), json_typeof(want), "%s: type", cases[i].yaml);
        free(s);
        json_decref(want);
        json_decref(doc);
    }
}

Test(k8s_yaml, tags_are_honoured)
{
    assert_matches_json("yaml/tags.yaml", "yaml/tags.json");
}

Test(k8s_yaml, multi_document_skips_empty_documents)
{
    json_t *docs = load_fixture("yaml/multi.yaml");
    json_t *want = ts_load_json("yaml/multi.json");
    cr_assert(json_equal(docs, want));
    json_decref(want);
    json_decref(docs);
}

Test(k8s_yaml, empty_and_comment_only_input)
{
    const char *inputs[] = {"", "# only a comment\n", "---\n", "---\n---\n", "\n\n"};
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        json_t *docs = NULL;
        cr_assert_eq(k8s_yaml_load_all(inputs[i], strlen(inputs[i]), &docs, NULL), 0);
        cr_expect_eq(json_array_size(docs), 0, "input %zu", i);
        json_decref(docs);
    }
}

static void upstream_round_trip(const char *rel, size_t ndocs)
{
    json_t *docs = load_fixture(rel);
    size_t i;
    json_t *doc;
    cr_assert_eq(json_array_size(docs), ndocs, "%s", rel);
    json_array_foreach(docs, i, doc)
    {
        cr_assert(json_is_object(doc), "%s #%zu", rel, i);
        cr_assert(json_is_string(json_object_get(doc, "kind")), "%s #%zu", rel, i);
        assert_round_trip(doc, rel);
    }
    json_decref(docs);
}

Test(k8s_yaml, upstream_jobset)
{
    upstream_round_trip("upstream/jobset/paralleljobs.yaml", 1);
    upstream_round_trip("upstream/jobset/resnet.yaml", 1);
}

Test(k8s_yaml, upstream_lws)
{
    upstream_round_trip("upstream/lws/leaderworkerset.yaml", 1);
    json_t *docs = load_fixture("upstream/lws/leaderworkerset.yaml");
    json_t *spec = json_object_get(json_array_get(docs, 0), "spec");
    cr_expect(json_is_integer(json_object_get(spec, "replicas")));
    cr_expect_eq(json_integer_value(json_object_get(spec, "replicas")), 3);
    json_t *tmpl = json_object_get(spec, "leaderWorkerTemplate");
    json_t *c = json_array_get(
        json_object_get(json_object_get(json_object_get(tmpl, "workerTemplate"), "spec"),
                        "containers"),
        0);
    json_t *limits = json_object_get(json_object_get(c, "resources"), "limits");
    cr_expect_str_eq(json_string_value(json_object_get(limits, "cpu")), "100m");
    json_decref(docs);
}

Test(k8s_yaml, upstream_kuberay)
{
    upstream_round_trip("upstream/kuberay/ray-job.sample.yaml", 2);
    json_t *docs = load_fixture("upstream/kuberay/ray-job.sample.yaml");
    json_t *spec = json_object_get(json_array_get(docs, 0), "spec");
    const char *env = json_string_value(json_object_get(spec, "runtimeEnvYAML"));
    cr_assert_not_null(env);
    cr_expect(strstr(env, "pip:\n  - requests==2.26.0\n") != NULL, "%s", env);
    json_t *cluster = json_object_get(spec, "rayClusterSpec");
    cr_expect_str_eq(json_string_value(json_object_get(cluster, "rayVersion")), "2.52.0");
    json_t *params = json_object_get(json_object_get(cluster, "headGroupSpec"), "rayStartParams");
    cr_expect(json_is_object(params) && json_object_size(params) == 0);
    json_decref(docs);
}

Test(k8s_yaml, kubernetes_api_json_loads_as_yaml_and_round_trips)
{
    const char *names[] = {"batch.v1.Job", "core.v1.Namespace", "core.v1.Pod"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char rel[128];
        snprintf(rel, sizeof(rel), "upstream/kubernetes-api/%s.json", names[i]);
        json_t *want = ts_load_json(rel);
        json_t *docs = load_fixture(rel);
        cr_expect(json_equal(json_array_get(docs, 0), want), "%s", rel);
        assert_round_trip(want, rel);
        json_decref(docs);
        json_decref(want);
    }
}

Test(k8s_yaml, ambiguous_strings_survive_round_trip)
{
    size_t len;
    char *text = ts_read_fixture("yaml/ambiguous.json", &len);
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_ALLOW_NUL, &jerr); /* it has "nul\u0000byte" */
    cr_assert_not_null(doc, "ambiguous.json: %s", jerr.text);
    free(text);
    assert_round_trip(doc, "ambiguous.json");
    size_t i;
    json_t *v;
    json_t *all = json_array();
    const char *k;
    json_t *group;
    json_object_foreach(doc, k, group)
    {
        json_array_foreach(group, i, v)
        {
            assert_round_trip(v, json_string_value(v)); /* also as a root scalar */
            json_array_append(all, v);
        }
    }
    cr_assert_gt(json_array_size(all), 100);
    json_decref(all);
    json_decref(doc);
}

Test(k8s_yaml, dump_format_is_kubectl_like)
{
    json_t *doc = ts_load_json("yaml/dump.json");
    char *got = dump(doc);
    char *want = ts_read_fixture("yaml/dump.yaml", NULL);
    cr_expect_str_eq(got, want);
    assert_round_trip(doc, "dump.json");
    free(want);
    free(got);
    json_decref(doc);
}

Test(k8s_yaml, dump_quotes_type_lookalikes)
{
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:s}", "a", "true", "b", "123", "c", "", "d",
                            "yes", "e", "plain text");
    char *got = dump(doc);
    cr_expect_str_eq(got, "a: \"true\"\nb: \"123\"\nc: \"\"\nd: \"yes\"\ne: plain text\n");
    free(got);
    json_decref(doc);
}

Test(k8s_yaml, dump_reals_read_back_as_reals)
{
    const double values[] = {0.0,
                             -0.0,
                             1.0,
                             -1.0,
                             1.5,
                             0.1,
                             1e20,
                             1e-7,
                             1e300,
                             1000.0,
                             2.5e15,
                             1e16,
                             123456789.125,
                             1e-320,
                             3.141592653589793,
                             9007199254740993.0};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        json_t *doc = json_pack("{s:f}", "x", values[i]);
        char *yaml = dump(doc);
        json_t *back = load_one(yaml);
        json_t *x = json_object_get(back, "x");
        cr_expect(json_is_real(x), "%g dumped as %s", values[i], yaml);
        cr_expect(json_real_value(x) == values[i], "%.17g dumped as %s", values[i], yaml);
        json_decref(back);
        free(yaml);
        json_decref(doc);
    }
    json_t *one = json_real(1.0);
    char *s = dump(one);
    cr_expect_str_eq(s, "1.0\n");
    free(s);
    json_decref(one);
}

Test(k8s_yaml, dump_empty_collections_and_scalars)
{
    json_t *values[] = {json_object(), json_array(), json_null(), json_true(), json_integer(-5)};
    const char *want[] = {"{}\n", "[]\n", "null\n", "true\n", "-5\n"};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char *got = dump(values[i]);
        cr_expect_str_eq(got, want[i]);
        free(got);
        json_decref(values[i]);
    }
}

Test(k8s_yaml, dump_appends_and_documents_concatenate)
{
    json_t *docs = load_fixture("yaml/multi.yaml");
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    size_t i;
    json_t *doc;
    json_array_foreach(docs, i, doc)
    {
        if (i > 0)
            cr_assert_eq(k8s_buf_appends(&b, "---\n"), 0);
        cr_assert_eq(k8s_yaml_dump(doc, &b, NULL), 0);
    }
    json_t *back = NULL;
    cr_assert_eq(k8s_yaml_load_all(b.data, b.len, &back, NULL), 0);
    cr_expect(json_equal(back, docs), "%s", b.data);
    json_decref(back);
    k8s_buf_done(&b);
    json_decref(docs);
}

Test(k8s_yaml, dump_respects_buffer_cap)
{
    json_t *doc = ts_load_json("yaml/dump.json");
    char *yaml = dump(doc);
    struct k8s_buf b;
    struct k8s_error err = {0};
    k8s_buf_init(&b, strlen(yaml) + 3); /* "keep" + the document does not fit */
    cr_assert_eq(k8s_buf_appends(&b, "keep"), 0);
    cr_expect_eq(k8s_yaml_dump(doc, &b, &err), -K8S_ETOOBIG);
    cr_expect_eq(err.err, -K8S_ETOOBIG);
    cr_expect_str_eq(k8s_buf_str(&b), "keep", "out changed on failure");
    b.max = strlen(yaml) + 4; /* exactly fits */
    cr_expect_eq(k8s_yaml_dump(doc, &b, &err), 0, "%s", err.message);
    cr_expect_eq(b.len, strlen(yaml) + 4);
    cr_expect_str_eq(k8s_buf_str(&b) + 4, yaml);
    k8s_buf_done(&b);
    free(yaml);
    json_decref(doc);
}

Test(k8s_yaml, anchors_aliases_and_merge_keys)
{
    assert_matches_json("yaml/anchors.yaml", "yaml/anchors.json");
    /* aliases are copies, not shared references */
    json_t *docs = load_fixture("yaml/anchors.yaml");
    json_t *doc = json_array_get(docs, 0);
    json_t *lists = json_object_get(doc, "lists");
    cr_expect_neq(json_array_get(lists, 0), json_array_get(lists, 1));
    cr_expect_neq(json_object_get(doc, "list"), json_array_get(lists, 0));
    json_decref(docs);
}

Test(k8s_yaml, alias_errors)
{
    struct k8s_error err = load_fail("a: *nope", 8);
    cr_expect(strstr(err.message, "unknown anchor 'nope'"), "%s", err.message);
    err = load_fail("a: &a [1, *a]", 13); /* an anchor is usable once complete */
    cr_expect_eq(err.err, -K8S_EPARSE);
    err = load_fail("a: &a [1]\n*a : x\n", 17);
    cr_expect(strstr(err.message, "line 2"), "%s", err.message);
    err = load_fail("a:\n  <<: 5\n", 11);
    cr_expect(strstr(err.message, "merge"), "%s", err.message);
}

Test(k8s_yaml, billion_laughs_is_rejected)
{
    struct k8s_error err = load_fixture_fail("yaml/billion-laughs.yaml");
    cr_expect_eq(err.err, -K8S_EPARSE);
    cr_expect(strstr(err.message, "nodes"), "%s", err.message);
}

/* "[[[...]]]" nested depth times, or the block form "- - - x". */
static char *nested(size_t depth, bool block)
{
    char *s = malloc(depth * 2 + 4);
    cr_assert_not_null(s);
    size_t n = 0;
    for (size_t i = 0; i < depth; i++, n += block ? 2 : 1)
        memcpy(s + n, block ? "- " : "[", block ? 2 : 1);
    s[n++] = 'x';
    for (size_t i = 0; !block && i < depth; i++)
        s[n++] = ']';
    s[n] = '\0';
    return s;
}

Test(k8s_yaml, deep_nesting_is_rejected_cleanly)
{
    for (int block = 0; block < 2; block++) {
        char *ok = nested(K8S_YAML_MAX_DEPTH, block);
        json_t *doc = load_one(ok);
        free(ok);
        assert_round_trip(doc, "1000 levels");
        json_decref(doc);

        char *deep = nested(K8S_YAML_MAX_DEPTH + 1, block);
        struct k8s_error err = load_fail(deep, strlen(deep));
        cr_expect_eq(err.err, -K8S_EPARSE);
        cr_expect(strstr(err.message, "nesting deeper than 1000"), "%s", err.message);
        free(deep);
    }
    char *huge = nested(200000, false);
    struct k8s_error err = load_fail(huge, strlen(huge));
    cr_expect(strstr(err.message, "nesting"), "%s", err.message);
    free(huge);
}

Test(k8s_yaml, alias_cannot_exceed_depth)
{
    char *inner = nested(K8S_YAML_MAX_DEPTH - 1, false);
    size_t n = strlen(inner) + 32;
    char *s = malloc(n);
    snprintf(s, n, "a: &a %s\nb: [*a]\n", inner); /* depth 1 + 999 fits, 2 + 999 not */
    struct k8s_error err = load_fail(s, strlen(s));
    cr_expect(strstr(err.message, "line 2") && strstr(err.message, "nesting"), "%s", err.message);
    free(s);
    free(inner);
}

Test(k8s_yaml, dump_rejects_deep_documents)
{
    json_t *doc = json_array();
    for (int i = 0; i < K8S_YAML_MAX_DEPTH; i++) {
        json_t *outer = json_array();
        json_array_append_new(outer, doc);
        doc = outer;
    }
    struct k8s_buf b;
    struct k8s_error err = {0};
    k8s_buf_init(&b, 1 << 20);
    cr_assert_eq(k8s_buf_appends(&b, "keep"), 0);
    cr_expect_eq(k8s_yaml_dump(doc, &b, &err), -K8S_EINVAL);
    cr_expect(strstr(err.message, "nested deeper"), "%s", err.message);
    cr_expect_str_eq(k8s_buf_str(&b), "keep");
    k8s_buf_done(&b);
    json_decref(doc);
}

Test(k8s_yaml, malformed_yaml_reports_line)
{
    struct k8s_error err = load_fixture_fail("yaml/malformed.yaml");
    cr_expect_eq(err.err, -K8S_EPARSE);
    cr_expect(strncmp(err.message, "yaml: line 3 column 7: ", 23) == 0, "%s", err.message);
    cr_expect(strstr(err.message, "mapping values are not allowed"), "%s", err.message);
}

Test(k8s_yaml, invalid_utf8_is_rejected)
{
    struct k8s_error err = load_fixture_fail("yaml/invalid-utf8.yaml");
    cr_expect_eq(err.err, -K8S_EPARSE);
    cr_expect(strncmp(err.message, "yaml: line 4 column ", 20) == 0, "%s", err.message);
    cr_expect(strstr(err.message, "UTF-8"), "%s", err.message);
}

Test(k8s_yaml, other_errors)
{
    const char *cases[][2] = {
        {"? [a]\n: b\n", "mapping key must be a scalar"},
        {"{[a]: b}", "mapping key must be a scalar"},
        {"v: .inf", "no JSON form"},
        {"v: -.Inf", "no JSON form"},
        {"v: .nan", "no JSON form"},
        {"v: 1e999", "no JSON form"},
        {"v: !!int abc", "as !!int"},
        {"v: !!bool yes", "as !!bool"},
        {"v: \"unterminated", "line 1 column"},
        {"a: 1\n\tb: 2\n", "line 2 column"},
        {"a: 1\x01", "control characters"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct k8s_error err = load_fail(cases[i][0], strlen(cases[i][0]));
        cr_expect_eq(err.err, -K8S_EPARSE, "%s", cases[i][0]);
        cr_expect(strstr(err.message, cases[i][1]), "%s: %s", cases[i][0], err.message);
        cr_expect(strncmp(err.message, "yaml: line ", 11) == 0, "%s", err.message);
    }
}

Test(k8s_yaml, null_reterr_is_allowed)
{
    json_t *docs = SENTINEL;
    cr_expect_eq(k8s_yaml_load_all("a: [", 4, &docs, NULL), -K8S_EPARSE);
    cr_expect_eq(docs, SENTINEL);
}

Test(k8s_yaml, input_need_not_be_nul_terminated)
{
    const char buf[] = {'a', ':', ' ', '1', '2'};
    json_t *docs = NULL;
    cr_assert_eq(k8s_yaml_load_all(buf, 4, &docs, NULL), 0);
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(docs, 0), "a")), 1);
    json_decref(docs);
}

Test(k8s_yaml, looks_like_json)
{
    cr_expect(k8s_yaml_looks_like_json("{\"a\": 1}", 8));
    cr_expect(k8s_yaml_looks_like_json(" \n\t[1]", 6));
    cr_expect_not(k8s_yaml_looks_like_json("a: {}", 5));
    cr_expect_not(k8s_yaml_looks_like_json("# {\n", 4));
    cr_expect_not(k8s_yaml_looks_like_json("   ", 3));
    cr_expect_not(k8s_yaml_looks_like_json("", 0));
    cr_expect_not(k8s_yaml_looks_like_json("[", 0));
}
