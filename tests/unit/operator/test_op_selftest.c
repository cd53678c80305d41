/* op_selftest: a Deployment's readiness and the message naming what is not
 * ready (fixtures in tests/fixtures/unit/op_selftest). The whole check
 * against the fake API server: tests/integration/test_selftest.py. */
#include <criterion/criterion.h>
#include <string.h>

#include "op_selftest.h"
#include "test_support.h"

static int ready(const char *fixture, char *msg, size_t cap)
{
    json_t *d = ts_load_json(fixture);
    int r = op_selftest_deployment_ready(d, msg, cap);
    json_decref(d);
    return r;
}

Test(op_selftest, one_ready_replica_is_enough)
{
    char msg[512];
    cr_expect_eq(ready("unit/op_selftest/ready.json", msg, sizeof(msg)), 1);
    cr_expect_str_eq(msg, "1 of 2 replicas ready");
}

Test(op_selftest, not_ready_names_the_deployment_conditions)
{
    char msg[512];
    cr_expect_eq(ready("unit/op_selftest/not-ready.json", msg, sizeof(msg)), 0);
    cr_expect_str_eq(msg, "0 of 1 replicas ready; Available=False (MinimumReplicasUnavailable: "
                          "Deployment does not have minimum availability.); Progressing=False "
                          "(ProgressDeadlineExceeded: ReplicaSet "
                          "\"mldiagnostics-connection-operator-5d8f\" has timed out progressing.)");
}

Test(op_selftest, scaled_to_zero_and_no_status)
{
    char msg[512];
    cr_expect_eq(ready("unit/op_selftest/scaled-to-zero.json", msg, sizeof(msg)), 0);
    cr_expect_str_eq(msg, "0 of 0 replicas ready (scaled to 0)");
    cr_expect_eq(ready("unit/op_selftest/no-status.json", msg, sizeof(msg)), 0);
    cr_expect_str_eq(msg, "0 of 1 replicas ready");
}

Test(op_selftest, message_is_cut_not_overrun)
{
    char msg[24];
    cr_expect_eq(ready("unit/op_selftest/not-ready.json", msg, sizeof(msg)), 0);
    cr_expect_eq(strlen(msg), sizeof(msg) - 1);
}
