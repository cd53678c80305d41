/* k8s_err: error codes, their names, and k8s_error_set / _prefix: a plain
 * message is copied as it is (no printf), a format is formatted, both
 * truncated to the message's room and NUL-terminated. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "k8s_err.h"

Test(k8s_err, set_plain_and_formatted)
{
    struct k8s_error e;
    memset(&e, 'x', sizeof(e));
    cr_expect_eq(k8s_error_set(&e, -K8S_EUNAVAIL, "no API access (standalone)"), -K8S_EUNAVAIL);
    cr_expect_eq(e.err, -K8S_EUNAVAIL);
    cr_expect_str_eq(e.message, "no API access (standalone)");
    cr_expect_eq(e.http_status, 0, "the rest is cleared");
    cr_expect_str_eq(e.reason, "");
    cr_expect_eq(k8s_error_set(&e, -K8S_EINVAL, "bad %s: %d%%", "x", 7), -K8S_EINVAL);
    cr_expect_str_eq(e.message, "bad x: 7%");
    cr_expect_eq(k8s_error_set(NULL, -K8S_EIO, "ignored"), -K8S_EIO);
}

Test(k8s_err, set_truncates_both_ways)
{
    char big[2000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    struct k8s_error e;
    (void)k8s_error_set(&e, -K8S_EIO, "%s", big);
    cr_expect_eq(strlen(e.message), sizeof(e.message) - 1);
#define A10  "aaaaaaaaaa"
#define A100 A10 A10 A10 A10 A10 A10 A10 A10 A10 A10
    (void)k8s_error_set(&e, -K8S_EIO, A100 A100 A100 A100 A100 A100); /* plain, as long */
    cr_expect_eq(strlen(e.message), sizeof(e.message) - 1);
    cr_expect_eq(memcmp(e.message, big, sizeof(e.message) - 1), 0);
}

Test(k8s_err, names)
{
    cr_expect_str_eq(k8s_strerror(-K8S_ENOMEM), "out of memory");
    cr_expect_str_eq(k8s_strerror(K8S_ENOMEM), "out of memory");
    cr_expect_str_eq(k8s_strerror(-K8S_ERR_MAX), "unknown error");
}

Test(k8s_err, prefix)
{
    struct k8s_error e;
    (void)k8s_error_set(&e, -K8S_EIO, "connection reset");
    k8s_error_prefix(&e, "GET %s", "/api");
    cr_expect_str_eq(e.message, "GET /api: connection reset");
    cr_expect_eq(e.err, -K8S_EIO);
}

/* No byte of a message is a control character or invalid UTF-8. */
static bool one_clean_line(const char *m)
{
    for (const unsigned char *s = (const unsigned char *)m; *s; s++)
        if (*s < 0x20 || *s == 0x7f || (s[0] == 0xc2 && s[1] >= 0x80 && s[1] < 0xa0))
            return false;
    json_t *j = json_string(m); /* jansson refuses invalid UTF-8 */
    bool ok = j != NULL;
    json_decref(j);
    return ok;
}

Test(k8s_err, messages_are_one_clean_line_whatever_went_in)
{
    struct k8s_error e;
    (void)k8s_error_set(&e, -K8S_EINVAL, "got \"%s\"", "a\nb\r\tc\x1b[31m\x7f\xc2\x85\xff");
    cr_expect_str_eq(e.message, "got \"a?b??c?[31m???\"", "C1 U+0085 is one character");
    char big[600];
    memset(big, 'a', sizeof(big));
    memcpy(big + 508, "\xe2\x82\xac\xe2\x82\xac", 6); /* € at bytes 508.. and 511.. */
    big[514] = '\0';
    (void)k8s_error_set(&e, -K8S_EINVAL, "%s", big);
    cr_expect(one_clean_line(e.message), "a character cut at the bound is dropped whole");
    cr_expect_eq(strlen(e.message), 511);
    big[sizeof(big) - 1] = '\0';
    memset(big, 'a', sizeof(big) - 1);
    big[509] = '\xc3'; /* é cut by the bound: its lead byte is the 510th */
    big[510] = '\xa9';
    big[511] = '\xc3';
    (void)k8s_error_set(&e, -K8S_EINVAL, "%s", big);
    cr_expect(one_clean_line(e.message));
    k8s_error_prefix(&e, "x\ny");
    cr_expect(one_clean_line(e.message), "the prefix is cleaned too: %s", e.message);
}

Test(k8s_err, quote_escapes_and_bounds_a_users_value)
{
    char q[K8S_QUOTE_CAP];
    cr_expect_str_eq(k8s_quote(q, "plain", 5), "plain");
    cr_expect_str_eq(k8s_quote(q, "a\nb\tc\r", 6), "a\\nb\\tc\\r");
    cr_expect_str_eq(k8s_quote(q, "\x01\x1b\x7f", 3), "\\x01\\x1b\\x7f");
    cr_expect_str_eq(k8s_quote(q, "\xc2\x85 \xff \xe2\x82\xac", 8), "\\u0085 \\xff \xe2\x82\xac",
                     "C1 and invalid bytes escaped, other UTF-8 kept");
    char big[65536];
    memset(big, '\n', sizeof(big));
    k8s_quote(q, big, sizeof(big));
    cr_expect_lt(strlen(q), K8S_QUOTE_CAP);
    cr_expect(strstr(q, "... (65536 bytes)"), "%s", q);
    cr_expect(one_clean_line(q));
    memset(big, 'a', sizeof(big));
    memcpy(big + K8S_QUOTE_SHOWN - 1, "\xe2\x82\xac", 3); /* would straddle the bound */
    k8s_quote(q, big, K8S_QUOTE_SHOWN + 2);
    cr_expect(one_clean_line(q), "never half a character: %s", q);
    char all[256 * 4 + 1], *w = all; /* every byte value, each alone: the worst growth */
    for (int i = 1; i < 256; i++)
        *w++ = (char)i;
    k8s_quote(q, all, (size_t)(w - all));
    cr_expect_lt(strlen(q), K8S_QUOTE_CAP);
    cr_expect(one_clean_line(q));
}
