/* k8s_kinds: the kind table's invariants (what its users rely on) and its
 * helpers. */
#include <criterion/criterion.h>
#include <stdio.h>
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
        cr_expect_eq(k8s_kind_find(k->group, k->kind), k, "(group, kind) is unique");
        cr_expect_eq(k8s_kind_of_ref(k->api_version, k->kind), k);
        for (int o = 0; o < K8S_KIND_MAX_OWNERS && k->owners[o]; o++)
            cr_expect(k->owners[o] >= k8s_kinds && k->owners[o] < k8s_kinds + K8S_KIND_COUNT,
                      "%s: owner %d is a row", k->kind, o);
        if (k->flags & K8S_KIND_WORKLOAD_REF) {
            cr_assert(k->pods_by >= 0 && k->pods_by < K8S_KIND_COUNT, "%s", k->kind);
            cr_expect_not_null(k8s_kinds[k->pods_by].pod_label.key,
                               "%s: its pods are found by a label", k->kind);
            cr_expect(k8s_kind_selects_pods(k->pods_by));
            cr_expect_not_null(k8s_kinds[k->pods_by].hosts.roles[0].key,
                               "%s: its pods have roles (hosts.replicatedJobs)", k->kind);
        }
        if (k->flags & K8S_KIND_NAMES_BY_LABEL)
            cr_expect_not_null(k->pod_label.key, "%s", k->kind);
    }
}

Test(k8s_kinds, api_paths)
{
    const struct k8s_kind *k = k8s_kind_find("trainer.kubeflow.org", "TrainJob");
    cr_assert_not_null(k);
    cr_expect_str_eq(k->api_version, "trainer.kubeflow.org/v1alpha1");
    cr_expect_str_eq(k->prefix, "/apis/trainer.kubeflow.org/v1alpha1");
    cr_expect_str_eq(k->resource, "trainjobs.trainer.kubeflow.org");
    cr_expect_str_eq(k8s_kind_find("kubeflow.org", "PyTorchJob")->api_version, "kubeflow.org/v1");
    cr_expect_null(k8s_kind_find("", "Pod"));
    cr_expect_null(k8s_kind_find(NULL, "Job"));
    cr_expect_null(k8s_kind_find("batch", NULL));
    cr_expect_null(k8s_kind_find("apps", "DaemonSet"));
}

/* Owner references name a kind by apiVersion: its group decides, so a
 * kind of another group with the same name is not that row. */
Test(k8s_kinds, rows_by_reference)
{
    cr_expect_eq(k8s_kind_of_ref("batch/v1", "Job"), &k8s_kinds[K8S_KIND_JOB]);
    cr_expect_eq(k8s_kind_of_ref("batch/v2", "Job"), &k8s_kinds[K8S_KIND_JOB], "any version");
    cr_expect_null(k8s_kind_of_ref("example.com/v1", "Job"));
    cr_expect_null(k8s_kind_of_ref("v1", "Job"), "core group");
    cr_expect_null(k8s_kind_of_ref(NULL, "Job"));
    cr_expect_null(k8s_kind_of_ref("apps/v1", NULL));
    cr_expect_eq(k8s_kind_of_ref("apps/v1", "ReplicaSet"), &k8s_kinds[K8S_KIND_REPLICASET]);
}

Test(k8s_kinds, rows_by_name_alone)
{
    int n = -1;
    cr_expect_eq(k8s_kind_named("JobSet", K8S_KIND_WORKLOAD_REF, &n), &k8s_kinds[K8S_KIND_JOBSET]);
    cr_expect_eq(n, 1);
    cr_expect_eq(k8s_kind_named("Job", K8S_KIND_WORKLOAD_REF, &n), &k8s_kinds[K8S_KIND_VOLCANO_JOB],
                 "batch's Job is no workloadRef kind");
    cr_expect_eq(n, 1);
    cr_expect_null(k8s_kind_named("Job", 0, &n), "two kinds are named Job");
    cr_expect_eq(n, 2);
    cr_expect_null(k8s_kind_named("Pod", 0, &n));
    cr_expect_eq(n, 0);
    cr_expect_null(k8s_kind_named("DaemonSet", 0, NULL));
    cr_expect_null(k8s_kind_named(NULL, 0, &n));
}

Test(k8s_kinds, owners_are_rows)
{
    const struct k8s_kind *job = &k8s_kinds[K8S_KIND_JOB];
    cr_expect(k8s_kind_owned_by(job, &k8s_kinds[K8S_KIND_JOBSET]));
    cr_expect(k8s_kind_owned_by(job, &k8s_kinds[K8S_KIND_RAYJOB]));
    cr_expect_not(k8s_kind_owned_by(job, &k8s_kinds[K8S_KIND_LWS]));
    cr_expect_not(k8s_kind_owned_by(job, NULL));
    cr_expect_not(k8s_kind_owned_by(NULL, job));
    cr_expect_str_eq(k8s_kind_namespace.plural, "namespaces");
    cr_expect_str_eq(k8s_kind_namespace.prefix, "/api/v1");
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

static const char *json_label(const void *labels, const char *key)
{
    return json_string_value(json_object_get(labels, key));
}

/* A pod's role: the first rule of its kind's row that applies. */
static const char *role_of(enum k8s_kind_id id, json_t *labels, int *rule)
{
    static char out[64];
    const char *name = NULL;
    *rule = k8s_kind_host_role(&k8s_kinds[id], json_label, labels, &name);
    snprintf(out, sizeof(out), "%s", name ? name : "(none)"); /* name may be in labels */
    json_decref(labels);
    return out;
}

Test(k8s_kinds, host_roles_as_each_controller_labels_its_pods)
{
    int rule;
    const char *wi = "leaderworkerset.sigs.k8s.io/worker-index";
    cr_expect_str_eq(role_of(K8S_KIND_LWS, json_pack("{s:s}", wi, "0"), &rule), "leader");
    cr_expect_eq(rule, 0);
    cr_expect_str_eq(role_of(K8S_KIND_LWS, json_pack("{s:s}", wi, "3"), &rule), "worker");
    cr_expect_eq(rule, 1);
    cr_expect_str_eq(
        role_of(K8S_KIND_RAYCLUSTER,
                json_pack("{s:s, s:s}", "ray.io/node-type", "head", "ray.io/group", "headgroup"),
                &rule),
        "head");
    cr_expect_str_eq(
        role_of(K8S_KIND_RAYCLUSTER,
                json_pack("{s:s, s:s}", "ray.io/node-type", "worker", "ray.io/group", "tpu-group"),
                &rule),
        "tpu-group");
    cr_expect_str_eq(role_of(K8S_KIND_JOBSET,
                             json_pack("{s:s}", "jobset.sigs.k8s.io/replicatedjob-name", "workers"),
                             &rule),
                     "workers");
    cr_expect_str_eq(role_of(K8S_KIND_PYTORCHJOB,
                             json_pack("{s:s}", "training.kubeflow.org/replica-type", "master"),
                             &rule),
                     "master");
    cr_expect_eq(rule, 0, "the master's rule comes first: it sorts before worker 0");
    cr_expect_str_eq(role_of(K8S_KIND_MPIJOB,
                             json_pack("{s:s}", "training.kubeflow.org/job-role", "launcher"),
                             &rule),
                     "launcher");
    cr_expect_str_eq(role_of(K8S_KIND_JOBSET, json_object(), &rule), "(none)");
    cr_expect_eq(rule, -1);
}

Test(k8s_kinds, names_lists)
{
    char buf[200];
    cr_expect_str_eq(k8s_kinds_names(K8S_KIND_WORKLOAD_REF, buf, sizeof(buf)),
                     "JobSet, LeaderWorkerSet, RayJob, TrainJob, PyTorchJob, "
                     "Job (batch.volcano.sh) or MPIJob");
    cr_expect_str_eq(k8s_kinds_names(K8S_KIND_NS_LABEL | K8S_KIND_NAMES_BY_LABEL, buf, sizeof(buf)),
                     "JobSet, LeaderWorkerSet, RayJob, PyTorchJob, Job (batch.volcano.sh) or "
                     "MPIJob");
    cr_expect_str_eq(k8s_kinds_names(K8S_KIND_NS_LABEL, buf, sizeof(buf)),
                     "JobSet, LeaderWorkerSet, RayJob, TrainJob, PyTorchJob, "
                     "Job (batch.volcano.sh), MPIJob, RayCluster or Job",
                     "batch's Job plain");
    char label[64];
    cr_expect_str_eq(k8s_kind_label(&k8s_kinds[K8S_KIND_VOLCANO_JOB], label, sizeof(label)),
                     "Job (batch.volcano.sh)");
    cr_expect_str_eq(k8s_kind_label(&k8s_kinds[K8S_KIND_JOB], label, sizeof(label)), "Job");
    cr_expect_str_eq(k8s_kind_label(&k8s_kinds[K8S_KIND_MPIJOB], label, sizeof(label)), "MPIJob");
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
    cr_expect_str_eq(
        json_string_value(json_object_get(json_array_get(t, K8S_KIND_VOLCANO_JOB), "label")),
        "Job (batch.volcano.sh)");
    json_t *owner = json_array_get(json_object_get(js, "owners"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(owner, "kind")), "TrainJob");
    cr_expect_str_eq(json_string_value(json_object_get(owner, "group")), "trainer.kubeflow.org");
    json_decref(t);
}
