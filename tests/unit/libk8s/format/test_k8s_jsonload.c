/* k8s_json_load_filtered: with no filter it must accept exactly what
 * json_loadb accepts and build equal values; with a filter it keeps only
 * the named members yet still rejects any malformed byte anywhere. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jsonload.h"
#include "test_support.h"

static const char *const fixtures[] = {"upstream/kubernetes-api/core.v1.Pod.json",
                                       "upstream/kubernetes-api/batch.v1.Job.json",
                                       "upstream/kubernetes-api/core.v1.Namespace.json",
                                       "upstream/json-patch-tests/tests.json",
                                       "upstream/json-patch-tests/spec_tests.json",
                                       "admission/bench-jobset-5k.json",
                                       "admission/bench-jobset-64k.json"};

/* Same verdict and same value as jansson. */
static void differential(const char *buf, size_t len)
{
    json_error_t je;
    json_t *want = json_loadb(buf, len, 0, &je);
    json_t *got = NULL;
    struct k8s_error err;
    int r = k8s_json_load_filtered(buf, len, NULL, &got, &err);
    if (!want) {
        cr_assert_lt(r, 0, "jansson rejects (%s) but we accept: %.*s", je.text,
                     (int)(len > 80 ? 80 : len), buf);
        return;
    }
    cr_assert_eq(r, 0, "jansson accepts but we reject: %s", err.message);
    cr_assert(json_equal(want, got), "values differ");
    json_decref(want);
    json_decref(got);
}

Test(k8s_jsonload, fixtures_equal_jansson)
{
    for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
        size_t n;
        char *s = ts_read_fixture(fixtures[i], &n);
        differential(s, n);
        free(s);
    }
}

Test(k8s_jsonload, mutated_documents_same_verdict_as_jansson)
{
    size_t n;
    char *orig = ts_read_fixture("admission/bench-jobset-5k.json", &n);
    char *buf = malloc(n);
    static const char bytes[] = "{}[]\",:\\ \x01\x7f\xc3\xa9\xff\xed\xa0\x80tfn0-.eE+u";
    srand(42);
    for (int i = 0; i < 4000; i++) {
        memcpy(buf, orig, n);
        int edits = 1 + rand() % 3;
        for (int e = 0; e < edits; e++)
            buf[rand() % n] = bytes[rand() % (sizeof(bytes) - 1)];
        size_t len = rand() % 10 ? n : (size_t)rand() % n; /* sometimes truncated */
        differential(buf, len);
    }
    free(buf);
    free(orig);
}

Test(k8s_jsonload, edge_cases_same_verdict_as_jansson)
{
    const char *cases[] = {"{}",
                           "[]",
                           " [ 1 , -0 , 0.5e-3 , 1E+2 , true , false , null ] ",
                           "[01]",
                           "[1.]",
                           "[.5]",
                           "[-]",
                           "[1e]",
                           "[\"\\u0000\"]",
                           "[\"\\uD83D\\uDE00\"]",
                           "[\"\\uD83D\"]",
                           "[\"\\uDE00\"]",
                           "[\"\\x\"]",
                           "[\"a\tb\"]",
                           "{\"a\" 1}",
                           "{\"a\":1,}",
                           "[1,]",
                           "[1 2]",
                           "{1:2}",
                           "\"top\"",
                           "1",
                           "",
                           "   ",
                           "[9223372036854775807]",
                           "[9223372036854775808]",
                           "[1e400]",
                           "[1e-400]",
                           "[tru]",
                           "[nulll]",
                           "{\"a\":1}x",
                           "{\"a\":{\"b\":[{}]}}",
                           "[\"\xc0\xaf\"]",
                           "[\"\xed\xa0\x80\"]",
                           "[\"\xf4\x90\x80\x80\"]",
                           "[\"\xe2\x82\"]",
                           "{\"dup\":1,\"dup\":2}"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        differential(cases[i], strlen(cases[i]));
}

Test(k8s_jsonload, depth_limit)
{
    size_t depth = 3000;
    char *deep = malloc(2 * depth + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    json_t *v = NULL;
    struct k8s_error err;
    cr_assert_lt(k8s_json_load_filtered(deep, 2 * depth, NULL, &v, &err), 0);
    cr_assert(strstr(err.message, "depth"), "%s", err.message);
    free(deep);
}

static const struct k8s_json_filter pair_keep[] = {{"name", NULL}, {NULL}};
static const struct k8s_json_filter top[] = {{"keep", NULL}, {"items", pair_keep}, {NULL}};

Test(k8s_jsonload, filter_keeps_only_named_members)
{
    const char *doc = "{\"drop\":{\"x\":[1,2,{\"y\":\"\\u00e9\"}]},\"keep\":{\"a\":[1]},"
                      "\"items\":[{\"name\":\"n1\",\"other\":1},{\"name\":\"n2\"},3]}";
    json_t *v = NULL;
    struct k8s_error err;
    cr_assert_eq(k8s_json_load_filtered(doc, strlen(doc), top, &v, &err), 0, "%s", err.message);
    json_t *want = json_loads(
        "{\"keep\":{\"a\":[1]},\"items\":[{\"name\":\"n1\"},{\"name\":\"n2\"},3]}", 0, NULL);
    cr_assert(json_equal(v, want));
    json_decref(v);
    json_decref(want);
}

Test(k8s_jsonload, filter_still_rejects_bad_bytes_in_skipped_members)
{
    const char *bad[] = {"{\"drop\":\"\xff\",\"keep\":1}", "{\"drop\":[1,,2],\"keep\":1}",
                         "{\"drop\":\"a\nb\",\"keep\":1}", "{\"drop\":01,\"keep\":1}",
                         "{\"drop\":\"\\q\"}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *v = NULL;
        struct k8s_error err;
        cr_assert_lt(k8s_json_load_filtered(bad[i], strlen(bad[i]), top, &v, &err), 0,
                     "accepted: %s", bad[i]);
        cr_assert(strstr(err.message, "(line 1, column"), "%s", err.message);
    }
}

/* ---------- readers of their own (pull) ---------- */

struct pulled {
    char seen[256]; /* every key and string the reader met, '|'-separated */
    int calls;
    bool leave_open, fail;
};

static int walk(struct k8s_jpull *p, struct pulled *pd);

static int walk_members(struct k8s_jpull *p, struct pulled *pd)
{
    int st = 0, m;
    const char *k;
    size_t n;
    while ((m = k8s_jpull_member(p, &st, &k, &n)) > 0) {
        snprintf(pd->seen + strlen(pd->seen), sizeof(pd->seen) - strlen(pd->seen), "%.*s|", (int)n,
                 k);
        if (walk(p, pd) < 0)
            return -1;
        if (pd->leave_open)
            return 0;
    }
    return m;
}

static int walk(struct k8s_jpull *p, struct pulled *pd)
{
    const char *s;
    size_t n;
    int st = 0, e;
    switch (k8s_jpull_peek(p)) {
    case K8S_J_OBJECT:
        return walk_members(p, pd);
    case K8S_J_ARRAY:
        while ((e = k8s_jpull_element(p, &st)) > 0)
            if (walk(p, pd) < 0)
                return -1;
        return e;
    case K8S_J_STRING:
        if (k8s_jpull_string(p, &s, &n) < 0)
            return -1;
        snprintf(pd->seen + strlen(pd->seen), sizeof(pd->seen) - strlen(pd->seen), "%.*s|", (int)n,
                 s);
        return 0;
    default:
        return k8s_jpull_skip(p);
    }
}

static int reader(struct k8s_jpull *p, void *arg)
{
    struct pulled *pd = arg;
    pd->calls++;
    if (pd->fail)
        return k8s_jpull_fail(p, "out of memory");
    return walk(p, pd);
}

static int load_pulled(const char *doc, struct pulled *pd, struct k8s_error *err)
{
    return k8s_json_pull_text(doc, strlen(doc), reader, pd, err);
}

Test(k8s_jsonload, pulled_bytes_are_validated_like_the_rest)
{
    static const char *const bad[] = {
        "{\"object\":{\"spec\":{\"a\":\"\\x\"}}}",     "{\"object\":{\"spec\":{\"a\":[1,]}}}",
        "{\"object\":{\"spec\":{\"a\":\"\x01\"}}}",    "{\"object\":{\"spec\":{\"a\":\"\xc3\"}}}",
        "{\"object\":{\"spec\":{\"a\" 1}}}",           "{\"object\":{\"spec\":{\"a\":01}}}",
        "{\"object\":{\"spec\":{\"a\":\"\\ud800\"}}}", "{\"object\":{\"spec\":{\"a\":tru}}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct pulled pd = {0};
        struct k8s_error err = {0};
        cr_expect_eq(load_pulled(bad[i], &pd, &err), -K8S_EPARSE, "%s", bad[i]);
        cr_expect(strstr(err.message, "(line 1, column"), "%s: %s", bad[i], err.message);
        cr_expect(json_loads(bad[i], 0, NULL) == NULL, "jansson refuses it too");
    }
}

Test(k8s_jsonload, a_pull_reader_must_read_to_the_end)
{
    struct pulled pd = {.leave_open = true};
    struct k8s_error err = {0};
    cr_expect_eq(load_pulled("{\"object\":{\"spec\":{\"a\":1,\"b\":2}}}", &pd, &err), -K8S_EPARSE);
    cr_expect(strstr(err.message, "not read to its end"), "%s", err.message);
    pd = (struct pulled){.fail = true};
    cr_expect_eq(load_pulled("{\"object\":{\"spec\":{}}}", &pd, &err), -K8S_ENOMEM);
}

Test(k8s_jsonload, a_document_read_by_a_reader_alone)
{
    struct pulled pd = {0};
    const char *text = "[\"a\",{\"k\":\"v\"}]";
    cr_expect_eq(k8s_json_pull_text(text, strlen(text), reader, &pd, NULL), 0);
    cr_expect_str_eq(pd.seen, "a|k|v|");
    struct k8s_error err = {0};
    pd = (struct pulled){0};
    cr_expect_eq(k8s_json_pull_text("[\"a\"] x", 7, reader, &pd, &err), -K8S_EPARSE);
    cr_expect(strstr(err.message, "end of input expected"), "%s", err.message);
}

/* ---------- strings copied out (k8s_jpull_string_to) ---------- */

/* An array read with k8s_jpull_string_to into a pool of exactly the bound
 * the header gives (so ASan sees any byte written past it), or with
 * k8s_jpull_string: seen gets each string, '|'-terminated ('#' for a
 * value of another type). */
struct copied {
    bool to;
    char seen[512];
};

static int copy_strings(struct k8s_jpull *p, void *arg)
{
    struct copied *c = arg;
    size_t room = k8s_jpull_left(p) + 1, used = 0;
    char *pool = malloc(room);
    int st = 0, e = 0, r = 0;
    while (r >= 0 && (e = k8s_jpull_element(p, &st)) > 0) {
        const char *s = pool + used;
        size_t n = 0;
        r = c->to ? k8s_jpull_string_to(p, pool + used, &n) : k8s_jpull_string(p, &s, &n);
        if (r > 0 && c->to)
            cr_expect_eq(s[n], '\0', "NUL-terminated");
        if (r > 0)
            used += n + 1; /* what wh_podspec's pool does */
        size_t at = strlen(c->seen);
        snprintf(c->seen + at, sizeof(c->seen) - at,
                 r > 0    ? "%.*s|"
                 : r == 0 ? "#|"
                          : "",
                 (int)n, s);
    }
    free(pool);
    return r < 0 ? -1 : e;
}

static int read_copied(const char *doc, bool to, char *seen, struct k8s_error *err)
{
    struct copied c = {.to = to};
    size_t len = strlen(doc);
    char *text = malloc(len); /* not NUL-terminated: reads past it are seen too */
    memcpy(text, doc, len);
    int r = k8s_json_pull_text(text, len, copy_strings, &c, err);
    free(text);
    strcpy(seen, c.seen);
    return r;
}

Test(k8s_jsonload, strings_copied_out_are_decoded_and_terminated)
{
    static const struct {
        const char *doc, *want;
    } cases[] = {
        {"[\"a\",\"\",\"bc\"]", "a||bc|"},
        {"[\"0123456789abcdef\",\"0123456789abcdefg\"]", "0123456789abcdef|0123456789abcdefg|"},
        {"[\"x\\ny\",\"\\u00e9t\xc3\xa9\",\"\\ud83d\\ude00\"]",
         "x\ny|\xc3\xa9t\xc3\xa9|\xf0\x9f\x98\x80|"},
        {"[1,\"a\",{\"b\":\"c\"},null,\"d\"]", "#|a|#|#|d|"},
        {" [ \"spaced\" , \"out\" ] ", "spaced|out|"},
        {"[\"a string long enough for several blocks of sixteen bytes, and then a tail\"]",
         "a string long enough for several blocks of sixteen bytes, and then a tail|"},
        {"[\"plain for a while, then an escape \\\" at byte thirty-five\"]",
         "plain for a while, then an escape \" at byte thirty-five|"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char seen[512];
        struct k8s_error err = {0};
        cr_assert_eq(read_copied(cases[i].doc, true, seen, &err), 0, "%s: %s", cases[i].doc,
                     err.message);
        cr_expect_str_eq(seen, cases[i].want, "%s", cases[i].doc);
    }
}

Test(k8s_jsonload, strings_copied_out_refuse_what_string_refuses)
{
    static const char *const bad[] = {
        "[\"a",          "[\"abc\\",        "[\"\\x\"]",
        "[\"a\x01\"]",   "[\"\xc3\"]",      "[\"\xed\xa0\x80\"]",
        "[\"\\ud800\"]", "[\"\\u0000\"]",   "[\"0123456789abcdef0123456789\xff\"]",
        "[\"ok\",tru]",  "[\"ok\" \"no\"]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char seen_to[512], seen[512];
        struct k8s_error e_to = {0}, e = {0};
        cr_expect_eq(read_copied(bad[i], true, seen_to, &e_to), -K8S_EPARSE, "%s", bad[i]);
        cr_expect_eq(read_copied(bad[i], false, seen, &e), -K8S_EPARSE, "%s", bad[i]);
        cr_expect_str_eq(e_to.message, e.message, "%s: the same refusal", bad[i]);
    }
}

Test(k8s_jsonload, a_reader_walks_spaced_text_as_compact_text)
{
    static const char *const docs[] = {
        "[\"a\",{\"k\":\"v\",\"l\":[]},[\"b\"],{}]",
        " [ \"a\" , { \"k\" : \"v\" , \"l\" : [ ] } , [ \"b\" ] , { } ] ",
        "[\"a\",\n{\"k\":\"v\",\n\"l\":[\n]\n},\t[\"b\"\n]\r,{\n}\n]",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        struct pulled pd = {0};
        struct k8s_error err = {0};
        cr_expect_eq(k8s_json_pull_text(docs[i], strlen(docs[i]), reader, &pd, &err), 0, "%s: %s",
                     docs[i], err.message);
        cr_expect_str_eq(pd.seen, "a|k|v|l|b|", "%s", docs[i]);
    }
    static const char *const bad[] = {"[\"a\",]",  "[\"a\" , ]", "{\"k\":1,}", "[\"a\"}",
                                      "{\"k\":1]", "[\"a\",",    "{\"k\":1,"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct pulled pd = {0};
        cr_expect_eq(k8s_json_pull_text(bad[i], strlen(bad[i]), reader, &pd, NULL), -K8S_EPARSE,
                     "%s", bad[i]);
    }
}

Test(k8s_jsonload, strings_copied_out_at_every_length_and_with_a_stop_anywhere)
{
    /* lengths across the 16- and 32-byte blocks of the fast cases, plain
     * or with an escape or a non-ASCII byte at each place, then more text */
    static const char *const stops[] = {"", "\\n", "\xc3\xa9", "\\u00e9"};
    char doc[300], s[200], seen_to[512], seen[512];
    for (size_t k = 0; k < sizeof(stops) / sizeof(stops[0]); k++) {
        for (int len = 0; len <= 100; len++) {
            for (int at = 0; at <= len; at += k ? 1 : len + 1) {
                memset(s, 'x', (size_t)len);
                s[len] = '\0';
                char tail[128];
                strcpy(tail, s + at);
                sprintf(s + at, "%s%s", stops[k], tail);
                sprintf(doc, "[\"%s\",\"after\"]", s);
                struct k8s_error err = {0};
                cr_assert_eq(read_copied(doc, true, seen_to, &err), 0, "%s: %s", doc, err.message);
                cr_assert_eq(read_copied(doc, false, seen, &err), 0, "%s", doc);
                cr_assert_str_eq(seen_to, seen, "%s", doc);
            }
        }
    }
}
