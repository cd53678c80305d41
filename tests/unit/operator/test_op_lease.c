/* op_lease: client-go's acquire rule, judged by the candidate's own clock. */
#include <criterion/criterion.h>

#include "k8s_time.h"
#include "op_lease.h"

#define SEC K8S_NSEC_PER_SEC

static json_t *spec(const char *holder, int secs, const char *renew)
{
    return json_pack("{s:s, s:i, s:s}", "holderIdentity", holder, "leaseDurationSeconds", secs,
                     "renewTime", renew);
}

Test(op_lease, free_or_own_leases_are_taken)
{
    struct op_lease_observed obs = {0};
    json_t *s = spec("", 15, "2026-11-30T00:00:00.000000Z");
    cr_assert(op_lease_may_acquire(s, "me", &obs, 100 * SEC), "nobody holds it");
    json_decref(s);
    s = spec("me", 15, "2026-11-30T00:00:00.000000Z");
    cr_assert(op_lease_may_acquire(s, "me", &obs, 101 * SEC), "we hold it: renew");
    json_decref(s);
    json_decref(obs.spec);
}

Test(op_lease, another_holder_is_waited_out_on_our_clock)
{
    struct op_lease_observed obs = {0};
    json_t *s = spec("other", 15, "2020-01-01T00:00:00.000000Z"); /* a skewed clock */
    cr_assert_not(op_lease_may_acquire(s, "me", &obs, 1000 * SEC),
                  "first sight: the lease counts from now, whatever renewTime says");
    cr_assert_not(op_lease_may_acquire(s, "me", &obs, 1014 * SEC));
    cr_assert(op_lease_may_acquire(s, "me", &obs, 1015 * SEC), "unchanged for 15 s: expired");
    json_decref(s);
    s = spec("other", 15, "2020-01-01T00:00:02.000000Z"); /* renewed */
    cr_assert_not(op_lease_may_acquire(s, "me", &obs, 1016 * SEC), "a renewal restarts the wait");
    cr_assert(op_lease_may_acquire(s, "me", &obs, 1031 * SEC));
    json_decref(s);
    json_decref(obs.spec);
}

Test(op_lease, released_lease_is_taken_at_once)
{
    struct op_lease_observed obs = {0};
    json_t *s = spec("other", 15, "2026-11-30T00:00:00.000000Z");
    cr_assert_not(op_lease_may_acquire(s, "me", &obs, 5 * SEC));
    json_decref(s);
    s = spec("", 1, "2026-11-30T00:00:01.000000Z");
    cr_assert(op_lease_may_acquire(s, "me", &obs, 6 * SEC), "released: empty holder");
    json_decref(s);
    json_decref(obs.spec);
}

Test(op_lease, micro_time_has_six_digits)
{
    char out[28];
    k8s_time_rfc3339_micro(1796000000123456789LL, out);
    cr_assert_str_eq(out, "2026-11-30T00:53:20.123456Z");
    k8s_time_rfc3339_micro(1796000000000000000LL, out);
    cr_assert_str_eq(out, "2026-11-30T00:53:20.000000Z");
}
