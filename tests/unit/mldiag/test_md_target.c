/* md_target: TYPE/NAME as kubectl reads a resource argument, over the
 * kind table's workloadRef kinds. */
#include <criterion/criterion.h>

#include "md_target.h"

static const struct k8s_kind *kind_of(const char *arg)
{
    struct md_target t;
    struct k8s_error err = {0};
    cr_assert_eq(md_target_parse(arg, &t, &err), 0, "%s: %s", arg, err.message);
    return t.kind;
}

Test(md_target, kinds_by_kind_or_plural_in_any_case)
{
    cr_assert_eq(kind_of("jobset/llama"), &k8s_kinds[K8S_KIND_JOBSET]);
    cr_assert_eq(kind_of("JobSet/llama"), &k8s_kinds[K8S_KIND_JOBSET]);
    cr_assert_eq(kind_of("jobsets/llama"), &k8s_kinds[K8S_KIND_JOBSET]);
    cr_assert_eq(kind_of("leaderworkerset/serve"), &k8s_kinds[K8S_KIND_LWS]);
    cr_assert_eq(kind_of("rayjobs/rl"), &k8s_kinds[K8S_KIND_RAYJOB]);
    cr_assert_eq(kind_of("pytorchjob/pt"), &k8s_kinds[K8S_KIND_PYTORCHJOB]);
    cr_assert_eq(kind_of("mpijobs.kubeflow.org/m"), &k8s_kinds[K8S_KIND_MPIJOB]);
    cr_assert_eq(kind_of("job.batch.volcano.sh/vc"), &k8s_kinds[K8S_KIND_VOLCANO_JOB]);
}

Test(md_target, pods_by_name)
{
    struct md_target t;
    struct k8s_error err = {0};
    cr_assert_eq(md_target_parse("pod/w-0,w-1", &t, &err), 0);
    cr_assert_null(t.kind);
    cr_assert_str_eq(t.name, "w-0,w-1");
    cr_assert_eq(md_target_parse("pods/w-0", &t, &err), 0);
}

Test(md_target, refusals_say_what_is_accepted)
{
    static const struct {
        const char *arg, *why;
    } cases[] = {
        {"llama", "not TYPE/NAME"},
        {"jobset/", "not TYPE/NAME"},
        {"job/x", "more than one kind has that name"}, /* batch's and Volcano's */
        {"deployment/web", "not a kind a capture can target"},
        {"job.batch/x", "not a kind a capture can target"},
        {"widget/x", "not a kind a capture can target"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct md_target t;
        struct k8s_error err = {0};
        cr_assert_eq(md_target_parse(cases[i].arg, &t, &err), -K8S_EINVAL, "%s", cases[i].arg);
        cr_assert(strstr(err.message, cases[i].why), "%s: %s", cases[i].arg, err.message);
        cr_assert(strstr(err.message, "TYPE is pod or one of JobSet"), "%s", err.message);
    }
}
