/* wh_podspec: the text reader gives what the tree reader gives — for the
 * spec of every review in tests/fixtures/unit/admit-golden and for the
 * shapes jansson reads in its own way (duplicate keys, escapes, members of
 * the wrong type) — and refuses text that ends early. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"
#include "wh_podspec.h"

#define DIR_REL "unit/admit-golden"
#define SUFFIX  ".review.json"

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static void expect_same_container(const struct wh_container *a, const struct wh_container *b,
                                  const char *what)
{
    cr_expect_eq(a->is_object, b->is_object, "%s: is_object", what);
    cr_expect(same_str(a->name, b->name), "%s: name %s vs %s", what, a->name, b->name);
    cr_expect(same_str(a->restart_policy, b->restart_policy), "%s: restartPolicy", what);
    cr_expect_eq(a->env_shape, b->env_shape, "%s: env shape", what);
    cr_assert_eq(a->n_env, b->n_env, "%s: env entries %zu vs %zu", what, a->n_env, b->n_env);
    for (size_t i = 0; i < a->n_env; i++) {
        const struct wh_envvar *x = &a->env[i], *y = &b->env[i];
        cr_expect(same_str(x->name, y->name), "%s: env[%zu].name %s vs %s", what, i, x->name,
                  y->name);
        cr_expect(same_str(x->value, y->value), "%s: env[%zu].value", what, i);
        cr_expect_eq(x->len, y->len, "%s: env[%zu] name length", what, i);
        cr_expect_eq(x->vlen, y->vlen, "%s: env[%zu] value length", what, i);
        cr_expect_eq(x->value_from, y->value_from, "%s: env[%zu].valueFrom", what, i);
        json_t *rx = json_loadb(x->raw, x->raw_len, JSON_DECODE_ANY, NULL);
        json_t *ry = json_loadb(y->raw, y->raw_len, JSON_DECODE_ANY, NULL);
        cr_expect(rx && json_equal(rx, ry), "%s: env[%zu]'s text: %.*s vs %.*s", what, i,
                  (int)x->raw_len, x->raw, (int)y->raw_len, y->raw);
        json_decref(rx);
        json_decref(ry);
    }
    cr_expect_eq(a->mounts_shape, b->mounts_shape, "%s: volumeMounts shape", what);
    cr_assert_eq(a->n_mounts, b->n_mounts, "%s: mounts", what);
    for (size_t i = 0; i < a->n_mounts; i++) {
        cr_expect(same_str(a->mounts[i].name, b->mounts[i].name), "%s: mount %zu", what, i);
        cr_expect(same_str(a->mounts[i].mount_path, b->mounts[i].mount_path), "%s: path %zu", what,
                  i);
    }
}

static void expect_same(const struct wh_podspec *a, const struct wh_podspec *b, const char *what)
{
    cr_expect_eq(a->shape, b->shape, "%s: spec shape", what);
    for (int l = 0; l < WH_NLISTS; l++) {
        cr_expect_eq(a->list[l].shape, b->list[l].shape, "%s: %s shape", what,
                     wh_podspec_list_name(l));
        cr_assert_eq(a->list[l].n, b->list[l].n, "%s: %s", what, wh_podspec_list_name(l));
        for (size_t i = 0; i < a->list[l].n; i++)
            expect_same_container(&a->list[l].c[i], &b->list[l].c[i], what);
    }
    cr_expect_eq(a->volumes_shape, b->volumes_shape, "%s: volumes shape", what);
    cr_assert_eq(a->n_volumes, b->n_volumes, "%s: volumes", what);
    for (size_t i = 0; i < a->n_volumes; i++)
        cr_expect(same_str(a->volumes[i], b->volumes[i]), "%s: volume %zu", what, i);
}

/* Both readers over spec text; jansson decides what the text means. */
static void check_text(const char *text, const char *what)
{
    json_error_t jerr;
    json_t *spec = json_loads(text, JSON_DECODE_ANY, &jerr);
    cr_assert_not_null(spec, "%s: %s", what, jerr.text);
    struct wh_podspec a, b;
    cr_assert_eq(wh_podspec_read(text, strlen(text), NULL, &a), 0, "%s", what);
    cr_assert_eq(wh_podspec_from_json(spec, &b), 0, "%s", what);
    expect_same(&a, &b, what);
    wh_podspec_done(&a);
    wh_podspec_done(&b);
    json_decref(spec);
}

static void check_review(json_t *doc, const char *name, void *n)
{
    json_t *v = json_object_get(json_object_get(json_object_get(doc, "request"), "object"), "spec");
    char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    if (text)
        check_text(text, name), ++*(int *)n;
    free(text);
}

Test(wh_podspec, every_golden_review_reads_as_its_tree)
{
    int n = 0;
    cr_assert_geq(ts_each_json(DIR_REL, SUFFIX, check_review, &n), 100);
    cr_assert_geq(n, 100, "only %d specs read", n);
}

Test(wh_podspec, shapes_as_jansson_reads_them)
{
    static const char *const cases[] = {
        "{}",
        "null",
        "[1,2]",
        "\"spec\"",
        "{\"containers\":null,\"volumes\":{}}",
        "{\"containers\":{\"name\":\"a\"},\"initContainers\":7}",
        "{\"containers\":[1,\"x\",null,[],{}],\"volumes\":[3,{\"name\":4},{\"name\":\"v\"}]}",
        "{\"containers\":[{\"name\":\"a\",\"env\":null,\"volumeMounts\":\"m\"},"
        "{\"name\":\"b\",\"env\":{},\"volumeMounts\":null},{\"name\":\"c\",\"env\":[]}]}",
        "{\"containers\":[{\"name\":\"a\",\"env\":[7,{\"name\":1,\"value\":{\"x\":[\"]\"]}},"
        "{\"valueFrom\":null},{\"name\":\"N\",\"value\":\"\"}]}]}",
        " { \"containers\" : [ { \"name\" : \"a\" , \"env\" : [ { \"name\" : \"X\" } ] } ] } ",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_text(cases[i], cases[i]);
}

Test(wh_podspec, of_duplicate_keys_the_last_counts)
{
    check_text("{\"containers\":[{\"name\":\"a\"}],\"containers\":[{\"name\":\"b\"},{}]}", "lists");
    check_text("{\"containers\":[{\"name\":\"a\",\"name\":5,\"env\":[{\"name\":\"A\"}],"
               "\"env\":[{\"name\":\"B\",\"name\":\"C\",\"value\":\"1\",\"value\":2}]}]}",
               "members");
    check_text("{\"volumes\":[{\"name\":\"x\"}],\"volumes\":\"no\"}", "volumes");
}

Test(wh_podspec, escapes_are_decoded_in_names_and_values)
{
    const char *text = "{\"containers\":[{\"n\\u0061me\":\"a\\\"b\\\\c\\/d\\n\","
                       "\"env\":[{\"name\":\"\\u00e9\\ud83d\\ude00\",\"value\":\"$\\u0028X)\","
                       "\"\\u0076alueFrom\":{}}]}]}";
    check_text(text, "escapes");
    struct wh_podspec s;
    cr_assert_eq(wh_podspec_read(text, strlen(text), NULL, &s), 0);
    cr_expect_str_eq(s.list[WH_CONTAINERS].c[0].name, "a\"b\\c/d\n");
    const struct wh_envvar *e = &s.list[WH_CONTAINERS].c[0].env[0];
    cr_expect_str_eq(e->name, "\xc3\xa9\xf0\x9f\x98\x80");
    cr_expect_eq(e->len, 6);
    cr_expect_str_eq(e->value, "$(X)");
    cr_expect(e->value_from);
    wh_podspec_done(&s);
}

Test(wh_podspec, long_escaped_keys_are_skipped)
{
    check_text("{\"containers\":[{\"\\u006eame_that_is_much_longer_than_any_we_read\":\"x\","
               "\"name\":\"a\"}]}",
               "long key");
}

Test(wh_podspec, text_that_ends_early_is_refused)
{
    static const char *const cases[] = {"{\"containers\":[{\"name\":\"a",
                                        "{\"containers\":[{\"name\":\"a\"}", "{\"volumes\":[",
                                        "{\"containers\""};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct wh_podspec s;
        cr_expect_eq(wh_podspec_read(cases[i], strlen(cases[i]), NULL, &s), -K8S_EPARSE, "%s",
                     cases[i]);
        cr_expect_null(s.pool, "%s: left empty", cases[i]);
    }
}

Test(wh_podspec, env_entries_text_is_the_documents_own)
{
    const char *e0 = "{\"name\" : \"A\", \"value\":\"b\\u00e9\"}";
    const char *e1 = "{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"x\"}}}";
    char text[512];
    snprintf(text, sizeof(text), "{\"containers\":[{\"env\":[ %s ,\n\t%s\r\n]}]}", e0, e1);
    struct wh_podspec s;
    cr_assert_eq(wh_podspec_read(text, strlen(text), NULL, &s), 0);
    cr_assert_eq(s.list[WH_CONTAINERS].c[0].n_env, 2);
    const struct wh_envvar *v = s.list[WH_CONTAINERS].c[0].env;
    cr_expect(v[0].raw_len == strlen(e0) && !memcmp(v[0].raw, e0, v[0].raw_len), "%.*s",
              (int)v[0].raw_len, v[0].raw);
    cr_expect(v[1].raw_len == strlen(e1) && !memcmp(v[1].raw, e1, v[1].raw_len), "%.*s",
              (int)v[1].raw_len, v[1].raw);
    wh_podspec_done(&s);
}

Test(wh_podspec, absent_spec)
{
    struct wh_podspec s;
    cr_assert_eq(wh_podspec_read(NULL, 0, NULL, &s), 0);
    cr_expect_eq(s.shape, WH_SHAPE_ABSENT);
    cr_assert_eq(wh_podspec_from_json(NULL, &s), 0);
    cr_expect_eq(s.shape, WH_SHAPE_ABSENT);
    wh_podspec_done(&s);
    wh_podspec_done(NULL);
}

Test(wh_podspec, strings_are_copied_whole_up_to_the_last_byte_of_the_text)
{
    /* text in a buffer of its exact length (ASan sees a byte read or
     * written past it); the last strings lie within 16 bytes of its end */
    static const char *const cases[] = {
        "{\"volumes\":[{\"name\":\"a\"},{\"name\":\"0123456789abcdef0123\"},{\"name\":\"b\"}]}",
        "{\"containers\":[{\"env\":[{\"name\":\"N\",\"value\":\"0123456789abcdefghijklmnopqrstu"
        "vwxyz0123456789abcdefghijklmnopqrstuvwxyz\"},{\"name\":\"\\u00e9\",\"value\":\"v\"}]}]}",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = strlen(cases[i]);
        char *text = malloc(len);
        memcpy(text, cases[i], len);
        struct wh_podspec a, b;
        json_t *spec = json_loadb(text, len, 0, NULL);
        cr_assert_eq(wh_podspec_read(text, len, NULL, &a), 0, "%s", cases[i]);
        cr_assert_eq(wh_podspec_from_json(spec, &b), 0);
        expect_same(&a, &b, cases[i]);
        wh_podspec_done(&a);
        wh_podspec_done(&b);
        json_decref(spec);
        free(text);
    }
}
