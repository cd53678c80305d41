/* op_cron: the schedule syntax CronJob takes, in UTC, against
 * tests/fixtures/unit/op_cron/cases.json (times as RFC 3339). */
#include <criterion/criterion.h>
#include <string.h>

#include "k8s_time.h"
#include "op_cron.h"
#include "test_support.h"

static json_t *cases;

static void setup(void)
{
    cases = ts_load_json("unit/op_cron/cases.json");
}

static void teardown(void)
{
    json_decref(cases);
}

TestSuite(op_cron, .init = setup, .fini = teardown);

/* A case's time, -1 for null. */
static int64_t at(const json_t *c, const char *key)
{
    const char *s = json_string_value(json_object_get(c, key));
    time_t t = -1;
    if (s)
        cr_assert_eq(k8s_time_parse_rfc3339(s, &t), 0, "%s", s);
    return (int64_t)t;
}

static struct op_cron parsed(const json_t *c)
{
    const char *spec = json_string_value(json_object_get(c, "spec"));
    struct op_cron cron;
    struct k8s_error err = {0};
    cr_assert_eq(op_cron_parse(spec, &cron, &err), 0, "%s: %s", spec, err.message);
    return cron;
}

Test(op_cron, next_ticks)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(cases, "next"), i, c)
    {
        struct op_cron cron = parsed(c);
        cr_assert_eq(op_cron_next(&cron, at(c, "after")), at(c, "next"), "%s (%s)",
                     json_string_value(json_object_get(c, "spec")),
                     json_string_value(json_object_get(c, "why")));
    }
}

Test(op_cron, a_missed_tick_is_owed_once)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(cases, "last"), i, c)
    {
        struct op_cron cron = parsed(c);
        cr_assert_eq(op_cron_last(&cron, at(c, "after"), at(c, "now")), at(c, "last"), "%s (%s)",
                     json_string_value(json_object_get(c, "spec")),
                     json_string_value(json_object_get(c, "why")));
    }
}

Test(op_cron, refusals_name_the_field)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(cases, "invalid"), i, c)
    {
        const char *spec = json_string_value(json_object_get(c, "spec"));
        const char *want = json_string_value(json_object_get(c, "error"));
        struct op_cron cron = {.hour = 7};
        struct k8s_error err = {0};
        cr_assert_eq(op_cron_parse(spec, &cron, &err), -K8S_EINVAL, "%s: accepted", spec);
        cr_assert(strstr(err.message, want), "%s: \"%s\" lacks \"%s\"", spec, err.message, want);
        cr_assert_eq(cron.hour, 7, "untouched");
    }
}
