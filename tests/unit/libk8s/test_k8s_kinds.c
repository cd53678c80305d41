/* k8s_kinds: the kind table's invariants (what its users rely on) and its
 * helpers. */
#include <criterion/criterion.h>
#include <string.h>

#include "k8s_kinds.h"

/* What holds one thing per workloadRef kind is sized K8S_KIND_REF_COUNT. */
Test(k8s_kinds, workload_ref_kinds_come_first)
{
    for (int i = 0; i < K8S_KIND_COUNT; i++)
        cr_expect_eq((k8s_kinds[i].flags & K8S_KIND_WORKLOAD_REF) != 0, i < K8S_KIND_REF_COUNT,
                     "%s", k8s_kinds[i].kind);
}

Test(k8s_kinds, every_row_is_complete)
{
    for (int i = 0; i < K8S_KIND_COUNT; i++) {
        const struct k8s_kind *k = &k8s_kinds[i];
        cr_assert_not_null(k->kind, "row %d", i);
        cr_expect_not_null(k->group, "%s", k->kind);
        cr_expect_not_null(k->plural, "%s", k->kind);
        cr_expect_eq(k8s_kind_id(k), i);
        cr_expect_eq(k8s_kind_find(k->kind), k);
        for (int o = 0; o < K8S_KIND_MAX_OWNERS && k->owners[o]; o++)
            cr_expect_not_null(k8s_kind_find(k->owners[o]), "%s: owner %s is a row", k->kind,
                               k->owners[o]);
        if (k->flags & K8S_KIND_WORKLOAD_REF) {
            cr_assert(k->pods_by >= 0 && k->pods_by < K8S_KIND_COUNT, "%s", k->kind);
            cr_expect_not_null(k8s_kinds[k->pods_by].pod_label.key,
                               "%s: its pods are found by a label", k->kind);
            cr_expect(k8s_kind_selects_pods(k->pods_by));
        }
        if (k->flags & K8S_KIND_NAMES_BY_LABEL)
            cr_expect_not_null(k->pod_label.key, "%s", k->kind);
    }
}

Test(k8s_kinds, api_paths)
{
    const struct k8s_kind *k = k8s_kind_find("TrainJob");
    cr_assert_not_null(k);
    cr_expect_str_eq(k->api_version, "trainer.kubeflow.org/v1alpha1");
    cr_expect_str_eq(k->prefix, "/apis/trainer.kubeflow.org/v1alpha1");
    cr_expect_str_eq(k->resource, "trainjobs.trainer.kubeflow.org");
    cr_expect_str_eq(k8s_kind_find("PyTorchJob")->api_version, "kubeflow.org/v1");
    cr_expect_null(k8s_kind_find("Pod"));
    cr_expect_null(k8s_kind_find(NULL));
    cr_expect_eq(k8s_kind_id_of("DaemonSet"), K8S_KIND_NONE);
}

Test(k8s_kinds, pod_label_with_its_condition)
{
    const struct k8s_kind *pt = &k8s_kinds[K8S_KIND_PYTORCHJOB];
    json_t *l = json_pack("{s:s, s:s}", "training.kubeflow.org/job-name", "pt-1",
                          "training.kubeflow.org/operator-name", "pytorchjob-controller");
    cr_expect_str_eq(k8s_kind_pod_label(pt, l), "pt-1");
    json_object_set_new(l, "training.kubeflow.org/operator-name", json_string("tfjob-controller"));
    cr_expect_null(k8s_kind_pod_label(pt, l), "a TFJob's pod");
    json_object_del(l, "training.kubeflow.org/operator-name");
    cr_expect_null(k8s_kind_pod_label(pt, l));
    cr_expect_null(k8s_kind_pod_label(&k8s_kinds[K8S_KIND_TRAINJOB], l), "no label of its own");
    cr_expect_null(k8s_kind_pod_label(&k8s_kinds[K8S_KIND_JOBSET], NULL));
    json_decref(l);
}

Test(k8s_kinds, names_lists)
{
    char buf[200];
    cr_expect_str_eq(k8s_kinds_names(K8S_KIND_WORKLOAD_REF, buf, sizeof(buf)),
                     "JobSet, LeaderWorkerSet, RayJob, TrainJob or PyTorchJob");
    cr_expect_str_eq(k8s_kinds_names(K8S_KIND_NS_LABEL | K8S_KIND_NAMES_BY_LABEL, buf, sizeof(buf)),
                     "JobSet, LeaderWorkerSet, RayJob or PyTorchJob");
    char small[8];
    cr_expect_str_eq(k8s_kinds_names(K8S_KIND_WORKLOAD_REF, small, sizeof(small)), "JobSet,");
}

Test(k8s_kinds, json_has_every_row)
{
    json_t *t = k8s_kinds_json();
    cr_assert_eq(json_array_size(t), K8S_KIND_COUNT);
    json_t *tj = json_array_get(t, K8S_KIND_TRAINJOB);
    cr_expect_str_eq(json_string_value(json_object_get(tj, "kind")), "TrainJob");
    cr_expect(json_is_true(json_object_get(tj, "workloadRef")));
    cr_expect(json_is_null(json_object_get(tj, "podLabel")) || !json_object_get(tj, "podLabel"));
    json_t *js = json_array_get(t, K8S_KIND_JOBSET);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(js, "owners"), 0)),
                     "TrainJob");
    json_decref(t);
}
