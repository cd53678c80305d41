/* md_capture: the MLDiagnosticsConnection `kubectl mldiag capture`
 * creates, against tests/fixtures/unit/mldiag/capture-*.json. */
#include <criterion/criterion.h>

#include "k8s_time.h"
#include "md_capture.h"
#include "test_support.h"

#define NOW 1796000000

static struct md_capture base(const char *target)
{
    struct md_capture c = {.namespace = "ml",
                           .duration_ns = 10 * K8S_NSEC_PER_SEC,
                           .port = 9999,
                           .storage = "gs://b/llama",
                           .max = MD_UNSET,
                           .host_level = MD_UNSET,
                           .device_level = MD_UNSET,
                           .python_level = MD_UNSET,
                           .delay_ns = MD_UNSET};
    struct k8s_error err = {0};
    cr_assert_eq(md_target_parse(target, &c.target, &err), 0, "%s", err.message);
    return c;
}

static void expect(const struct md_capture *c, const char *fixture)
{
    json_t *got = NULL, *want = ts_load_json(fixture);
    struct k8s_error err = {0};
    cr_assert_eq(md_capture_build(c, NOW, &got, &err), 0, "%s", err.message);
    char *text = json_dumps(got, JSON_SORT_KEYS);
    cr_assert(json_equal(got, want), "%s differs: %s", fixture, text);
    free(text);
    json_decref(got);
    json_decref(want);
}

Test(md_capture, a_whole_workload_named_for_the_time)
{
    struct md_capture c = base("jobset/llama");
    expect(&c, "unit/mldiag/capture-jobset.json");
}

Test(md_capture, some_hosts_and_the_profilers_options)
{
    struct md_capture c = base("jobset/llama");
    c.name = "llama-step-4000";
    c.indices = "0-3,8";
    c.replicated_jobs = "workers,driver";
    c.selector = "tier=a,zone=b";
    c.max = 4;
    c.python_level = 0;
    c.host_level = 3;
    c.delay_ns = 30 * K8S_NSEC_PER_SEC;
    expect(&c, "unit/mldiag/capture-hosts-options.json");
}

Test(md_capture, pods_by_name)
{
    struct md_capture c = base("pod/w-0,w-1");
    c.storage = "/data/profiles";
    c.duration_ns = 120 * K8S_NSEC_PER_SEC;
    expect(&c, "unit/mldiag/capture-pods.json");
}

Test(md_capture, refusals_name_the_flag)
{
    static const char *const why[] = {"--duration", "--storage", "name a workload, not pods",
                                      "--selector"};
    for (int i = 0; i < 4; i++) {
        struct md_capture c = base(i == 2 ? "pod/w-0" : "jobset/llama");
        if (i == 0)
            c.duration_ns = 1500 * K8S_NSEC_PER_MSEC;
        if (i == 1)
            c.storage = NULL;
        if (i == 2)
            c.indices = "0";
        if (i == 3)
            c.selector = "tier";
        json_t *o = NULL;
        struct k8s_error err = {0};
        cr_assert_eq(md_capture_build(&c, NOW, &o, &err), -K8S_EINVAL, "case %d", i);
        cr_assert(strstr(err.message, why[i]), "case %d: %s", i, err.message);
        cr_assert_null(o);
    }
}
