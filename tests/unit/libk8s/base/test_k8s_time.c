/* k8s_time: Go time.ParseDuration semantics, RFC 3339 parsing and
 * formatting, clocks. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "k8s_time.h"
#include "test_support.h"

#define SEC  K8S_NSEC_PER_SEC
#define MIN  (60 * SEC)
#define HOUR (3600 * SEC)

struct dur_ok {
    const char *in;
    int64_t ns;
};

/* Every row is what Go's time.ParseDuration returns for the input. */
static const struct dur_ok dur_ok[] = {
    {"300ms", 300 * K8S_NSEC_PER_MSEC},
    {"1.5h", HOUR + 30 * MIN},
    {"1h30m", HOUR + 30 * MIN},
    {"65m", 65 * MIN},
    {"5m", 5 * MIN},
    {"0", 0},
    {"-0", 0},
    {"+0", 0},
    {"0s", 0},
    {"-1s", -SEC},
    {"+5m", 5 * MIN},
    {"-1.5h", -(HOUR + 30 * MIN)},
    {"1ns", 1},
    {"1us", 1000},
    {"1\xc2\xb5s", 1000}, /* U+00B5 MICRO SIGN */
    {"1\xce\xbcs", 1000}, /* U+03BC GREEK SMALL LETTER MU */
    {"1ms", K8S_NSEC_PER_MSEC},
    {"1s", SEC},
    {"1m", MIN},
    {"1h", HOUR},
    {".5h", 30 * MIN},
    {"1.h", HOUR},
    {"1.5ns", 1}, /* fractions of a nanosecond are truncated */
    {"0.000000001s", 1},
    {"2h45m30.5s", 2 * HOUR + 45 * MIN + 30 * SEC + 500 * K8S_NSEC_PER_MSEC},
    {"1h1h", 2 * HOUR}, /* repeated units add up */
    {"1m30s100ms", MIN + 30 * SEC + 100 * K8S_NSEC_PER_MSEC},
    {"100000h", 100000 * HOUR},
    {"9223372036854775807ns", INT64_MAX},
};

Test(k8s_time, duration_go_syntax_table)
{
    for (size_t i = 0; i < sizeof(dur_ok) / sizeof(dur_ok[0]); i++) {
        int64_t ns = 42;
        struct k8s_error err = {0};
        int r = k8s_duration_parse(dur_ok[i].in, &ns, &err);
        cr_expect_eq(r, 0, "\"%s\": r=%d (%s)", dur_ok[i].in, r, err.message);
        cr_expect_eq(ns, dur_ok[i].ns, "\"%s\": got %lld, want %lld", dur_ok[i].in, (long long)ns,
                     (long long)dur_ok[i].ns);
    }
}

/* Go: inputs Go's time.ParseDuration rejects. */
static const char *const dur_bad[] = {
    "",         "1",    "h",      "1x",  "0x10s", ".h",  "-",
    "+",        "1h30", "1.5",    "00",  "1 h",   " 1h", "1h ",
    "1e3s",     "--1s", "1h-30m", "1hh", "1sm",   "1m1", ".",
    "-.s",      "1S",   "1H",     "inf", "1,5h",  "nan", "9223372036854775808ns",
    "2562048h", "1d",
};

Test(k8s_time, duration_invalid_rejected_and_output_untouched)
{
    for (size_t i = 0; i < sizeof(dur_bad) / sizeof(dur_bad[0]); i++) {
        int64_t ns = 12345;
        struct k8s_error err = {0};
        int r = k8s_duration_parse(dur_bad[i], &ns, &err);
        cr_expect_eq(r, -K8S_EINVAL, "\"%s\": r=%d, ns=%lld", dur_bad[i], r, (long long)ns);
        cr_expect_eq(err.err, -K8S_EINVAL, "\"%s\"", dur_bad[i]);
        cr_expect_eq(ns, 12345, "\"%s\": output changed", dur_bad[i]);
    }
}

Test(k8s_time, duration_error_names_input)
{
    const char *inputs[] = {"1x", "0x10s", "1h30", "h", "9223372036854775808ns"};
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        int64_t ns;
        struct k8s_error err = {0};
        cr_assert_eq(k8s_duration_parse(inputs[i], &ns, &err), -K8S_EINVAL);
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "\"%s\"", inputs[i]);
        cr_expect_not_null(strstr(err.message, quoted), "message \"%s\" does not name %s",
                           err.message, quoted);
    }
    int64_t ns;
    struct k8s_error err = {0};
    cr_assert_eq(k8s_duration_parse("", &ns, &err), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "invalid duration \"\"");
}

Test(k8s_time, duration_null_reterr_allowed)
{
    int64_t ns = 7;
    cr_expect_eq(k8s_duration_parse("bogus", &ns, NULL), -K8S_EINVAL);
    cr_expect_eq(ns, 7);
}

/* Go: the largest Duration written with all units. */
Test(k8s_time, duration_max_mixed_units)
{
    int64_t ns = 0;
    cr_assert_eq(k8s_duration_parse("2562047h47m16.854775807s", &ns, NULL), 0);
    cr_expect_eq(ns, INT64_MAX, "got %lld", (long long)ns);
}

/* Go adds each component's fraction after truncating it to whole
 * nanoseconds: "0.5ns0.5ns" is 0 in Go. */
Test(k8s_time, duration_fraction_truncated_per_component,
     .disabled = false /* was BUG: k8s_duration_parse sums in long double first, gets 1 */)
{
    int64_t ns = -1;
    cr_assert_eq(k8s_duration_parse("0.5ns0.5ns", &ns, NULL), 0);
    cr_expect_eq(ns, 0);
}

/* Go (since 1.17) accepts the most negative Duration. */
Test(k8s_time, duration_min_int64,
     .disabled = false /* was BUG: "-9223372036854775808ns" is rejected as out of range */)
{
    int64_t ns = 0;
    cr_assert_eq(k8s_duration_parse("-9223372036854775808ns", &ns, NULL), 0);
    cr_expect_eq(ns, INT64_MIN);
}

struct ts_ok {
    const char *in;
    time_t t;
};

static const struct ts_ok ts_ok[] = {
    {"2024-03-05T07:08:09Z", 1709622489},
    {"2024-03-05t07:08:09z", 1709622489},
    {"2024-03-05T07:08:09.123456789Z", 1709622489},
    {"2024-03-05T07:08:09.5+00:00", 1709622489},
    {"2024-03-05T09:08:09+02:00", 1709622489},
    {"2024-03-05T07:08:09+02:00", 1709615289},
    {"2024-03-05T01:38:09-05:30", 1709622489},
    {"2024-03-05T07:08:09-00:00", 1709622489},
    {"1970-01-01T00:00:00Z", 0},
    {"2000-02-29T23:59:59Z", 951868799},
    {"2017-01-01T00:59:59+01:00", 1483228799},
};

Test(k8s_time, rfc3339_parse_valid)
{
    for (size_t i = 0; i < sizeof(ts_ok) / sizeof(ts_ok[0]); i++) {
        time_t t = 1;
        int r = k8s_time_parse_rfc3339(ts_ok[i].in, &t);
        cr_expect_eq(r, 0, "\"%s\": r=%d", ts_ok[i].in, r);
        cr_expect_eq(t, ts_ok[i].t, "\"%s\": got %lld want %lld", ts_ok[i].in, (long long)t,
                     (long long)ts_ok[i].t);
    }
}

static const char *const ts_bad[] = {
    "",
    "2024-03-05",
    "2024-03-05T07:08:09",
    "2024-3-05T07:08:09Z",
    "24-03-05T07:08:09Z",
    "2024-13-05T07:08:09Z",
    "2024-00-05T07:08:09Z",
    "2024-03-00T07:08:09Z",
    "2024-03-32T07:08:09Z",
    "2024-03-05T24:00:00Z",
    "2024-03-05T07:60:00Z",
    "2024-03-05T07:08:61Z",
    "2024-03-05T07:08:09.Z",
    "2024-03-05T07:08:09Zjunk",
    "2024-03-05T07:08:09+0200",
    "2024-03-05T07:08:09+02",
    "2024-03-05X07:08:09Z",
    "2024-03-05T07:08Z",
    "2024/03/05T07:08:09Z",
    "2024-03-05T07:08:09 Z",
    "x024-03-05T07:08:09Z",
};

Test(k8s_time, rfc3339_parse_invalid)
{
    for (size_t i = 0; i < sizeof(ts_bad) / sizeof(ts_bad[0]); i++) {
        time_t t = 777;
        cr_expect_eq(k8s_time_parse_rfc3339(ts_bad[i], &t), -K8S_EPARSE, "\"%s\" accepted",
                     ts_bad[i]);
        cr_expect_eq(t, 777, "\"%s\": output changed", ts_bad[i]);
    }
}

/* RFC 3339 §5.7 / Go's time.Parse: the day must exist in its month. */
Test(k8s_time, rfc3339_parse_rejects_day_past_month_end,
     .disabled = false /* was BUG: "2023-02-30T00:00:00Z" is accepted (normalised to Mar 2) */)
{
    time_t t = 777;
    cr_expect_eq(k8s_time_parse_rfc3339("2023-02-30T00:00:00Z", &t), -K8S_EPARSE);
    cr_expect_eq(k8s_time_parse_rfc3339("2023-04-31T00:00:00Z", &t), -K8S_EPARSE);
    cr_expect_eq(t, 777);
}

/* RFC 3339: time-numoffset = ("+" / "-") time-hour ":" time-minute, with
 * time-hour 00-23 and time-minute 00-59. */
Test(k8s_time, rfc3339_parse_rejects_offset_out_of_range,
     .disabled = false /* was BUG: offsets "+01:60" and "+99:99" are accepted */)
{
    time_t t = 777;
    cr_expect_eq(k8s_time_parse_rfc3339("2024-03-05T07:08:09+01:60", &t), -K8S_EPARSE);
    cr_expect_eq(k8s_time_parse_rfc3339("2024-03-05T07:08:09+99:99", &t), -K8S_EPARSE);
    cr_expect_eq(t, 777);
}

Test(k8s_time, rfc3339_format)
{
    char out[21];
    k8s_time_rfc3339(0, out);
    cr_expect_str_eq(out, "1970-01-01T00:00:00Z");
    k8s_time_rfc3339(1709622489, out);
    cr_expect_str_eq(out, "2024-03-05T07:08:09Z");
    k8s_time_rfc3339(951868799, out);
    cr_expect_str_eq(out, "2000-02-29T23:59:59Z");
    k8s_time_rfc3339(253402300799, out);
    cr_expect_str_eq(out, "9999-12-31T23:59:59Z");
}

Test(k8s_time, rfc3339_round_trip)
{
    const time_t samples[] = {0, 1, 86399, 951868799, 1483228799, 1709622489, 2147483648};
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
        char out[21];
        time_t back = -1;
        k8s_time_rfc3339(samples[i], out);
        cr_assert_eq(k8s_time_parse_rfc3339(out, &back), 0, "%s", out);
        cr_expect_eq(back, samples[i], "%s", out);
    }
}

Test(k8s_time, clocks)
{
    int64_t a = k8s_mono_ns(), b = k8s_mono_ns();
    cr_expect_geq(b, a);
    cr_expect_gt(a, 0);
    int64_t real = k8s_real_ns();
    int64_t now = (int64_t)time(NULL) * SEC;
    cr_expect_lt(real > now ? real - now : now - real, 2 * SEC);
}
