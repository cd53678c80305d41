/* wh_probe: the URL the API server calls for a webhook entry (service or
 * url; cases in tests/fixtures/unit/probe/targets.json), the dry-run
 * AdmissionReview it sends, and the verdicts reached without a peer (a
 * caBundle that is not PEM, a closed port). The calls to a real webhook
 * over TLS are in tests/integration/test_selftest.py. */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "k8s_codec.h"
#include "wh_probe.h"
#include "test_support.h"

Test(wh_probe, targets_of_the_fixture_entries)
{
    json_t *cases = ts_load_json("unit/probe/targets.json");
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *want_err = json_string_value(json_object_get(c, "error"));
        char origin[400] = "", path[400] = "";
        struct k8s_error err = {0};
        int r = wh_probe_target(json_object_get(c, "hook"), origin, sizeof(origin), path,
                                sizeof(path), &err);
        if (want_err) {
            cr_expect_eq(r, -K8S_EINVAL, "%s", name);
            cr_expect_str_eq(err.message, want_err, "%s", name);
            continue;
        }
        cr_expect_eq(r, 0, "%s: %s", name, err.message);
        cr_expect_str_eq(origin, json_string_value(json_object_get(c, "origin")), "%s", name);
        cr_expect_str_eq(path, json_string_value(json_object_get(c, "path")), "%s", name);
    }
    json_decref(cases);
}

Test(wh_probe, review_is_a_dry_run_pod_create)
{
    json_t *pod = ts_load_json("unit/selftest/not-injected.json");
    json_t *rv = wh_probe_review(pod, "team-a");
    cr_assert_not_null(rv);
    cr_expect_str_eq(json_string_value(json_object_get(rv, "apiVersion")), "admission.k8s.io/v1");
    json_t *rq = json_object_get(rv, "request");
    cr_expect_str_eq(json_string_value(json_object_get(rq, "operation")), "CREATE");
    cr_expect_str_eq(json_string_value(json_object_get(rq, "namespace")), "team-a");
    cr_expect(json_is_true(json_object_get(rq, "dryRun")));
    cr_expect_str_eq(
        json_string_value(json_object_get(json_object_get(rq, "resource"), "resource")), "pods");
    cr_expect(json_equal(json_object_get(rq, "object"), pod));
    json_decref(rv);
    json_decref(pod);
}

static json_t *hook_at(int port, const char *ca_pem)
{
    char url[64];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/mutate", port);
    json_t *h = json_pack("{s:{s:s}}", "clientConfig", "url", url);
    if (ca_pem) {
        char *b64 = k8s_base64_encode(ca_pem, strlen(ca_pem), NULL);
        json_object_set_new(json_object_get(h, "clientConfig"), "caBundle", json_string(b64));
        free(b64);
    }
    return h;
}

Test(wh_probe, bundle_without_a_certificate_is_untrusted)
{
    json_t *hook = hook_at(1, "not a certificate");
    json_t *pod = ts_load_json("unit/selftest/not-injected.json");
    struct wh_probe_result res;
    cr_assert_eq(wh_probe_call(hook, pod, "default", 1000, &res, NULL), 0);
    cr_expect_eq(res.verdict, WH_PROBE_UNTRUSTED);
    cr_expect_eq(res.ca_certs, 0);
    cr_expect_str_eq(res.detail, "caBundle holds no PEM certificate");
    json_object_set_new(json_object_get(hook, "clientConfig"), "caBundle", json_string("%%%"));
    struct k8s_error err = {0};
    cr_expect_eq(wh_probe_call(hook, pod, "default", 1000, &res, &err), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "clientConfig.caBundle is not base64");
    json_decref(hook);
    json_decref(pod);
}

Test(wh_probe, closed_port_is_unreachable)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
    close(s); /* bound then closed: nothing listens there */
    json_t *hook = hook_at(ntohs(a.sin_port), NULL);
    json_t *pod = ts_load_json("unit/selftest/not-injected.json");
    struct wh_probe_result res;
    cr_assert_eq(wh_probe_call(hook, pod, "default", 2000, &res, NULL), 0);
    cr_expect_eq(res.verdict, WH_PROBE_UNREACHABLE, "%s", res.detail);
    cr_expect_neq(strstr(res.url, "/mutate"), NULL, "%s", res.url);
    json_decref(hook);
    json_decref(pod);
}
