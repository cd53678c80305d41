/* k8s_certmint: a minted CA and serving certificate pass the keep-check
 * (and k8s_cert's pair check); each reason to replace them is detected:
 * other DNS names, another CA, a foreign key, the renewal window, garbage;
 * bad arguments are refused with outputs untouched. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_cert.h"
#include "k8s_certmint.h"
#include "test_support.h"

#define DAY 86400L

static const char *const sans[] = {"svc", "svc.ns", "svc.ns.svc", "svc.ns.svc.cluster.local"};
static const time_t now = 1790000000; /* 2026-09-21 */

static void mint(struct k8s_certmint_pair *ca, struct k8s_certmint_pair *leaf, int days)
{
    struct k8s_error err = {0};
    cr_assert_eq(k8s_certmint_ca("test CA", days + 30, now, ca, &err), 0, "%s", err.message);
    cr_assert_eq(k8s_certmint_serving(ca, sans, 4, days, now, leaf, &err), 0, "%s", err.message);
}

Test(certmint, minted_pair_is_kept_and_serves)
{
    struct k8s_certmint_pair ca = {0}, leaf = {0};
    struct k8s_error err = {0};
    struct k8s_cert_info info;
    mint(&ca, &leaf, 365);
    cr_assert_eq(
        k8s_certmint_check(leaf.cert_pem, leaf.key_pem, ca.cert_pem, sans, 4, now, 30 * DAY, &err),
        0, "%s", err.message);
    const char *reordered[] = {sans[3], sans[1], sans[0], sans[2]};
    cr_assert_eq(k8s_certmint_check(leaf.cert_pem, leaf.key_pem, ca.cert_pem, reordered, 4, now,
                                    30 * DAY, &err),
                 0);
    cr_assert_eq(k8s_cert_check_pair(leaf.cert_pem, strlen(leaf.cert_pem), leaf.key_pem,
                                     strlen(leaf.key_pem), "crt", "key", now, &info, &err),
                 0, "%s", err.message);
    cr_assert(strstr(info.subject, "CN=svc"));
    cr_assert_eq(info.not_after - now, 365 * DAY);
    cr_assert_eq(k8s_certmint_seconds_left(leaf.cert_pem, now), 365 * DAY);
    k8s_certmint_pair_done(&ca);
    k8s_certmint_pair_done(&leaf);
    k8s_certmint_pair_done(NULL);
}

Test(certmint, reasons_to_replace)
{
    struct k8s_certmint_pair ca = {0}, leaf = {0}, ca2 = {0}, leaf2 = {0};
    struct k8s_error err = {0};
    mint(&ca, &leaf, 365);
    mint(&ca2, &leaf2, 365);
    cr_assert_eq(
        k8s_certmint_check(leaf.cert_pem, leaf.key_pem, ca.cert_pem, sans, 3, now, 30 * DAY, &err),
        -K8S_ETLS);
    cr_assert(strstr(err.message, "DNS names differ"), "%s", err.message);
    cr_assert_eq(
        k8s_certmint_check(leaf.cert_pem, leaf.key_pem, ca2.cert_pem, sans, 4, now, 30 * DAY, &err),
        -K8S_ETLS);
    cr_assert(strstr(err.message, "not issued by the stored CA"), "%s", err.message);
    cr_assert_eq(
        k8s_certmint_check(leaf.cert_pem, leaf2.key_pem, ca.cert_pem, sans, 4, now, 30 * DAY, &err),
        -K8S_ETLS);
    cr_assert(strstr(err.message, "key does not match"), "%s", err.message);
    cr_assert_eq(k8s_certmint_check(leaf.cert_pem, leaf.key_pem, ca.cert_pem, sans, 4,
                                    now + 340 * DAY, 30 * DAY, &err),
                 -K8S_ETLS);
    cr_assert(strstr(err.message, "certificate expires within 30 days"), "%s", err.message);
    cr_assert_eq(k8s_certmint_check("junk", leaf.key_pem, ca.cert_pem, sans, 4, now, 0, &err),
                 -K8S_ETLS);
    cr_assert(strstr(err.message, "certificate does not parse"), "%s", err.message);
    cr_assert_eq(k8s_certmint_seconds_left("junk", now), LONG_MIN);
    k8s_certmint_pair_done(&ca);
    k8s_certmint_pair_done(&leaf);
    k8s_certmint_pair_done(&ca2);
    k8s_certmint_pair_done(&leaf2);
}

Test(certmint, serving_never_outlives_its_ca)
{
    struct k8s_certmint_pair ca = {0}, leaf = {0};
    struct k8s_error err = {0};
    cr_assert_eq(k8s_certmint_ca("short CA", 10, now, &ca, &err), 0);
    cr_assert_eq(k8s_certmint_serving(&ca, sans, 4, 365, now, &leaf, &err), 0);
    cr_assert_eq(k8s_certmint_seconds_left(leaf.cert_pem, now), 10 * DAY);
    k8s_certmint_pair_done(&ca);
    k8s_certmint_pair_done(&leaf);
}

Test(certmint, bad_arguments)
{
    struct k8s_certmint_pair ca = {0}, out = {(char *)"x", (char *)"y"};
    struct k8s_certmint_pair bogus = {(char *)"not a cert", (char *)"not a key"};
    struct k8s_error err = {0};
    cr_assert_eq(k8s_certmint_ca("", 10, now, &out, &err), -K8S_EINVAL);
    cr_assert_eq(k8s_certmint_ca("x", 0, now, &out, &err), -K8S_EINVAL);
    char long_cn[66];
    memset(long_cn, 'a', 65);
    long_cn[65] = '\0';
    cr_assert_eq(k8s_certmint_ca(long_cn, 10, now, &out, &err), -K8S_EINVAL); /* X.509: <= 64 */
    cr_assert(strstr(err.message, "1-64 characters"), "%s", err.message);
    cr_assert_eq(k8s_certmint_ca("ok", 10, now, &ca, &err), 0);
    cr_assert_eq(k8s_certmint_serving(&ca, sans, 0, 10, now, &out, &err), -K8S_EINVAL);
    const char *long_san[] = {long_cn};
    cr_assert_eq(k8s_certmint_serving(&ca, long_san, 1, 10, now, &out, &err), -K8S_EINVAL);
    cr_assert_eq(k8s_certmint_serving(&bogus, sans, 4, 10, now, &out, &err), -K8S_ETLS);
    cr_assert(strstr(err.message, "unusable CA"), "%s", err.message);
    cr_assert_str_eq(out.cert_pem, "x"); /* untouched */
    k8s_certmint_pair_done(&ca);
}
