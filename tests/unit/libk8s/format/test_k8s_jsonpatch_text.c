/* k8s_jsonpatch_text: a patch written as text is byte for byte what
 * k8s_json_write gives for the tree k8s_jsonpatch_append_new builds, and
 * its tree is that tree. */
#include <criterion/criterion.h>
#include <limits.h>
#include <string.h>

#include "k8s_json.h"
#include "k8s_jsonpatch.h"
#include "k8s_jsonpatch_text.h"

static char *tree_text(const json_t *patch)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 20);
    cr_assert_eq(k8s_json_write(patch, &b), 0);
    return k8s_buf_take(&b, NULL);
}

Test(k8s_jsonpatch_text, same_bytes_as_the_tree)
{
    const char *value = "quote \" backslash \\ newline \n tab \t ctl \x01 utf-8 \xc3\xa9";
    json_t *patch = json_array();
    cr_assert_eq(
        k8s_jsonpatch_append_new(patch, "add", "/metadata/annotations/a~1b", json_string(value)),
        0);
    cr_assert_eq(k8s_jsonpatch_append_new(patch, "replace", "/spec/containers/0/env/3/value",
                                          json_pack("{s:[s,b]}", "k", "v", 1)),
                 0);
    struct k8s_jsonpatch_text t;
    k8s_jsonpatch_text_init(&t);
    cr_assert_eq(k8s_jsonpatch_text_string(&t, "add", "/metadata/annotations/a~1b", value), 0);
    cr_assert_eq(k8s_jsonpatch_text_begin(&t, "replace", "/spec/containers/0/env/3/value"), 0);
    cr_assert_eq(k8s_buf_appends(&t.buf, "{\"k\":[\"v\",true]}"), 0);
    cr_assert_eq(k8s_jsonpatch_text_end(&t), 0);
    cr_expect_eq(t.n, 2);
    size_t len;
    const char *text = k8s_jsonpatch_text_json(&t, &len);
    char *want = tree_text(patch);
    cr_expect_str_eq(text, want);
    cr_expect_eq(len, strlen(want));
    json_t *tree = k8s_jsonpatch_text_tree(&t);
    cr_expect(json_equal(tree, patch));
    free(want);
    json_decref(tree);
    json_decref(patch);
    k8s_jsonpatch_text_done(&t);
}

Test(k8s_jsonpatch_text, empty_then_reopened)
{
    struct k8s_jsonpatch_text t;
    k8s_jsonpatch_text_init(&t);
    size_t len;
    cr_expect_str_eq(k8s_jsonpatch_text_json(&t, &len), "[]");
    cr_expect_eq(len, 2);
    cr_assert_eq(k8s_jsonpatch_text_string(&t, "add", "/a", "1"), 0);
    cr_expect_str_eq(k8s_jsonpatch_text_json(&t, &len),
                     "[{\"op\":\"add\",\"path\":\"/a\",\"value\":\"1\"}]");
    cr_assert_eq(k8s_jsonpatch_text_string(&t, "add", "/b", "2"), 0);
    cr_expect_str_eq(k8s_jsonpatch_text_json(&t, &len),
                     "[{\"op\":\"add\",\"path\":\"/a\",\"value\":\"1\"},"
                     "{\"op\":\"add\",\"path\":\"/b\",\"value\":\"2\"}]");
    k8s_jsonpatch_text_done(&t);
    struct k8s_jsonpatch_text zero = {0}; /* done is safe on a zeroed struct */
    k8s_jsonpatch_text_done(&zero);
}

Test(k8s_jsonpatch_text, over_the_cap_fails)
{
    struct k8s_jsonpatch_text t;
    k8s_jsonpatch_text_init(&t);
    t.buf.max = 16;
    cr_expect_eq(k8s_jsonpatch_text_string(&t, "add", "/a/long/path", "value"), -K8S_ETOOBIG);
    k8s_jsonpatch_text_done(&t);
}

/* A path written in pieces is the path k8s_jsonptr_push builds, escaped
 * for JSON as a whole path given to k8s_jsonpatch_text_begin is. */
Test(k8s_jsonpatch_text, path_in_pieces_as_the_pointer)
{
    const char *base = "/spec/\"q\"\\";
    const char *segs[] = {"a~b/c", "\"x\"\n", "", "plain"};
    struct k8s_buf ptr;
    k8s_buf_init(&ptr, 1 << 16);
    cr_assert_eq(k8s_buf_appends(&ptr, base), 0);
    struct k8s_jsonpatch_text pieces, whole;
    k8s_jsonpatch_text_init(&pieces);
    k8s_jsonpatch_text_init(&whole);
    cr_assert_eq(k8s_jsonpatch_text_open(&pieces, "add"), 0);
    cr_assert_eq(k8s_jsonpatch_text_path(&pieces, base, strlen(base)), 0);
    for (size_t i = 0; i < sizeof(segs) / sizeof(segs[0]); i++) {
        cr_assert_eq(k8s_jsonptr_push(&ptr, segs[i]), 0);
        cr_assert_eq(k8s_jsonpatch_text_path_seg(&pieces, segs[i]), 0);
    }
    cr_assert_eq(k8s_jsonptr_push_index(&ptr, 12), 0);
    cr_assert_eq(k8s_jsonptr_push_end(&ptr), 0);
    cr_assert_eq(k8s_jsonpatch_text_path_index(&pieces, 12), 0);
    cr_assert_eq(k8s_jsonpatch_text_path_index(&pieces, K8S_JSONPATCH_TEXT_END), 0);
    cr_assert_eq(k8s_jsonpatch_text_value(&pieces), 0);
    cr_assert_eq(k8s_buf_appends(&pieces.buf, "1"), 0);
    cr_assert_eq(k8s_jsonpatch_text_end(&pieces), 0);
    cr_assert_eq(k8s_jsonpatch_text_begin(&whole, "add", k8s_buf_str(&ptr)), 0);
    cr_assert_eq(k8s_buf_appends(&whole.buf, "1"), 0);
    cr_assert_eq(k8s_jsonpatch_text_end(&whole), 0);
    size_t a, b;
    const char *got = k8s_jsonpatch_text_json(&pieces, &a);
    cr_expect_str_eq(got, k8s_jsonpatch_text_json(&whole, &b));
    json_t *tree = k8s_jsonpatch_text_tree(&pieces);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(tree, 0), "path")),
                     k8s_buf_str(&ptr));
    json_decref(tree);
    k8s_buf_done(&ptr);
    k8s_jsonpatch_text_done(&pieces);
    k8s_jsonpatch_text_done(&whole);
}

/* An operation opened as an earlier one began is that beginning, copied;
 * a range outside the text is refused. */
Test(k8s_jsonpatch_text, open_as_copies_an_earlier_beginning)
{
    struct k8s_jsonpatch_text t;
    k8s_jsonpatch_text_init(&t);
    cr_assert_eq(k8s_jsonpatch_text_open(&t, "add"), 0);
    size_t at = t.at;
    cr_assert_eq(k8s_jsonpatch_text_path(&t, "/spec/env", 9), 0);
    size_t len = t.buf.len - at;
    cr_assert_eq(k8s_jsonpatch_text_path_index(&t, K8S_JSONPATCH_TEXT_END), 0);
    cr_assert_eq(k8s_jsonpatch_text_value(&t), 0);
    cr_assert_eq(k8s_buf_appends(&t.buf, "1"), 0);
    cr_assert_eq(k8s_jsonpatch_text_end(&t), 0);
    size_t n;
    (void)k8s_jsonpatch_text_json(&t, &n); /* closed, then reopened by open_as */
    cr_assert_eq(k8s_jsonpatch_text_open_as(&t, at, len), 0);
    cr_assert_eq(k8s_jsonpatch_text_path_index(&t, 0), 0);
    cr_assert_eq(k8s_jsonpatch_text_value(&t), 0);
    cr_assert_eq(k8s_buf_appends(&t.buf, "2"), 0);
    cr_assert_eq(k8s_jsonpatch_text_end(&t), 0);
    cr_expect_str_eq(k8s_jsonpatch_text_json(&t, &n),
                     "[{\"op\":\"add\",\"path\":\"/spec/env/-\",\"value\":1},"
                     "{\"op\":\"add\",\"path\":\"/spec/env/0\",\"value\":2}]");
    cr_expect_eq(k8s_jsonpatch_text_open_as(&t, n - 1, 2), -K8S_EINVAL);
    k8s_jsonpatch_text_done(&t);
}

/* One op with the path base + seg (or + index), written in pieces, then
 * whole through k8s_jsonptr_push: the two texts are compared. */
static void expect_pieces_as_whole(const char *op, const char *base, const char *seg, size_t index)
{
    struct k8s_buf ptr;
    k8s_buf_init(&ptr, 1 << 16);
    cr_assert_eq(k8s_buf_appends(&ptr, base), 0);
    cr_assert_eq(seg ? k8s_jsonptr_push(&ptr, seg) : k8s_jsonptr_push_index(&ptr, index), 0);
    struct k8s_jsonpatch_text pieces, whole;
    k8s_jsonpatch_text_init(&pieces);
    k8s_jsonpatch_text_init(&whole);
    for (int twice = 0; twice < 2; twice++) { /* the second after a "," */
        cr_assert_eq(k8s_jsonpatch_text_open(&pieces, op), 0);
        cr_assert_eq(k8s_jsonpatch_text_path(&pieces, base, strlen(base)), 0);
        cr_assert_eq(seg ? k8s_jsonpatch_text_path_seg(&pieces, seg)
                         : k8s_jsonpatch_text_path_index(&pieces, index),
                     0);
        cr_assert_eq(k8s_jsonpatch_text_value(&pieces), 0);
        cr_assert_eq(k8s_buf_appends(&pieces.buf, "1"), 0);
        cr_assert_eq(k8s_jsonpatch_text_end(&pieces), 0);
        cr_assert_eq(k8s_jsonpatch_text_begin(&whole, op, k8s_buf_str(&ptr)), 0);
        cr_assert_eq(k8s_buf_appends(&whole.buf, "1"), 0);
        cr_assert_eq(k8s_jsonpatch_text_end(&whole), 0);
    }
    size_t a, b;
    const char *got = k8s_jsonpatch_text_json(&pieces, &a);
    const char *want = k8s_jsonpatch_text_json(&whole, &b);
    cr_assert_str_eq(got, want, "op %s base %s seg %s", op, base, seg ? seg : "(index)");
    if (strchr(k8s_buf_str(&ptr), '\xc3') || strchr(op, '\xc3'))
        goto out; /* not UTF-8: no tree to read back */
    json_t *tree = k8s_jsonpatch_text_tree(&pieces);
    cr_assert_not_null(tree, "%s", got);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(tree, 1), "path")),
                     k8s_buf_str(&ptr));
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(tree, 1), "op")), op);
    json_decref(tree);
out:
    k8s_buf_done(&ptr);
    k8s_jsonpatch_text_done(&pieces);
    k8s_jsonpatch_text_done(&whole);
}

/* '~', '/' and bytes JSON escapes at every position of segments, bases and
 * ops of every length up to 40: plain runs are copied 8 bytes at a time. */
Test(k8s_jsonpatch_text, odd_bytes_at_every_position)
{
    static const char odd[] = {'~', '/', '"', '\\', '\n', '\x01', '\x1f', ' ', '\x7f', '\xc3'};
    for (size_t len = 0; len <= 40; len++)
        for (size_t at = 0; at <= len; at++)
            for (size_t k = 0; k < sizeof(odd); k++) {
                char s[48];
                memset(s, 'a' + (int)(len % 26), len);
                if (at < len)
                    s[at] = odd[k];
                s[len] = '\0';
                expect_pieces_as_whole("add", "/metadata/annotations", s, 0);
                if (at < len && (odd[k] == '~' || odd[k] == '/'))
                    continue; /* a base is pointer text as it is */
                char base[56] = "/";
                strcat(base, s);
                expect_pieces_as_whole(len ? s : "add", base, NULL, len * 1000003);
                if (at == len)
                    break;
            }
}

Test(k8s_jsonpatch_text, index_digits)
{
    const size_t idx[] = {0, 7, 10, 99, 12345, (size_t)1 << 40, (size_t)LLONG_MAX};
    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        expect_pieces_as_whole("remove", "/spec/containers", NULL, idx[i]);
}

/* k8s_jsonpatch_text_begin_at writes what the calls it stands for write. */
static void expect_begin_at(const char *op, const char *base, const char *mid, const char *seg)
{
    struct k8s_jsonpatch_text one, calls;
    k8s_jsonpatch_text_init(&one);
    k8s_jsonpatch_text_init(&calls);
    for (int twice = 0; twice < 2; twice++) {
        cr_assert_eq(k8s_jsonpatch_text_begin_at(&one, op, base, mid, seg), 0);
        cr_assert_eq(k8s_buf_appends(&one.buf, "1"), 0);
        cr_assert_eq(k8s_jsonpatch_text_end(&one), 0);
        cr_assert_eq(k8s_jsonpatch_text_open(&calls, op), 0);
        cr_assert_eq(k8s_jsonpatch_text_path(&calls, base ? base : "", base ? strlen(base) : 0), 0);
        cr_assert_eq(k8s_jsonpatch_text_path(&calls, mid ? mid : "", mid ? strlen(mid) : 0), 0);
        cr_assert_eq(seg ? k8s_jsonpatch_text_path_seg(&calls, seg) : 0, 0);
        cr_assert_eq(k8s_jsonpatch_text_value(&calls), 0);
        cr_assert_eq(k8s_buf_appends(&calls.buf, "1"), 0);
        cr_assert_eq(k8s_jsonpatch_text_end(&calls), 0);
    }
    size_t a, b;
    const char *got = k8s_jsonpatch_text_json(&one, &a);
    cr_assert_str_eq(got, k8s_jsonpatch_text_json(&calls, &b), "%s %s %s %s", op, base ? base : "-",
                     mid ? mid : "-", seg ? seg : "-");
    cr_expect_eq(one.n, 2);
    k8s_jsonpatch_text_done(&one);
    k8s_jsonpatch_text_done(&calls);
}

Test(k8s_jsonpatch_text, begin_at_as_the_calls)
{
    expect_begin_at("add", "/spec/containers/0", "/env", NULL);
    expect_begin_at("add", "", "/metadata", "annotations");
    expect_begin_at("replace", "/metadata", NULL, "diagon.gke.io/identifier");
    expect_begin_at("add", NULL, NULL, NULL);
    expect_begin_at("a\"b", "/x", "/y", "z");   /* an op to escape */
    expect_begin_at("add", "/q\"", "/y", "z");  /* a base to escape */
    expect_begin_at("add", "/x", "/\\y", "z");  /* a mid to escape */
    expect_begin_at("add", "/x", "/y", "a\nb"); /* a segment to escape */
    static const char odd[] = {'~', '/', '"', '\\', '\n', 'x'};
    for (size_t len = 0; len <= 24; len++)
        for (size_t at = 0; at < len; at++)
            for (size_t k = 0; k < sizeof(odd); k++) {
                char s[32];
                memset(s, 'a', len);
                s[at] = odd[k];
                s[len] = '\0';
                expect_begin_at("add", "/metadata", "/annotations", s);
                expect_begin_at(s, s[0] == '/' ? s : "/b", NULL, s);
            }
}

/* Over the cap: -K8S_ETOOBIG, as from the calls it stands for. */
Test(k8s_jsonpatch_text, begin_at_over_the_cap_fails)
{
    struct k8s_jsonpatch_text t;
    k8s_jsonpatch_text_init(&t);
    t.buf.max = 16;
    cr_expect_eq(k8s_jsonpatch_text_begin_at(&t, "add", "/a/long/path", NULL, "x"), -K8S_ETOOBIG);
    k8s_jsonpatch_text_done(&t);
}
