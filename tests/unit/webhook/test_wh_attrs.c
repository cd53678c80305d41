/* wh_attrs: OTEL_RESOURCE_ATTRIBUTES parse/set/format, percent-encoding
 * (OTel spec: W3C baggage value octets) and merging into a user's value. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "wh_attrs.h"
#include "test_support.h"

static char *encode(const char *v)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 16);
    cr_assert_eq(wh_attrs_encode(v, &b), 0);
    return k8s_buf_take(&b, NULL);
}

static char *format(const struct wh_attrs *a)
{
    char *s = wh_attrs_format(a);
    cr_assert_not_null(s);
    return s;
}

struct enc {
    const char *in, *out;
};

static const struct enc enc_table[] = {
    {"", ""},
    {"plain-value_1.2", "plain-value_1.2"},
    {"a b", "a%20b"},
    {"a,b", "a%2Cb"},
    {"a\"b", "a%22b"},
    {"a;b", "a%3Bb"},
    {"a\\b", "a%5Cb"},
    {"\xc3\xa9t\xc3\xa9", "%C3%A9t%C3%A9"}, /* "été" */
    {"\xe2\x98\x83", "%E2%98%83"},          /* U+2603 */
    {"\xf0\x9f\x98\x80", "%F0%9F%98%80"},   /* U+1F600 */
    {"100%", "100%25"},
    {"%", "%25"},
    {"%4", "%254"},
    {"%zz", "%25zz"},
    {"%41", "%41"},
    {"%c3%A9", "%c3%A9"},
    {"$(VAR)", "$(VAR)"},
    {"$(OTEL_RESOURCE_ATTRIBUTES_POD_NAME)", "$(OTEL_RESOURCE_ATTRIBUTES_POD_NAME)"},
    {"x=y", "x=y"},
    {"\t\n\x01\x7f", "%09%0A%01%7F"},
    {"!#$&'()*+-./:<=>?@[]^_`{|}~", "!#$&'()*+-./:<=>?@[]^_`{|}~"},
    {"gs://bucket/path", "gs://bucket/path"},
};

Test(wh_attrs, percent_encoding_table)
{
    for (size_t i = 0; i < sizeof(enc_table) / sizeof(enc_table[0]); i++) {
        char *got = encode(enc_table[i].in);
        cr_expect_str_eq(got, enc_table[i].out, "encode(\"%s\")", enc_table[i].in);
        free(got);
    }
}

Test(wh_attrs, encoding_is_idempotent)
{
    for (size_t i = 0; i < sizeof(enc_table) / sizeof(enc_table[0]); i++) {
        char *once = encode(enc_table[i].in);
        char *twice = encode(once);
        cr_expect_str_eq(twice, once, "encode(encode(\"%s\"))", enc_table[i].in);
        free(once);
        free(twice);
    }
}

Test(wh_attrs, encode_appends)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 64);
    cr_assert_eq(k8s_buf_appends(&b, "k="), 0);
    cr_assert_eq(wh_attrs_encode("a b", &b), 0);
    cr_expect_str_eq(k8s_buf_str(&b), "k=a%20b");
    k8s_buf_done(&b);
}

Test(wh_attrs, valid_key)
{
    const char *good[] = {"k8s.pod.name", "rl.run.id", "service.namespace", "a", "A-Z_0/9:x"};
    const char *bad[] = {"", "a b", "a=b", "a,b", "a;b", "a\"b", "a\\b", "\xc3\xa9", "a\tb"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_expect(wh_attrs_valid_key(good[i]), "\"%s\"", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_not(wh_attrs_valid_key(bad[i]), "\"%s\"", bad[i]);
}

Test(wh_attrs, set_get_format_in_insertion_order)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    cr_assert_eq(wh_attrs_set(&a, "service.namespace", "team a"), 0);
    cr_assert_eq(wh_attrs_set(&a, "k8s.pod.name", "$(OTEL_RESOURCE_ATTRIBUTES_POD_NAME)"), 0);
    cr_assert_eq(wh_attrs_set(&a, "k8s.cluster.name", "c1"), 0);
    cr_expect_eq(a.n, 3);
    cr_expect_str_eq(wh_attrs_get(&a, "service.namespace"), "team%20a");
    cr_expect_null(wh_attrs_get(&a, "missing"));
    char *s = format(&a);
    cr_expect_str_eq(s, "service.namespace=team%20a,k8s.pod.name=$(OTEL_RESOURCE_ATTRIBUTES_"
                        "POD_NAME),k8s.cluster.name=c1");
    free(s);
    /* replacing keeps the position */
    cr_assert_eq(wh_attrs_set(&a, "service.namespace", "b"), 0);
    cr_expect_eq(a.n, 3);
    s = format(&a);
    cr_expect_str_eq(s, "service.namespace=b,k8s.pod.name=$(OTEL_RESOURCE_ATTRIBUTES_POD_NAME),k8s."
                        "cluster.name=c1");
    free(s);
    wh_attrs_done(&a);
    cr_expect_eq(a.n, 0);
    cr_expect_null(a.kv);
    wh_attrs_done(&a); /* twice is fine */
    wh_attrs_done(NULL);
}

Test(wh_attrs, format_empty)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    char *s = format(&a);
    cr_expect_str_eq(s, "");
    free(s);
}

Test(wh_attrs, many_keys_grow)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    for (int i = 0; i < 100; i++) {
        char k[16], v[16];
        snprintf(k, sizeof(k), "k%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        cr_assert_eq(wh_attrs_set(&a, k, v), 0);
    }
    cr_expect_eq(a.n, 100);
    cr_expect_str_eq(wh_attrs_get(&a, "k0"), "v0");
    cr_expect_str_eq(wh_attrs_get(&a, "k99"), "v99");
    wh_attrs_done(&a);
}

Test(wh_attrs, has_prefix)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    cr_expect_not(wh_attrs_has_prefix(&a, "rl."));
    cr_assert_eq(wh_attrs_set(&a, "rlx", "1"), 0);
    cr_expect_not(wh_attrs_has_prefix(&a, "rl."));
    cr_assert_eq(wh_attrs_set(&a, "rl.algo", "ppo"), 0);
    cr_expect(wh_attrs_has_prefix(&a, "rl."));
    wh_attrs_done(&a);
}

Test(wh_attrs, parse_trims_and_encodes)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    json_t *w = json_array();
    cr_assert_eq(wh_attrs_parse(&a, " a = 1 , b=x y,c=d=e, d=", "test", w), 0);
    char *s = format(&a);
    cr_expect_str_eq(s, "a=1,b=x%20y,c=d=e,d=");
    free(s);
    cr_expect_eq(json_array_size(w), 0);
    json_decref(w);
    wh_attrs_done(&a);
}

Test(wh_attrs, parse_later_wins)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    cr_assert_eq(wh_attrs_set(&a, "b", "from-set"), 0);
    cr_assert_eq(wh_attrs_parse(&a, "a=1,b=2,a=3", "ns", NULL), 0);
    cr_assert_eq(wh_attrs_parse(&a, "b=4", "pod", NULL), 0);
    char *s = format(&a);
    cr_expect_str_eq(s, "b=4,a=3");
    free(s);
    wh_attrs_done(&a);
}

Test(wh_attrs, parse_empty_items_skipped_silently)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    json_t *w = json_array();
    cr_assert_eq(wh_attrs_parse(&a, ",,a=1,, ,b=2,", "x", w), 0);
    char *s = format(&a);
    cr_expect_str_eq(s, "a=1,b=2");
    free(s);
    cr_expect_eq(json_array_size(w), 0);
    cr_assert_eq(wh_attrs_parse(&a, "", "x", w), 0);
    cr_expect_eq(a.n, 2);
    json_decref(w);
    wh_attrs_done(&a);
}

Test(wh_attrs, parse_invalid_items_warned)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    json_t *w = json_array();
    cr_assert_eq(wh_attrs_parse(&a, "novalue,=v,bad key=v,ok=1,x;y=2", "pod annotation A", w), 0);
    char *s = format(&a);
    cr_expect_str_eq(s, "ok=1");
    free(s);
    cr_assert_eq(json_array_size(w), 4);
    cr_expect_str_eq(json_string_value(json_array_get(w, 0)),
                     "pod annotation A: resource attribute \"novalue\" ignored (want key=value)");
    cr_expect_str_eq(json_string_value(json_array_get(w, 1)),
                     "pod annotation A: resource attribute \"\" ignored (want key=value)");
    cr_expect_str_eq(json_string_value(json_array_get(w, 2)),
                     "pod annotation A: resource attribute \"bad key\" ignored (want key=value)");
    cr_expect_str_eq(json_string_value(json_array_get(w, 3)),
                     "pod annotation A: resource attribute \"x;y\" ignored (want key=value)");
    json_decref(w);
    /* NULL warnings: still skipped, no crash */
    cr_assert_eq(wh_attrs_parse(&a, "novalue,z=2", "x", NULL), 0);
    cr_expect_eq(a.n, 2);
    wh_attrs_done(&a);
}

static char *merge(const char *user, const char *ours_spec)
{
    struct wh_attrs ours;
    wh_attrs_init(&ours);
    cr_assert_eq(wh_attrs_parse(&ours, ours_spec, "ours", NULL), 0);
    char *s = wh_attrs_merge_into(user, &ours);
    cr_assert_not_null(s);
    wh_attrs_done(&ours);
    return s;
}

struct merge_case {
    const char *user, *ours, *want;
};

Test(wh_attrs, merge_into_table)
{
    static const struct merge_case cases[] = {
        {"a=1", "b=2,c=3", "a=1,b=2,c=3"},
        /* the user's keys win */
        {"b=9", "b=2,c=3", "b=9,c=3"},
        {"c=user,a=1", "a=ours,b=2,c=ours", "c=user,a=1,b=2"},
        /* nothing missing: byte-identical, spacing and all */
        {" b = x y ,c=3 ", "b=2,c=3", " b = x y ,c=3 "},
        {"b=2,c=3", "b=2,c=3", "b=2,c=3"},
        {"weird%zz=1,b=2", "b=2", "weird%zz=1,b=2"},
        /* trailing commas/space: no empty item between theirs and ours */
        {"a=1,", "b=2", "a=1,b=2"},
        {"a=1,, ,", "b=2", "a=1,b=2"},
        {"a=1 \n", "b=2", "a=1,b=2"},
        /* an empty user value */
        {"", "b=2,c=3", "b=2,c=3"},
        {",", "b=2", "b=2"},
        /* nothing of ours */
        {"a=1,", "", "a=1,"},
        {"", "", ""},
        /* the user's malformed items are kept as written */
        {"junk,a=1", "b=2", "junk,a=1,b=2"},
        /* user keys are compared after trimming */
        {" k8s.pod.name = p ", "k8s.pod.name=$(X),b=2", " k8s.pod.name = p,b=2"},
        /* our values are already encoded and go in as they are */
        {"a=1", "b=x y", "a=1,b=x%20y"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = merge(cases[i].user, cases[i].ours);
        cr_expect_str_eq(got, cases[i].want, "merge(\"%s\", \"%s\")", cases[i].user, cases[i].ours);
        free(got);
    }
}

Test(wh_attrs, merge_into_is_idempotent)
{
    const char *users[] = {"a=1", "", "b=9,", " x = y "};
    for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
        char *once = merge(users[i], "b=2,c=$(C),d=%41");
        char *twice = merge(once, "b=2,c=$(C),d=%41");
        cr_expect_str_eq(twice, once, "user \"%s\"", users[i]);
        free(once);
        free(twice);
    }
}
