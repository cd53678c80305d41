/* wh_selftest: the dry-run pod (labelled, restricted Pod Security, no
 * token) and reading the injection annotation of the API server's answer
 * (fixtures in tests/fixtures/unit/selftest). The whole check against the
 * fake API server and a real webhook: tests/integration/test_selftest.py. */
#include <criterion/criterion.h>

#include "wh_selftest.h"
#include "test_support.h"

Test(wh_selftest, dry_run_pod)
{
    json_t *pod = wh_selftest_pod("reg.example/wh:1");
    cr_assert_not_null(pod);
    json_t *meta = json_object_get(pod, "metadata");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(meta, "labels"),
                                                       "managed-mldiagnostics-gke")),
                     "true");
    cr_expect_null(json_object_get(meta, "name"), "generateName: never collides");
    cr_expect_str_eq(json_string_value(json_object_get(meta, "generateName")),
                     "mldiagnostics-selftest-");
    json_t *spec = json_object_get(pod, "spec");
    cr_expect(json_is_false(json_object_get(spec, "automountServiceAccountToken")));
    json_t *psc = json_object_get(spec, "securityContext");
    cr_expect(json_is_true(json_object_get(psc, "runAsNonRoot")));
    cr_expect_str_eq(
        json_string_value(json_object_get(json_object_get(psc, "seccompProfile"), "type")),
        "RuntimeDefault");
    json_t *c = json_array_get(json_object_get(spec, "containers"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(c, "image")), "reg.example/wh:1");
    json_t *sc = json_object_get(c, "securityContext");
    cr_expect(json_is_false(json_object_get(sc, "allowPrivilegeEscalation")));
    json_t *drop = json_object_get(json_object_get(sc, "capabilities"), "drop");
    cr_expect_str_eq(json_string_value(json_array_get(drop, 0)), "ALL");
    cr_expect_not_null(json_object_get(json_object_get(c, "resources"), "limits"));
    json_decref(pod);
}

Test(wh_selftest, injection_annotation)
{
    json_t *yes = ts_load_json("unit/selftest/injected.json");
    json_t *no = ts_load_json("unit/selftest/not-injected.json");
    cr_expect_str_eq(wh_selftest_injection(yes), "0.1.0;868240900799");
    cr_expect_null(wh_selftest_injection(no));
    cr_expect_null(wh_selftest_injection(NULL));
    json_decref(yes);
    json_decref(no);
}
