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

/* The scan's answer by the definition: the first byte of the set. */
static const unsigned char *scan_by_hand(const unsigned char *p, const unsigned char *end,
                                         bool high)
{
    for (; p < end; p++)
        if (*p < 0x20 || *p == '"' || *p == '\\' || (high && *p >= 0x80))
            break;
    return p;
}

Test(k8s_jsonskip, the_scan_stops_at_the_first_byte_of_its_set)
{
    /* every byte value at every place of runs of every length up to 100,
     * so each width (32, 16, 8, 1) and each seam between them is met */
    unsigned char buf[128];
    for (int len = 0; len <= 100; len++) {
        for (int at = 0; at < len; at++) {
            for (int c = 0; c < 256; c++) {
                memset(buf, 'a', sizeof(buf));
                buf[at] = (unsigned char)c;
                for (int high = 0; high < 2; high++) {
                    const unsigned char *want = scan_by_hand(buf, buf + len, high);
                    const unsigned char *got = high ? k8s_json_scan(buf, buf + len, true)
                                                    : k8s_json_scan(buf, buf + len, false);
                    cr_assert_eq(got, want, "len %d, byte %#x at %d, high %d: %td, not %td", len, c,
                                 at, high, got - buf, want - buf);
                }
            }
        }
    }
}

/* "[\"<s>\"]" skipped: the end of the text, or NULL when declined. */
static const unsigned char *skip_string_doc(const char *s, char *doc)
{
    size_t n = (size_t)sprintf(doc, "[\"%s\"]", s);
    return skip(doc, n, 0, 2048);
}

Test(k8s_jsonskip, long_strings_with_escapes_anywhere)
{
    /* a simple escape (or two in a row) at each place of strings up to 100
     * bytes long: block seams split an escape from the byte it escapes */
    static const char *const escapes[] = {"\\n", "\\\"", "\\\\", "\\/", "\\\\\\\"", "\\t\\r"};
    char s[160], doc[200];
    for (size_t e = 0; e < sizeof(escapes) / sizeof(escapes[0]); e++) {
        for (int len = 0; len <= 100; len++) {
            for (int at = 0; at <= len; at++) {
                memset(s, 'x', (size_t)len);
                s[len] = '\0';
                char tail[128];
                strcpy(tail, s + at);
                sprintf(s + at, "%s%s", escapes[e], tail);
                const unsigned char *end = skip_string_doc(s, doc);
                cr_assert_eq(end, (const unsigned char *)doc + strlen(doc), "took %s", doc);
                never_wrong(doc, strlen(doc));
            }
        }
    }
}

Test(k8s_jsonskip, long_strings_declined_for_what_the_general_reader_reads)
{
    /* after a long plain run (and past block seams): what the lane leaves
     * to the general reader, or what is wrong */
    static const char *const bad[] = {"\\u0041", "\\x", "\xc3\xa9", "\x01", "\t", "\x7f\xff"};
    char s[160], doc[200];
    for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
        for (int at = 0; at <= 100; at++) {
            memset(s, 'x', (size_t)at);
            sprintf(s + at, "%s%s", bad[b], "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy");
            const unsigned char *end = skip_string_doc(s, doc);
            cr_assert_null(end, "took %s", doc); /* (DEL is plain; the 0xff after it not) */
            never_wrong(doc, strlen(doc));
        }
    }
    /* a string that ends with the text: no closing quote */
    for (int len = 0; len <= 100; len++) {
        memset(s, 'x', (size_t)len);
        sprintf(doc, "[\"%.*s", len, s);
        cr_assert_null(skip(doc, strlen(doc), 0, 2048), "took %s", doc);
        sprintf(doc, "[\"%.*s\\", len, s);
        cr_assert_null(skip(doc, strlen(doc), 0, 2048), "took %s", doc);
    }
}
