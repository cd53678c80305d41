/* k8s_json_skip_compact: whatever it accepts, jansson accepts as one whole
 * value ending exactly there; what it declines is left to the general
 * reader; it takes what the API server writes (compact ASCII, simple
 * escapes) and honours the nesting limit. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_jsonskip.h"
#include "test_support.h"

static const unsigned char *skip(const char *s, size_t n, int depth, int max)
{
    return k8s_json_skip_compact((const unsigned char *)s, (const unsigned char *)s + n, depth,
                                 max);
}

/* An accepted prefix is a value jansson accepts, and nothing less. */
static void never_wrong(const char *s, size_t n)
{
    const unsigned char *end = skip(s, n, 0, 2048);
    if (!end)
        return;
    size_t len = (size_t)(end - (const unsigned char *)s);
    json_t *v = json_loadb(s, len, JSON_DECODE_ANY, NULL);
    cr_assert_not_null(v, "accepted what jansson refuses: %.*s", (int)(len > 80 ? 80 : len), s);
    json_decref(v);
}

Test(k8s_jsonskip, takes_what_the_api_server_writes)
{
    static const char *const docs[] = {"admission/bench-jobset-5k.json",
                                       "admission/bench-jobset-64k.json",
                                       "upstream/kubernetes-api/core.v1.Pod.json"};
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        json_t *doc = ts_load_json(docs[i]);
        char *text = json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII);
        const unsigned char *end = skip(text, strlen(text), 0, 2048);
        cr_expect_eq(end, (const unsigned char *)text + strlen(text), "%s", docs[i]);
        free(text);
        json_decref(doc);
    }
}

Test(k8s_jsonskip, declines_what_it_leaves_to_the_general_reader)
{
    static const char *const cases[] = {
        " {}",  "{ }",        "[1, 2]", "[\"\\u0041\"]", "[\"\xc3\xa9\"]", "[\"a\tb\"]",
        "[01]", "[1.]",       "[-]",    "[1e]",          "[tru]",          "{\"a\":1,}",
        "[1,]", "{\"a\" :1}", "{1:2}",  "[\"\\x\"]",     "[\"abc",         "{\"a\":[1}",
        ""};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_expect_null(skip(cases[i], strlen(cases[i]), 0, 2048), "took %s", cases[i]);
        never_wrong(cases[i], strlen(cases[i]));
    }
    const unsigned char *end = skip("[1]]x", 5, 0, 2048);
    cr_expect_eq(end, (const unsigned char *)"[1]]x" + 3, "a value ends where it ends");
}

Test(k8s_jsonskip, escapes_numbers_and_literals)
{
    const char *s = "{\"a\":\"q\\\"b\\\\s\\/f\\b\\f\\n\\r\\t\",\"n\":[-0,0.5e-3,1E+2,12],"
                    "\"l\":[true,false,null],\"e\":{},\"x\":[]}";
    cr_expect_eq(skip(s, strlen(s), 0, 2048), (const unsigned char *)s + strlen(s));
    never_wrong(s, strlen(s));
}

Test(k8s_jsonskip, honours_the_nesting_limit)
{
    char deep[120];
    memset(deep, '[', 60);
    memset(deep + 60, ']', 60);
    cr_expect_not_null(skip(deep, 120, 0, 60));
    cr_expect_null(skip(deep, 120, 1, 60), "one level already open");
    cr_expect_null(skip(deep, 120, 0, 59));
    char deeper[200]; /* beyond what it tracks: the general reader's */
    memset(deeper, '[', 100);
    memset(deeper + 100, ']', 100);
    cr_expect_null(skip(deeper, 200, 0, 2048));
}

Test(k8s_jsonskip, random_mutations_are_never_taken_wrongly)
{
    size_t n;
    char *orig = ts_read_fixture("admission/bench-jobset-5k.json", &n);
    char *buf = malloc(n);
    static const char bytes[] = "{}[]\",:\\0123456789.eE+-tfnul \x01\x80";
    srand(14);
    for (int round = 0; round < 3000; round++) {
        memcpy(buf, orig, n);
        for (int k = 0; k < 1 + rand() % 3; k++)
            buf[rand() % n] = bytes[rand() % (sizeof(bytes) - 1)];
        never_wrong(buf, rand() % 8 ? n : (size_t)rand() % n);
    }
    free(buf);
    free(orig);
}
