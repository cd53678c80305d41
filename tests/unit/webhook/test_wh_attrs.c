/* wh_attrs: OTEL_RESOURCE_ATTRIBUTES parse/set/format, percent-encoding
 * (DESIGN §3.5: the OTel spec's W3C baggage value octets, plus '%', '='
 * and '$' so what an annotation says reaches the process literally) and
 * merging into a user's value (kept as written). */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
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
    /* '%' always: input that looks encoded reaches the process as written */
    {"100%", "100%25"},
    {"%", "%25"},
    {"%4", "%254"},
    {"%zz", "%25zz"},
    {"%41", "%2541"},
    {"%c3%A9", "%25c3%25A9"},
    {"a%2Cb", "a%252Cb"},
    /* '$': no reference of an annotation is expanded by the kubelet */
    {"$(VAR)", "%24(VAR)"},
    {"$(OTEL_RESOURCE_ATTRIBUTES_POD_NAME)", "%24(OTEL_RESOURCE_ATTRIBUTES_POD_NAME)"},
    {"$$(HOME)", "%24%24(HOME)"},
    {"cost$", "cost%24"},
    /* '=': older opentelemetry-python splits an item at every '=' */
    {"x=y", "x%3Dy"},
    {"a=b=c", "a%3Db%3Dc"},
    {"\t\n\x01\x7f", "%09%0A%01%7F"},
    {"!#&'()*+-./:<>?@[]^_`{|}~", "!#&'()*+-./:<>?@[]^_`{|}~"},
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

/* Every octet: written as it is exactly when it is a W3C baggage value
 * octet other than '%', '=' and '$'; else %XX in upper-case hex. */
Test(wh_attrs, every_octet)
{
    for (int c = 1; c < 256; c++) {
        bool baggage = c == 0x21 || (c >= 0x23 && c <= 0x2B) || (c >= 0x2D && c <= 0x3A) ||
                       (c >= 0x3C && c <= 0x5B) || (c >= 0x5D && c <= 0x7E);
        bool plain = baggage && c != '%' && c != '=' && c != '$';
        char in[2] = {(char)c, '\0'}, want[4];
        if (plain)
            snprintf(want, sizeof(want), "%c", c);
        else
            snprintf(want, sizeof(want), "%%%02X", c);
        char *got = encode(in);
        cr_expect_str_eq(got, want, "octet 0x%02x", c);
        free(got);
    }
}

static int hexval(char c)
{
    return c <= '9' ? c - '0' : c - 'A' + 10;
}

/* What the OTel SDKs decode (percent-decoding) is the text we encoded. */
Test(wh_attrs, decoding_gives_back_the_text)
{
    for (size_t i = 0; i < sizeof(enc_table) / sizeof(enc_table[0]); i++) {
        char *got = encode(enc_table[i].in), back[256];
        size_t n = 0;
        for (const char *p = got; *p && n + 1 < sizeof(back); p++) {
            cr_expect(*p != ',' && *p != '=' && *p != '$' && *p != ' ', "%s", got);
            if (*p == '%') {
                back[n++] = (char)(hexval(p[1]) * 16 + hexval(p[2]));
                p += 2;
            } else {
                back[n++] = *p;
            }
        }
        back[n] = '\0';
        cr_expect_str_eq(back, enc_table[i].in, "decode(encode(\"%s\"))", enc_table[i].in);
        free(got);
    }
}

/* Encoding already-encoded text encodes it again ('%' → %25): the text
 * is what reaches the process, not a second decoding of it. */
Test(wh_attrs, already_encoded_input_is_encoded_again)
{
    char *once = encode("a b");
    cr_expect_str_eq(once, "a%20b");
    char *twice = encode(once);
    cr_expect_str_eq(twice, "a%2520b");
    free(once);
    free(twice);
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

Test(wh_attrs, keys_are_encoded_too)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    cr_assert_eq(wh_attrs_set(&a, "team name", "ml"), 0);
    cr_assert_eq(wh_attrs_set(&a, "k8s.pod.name", "p"), 0);
    cr_assert_eq(wh_attrs_set(&a, "caf\xc3\xa9$", "x"), 0);
    char *s = format(&a);
    cr_expect_str_eq(s, "team%20name=ml,k8s.pod.name=p,caf%C3%A9%24=x");
    free(s);
    cr_expect_str_eq(wh_attrs_get(&a, "team%20name"), "ml");
    wh_attrs_done(&a);
}

/* Our own references are written as references: the kubelet expands them. */
Test(wh_attrs, set_ref_writes_a_reference)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    cr_assert_eq(wh_attrs_set_ref(&a, "k8s.pod.name", "OTEL_RESOURCE_ATTRIBUTES_POD_NAME"), 0);
    cr_assert_eq(wh_attrs_put(&a, "rl.run.id", "ab12"), 0);
    char *s = format(&a);
    cr_expect_str_eq(s, "k8s.pod.name=$(OTEL_RESOURCE_ATTRIBUTES_POD_NAME),rl.run.id=ab12");
    free(s);
    wh_attrs_done(&a);
}

Test(wh_attrs, set_get_format_in_insertion_order)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    cr_assert_eq(wh_attrs_set(&a, "service.namespace", "team a"), 0);
    cr_assert_eq(wh_attrs_set_ref(&a, "k8s.pod.name", "OTEL_RESOURCE_ATTRIBUTES_POD_NAME"), 0);
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
    cr_assert_eq(wh_attrs_parse(&a, " a = 1 , b=x y,c=d=e, d=,e=$(HOME)", "test", w), 0);
    char *s = format(&a);
    /* the "team=a=b": the value is "a=b", its '=' encoded */
    cr_expect_str_eq(s, "a=1,b=x%20y,c=d%3De,d=,e=%24(HOME)");
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
    /* keys are encoded like values (DESIGN §3.5), not refused */
    cr_expect_str_eq(s, "bad%20key=v,ok=1,x%3By=2");
    free(s);
    cr_assert_eq(json_array_size(w), 2);
    cr_expect_str_eq(json_string_value(json_array_get(w, 0)),
                     "pod annotation A: resource attribute \"novalue\" ignored (want key=value)");
    cr_expect_str_eq(json_string_value(json_array_get(w, 1)),
                     "pod annotation A: resource attribute \"\" ignored (want key=value)");
    json_decref(w);
    /* NULL warnings: still skipped, no crash */
    cr_assert_eq(wh_attrs_parse(&a, "novalue,z=2", "x", NULL), 0);
    cr_expect_eq(a.n, 4);
    wh_attrs_done(&a);
}

/* ours_spec in written form */
static char *merge(const char *user, const char *ours_spec)
{
    struct wh_attrs ours;
    wh_attrs_init(&ours);
    cr_assert_eq(wh_attrs_parse_user(&ours, ours_spec), 0);
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
        {"a=1", "b=x%20y", "a=1,b=x%20y"},
        /* the user's pairs are kept exactly as written, $(...) and '=' too */
        {"team=$(TEAM),x=a=b", "b=2", "team=$(TEAM),x=a=b,b=2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = merge(cases[i].user, cases[i].ours);
        cr_expect_str_eq(got, cases[i].want, "merge(\"%s\", \"%s\")", cases[i].user, cases[i].ours);
        free(got);
    }
}

Test(wh_attrs, parse_user_keeps_what_the_user_wrote)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    cr_assert_eq(wh_attrs_parse_user(&a, " service.name = rl-training-service ,x=$(A)=b,junk"), 0);
    cr_expect_str_eq(wh_attrs_get(&a, "service.name"), "rl-training-service");
    cr_expect_str_eq(wh_attrs_get(&a, "x"), "$(A)=b");
    cr_expect_eq(a.n, 2);
    wh_attrs_done(&a);
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

/* The encoder's reference: one octet at a time. */
static void encode_slowly(const char *v, char *out)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        bool baggage = *p == 0x21 || (*p >= 0x23 && *p <= 0x2B) || (*p >= 0x2D && *p <= 0x3A) ||
                       (*p >= 0x3C && *p <= 0x5B) || (*p >= 0x5D && *p <= 0x7E);
        if (baggage && *p != '%' && *p != '=' && *p != '$')
            *out++ = (char)*p;
        else
            out += sprintf(out, "%%%02X", *p);
    }
    *out = '\0';
}

/* One odd octet at every position of texts of every length up to 48: the
 * encoder checks 16 octets at a time, the last 16 overlapping. */
Test(wh_attrs, odd_octet_at_every_position)
{
    static const unsigned char odd[] = {' ',  '"',  '$',  '%',  ',',  ';',  '=', '\\',
                                        0x01, 0x7f, 0x80, 0xff, 0x20, 0x21, 0x7e};
    for (size_t len = 1; len <= 48; len++)
        for (size_t at = 0; at < len; at++)
            for (size_t k = 0; k < sizeof(odd); k++) {
                char in[64], want[256];
                memset(in, 'a' + (int)(len % 26), len);
                in[at] = (char)odd[k];
                in[len] = '\0';
                encode_slowly(in, want);
                char *got = encode(in);
                cr_assert_str_eq(got, want, "len %zu, 0x%02x at %zu", len, odd[k], at);
                free(got);
            }
}

/* Pairs are kept in one block that grows: keys and values (long, encoded,
 * replaced) read back after many sets, and after the set is moved. */
Test(wh_attrs, pairs_survive_growth_and_a_move)
{
    struct wh_attrs a;
    wh_attrs_init(&a);
    char v[600];
    memset(v, 'x', sizeof(v) - 1);
    v[sizeof(v) - 1] = '\0';
    for (int i = 0; i < 40; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k %d", i);
        v[i] = ',';
        cr_assert_eq(wh_attrs_set(&a, k, v), 0);
        cr_assert_eq(wh_attrs_set(&a, "k 0", i % 2 ? "odd" : "even"), 0); /* replaced in place */
    }
    struct wh_attrs moved = a;
    wh_attrs_init(&a);
    cr_expect_eq(moved.n, 40);
    cr_expect_str_eq(wh_attrs_get(&moved, "k%200"), "odd");
    for (int i = 1; i < 40; i++) {
        char k[16], want[2048];
        snprintf(k, sizeof(k), "k%%20%d", i);
        memset(v, 'x', sizeof(v) - 1);
        for (int j = 0; j <= i; j++)
            v[j] = ',';
        encode_slowly(v, want);
        const char *got = wh_attrs_get(&moved, k);
        cr_assert_not_null(got, "%s", k);
        cr_expect_str_eq(got, want, "%s", k);
        cr_expect_eq(moved.kv[i].value_len, strlen(want));
        cr_expect_eq(moved.kv[i].key_len, strlen(k));
    }
    char *s = format(&moved);
    cr_expect(!strncmp(s, "k%200=odd,k%201=%2C%2C", 22), "%.40s", s);
    free(s);
    wh_attrs_done(&moved);
    wh_attrs_done(&a);
}
