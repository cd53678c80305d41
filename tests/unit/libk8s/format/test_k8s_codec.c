/* k8s_codec: base64 (RFC 4648 §10 test vectors) and SHA-256 (FIPS 180-2
 * examples). */
#include <criterion/criterion.h>
#include <nettle/base64.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_codec.h"
#include "test_support.h"

struct vec {
    const char *plain;
    size_t n;
    const char *b64;
};

static const struct vec vectors[] = {
    {"", 0, ""},
    {"f", 1, "Zg=="},
    {"fo", 2, "Zm8="},
    {"foo", 3, "Zm9v"},
    {"foob", 4, "Zm9vYg=="},
    {"fooba", 5, "Zm9vYmE="},
    {"foobar", 6, "Zm9vYmFy"},
    {"\xfb\xff", 2, "+/8="},
    {"\xff\xff\xff", 3, "////"},
    {"\x00", 1, "AA=="},
    {"\x00"
     "a\x00",
     3, "AGEA"},
    {"\x14\xfb\x9c\x03\xd9\x7e", 6, "FPucA9l+"},
};

#define NVEC (sizeof(vectors) / sizeof(vectors[0]))

Test(k8s_codec, base64_encode_vectors)
{
    for (size_t i = 0; i < NVEC; i++) {
        size_t len = 999;
        char *out = k8s_base64_encode(vectors[i].plain, vectors[i].n, &len);
        cr_assert_not_null(out);
        cr_expect_str_eq(out, vectors[i].b64, "vector %zu", i);
        cr_expect_eq(len, strlen(vectors[i].b64), "vector %zu", i);
        free(out);
    }
    /* ret_len may be NULL */
    char *out = k8s_base64_encode("foobar", 6, NULL);
    cr_expect_str_eq(out, "Zm9vYmFy");
    free(out);
}

Test(k8s_codec, base64_decode_vectors)
{
    for (size_t i = 0; i < NVEC; i++) {
        size_t len = 999;
        unsigned char *out = k8s_base64_decode(vectors[i].b64, strlen(vectors[i].b64), &len);
        cr_assert_not_null(out, "vector %zu (%s)", i, vectors[i].b64);
        cr_expect_eq(len, vectors[i].n, "vector %zu", i);
        cr_expect_eq(memcmp(out, vectors[i].plain, vectors[i].n), 0, "vector %zu", i);
        cr_expect_eq(out[len], '\0', "NUL-terminated");
        free(out);
    }
}

Test(k8s_codec, base64_decode_whitespace_ignored)
{
    const char *in[] = {"Zm9v\nYmFy", " Zm9vYmFy \r\n", "Zm 9v\tYm Fy", "Zm9vYmFy\n",
                        "\n\nZm9vYmFy"};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        size_t len = 0;
        unsigned char *out = k8s_base64_decode(in[i], strlen(in[i]), &len);
        cr_assert_not_null(out, "\"%s\"", in[i]);
        cr_expect_eq(len, 6);
        cr_expect_str_eq((char *)out, "foobar");
        free(out);
    }
    size_t len = 9;
    unsigned char *out = k8s_base64_decode(" \n ", 3, &len);
    cr_assert_not_null(out);
    cr_expect_eq(len, 0);
    free(out);
}

Test(k8s_codec, base64_decode_respects_length)
{
    size_t len = 0;
    unsigned char *out = k8s_base64_decode("Zm9vYmFy!!!!", 8, &len);
    cr_assert_not_null(out);
    cr_expect_eq(len, 6);
    cr_expect_str_eq((char *)out, "foobar");
    free(out);
    out = k8s_base64_decode("Zm9v", 4, NULL); /* ret_len may be NULL */
    cr_assert_not_null(out);
    cr_expect_str_eq((char *)out, "foo");
    free(out);
}

Test(k8s_codec, base64_decode_invalid_is_null)
{
    const char *bad[] = {"Zm9",  "Z",    "Zg=",      "Zg===",   "Zm9v*",    "Zm9v-_8",
                         "=Zm9", "Zh==", "Zg==Zg==", "Zm9vYmF", "Zm9v\x01", "Zm9vY\xc3\xa9",
                         "===="};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t len = 4242;
        cr_expect_null(k8s_base64_decode(bad[i], strlen(bad[i]), &len), "\"%s\" decoded", bad[i]);
        cr_expect_eq(len, 4242, "\"%s\": ret_len changed", bad[i]);
    }
}

Test(k8s_codec, base64_round_trip_all_bytes)
{
    unsigned char in[256 * 3 + 1];
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)(i * 7 + 3);
    for (size_t n = 0; n <= sizeof(in); n += 37) {
        size_t elen, dlen;
        char *enc = k8s_base64_encode(in, n, &elen);
        cr_assert_not_null(enc);
        cr_expect_eq(elen, (n + 2) / 3 * 4);
        unsigned char *dec = k8s_base64_decode(enc, elen, &dlen);
        cr_assert_not_null(dec);
        cr_expect_eq(dlen, n);
        cr_expect_eq(memcmp(dec, in, n), 0);
        free(enc);
        free(dec);
    }
}

Test(k8s_codec, base64_append)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 64);
    cr_assert_eq(k8s_buf_appends(&b, "patch:"), 0);
    for (size_t i = 0; i < NVEC; i++) {
        k8s_buf_reset(&b);
        cr_assert_eq(k8s_buf_appends(&b, "patch:"), 0);
        cr_assert_eq(k8s_base64_append(&b, vectors[i].plain, vectors[i].n), 0);
        char want[64];
        snprintf(want, sizeof(want), "patch:%s", vectors[i].b64);
        cr_expect_str_eq(k8s_buf_str(&b), want);
        cr_expect_eq(b.len, strlen(want));
    }
    /* appending nothing to an empty buffer */
    k8s_buf_done(&b);
    cr_assert_eq(k8s_base64_append(&b, "", 0), 0);
    cr_expect_str_eq(k8s_buf_str(&b), "");
    k8s_buf_done(&b);
}

Test(k8s_codec, base64_append_past_cap_resets)
{
    struct k8s_buf b;
    k8s_buf_init(&b, 8);
    cr_assert_eq(k8s_buf_appends(&b, "ab"), 0);
    cr_expect_eq(k8s_base64_append(&b, "foo", 3), 0); /* 2 + 4 <= 8 */
    cr_expect_str_eq(k8s_buf_str(&b), "abZm9v");
    cr_expect_eq(k8s_base64_append(&b, "foo", 3), -K8S_ETOOBIG); /* 6 + 4 > 8 */
    cr_expect_eq(b.len, 0);
    cr_expect_null(b.data);
    cr_expect_str_eq(k8s_buf_str(&b), "");
    k8s_buf_done(&b);
}

struct sha {
    const char *in;
    const char *hex;
};

Test(k8s_codec, sha256_vectors)
{
    static const struct sha v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char out[65];
        memset(out, 'X', sizeof(out));
        k8s_sha256_hex(v[i].in, strlen(v[i].in), out);
        cr_expect_str_eq(out, v[i].hex, "\"%s\"", v[i].in);
    }
}

Test(k8s_codec, sha256_million_a)
{
    size_t n = 1000000;
    char *a = malloc(n);
    cr_assert_not_null(a);
    memset(a, 'a', n);
    char out[65];
    k8s_sha256_hex(a, n, out);
    cr_expect_str_eq(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

Test(k8s_codec, sha256_binary_input_not_truncated_at_nul)
{
    char a[65], b[65];
    k8s_sha256_hex("a\0b", 3, a);
    k8s_sha256_hex("a", 1, b);
    cr_expect_str_neq(a, b);
    cr_expect_str_eq(b, "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb");
}

/* The table-driven encoder writes what Nettle's byte-at-a-time one does, at
 * every length modulo its six-byte step and for every byte value. */
Test(k8s_codec, base64_encode_matches_nettle)
{
    unsigned char in[512];
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)(i < 256 ? i : 255 - (i & 255));
    for (size_t n = 0; n <= sizeof(in); n++) {
        size_t len;
        char want[BASE64_ENCODE_RAW_LENGTH(sizeof(in)) + 1];
        base64_encode_raw(want, n, in + (sizeof(in) - n) / 2);
        want[BASE64_ENCODE_RAW_LENGTH(n)] = '\0';
        char *got = k8s_base64_encode(in + (sizeof(in) - n) / 2, n, &len);
        cr_assert_not_null(got);
        cr_expect_str_eq(got, want, "length %zu", n);
        cr_expect_eq(len, strlen(want));
        free(got);
    }
}
