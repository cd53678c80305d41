/* op_spec: every field's validation and its message, from the cases in
 * tests/fixtures/unit/op_spec/cases.json (a base resource and changes to
 * its spec.triggerCapture). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_time.h"
#include "op_spec.h"
#include "test_support.h"

static json_t *cases;

static void setup(void)
{
    cases = ts_load_json("unit/op_spec/cases.json");
}

static void teardown(void)
{
    json_decref(cases);
}

TestSuite(op_spec, .init = setup, .fini = teardown);

/* The base resource with `change` applied to triggerCapture (null deletes). */
static json_t *object_for(const json_t *c)
{
    const json_t *whole = json_object_get(c, "object");
    if (whole)
        return json_deep_copy(whole);
    json_t *obj = json_deep_copy(json_object_get(cases, "base"));
    json_t *tc = json_object_get(json_object_get(obj, "spec"), "triggerCapture");
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(c, "change"), k, v)
    {
        if (json_is_null(v))
            json_object_del(tc, k);
        else if (json_is_string(v) && !strcmp(json_string_value(v), "@LONG@"))
            json_object_set_new(tc, k,
                                json_string("a-very-long-name-that-is-longer-than-the-"
                                            "two-hundred-fifty-three-characters-a-dns-"
                                            "subdomain-may-have-xxxxxxxxxxxxxxxxxxxxxx"
                                            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                            "xxxxxxxx"));
        else
            json_object_set(tc, k, v);
    }
    return obj;
}

/* A Go duration of the case (e.g. "sidecarTimeout": "5m"), else dflt. */
static int64_t duration_of(const json_t *c, const char *key, int64_t dflt)
{
    const char *v = json_string_value(json_object_get(c, key));
    int64_t ns = dflt;
    if (v)
        cr_assert_eq(k8s_duration_parse(v, &ns, NULL), 0, "%s: %s", key, v);
    return ns;
}

static struct op_spec_limits limits(const json_t *c)
{
    return (struct op_spec_limits){duration_of(c, "maxDuration", 3600 * K8S_NSEC_PER_SEC),
                                   json_is_true(json_object_get(c, "allowCross")),
                                   duration_of(c, "sidecarTimeout", 0)};
}

Test(op_spec, valid_cases)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(cases, "valid"), i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        json_t *obj = object_for(c), *want = json_object_get(c, "expect");
        struct op_spec_limits lim = limits(c);
        struct op_spec s;
        struct k8s_error err = {0};
        cr_assert_eq(op_spec_parse(obj, &lim, &s, &err), 0, "%s: %s", name, err.message);
        json_t *v;
        if ((v = json_object_get(want, "port")))
            cr_assert_eq(s.port, json_integer_value(v), "%s", name);
        if ((v = json_object_get(want, "duration")))
            cr_assert_eq(s.duration_s, json_integer_value(v), "%s", name);
        if ((v = json_object_get(want, "namespace")))
            cr_assert_str_eq(s.pod_namespace, json_string_value(v), "%s", name);
        if ((v = json_object_get(want, "storage")))
            cr_assert_str_eq(s.storage, json_string_value(v), "%s", name);
        if ((v = json_object_get(want, "ref")))
            cr_assert_str_eq(op_ref_kind_name(s.ref_kind), json_string_value(v), "%s", name);
        if ((v = json_object_get(want, "refGroup")))
            cr_assert_str_eq(s.ref_kind->group, json_string_value(v), "%s", name);
        if ((v = json_object_get(want, "refName")))
            cr_assert_str_eq(s.ref_name, json_string_value(v), "%s", name);
        if ((v = json_object_get(want, "hosts"))) {
            char d[300];
            cr_assert(s.hosts.set, "%s", name);
            cr_assert_str_eq(op_hosts_describe(&s.hosts, d, sizeof(d)), json_string_value(v), "%s",
                             name);
        }
        if ((v = json_object_get(want, "options"))) {
            const struct op_options *o = &s.options;
            int64_t got[] = {o->host_tracer_level, o->device_tracer_level, o->python_tracer_level,
                             o->delay_ms};
            const char *keys[] = {"host", "device", "python", "delayMs"};
            for (size_t k = 0; k < 4; k++)
                cr_assert_eq(got[k], json_integer_value(json_object_get(v, keys[k])), "%s: %s",
                             name, keys[k]);
        }
        if ((v = json_object_get(want, "pods"))) {
            cr_assert_eq(s.n_pods, json_array_size(v), "%s", name);
            for (size_t k = 0; k < s.n_pods; k++)
                cr_assert_str_eq(s.pods[k], json_string_value(json_array_get(v, k)), "%s", name);
        }
        op_spec_done(&s);
        json_decref(obj);
    }
}

Test(op_spec, invalid_cases_name_the_field)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(cases, "invalid"), i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *want = json_string_value(json_object_get(c, "error"));
        json_t *obj = object_for(c);
        struct op_spec_limits lim = limits(c);
        struct op_spec s = {.port = 12345};
        struct k8s_error err = {0};
        cr_assert_eq(op_spec_parse(obj, &lim, &s, &err), -K8S_EINVAL, "%s: accepted", name);
        cr_assert(strstr(err.message, want), "%s: \"%s\" lacks \"%s\"", name, err.message, want);
        cr_assert_eq(s.port, 12345, "%s: output untouched", name);
        json_decref(obj);
    }
}

Test(op_spec, dns_names)
{
    cr_assert(op_dns_label("ml-team", 7));
    cr_assert_not(op_dns_label("-ml", 3));
    cr_assert_not(op_dns_label("ml.team", 7));
    cr_assert(op_dns_subdomain("a.b-c.d", 7));
    cr_assert_not(op_dns_subdomain("a..b", 4));
    cr_assert_not(op_dns_subdomain("a.", 2));
    cr_assert_not(op_dns_subdomain("", 0));
}

/* DESIGN §4.2/§4.3: the start delay grows with the hosts (1,536 hosts:
 * 250 + 768 ms), so a capture that fits over a few pods may not over a
 * whole TPU slice; 0 leaves it unchecked. */
Test(op_spec, the_sidecar_timeout_counts_the_start_delay_of_every_host)
{
    struct op_spec s = {.duration_s = 298};
    const int64_t five_min = 300 * K8S_NSEC_PER_SEC;
    struct k8s_error err = {0};
    cr_assert_eq(op_start_delay_ms(1), 250);
    cr_assert_eq(op_start_delay_ms(1536), 1018);
    cr_assert_eq(op_spec_check_sidecar(&s, 1536, five_min, &err), 0);
    s.duration_s = 299;
    cr_assert_eq(op_spec_check_sidecar(&s, 2, five_min, &err), 0);
    cr_assert_eq(op_spec_check_sidecar(&s, 1536, five_min, &err), -K8S_EINVAL);
    cr_assert_str_eq(err.message,
                     "spec.triggerCapture.durationSeconds: 299s plus the 1018ms start delay "
                     "exceeds --sidecar-timeout (5m0s), the ceiling for one capture: the "
                     "profiler would be cut off and save nothing");
    s.duration_s = 1000000;
    cr_assert_eq(op_spec_check_sidecar(&s, 1536, 0, &err), 0);
}
