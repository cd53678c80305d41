/* op_pod: the packed form of a cached pod keeps exactly what targeting and
 * auditing read, from the maximal upstream pod too. */
#include <criterion/criterion.h>
#include <string.h>

#include "k8s_mlrun.h"
#include "op_pod.h"
#include "test_support.h"

Test(op_pod, pack_and_view)
{
    json_t *pod =
        json_pack("{s:{s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s}}, s:{s:s}, s:{s:s, s:s}}",
                  "metadata", "name", "w-0", "namespace", "ml", "deletionTimestamp",
                  "2026-11-30T00:00:00Z", "labels", "jobset.sigs.k8s.io/jobset-name", "llama",
                  "ray.io/cluster", "rc", "managed-mldiagnostics-gke", "true", "annotations",
                  "diagon.gke.io/injection", "0.1.0;x", "managed-mldiagnostics-gke", "false",
                  "spec", "hostname", "host-0", "status", "phase", "Running", "podIP", "10.0.0.7");
    json_t *packed = op_pod_pack(pod);
    json_decref(pod);
    struct op_pod p;
    cr_assert(op_pod_view(packed, &p));
    cr_assert_str_eq(p.name, "w-0");
    cr_assert_str_eq(p.namespace, "ml");
    cr_assert_str_eq(p.phase, "Running");
    cr_assert_str_eq(p.ip, "10.0.0.7");
    cr_assert_str_eq(p.hostname, "host-0");
    cr_assert_str_eq(p.label[K8S_KIND_JOBSET], "llama");
    cr_assert_str_eq(p.label[K8S_KIND_LWS], "");
    cr_assert_str_eq(p.label[K8S_KIND_RAYCLUSTER], "rc");
    cr_assert_str_eq(p.opt_label, "true");
    cr_assert_str_eq(p.opt_annotation, "false");
    cr_assert(p.injected);
    cr_assert(p.deleting);
    const char *why = NULL;
    cr_assert_not(op_pod_ready(&p, &why));
    cr_assert_str_eq(why, "terminating");
    /* a workload's pod keeps its labels, for captures of some of its hosts */
    cr_assert_str_eq(op_pod_label(&p, "ray.io/cluster"), "rc");
    cr_assert_str_eq(op_pod_label(&p, "managed-mldiagnostics-gke"), "true");
    cr_assert_null(op_pod_label(&p, "ray.io/group"));
    json_t *labels = op_pod_labels_json(&p);
    cr_assert_eq(json_object_size(labels), 3);
    json_decref(labels);
    size_t label_bytes = sizeof("jobset.sigs.k8s.io/jobset-name") + sizeof("llama") +
                         sizeof("ray.io/cluster") + sizeof("rc") +
                         sizeof("managed-mldiagnostics-gke") + sizeof("true");
    cr_assert_lt(json_string_length(packed), 120 + label_bytes, "small: %zu bytes",
                 json_string_length(packed));
    json_decref(packed);
}

Test(op_pod, a_pod_of_no_workload_keeps_no_labels)
{
    json_t *pod =
        json_pack("{s:{s:s, s:s, s:{s:s, s:s}}}", "metadata", "name", "web-0", "namespace", "ml",
                  "labels", "app", "web", "managed-mldiagnostics-gke", "true");
    json_t *packed = op_pod_pack(pod);
    json_decref(pod);
    struct op_pod p;
    cr_assert(op_pod_view(packed, &p));
    cr_assert_str_eq(p.opt_label, "true", "the opt-in label is a field of its own");
    cr_assert_null(op_pod_label(&p, "app"));
    cr_assert_eq(p.labels, p.labels_end);
    json_decref(packed);
}

Test(op_pod, the_maximal_upstream_pod)
{
    json_t *pod = ts_load_json("upstream/kubernetes-api/core.v1.Pod.json");
    json_t *packed = op_pod_pack(pod);
    struct op_pod p;
    cr_assert(op_pod_view(packed, &p));
    cr_assert_str_eq(p.name,
                     json_string_value(json_object_get(json_object_get(pod, "metadata"), "name")));
    cr_assert_str_eq(p.hostname,
                     json_string_value(json_object_get(json_object_get(pod, "spec"), "hostname")));
    json_decref(packed);
    json_decref(pod);
}

Test(op_pod, defaults_and_refusals)
{
    json_t *pod = json_pack("{s:{s:s}}", "metadata", "name", "bare");
    json_t *packed = op_pod_pack(pod);
    struct op_pod p;
    cr_assert(op_pod_view(packed, &p));
    cr_assert_str_eq(p.hostname, "bare", "no spec.hostname: the pod name");
    cr_assert_not(p.injected);
    const char *why;
    cr_assert_not(op_pod_ready(&p, &why));
    cr_assert_str_eq(why, "no phase yet");
    json_decref(packed);
    json_decref(pod);
    pod = json_pack("{s:{}}", "metadata");
    cr_assert_null(op_pod_pack(pod), "no name, nothing to keep");
    json_decref(pod);
    json_t *other = json_string("not-packed");
    cr_assert_not(op_pod_view(other, &p));
    json_decref(other);
}

/* An injected pod keeps the workload its identity names and the fields
 * the SDK would miss (k8s_mlrun bits), for the audit's Warning Event. */
Test(op_pod, identity_of_an_injected_pod)
{
    json_t *pod =
        json_pack("{s:{s:s, s:s, s:{s:s, s:s, s:s}}}", "metadata", "name", "w-0", "namespace", "ml",
                  "annotations", "diagon.gke.io/injection", "0.1.0;x", "diagon.gke.io/identifier",
                  "{\"metadata.name\":\"train\",\"metadata.kind\":\"JobSet\",\"namespace\":\"ml\"}",
                  "diagon.gke.io/metadata", "{\"parent-workload\":\"Job/train-w-0\"}");
    json_t *packed = op_pod_pack(pod);
    json_decref(pod);
    struct op_pod p;
    cr_assert(op_pod_view(packed, &p));
    cr_expect_str_eq(p.id_kind, "JobSet");
    cr_expect_str_eq(p.id_name, "train");
    cr_expect_eq(p.id_missing, 1u << K8S_MLRUN_CLUSTER | 1u << K8S_MLRUN_CREATED);
    json_decref(packed);
    /* not injected: nothing to say about an identity */
    pod = json_pack("{s:{s:s}}", "metadata", "name", "bare");
    packed = op_pod_pack(pod);
    cr_assert(op_pod_view(packed, &p));
    cr_expect_str_eq(p.id_kind, "");
    cr_expect_eq(p.id_missing, 0);
    json_decref(packed);
    json_decref(pod);
}
