/* op_schedule: a parent capture on a schedule, decided from the parent,
 * its children and a fake clock (tests/fixtures/unit/op_schedule/cases.json:
 * a case overrides the parent's spec and status and gives the children). */
#include <criterion/criterion.h>
#include <string.h>

#include "k8s_time.h"
#include "op_schedule.h"
#include "test_support.h"

static json_t *fixture;

static void setup(void)
{
    fixture = ts_load_json("unit/op_schedule/cases.json");
}

static void teardown(void)
{
    json_decref(fixture);
}

TestSuite(op_schedule, .init = setup, .fini = teardown);

/* The fixture's parent with a case's spec fields and status. */
static json_t *parent_for(const json_t *c)
{
    json_t *p = json_deep_copy(json_object_get(fixture, "parent"));
    json_object_update(json_object_get(p, "spec"), json_object_get(c, "spec"));
    if (json_object_get(c, "status"))
        json_object_set(p, "status", json_object_get(c, "status"));
    return p;
}

static int64_t at(const char *rfc3339)
{
    time_t t;
    cr_assert_eq(k8s_time_parse_rfc3339(rfc3339, &t), 0, "%s", rfc3339);
    return (int64_t)t;
}

static void check(const char *name, const json_t *want, const json_t *parent,
                  const struct op_schedule_plan *p)
{
    const json_t *v;
    const char *made =
        json_string_value(json_object_get(json_object_get(p->create, "metadata"), "name"));
    if ((v = json_object_get(want, "create")))
        cr_assert(json_is_null(v) ? !made : made && !strcmp(made, json_string_value(v)),
                  "%s: created %s", name, made ? made : "nothing");
    if (made) { /* owned by the parent, carrying its triggerCapture */
        const json_t *o = json_array_get(
            json_object_get(json_object_get(p->create, "metadata"), "ownerReferences"), 0);
        cr_assert_str_eq(json_string_value(json_object_get(o, "uid")), "uid-p", "%s", name);
        cr_assert(json_is_true(json_object_get(o, "controller")), "%s", name);
        cr_assert(json_equal(json_object_get(json_object_get(p->create, "spec"), "triggerCapture"),
                             json_object_get(json_object_get(parent, "spec"), "triggerCapture")),
                  "%s", name);
    }
    if ((v = json_object_get(want, "after")))
        cr_assert_eq(p->after_s, json_integer_value(v), "%s: after %lld", name,
                     (long long)p->after_s);
    if ((v = json_object_get(want, "remove"))) {
        cr_assert_eq(p->n_remove, json_array_size(v), "%s", name);
        for (size_t i = 0; i < p->n_remove; i++)
            cr_assert_str_eq(p->remove[i], json_string_value(json_array_get(v, i)), "%s", name);
    }
    if ((v = json_object_get(want, "status")) && json_is_null(v))
        cr_assert_null(p->status, "%s: nothing to write", name);
    const json_t *st = p->status;
    if ((v = json_object_get(want, "lastScheduleTime")))
        cr_assert(json_equal(json_object_get(st, "lastScheduleTime"), v), "%s", name);
    if ((v = json_object_get(want, "message")))
        cr_assert_str_eq(json_string_value(json_object_get(st, "message")), json_string_value(v),
                         "%s", name);
    if ((v = json_object_get(want, "active"))) {
        size_t i;
        json_t *a;
        cr_assert_eq(json_array_size(json_object_get(st, "active")), json_array_size(v), "%s",
                     name);
        json_array_foreach(v, i, a)
        {
            cr_assert_str_eq(json_string_value(json_object_get(
                                 json_array_get(json_object_get(st, "active"), i), "name")),
                             json_string_value(a), "%s", name);
        }
    }
}

Test(op_schedule, each_tick_outage_policy_and_history)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(fixture, "cases"), i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        json_t *parent = parent_for(c);
        struct op_schedule s;
        struct k8s_error err = {0};
        cr_assert_eq(op_schedule_parse(parent, &s, &err), 0, "%s: %s", name, err.message);
        cr_assert(s.set);
        struct op_child kids[8];
        size_t n = 0, k;
        json_t *ch;
        json_array_foreach(json_object_get(c, "children"), k, ch)
        {
            kids[n++] = (struct op_child){json_string_value(json_object_get(ch, "name")),
                                          json_string_value(json_object_get(ch, "phase"))};
        }
        struct op_schedule_in in = {parent, &s, kids, n,
                                    at(json_string_value(json_object_get(c, "now")))};
        struct op_schedule_plan p;
        cr_assert_eq(op_schedule_decide(&in, &p), 0, "%s", name);
        check(name, json_object_get(c, "expect"), parent, &p);
        op_schedule_done(&p);
        json_decref(parent);
    }
}

Test(op_schedule, refusals_name_the_field)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(fixture, "invalid"), i, c)
    {
        json_t *parent = parent_for(c);
        struct op_schedule s = {.keep_failed = 9};
        struct k8s_error err = {0};
        const char *want = json_string_value(json_object_get(c, "error"));
        cr_assert_eq(op_schedule_parse(parent, &s, &err), -K8S_EINVAL, "%s: accepted", want);
        cr_assert(strstr(err.message, want), "\"%s\" lacks \"%s\"", err.message, want);
        cr_assert_eq(s.keep_failed, 9, "untouched");
        json_decref(parent);
    }
}

Test(op_schedule, no_schedule_is_not_set)
{
    json_t *o = json_pack("{s:{s:{}}}", "spec", "triggerCapture");
    struct op_schedule s;
    struct k8s_error err = {0};
    cr_assert_eq(op_schedule_parse(o, &s, &err), 0);
    cr_assert_not(s.set);
    json_decref(o);
}
