/* op_targets: named pods and workload pods from the caches
 * (tests/fixtures/unit/op_targets/cache.json). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "op_pod.h"
#include "op_targets.h"
#include "test_support.h"

static struct op_stores st;

static struct k8s_store *store_of(json_t *cache, const char *kind)
{
    struct k8s_store *s = k8s_store_new();
    if (!strcmp(kind, "pods"))
        k8s_store_set_transform(s, op_pod_pack); /* as the operator keeps them */
    k8s_store_replace_new(s, json_incref(json_object_get(cache, kind)));
    return s;
}

static void setup(void)
{
    json_t *cache = ts_load_json("unit/op_targets/cache.json");
    st = (struct op_stores){.pods = store_of(cache, "pods")};
    /* the cached kinds, by their plural (unique among workloadRef kinds) */
    for (int k = 0; k < K8S_KIND_REF_COUNT; k++)
        st.kinds[k] = store_of(cache, k8s_kinds[k].plural);
    json_decref(cache);
}

static void teardown(void)
{
    k8s_store_free(st.pods);
    for (int k = 0; k < K8S_KIND_REF_COUNT; k++)
        k8s_store_free(st.kinds[k]);
}

TestSuite(op_targets, .init = setup, .fini = teardown);

static struct op_targets resolve_pods(const char *ns, char **pods, size_t n)
{
    struct op_spec s = {.pods = pods, .n_pods = n, .pod_namespace = (char *)ns};
    struct op_targets t;
    cr_assert_eq(op_targets_resolve(&s, &st, &t), 0);
    return t;
}

static struct op_targets resolve_ref(enum k8s_kind_id k, const char *name)
{
    struct op_spec s = {.pod_namespace = "ml", .ref_kind = &k8s_kinds[k], .ref_name = (char *)name};
    struct op_targets t;
    cr_assert_eq(op_targets_resolve(&s, &st, &t), 0);
    return t;
}

Test(op_targets, named_pods_sorted_with_host_names)
{
    char *pods[] = {"js-w-1", "js-w-0"};
    struct op_targets t = resolve_pods("ml", pods, 2);
    cr_assert_eq(t.state, OP_TARGETS_READY, "%s", t.why);
    cr_assert_eq(t.n, 2);
    cr_assert_str_eq(t.v[0].pod, "js-w-0");
    cr_assert_str_eq(t.v[0].ip, "10.0.0.1");
    cr_assert_str_eq(t.v[0].hostname, "llama-w-0-0", "spec.hostname names the container host");
    cr_assert_str_eq(t.v[1].hostname, "js-w-1", "else the pod name");
    op_targets_done(&t);
}

Test(op_targets, a_missing_pod_fails_and_names_itself)
{
    char *pods[] = {"js-w-0", "ghost", "js-other-ns"};
    struct op_targets t = resolve_pods("ml", pods, 3);
    cr_assert_eq(t.state, OP_TARGETS_FAIL);
    cr_assert_str_eq(t.why, "pods not found in namespace ml: ghost, js-other-ns");
    cr_assert_eq(t.n_absent, 2);
    cr_assert_str_eq(t.absent[0], "/api/v1/namespaces/ml/pods/ghost");
    op_targets_done(&t);
}

Test(op_targets, pods_not_ready_wait_and_are_named)
{
    char *pods[] = {"slow-js-0", "slow-js-1", "bye", "js-w-0"};
    struct op_targets t = resolve_pods("ml", pods, 4);
    cr_assert_eq(t.state, OP_TARGETS_WAIT);
    cr_assert_str_eq(t.why, "waiting for 3 of 4 pods to be Running with an IP: slow-js-0 "
                            "(Pending), slow-js-1 (no IP yet), bye (terminating)");
    op_targets_done(&t);
}

Test(op_targets, jobset_pods_by_label_in_the_namespace_skipping_finished)
{
    struct op_targets t = resolve_ref(K8S_KIND_JOBSET, "llama");
    cr_assert_eq(t.state, OP_TARGETS_READY, "%s", t.why);
    cr_assert_eq(t.n, 2);
    cr_assert_str_eq(t.v[0].pod, "js-w-0");
    cr_assert_str_eq(t.v[1].pod, "js-w-1");
    op_targets_done(&t);
}

Test(op_targets, lws_and_rayjob)
{
    struct op_targets t = resolve_ref(K8S_KIND_LWS, "serve");
    cr_assert_eq(t.state, OP_TARGETS_READY);
    cr_assert_str_eq(t.v[0].ip, "fd00::5");
    op_targets_done(&t);
    t = resolve_ref(K8S_KIND_RAYJOB, "rl");
    cr_assert_eq(t.state, OP_TARGETS_READY);
    cr_assert_eq(t.n, 1);
    cr_assert_str_eq(t.v[0].pod, "rc-head");
    op_targets_done(&t);
    t = resolve_ref(K8S_KIND_RAYJOB, "new");
    cr_assert_eq(t.state, OP_TARGETS_WAIT);
    cr_assert_str_eq(t.why, "RayJob ml/new has no RayCluster yet");
    op_targets_done(&t);
}

Test(op_targets, workloads_missing_or_without_pods)
{
    struct op_targets t = resolve_ref(K8S_KIND_JOBSET, "nope");
    cr_assert_eq(t.state, OP_TARGETS_FAIL);
    cr_assert_str_eq(t.why, "JobSet ml/nope not found");
    cr_assert_str_eq(t.absent[0], "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets/nope");
    op_targets_done(&t);
    t = resolve_ref(K8S_KIND_JOBSET, "empty");
    cr_assert_eq(t.state, OP_TARGETS_WAIT);
    cr_assert_str_eq(t.why, "JobSet ml/empty has no pods yet");
    op_targets_done(&t);
    st.absent[K8S_KIND_LWS] = true;
    k8s_store_free(st.kinds[K8S_KIND_LWS]);
    st.kinds[K8S_KIND_LWS] = NULL;
    t = resolve_ref(K8S_KIND_LWS, "serve");
    cr_assert_eq(t.state, OP_TARGETS_FAIL);
    cr_assert_str_eq(t.why, "LeaderWorkerSet ml/serve not found (its CRD is not installed)");
    op_targets_done(&t);
}

/* Kubeflow: a TrainJob's pods are its JobSet's (the JobSet has its name);
 * a PyTorchJob's carry its job-name label with operator-name
 * pytorchjob-controller (a TFJob's pods share the job-name key). */
Test(op_targets, trainjob_and_pytorchjob)
{
    struct op_targets t = resolve_ref(K8S_KIND_TRAINJOB, "tj-1");
    cr_assert_eq(t.state, OP_TARGETS_READY, "%s", t.why);
    cr_assert_eq(t.n, 1);
    cr_assert_str_eq(t.v[0].pod, "tj-1-node-0-0-x7k2p");
    op_targets_done(&t);
    t = resolve_ref(K8S_KIND_PYTORCHJOB, "pt-1");
    cr_assert_eq(t.state, OP_TARGETS_READY, "%s", t.why);
    cr_assert_eq(t.n, 2, "not the TFJob's pod");
    cr_assert_str_eq(t.v[0].pod, "pt-1-master-0");
    cr_assert_str_eq(t.v[1].pod, "pt-1-worker-0");
    op_targets_done(&t);
    t = resolve_ref(K8S_KIND_TRAINJOB, "tj-9");
    cr_assert_eq(t.state, OP_TARGETS_FAIL);
    cr_assert_str_eq(t.why, "TrainJob ml/tj-9 not found");
    cr_assert_str_eq(t.absent[0],
                     "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/tj-9");
    op_targets_done(&t);
}

/* Volcano's Job selects the pods labelled with its name (not batch's Job
 * pods of the same name); MPIJob its launcher and workers (not a
 * PyTorchJob's pods with the same job-name label). */
Test(op_targets, volcano_job_and_mpijob)
{
    struct op_targets t = resolve_ref(K8S_KIND_VOLCANO_JOB, "vc-1");
    cr_assert_eq(t.state, OP_TARGETS_READY, "%s", t.why);
    cr_assert_eq(t.n, 2, "not batch's pod");
    cr_assert_str_eq(t.v[0].pod, "vc-1-ps-0");
    cr_assert_str_eq(t.v[1].pod, "vc-1-worker-0");
    op_targets_done(&t);
    t = resolve_ref(K8S_KIND_MPIJOB, "pi-1");
    cr_assert_eq(t.state, OP_TARGETS_READY, "%s", t.why);
    cr_assert_eq(t.n, 2, "not the PyTorchJob's pod");
    cr_assert_str_eq(t.v[0].pod, "pi-1-launcher-x9z8q");
    cr_assert_str_eq(t.v[1].pod, "pi-1-worker-0");
    op_targets_done(&t);
    t = resolve_ref(K8S_KIND_VOLCANO_JOB, "vc-9");
    cr_assert_eq(t.state, OP_TARGETS_FAIL);
    cr_assert_str_eq(t.absent[0], "/apis/batch.volcano.sh/v1alpha1/namespaces/ml/jobs/vc-9");
    op_targets_done(&t);
}

/* ---------- spec.triggerCapture.hosts ---------- */

/* The op_hosts fixture's JobSet pods, Running with an IP except the
 * driver, cached as the operator caches them, and its JobSet. */
static struct op_stores jobset_world(void)
{
    json_t *fixture = ts_load_json("unit/op_hosts/pods.json"), *pods = json_array(), *p;
    size_t i;
    json_array_foreach(json_object_get(fixture, "JobSet"), i, p)
    {
        const char *name = json_string_value(json_object_get(p, "name"));
        bool driver = strstr(name, "driver") != NULL;
        json_t *status = driver ? json_pack("{s:s}", "phase", "Pending")
                                : json_pack("{s:s, s:s}", "phase", "Running", "podIP", "10.1.0.1");
        json_array_append_new(pods, json_pack("{s:{s:s, s:s, s:O}, s:o}", "metadata", "name", name,
                                              "namespace", "ml", "labels",
                                              json_object_get(p, "labels"), "status", status));
    }
    json_decref(fixture);
    struct op_stores w = {.pods = k8s_store_new()};
    k8s_store_set_transform(w.pods, op_pod_pack);
    k8s_store_replace_new(w.pods, pods);
    w.kinds[K8S_KIND_JOBSET] = k8s_store_new();
    k8s_store_replace_new(w.kinds[K8S_KIND_JOBSET], json_pack("[{s:{s:s, s:s}}]", "metadata",
                                                              "name", "llama", "namespace", "ml"));
    return w;
}

static struct op_targets resolve_hosts(const struct op_stores *w, const char *hosts_json)
{
    struct op_spec s = {
        .pod_namespace = "ml", .ref_kind = &k8s_kinds[K8S_KIND_JOBSET], .ref_name = "llama"};
    json_t *hosts = json_loads(hosts_json, 0, NULL);
    struct k8s_error err = {0};
    cr_assert_eq(op_hosts_parse(hosts, &s.hosts, &err), 0, "%s", err.message);
    json_decref(hosts);
    struct op_targets t;
    cr_assert_eq(op_targets_resolve(&s, w, &t), 0);
    op_hosts_done(&s.hosts);
    return t;
}

Test(op_targets, hosts_takes_some_and_only_they_must_be_ready)
{
    struct op_stores w = jobset_world();
    struct op_targets t = resolve_hosts(&w, "{\"replicatedJobs\": [\"workers\"], \"max\": 3}");
    cr_assert_eq(t.state, OP_TARGETS_READY, "%s", t.why);
    cr_assert_eq(t.n, 3);
    cr_assert_eq(t.of, 5, "chosen from the JobSet's 5 pods");
    cr_assert_str_eq(t.v[0].pod, "llama-workers-0-0-c3411");
    cr_assert_str_eq(t.v[1].pod, "llama-workers-0-1-ea28f");
    cr_assert_str_eq(t.v[2].pod, "llama-workers-1-0-c10f4");
    op_targets_done(&t);
    t = resolve_hosts(&w, "{\"indices\": \"0-1\"}");
    cr_assert_eq(t.state, OP_TARGETS_WAIT, "index 0 is the driver, not Running");
    cr_assert(strstr(t.why, "llama-driver-0-0-bb3b7"), "%s", t.why);
    op_targets_done(&t);
    k8s_store_free(w.pods);
    k8s_store_free(w.kinds[K8S_KIND_JOBSET]);
}

Test(op_targets, hosts_that_take_none_wait_saying_so)
{
    struct op_stores w = jobset_world();
    struct op_targets t = resolve_hosts(&w, "{\"replicatedJobs\": [\"trainer\"]}");
    cr_assert_eq(t.state, OP_TARGETS_WAIT);
    cr_assert_str_eq(
        t.why, "hosts (replicatedJobs trainer) takes none of the 5 pods of JobSet ml/llama yet");
    op_targets_done(&t);
    t = resolve_ref(K8S_KIND_JOBSET, "llama");
    cr_assert_eq(t.of, 0, "no hosts: no choice made");
    op_targets_done(&t);
    k8s_store_free(w.pods);
    k8s_store_free(w.kinds[K8S_KIND_JOBSET]);
}
