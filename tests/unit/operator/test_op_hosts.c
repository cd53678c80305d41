/* op_hosts: which of a workload's hosts spec.triggerCapture.hosts takes,
 * over pods built as each kind's controller builds them
 * (tests/fixtures/unit/op_hosts/pods.json, listed out of index order),
 * and its refusals (cases.json). */
#include <criterion/criterion.h>
#include <string.h>

#include "op_hosts.h"
#include "test_support.h"

static json_t *pods, *cases;

static void setup(void)
{
    pods = ts_load_json("unit/op_hosts/pods.json");
    cases = ts_load_json("unit/op_hosts/cases.json");
}

static void teardown(void)
{
    json_decref(pods);
    json_decref(cases);
}

TestSuite(op_hosts, .init = setup, .fini = teardown);

static const char *json_label(const void *labels, const char *key)
{
    return json_string_value(json_object_get(labels, key));
}

/* The row whose pods a fixture's key names: "JobSet", "Job.batch.volcano.sh". */
static const struct k8s_kind *pods_row(const char *key)
{
    const char *dot = strchr(key, '.');
    char kind[64];
    snprintf(kind, sizeof(kind), "%.*s", dot ? (int)(dot - key) : (int)strlen(key), key);
    const struct k8s_kind *k =
        dot ? k8s_kind_find(dot + 1, kind) : k8s_kind_named(kind, K8S_KIND_WORKLOAD_REF, NULL);
    cr_assert_not_null(k, "%s", key);
    return &k8s_kinds[k->pods_by];
}

/* The names h takes of the fixture's pods of key, joined with spaces. */
static void chosen(const char *key, const struct op_hosts *h, char *out, size_t cap)
{
    const json_t *list = json_object_get(pods, key);
    size_t n = json_array_size(list), kept, i;
    struct op_host v[16];
    json_t *p;
    cr_assert(n > 0 && n <= 16, "%s", key);
    json_array_foreach(list, i, p)
    {
        const json_t *labels = json_object_get(p, "labels");
        v[i] = (struct op_host){.name = json_string_value(json_object_get(p, "name")),
                                .labels = labels};
        op_host_read(pods_row(key), json_label, labels, &v[i]);
    }
    cr_assert_eq(op_hosts_choose(h, v, n, &kept), 0);
    out[0] = '\0';
    for (i = 0; i < kept; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? " " : "", v[i].name);
}

Test(op_hosts, each_kinds_roles_indices_selector_and_max)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(cases, "choose"), i, c)
    {
        const char *key = json_string_value(json_object_get(c, "pods"));
        struct op_hosts h;
        struct k8s_error err = {0};
        cr_assert_eq(op_hosts_parse(json_object_get(c, "hosts"), &h, &err), 0, "case %zu: %s", i,
                     err.message);
        cr_assert(h.set);
        char got[1024], want[1024] = "";
        chosen(key, &h, got, sizeof(got));
        size_t k;
        json_t *name;
        json_array_foreach(json_object_get(c, "take"), k, name)
        {
            snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s", k ? " " : "",
                     json_string_value(name));
        }
        cr_assert_str_eq(got, want, "case %zu (%s)", i, key);
        op_hosts_done(&h);
    }
}

Test(op_hosts, refusals_name_the_field)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(cases, "invalid"), i, c)
    {
        const char *want = json_string_value(json_object_get(c, "error"));
        struct op_hosts h = {.max = 99};
        struct k8s_error err = {0};
        cr_assert_eq(op_hosts_parse(json_object_get(c, "hosts"), &h, &err), -K8S_EINVAL,
                     "case %zu: accepted", i);
        cr_assert(strstr(err.message, want), "case %zu: \"%s\" lacks \"%s\"", i, err.message, want);
        cr_assert_eq(h.max, 0, "left zeroed");
    }
}

Test(op_hosts, absent_is_not_set_and_describes_itself)
{
    struct op_hosts h;
    struct k8s_error err = {0};
    cr_assert_eq(op_hosts_parse(NULL, &h, &err), 0);
    cr_assert_not(h.set);
    json_t *j = json_pack("{s:[s,s], s:s, s:{}, s:i}", "replicatedJobs", "a", "b", "indices",
                          "0-3, 8", "selector", "max", 4);
    cr_assert_eq(op_hosts_parse(j, &h, &err), 0, "%s", err.message);
    char d[200];
    cr_assert_str_eq(op_hosts_describe(&h, d, sizeof(d)),
                     "replicatedJobs a,b, indices 0-3,8, selector, max 4");
    op_hosts_done(&h);
    json_decref(j);
}
