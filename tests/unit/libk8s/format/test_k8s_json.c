/* k8s_json_write must produce exactly json_dumps(v, JSON_COMPACT). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_json.h"
#include "test_support.h"

static void same_as_jansson(const json_t *v)
{
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    struct k8s_buf b;
    k8s_buf_init(&b, 1 << 26);
    cr_assert_eq(k8s_json_write(v, &b), 0);
    cr_assert_str_eq(k8s_buf_str(&b), want);
    k8s_buf_done(&b);
    free(want);
}

Test(k8s_json, upstream_fixtures_byte_identical)
{
    const char *files[] = {"upstream/kubernetes-api/core.v1.Pod.json",
                           "upstream/kubernetes-api/batch.v1.Job.json",
                           "upstream/kubernetes-api/core.v1.Namespace.json",
                           "upstream/json-patch-tests/tests.json",
                           "upstream/json-patch-tests/spec_tests.json",
                           "admission/bench-jobset-64k.json"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        json_t *v = ts_load_json(files[i]);
        same_as_jansson(v);
        json_decref(v);
    }
}

Test(k8s_json, escapes_and_scalars)
{
    json_t *v = json_pack("[s,s,s,i,I,f,f,f,f,f,b,b,n,{}, []]", "a\"b\\c/d\b\f\n\r\t\x01\x1f\x7f",
                          "\xc3\xa9\xe2\x98\x83 \xf0\x9f\x98\x80", "", 0,
                          (json_int_t)-9223372036854775807LL, 1.0, 0.1, 1e20, -2.5e-7,
                          123456789012345678.0, 1, 0);
    same_as_jansson(v);
    json_decref(v);
}

Test(k8s_json, random_documents)
{
    srand(7);
    for (int n = 0; n < 300; n++) {
        json_t *root = json_object();
        for (int i = 0; i < 20; i++) {
            char key[16], val[32];
            snprintf(key, sizeof(key), "k%d\x01\"", rand() % 50);
            for (int j = 0; j < 31; j++)
                val[j] = (char)(1 + rand() % 127);
            val[31] = '\0';
            json_t *arr = json_pack("[s, I, f]", val, (json_int_t)rand() - RAND_MAX / 2,
                                    (double)rand() / (rand() + 1) * (rand() % 2 ? 1e-9 : 1e9));
            json_object_set_new(root, key, arr);
        }
        same_as_jansson(root);
        json_decref(root);
    }
}

/* Strings of every length to 80 with escapes at every density and
 * position (the 16-byte steps, the byte tail, the 4 KiB reservations):
 * jansson's bytes, and the same content from k8s_json_write_chars. */
Test(k8s_json, escaped_strings_at_every_length)
{
    static const char *const pool[] = {"\"",   "\\",   "\n",       "\t", "\x01",
                                       "\x1f", "\x7f", "\xc3\xa9", "/",  "~"};
    srand(11);
    char s[9100];
    for (int round = 0; round < 400; round++) {
        size_t want = round < 320 ? (size_t)round / 4 : 4000 + (size_t)rand() % 5000, n = 0;
        int density = 1 + rand() % 8; /* one in density pieces from the pool */
        while (n < want) {
            const char *piece = rand() % density ? "x" : pool[rand() % 10];
            memcpy(s + n, piece, strlen(piece));
            n += strlen(piece);
        }
        s[n] = '\0';
        json_t *v = json_stringn_nocheck(s, n);
        same_as_jansson(v);
        char *quoted = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        struct k8s_buf b;
        k8s_buf_init(&b, 1 << 20);
        cr_assert_eq(k8s_json_write_chars(s, n, &b), 0);
        cr_expect_eq(b.len, strlen(quoted) - 2);
        cr_expect_eq(memcmp(k8s_buf_str(&b), quoted + 1, b.len), 0, "length %zu", n);
        k8s_buf_done(&b);
        free(quoted);
        json_decref(v);
    }
}

/* Near the cap the room for the worst case is not there: what fits still
 * goes in, byte for byte; what does not is -K8S_ETOOBIG. */
Test(k8s_json, escaped_string_up_to_the_cap)
{
    const char *s = "\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"x"; /* 20 quotes: 41 bytes escaped */
    struct k8s_buf b;
    k8s_buf_init(&b, 43);
    cr_assert_eq(k8s_json_write_string(s, strlen(s), &b), 0);
    cr_expect_eq(b.len, 43);
    cr_expect_eq(k8s_buf_str(&b)[41], 'x');
    k8s_buf_done(&b);
    k8s_buf_init(&b, 42);
    cr_expect_eq(k8s_json_write_string(s, strlen(s), &b), -K8S_ETOOBIG);
    k8s_buf_done(&b);
}
