/* k8s_err: error codes, their names, and k8s_error_set / _prefix: a plain
 * message is copied as it is (no printf), a format is formatted, both
 * truncated to the message's room and NUL-terminated. */
#include <criterion/criterion.h>
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
