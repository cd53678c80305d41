/* wh_meta: the pull reader gives what the tree reader gives — for the
 * metadata of every review in tests/fixtures/unit/admit-golden and for the
 * shapes jansson reads in its own way (duplicate keys, escapes, members of
 * the wrong type) — maps answer lookups and list in key order, and text
 * that ends early is refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"
#include "wh_meta.h"

#define DIR_REL "unit/admit-golden"
#define SUFFIX  ".review.json"

static int pull_text(const char *text, struct wh_meta *m)
{
    struct k8s_error err;
    *m = (struct wh_meta){0};
    int r = k8s_json_pull_text(text, strlen(text), wh_meta_pull, m, &err);
    if (r < 0)
        wh_meta_done(m);
    return r;
}

/* A metadata as one line: both readers must give the same. */
static void put(FILE *f, const char *s)
{
    fprintf(f, s ? "\"%s\"" : "-", s);
}

static void dump_map(FILE *f, const struct wh_map *m)
{
    size_t n;
    struct wh_kv *kv = wh_map_ordered(m, &n);
    cr_assert_not_null(kv);
    fprintf(f, "|%d:", m->shape);
    for (size_t i = 0; i < n; i++)
        put(f, kv[i].key), put(f, kv[i].val);
    free(kv);
}

static char *dump(const struct wh_meta *m)
{
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    fprintf(f, "%d", m->shape);
    const char *const v[] = {m->name,    m->generate_name, m->ns,
                             m->created, m->owner_kind,    m->owner_name};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        put(f, v[i]);
    dump_map(f, &m->labels);
    dump_map(f, &m->annotations);
    fclose(f);
    return out;
}

/* Both readers over metadata text; jansson decides what the text means. */
static void check_text(const char *text, const char *what)
{
    json_error_t jerr;
    json_t *tree = json_loads(text, JSON_DECODE_ANY, &jerr);
    cr_assert_not_null(tree, "%s: %s", what, jerr.text);
    struct wh_meta a, b;
    cr_assert_eq(pull_text(text, &a), 0, "%s", what);
    cr_assert_eq(wh_meta_from_json(tree, &b), 0, "%s", what);
    char *da = dump(&a), *db = dump(&b);
    cr_expect_str_eq(da, db, "%s", what);
    free(da);
    free(db);
    wh_meta_done(&a);
    wh_meta_done(&b);
    json_decref(tree);
}

static void check_review(json_t *doc, const char *name, void *n)
{
    json_t *v =
        json_object_get(json_object_get(json_object_get(doc, "request"), "object"), "metadata");
    char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    if (text)
        check_text(text, name), ++*(int *)n;
    free(text);
}

Test(wh_meta, every_golden_review_reads_as_its_tree)
{
    int n = 0;
    cr_assert_geq(ts_each_json(DIR_REL, SUFFIX, check_review, &n), 100);
    cr_assert_geq(n, 100, "only %d metadata read", n);
}

Test(wh_meta, shapes_as_jansson_reads_them)
{
    static const char *const cases[] = {
        "{}",
        "null",
        "[1,2]",
        "\"meta\"",
        "{\"labels\":null,\"annotations\":[]}",
        "{\"labels\":{\"a\":1,\"b\":null,\"c\":{\"x\":[\"}\"]},\"d\":\"\"},\"name\":7}",
        "{\"ownerReferences\":{\"kind\":\"Job\"}}",
        "{\"ownerReferences\":[1,[],{\"kind\":\"A\",\"name\":\"a\",\"controller\":\"true\"},"
        "{\"kind\":\"B\",\"name\":\"b\",\"controller\":false},{\"kind\":\"C\",\"controller\":true},"
        "{\"kind\":\"D\",\"name\":\"d\",\"controller\":true},"
        "{\"kind\":\"E\",\"name\":\"e\",\"controller\":true}]}",
        " { \"name\" : \"p\" , \"labels\" : { \"k\" : \"v\" } } ",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_text(cases[i], cases[i]);
}

Test(wh_meta, of_duplicate_keys_the_last_counts)
{
    check_text("{\"labels\":{\"a\":\"1\",\"b\":\"2\",\"a\":\"3\"}}", "keys");
    check_text("{\"labels\":{\"a\":\"1\"},\"labels\":{\"b\":\"2\"}}", "maps");
    check_text("{\"name\":\"x\",\"name\":5,\"generateName\":\"g\",\"generateName\":\"h\"}",
               "strings");
    check_text("{\"ownerReferences\":[{\"kind\":\"A\",\"name\":\"a\",\"controller\":true}],"
               "\"ownerReferences\":[]}",
               "owners");
    check_text("{\"ownerReferences\":[{\"kind\":\"A\",\"name\":\"a\",\"controller\":true,"
               "\"controller\":false,\"kind\":\"B\"},{\"kind\":\"C\",\"name\":\"c\","
               "\"controller\":false,\"controller\":true}]}",
               "owner members");
    struct wh_meta m;
    cr_assert_eq(pull_text("{\"labels\":{\"a\":\"1\",\"b\":\"2\",\"a\":\"3\"}}", &m), 0);
    cr_expect_str_eq(wh_meta_label(&m, "a"), "3");
    cr_expect_str_eq(wh_meta_label(&m, "b"), "2");
    wh_meta_done(&m);
}

/* More than 32 entries: sorted once and searched by halves; the same
 * answers and order as a short map. */
Test(wh_meta, long_maps_are_sorted_once)
{
    char text[8192];
    size_t at = (size_t)snprintf(text, sizeof(text), "{\"annotations\":{");
    for (int i = 0; i < 100; i++)
        at += (size_t)snprintf(text + at, sizeof(text) - at, "%s\"k%03d\":\"v%d\"", i ? "," : "",
                               (i * 37) % 100, i);
    snprintf(text + at, sizeof(text) - at, ",\"k005\":\"last\"}}");
    check_text(text, "100 annotations out of order, one twice");
    struct wh_meta m;
    cr_assert_eq(pull_text(text, &m), 0);
    cr_expect(m.annotations.sorted);
    cr_expect_eq(m.annotations.n, 100, "the duplicate dropped");
    cr_expect_str_eq(wh_meta_annotation(&m, "k005"), "last");
    cr_expect_str_eq(wh_meta_annotation(&m, "k037"), "v1");
    cr_expect_null(wh_meta_annotation(&m, "k100"));
    cr_expect_null(wh_meta_annotation(&m, "k"));
    for (size_t i = 1; i < m.annotations.n; i++)
        cr_expect_lt(strcmp(m.annotations.kv[i - 1].key, m.annotations.kv[i].key), 0);
    wh_meta_done(&m);
}

Test(wh_meta, lookups_and_order)
{
    struct wh_meta m;
    cr_assert_eq(pull_text("{\"labels\":{\"b\":\"2\",\"a.b/c\":\"3\",\"B\":\"0\",\"a\":\"1\","
                           "\"n\":5,\"ab\":\"x\"},\"annotations\":\"no\"}",
                           &m),
                 0);
    cr_expect_not(m.labels.sorted, "short: kept in document order");
    cr_expect_str_eq(wh_meta_label(&m, "a"), "1");
    cr_expect_str_eq(wh_meta_label(&m, "ab"), "x");
    cr_expect_null(wh_meta_label(&m, "a.b"), "a prefix of a key is not the key");
    cr_expect_null(wh_meta_label(&m, "n"), "not a string");
    cr_expect_not_null(wh_map_find(&m.labels, "n"), "present all the same");
    cr_expect_eq(m.annotations.shape, WH_SHAPE_OTHER);
    cr_expect_null(wh_meta_annotation(&m, "no"));
    size_t n;
    struct wh_kv *kv = wh_map_ordered(&m.labels, &n);
    const char *want[] = {"B", "a", "a.b/c", "ab", "b", "n"}; /* byte order, not locale */
    cr_assert_eq(n, 6);
    for (size_t i = 0; i < n; i++)
        cr_expect_str_eq(kv[i].key, want[i]);
    free(kv);
    wh_meta_done(&m);
    cr_expect_null(wh_meta_label(NULL, "a"));
    cr_expect_null(wh_map_get(NULL, "a"));
}

Test(wh_meta, escapes_are_decoded)
{
    check_text("{\"name\":\"a\\u00e9\\\"\",\"labels\":{\"k\\/\\u0041\":\"v\\n\\ud83d\\ude00\"}}",
               "escapes");
    struct wh_meta m;
    cr_assert_eq(pull_text("{\"labels\":{\"k\\/\\u0041\":\"v\"}}", &m), 0);
    cr_expect_str_eq(wh_meta_label(&m, "k/A"), "v");
    wh_meta_done(&m);
}

Test(wh_meta, text_that_ends_early_is_refused)
{
    const char *cases[] = {"{\"labels\":{\"a\":\"1\"}",
                           "{\"labels\":{\"a\":", "{\"ownerReferences\":[{\"kind\":\"A\"",
                           "{\"name\":\"x"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct wh_meta m;
        cr_expect_lt(pull_text(cases[i], &m), 0, "%s", cases[i]);
    }
}

Test(wh_meta, pod_from_tree)
{
    json_t *pod = json_pack("{s:{s:s,s:{s:s}},s:{s:[{s:s}]}}", "metadata", "name", "p", "labels",
                            "a", "1", "spec", "containers", "name", "c");
    struct wh_pod p;
    cr_assert_eq(wh_pod_from_json(pod, &p), 0);
    cr_expect_eq(p.shape, WH_SHAPE_LIST);
    cr_expect_str_eq(p.meta.name, "p");
    cr_expect_str_eq(wh_meta_label(&p.meta, "a"), "1");
    cr_assert_eq(p.spec.list[WH_CONTAINERS].n, 1);
    cr_expect_str_eq(p.spec.list[WH_CONTAINERS].c[0].name, "c");
    wh_pod_done(&p);
    cr_expect_eq(p.shape, WH_SHAPE_ABSENT);
    cr_assert_eq(wh_pod_from_json(NULL, &p), 0);
    cr_expect_eq(p.shape, WH_SHAPE_ABSENT);
    cr_expect_eq(p.meta.shape, WH_SHAPE_ABSENT);
    wh_pod_done(&p);
    json_decref(pod);
}
