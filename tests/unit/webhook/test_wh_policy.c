/* wh_policy: DESIGN §3.3 precedence, first match wins. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "wh_policy.h"
#include "test_support.h"

#define M K8S_LABEL_MANAGED

/* Pod metadata with the managed label/annotation set to l / a (NULL =
 * absent). */
static json_t *pod_meta(const char *l, const char *a)
{
    json_t *meta = json_pack("{s:s, s:{s:s}, s:{s:s}}", "name", "p", "labels", "app", "x",
                             "annotations", "note", "y");
    if (l)
        json_object_set_new(json_object_get(meta, "labels"), M, json_string(l));
    if (a)
        json_object_set_new(json_object_get(meta, "annotations"), M, json_string(a));
    return meta;
}

static json_t *labels(const char *v)
{
    json_t *o = json_pack("{s:s}", "team", "ml");
    if (v)
        json_object_set_new(o, M, json_string(v));
    return o;
}

/* A workload whose labels are known (v = the managed label or NULL). */
static void workload(struct wh_workload *w, const char *kind, bool ml, const char *v)
{
    memset(w, 0, sizeof(*w));
    snprintf(w->kind, sizeof(w->kind), "%s", kind);
    snprintf(w->name, sizeof(w->name), "train");
    snprintf(w->ns, sizeof(w->ns), "team-a");
    w->ml_kind = ml;
    w->doc = json_pack("{s:o, s:{}}", "labels", labels(v), "annotations");
    cr_assert_eq(wh_meta_from_json(w->doc, &w->meta), 0);
    w->labels = &w->meta.labels;
    w->annotations = &w->meta.annotations;
}

/* wh_policy_decide over trees: the pod's metadata and the namespace's
 * labels read as the webhook reads them. */
static struct wh_decision decide(const json_t *pod, const struct wh_workload *w, json_t *ns,
                                 const char *ns_why, json_t *warn)
{
    struct wh_meta pm, nm;
    json_t *ns_doc = json_pack("{s:O?}", "labels", ns);
    cr_assert_eq(wh_meta_from_json(pod, &pm), 0);
    cr_assert_eq(wh_meta_from_json(ns_doc, &nm), 0);
    struct wh_decision d =
        wh_policy_decide(pod ? &pm : NULL, w, ns ? &nm.labels : NULL, ns_why, warn);
    wh_meta_done(&pm);
    wh_meta_done(&nm);
    json_decref(ns_doc);
    return d;
}

struct env {
    json_t *pod, *ns, *warn;
    struct wh_workload w;
};

static struct wh_decision run(struct env *e, const char *pod_l, const char *pod_a, const char *wl,
                              const char *nsl)
{
    e->pod = pod_meta(pod_l, pod_a);
    workload(&e->w, "JobSet", true, wl);
    e->ns = labels(nsl);
    e->warn = json_array();
    return decide(e->pod, &e->w, e->ns, NULL, e->warn);
}

static void done(struct env *e)
{
    json_decref(e->pod);
    json_decref(e->ns);
    json_decref(e->warn);
    wh_workload_done(&e->w);
    memset(e, 0, sizeof(*e));
}

Test(wh_policy, pod_label_false_beats_everything)
{
    struct env e;
    struct wh_decision d = run(&e, "false", NULL, "true", "true");
    cr_expect_not(d.inject);
    cr_expect_str_eq(d.reason, "opted out by pod label managed-mldiagnostics-gke=false");
    cr_expect_eq(json_array_size(e.warn), 0);
    done(&e);
}

Test(wh_policy, pod_annotation_false_beats_pod_label_true)
{
    struct env e;
    struct wh_decision d = run(&e, "true", "false", "true", "true");
    cr_expect_not(d.inject);
    cr_expect_str_eq(d.reason, "opted out by pod annotation managed-mldiagnostics-gke=false");
    done(&e);
}

Test(wh_policy, workload_label_false_beats_pod_label_true)
{
    struct env e;
    struct wh_decision d = run(&e, "true", NULL, "false", "true");
    cr_expect_not(d.inject);
    cr_expect_str_eq(d.reason,
                     "opted out by workload label managed-mldiagnostics-gke=false (JobSet/train)");
    done(&e);
}

Test(wh_policy, pod_label_true)
{
    struct env e;
    struct wh_decision d = run(&e, "true", NULL, NULL, NULL);
    cr_expect(d.inject);
    cr_expect_str_eq(d.reason, "pod label managed-mldiagnostics-gke=true");
    done(&e);
    /* pod label wins over the workload's when both say true */
    d = run(&e, "true", NULL, "true", "true");
    cr_expect(d.inject);
    cr_expect_str_eq(d.reason, "pod label managed-mldiagnostics-gke=true");
    done(&e);
}

Test(wh_policy, workload_label_true)
{
    struct env e;
    struct wh_decision d = run(&e, NULL, NULL, "true", "true");
    cr_expect(d.inject);
    cr_expect_str_eq(d.reason, "workload label managed-mldiagnostics-gke=true (JobSet/train)");
    done(&e);
}

Test(wh_policy, namespace_true_for_each_ml_kind)
{
    const char *kinds[] = {"JobSet", "LeaderWorkerSet", "RayJob", "RayCluster", "Job"};
    for (size_t i = 0; i < 5; i++) {
        json_t *pod = pod_meta(NULL, NULL), *ns = labels("true"), *warn = json_array();
        struct wh_workload w;
        workload(&w, kinds[i], true, NULL);
        struct wh_decision d = decide(pod, &w, ns, NULL, warn);
        cr_expect(d.inject, "%s", kinds[i]);
        char want[200];
        snprintf(want, sizeof(want),
                 "namespace label managed-mldiagnostics-gke=true (team-a, %s/train)", kinds[i]);
        cr_expect_str_eq(d.reason, want);
        json_decref(pod);
        json_decref(ns);
        json_decref(warn);
        wh_workload_done(&w);
    }
}

Test(wh_policy, namespace_true_not_for_other_kinds)
{
    const char *kinds[] = {"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"};
    for (size_t i = 0; i < 4; i++) {
        json_t *pod = pod_meta(NULL, NULL), *ns = labels("true"), *warn = json_array();
        struct wh_workload w;
        workload(&w, kinds[i], false, NULL);
        struct wh_decision d = decide(pod, &w, ns, NULL, warn);
        cr_expect_not(d.inject, "%s", kinds[i]);
        char want[300];
        snprintf(want, sizeof(want),
                 "namespace team-a is labelled but %s is not a JobSet, LeaderWorkerSet, RayJob, "
                 "TrainJob, PyTorchJob, Job (batch.volcano.sh), MPIJob, RayCluster or Job",
                 kinds[i]);
        cr_expect_str_eq(d.reason, want);
        json_decref(pod);
        json_decref(ns);
        json_decref(warn);
        wh_workload_done(&w);
    }
}

Test(wh_policy, namespace_true_not_for_bare_pod)
{
    json_t *pod = pod_meta(NULL, NULL), *ns = labels("true");
    struct wh_workload w;
    workload(&w, "Pod", false, NULL);
    w.bare_pod = true;
    struct wh_decision d = decide(pod, &w, ns, NULL, NULL);
    cr_expect_not(d.inject);
    cr_expect_not_null(strstr(d.reason, "namespace team-a is labelled but Pod"), "%s", d.reason);
    json_decref(pod);
    json_decref(ns);
    wh_workload_done(&w);
}

Test(wh_policy, nothing_set_skips)
{
    struct env e;
    struct wh_decision d = run(&e, NULL, NULL, NULL, NULL);
    cr_expect_not(d.inject);
    cr_expect_str_eq(d.reason, "no managed-mldiagnostics-gke=true label on pod, workload or "
                               "namespace");
    cr_expect_eq(json_array_size(e.warn), 0);
    done(&e);
    /* a namespace labelled false is not an opt-out of anything opted in */
    d = run(&e, NULL, NULL, "true", "false");
    cr_expect(d.inject);
    done(&e);
}

/* DESIGN §3.3 rule 2 names the pod *label*; an annotation only opts out. */
Test(wh_policy, pod_annotation_true_does_not_opt_in)
{
    struct env e;
    struct wh_decision d = run(&e, NULL, "true", NULL, NULL);
    cr_expect_not(d.inject);
    done(&e);
}

Test(wh_policy, invalid_values_warn_and_count_as_unset)
{
    struct env e;
    /* pod "True" is unset: the workload's "true" decides */
    struct wh_decision d = run(&e, "True", NULL, "true", NULL);
    cr_expect(d.inject);
    cr_expect_str_eq(d.reason, "workload label managed-mldiagnostics-gke=true (JobSet/train)");
    cr_assert_eq(json_array_size(e.warn), 1);
    cr_expect_str_eq(json_string_value(json_array_get(e.warn, 0)),
                     "pod label managed-mldiagnostics-gke=\"True\" ignored: use \"true\" or "
                     "\"false\"");
    done(&e);

    /* workload "yes" is unset: the namespace decides */
    d = run(&e, NULL, NULL, "yes", "true");
    cr_expect(d.inject);
    cr_expect_not_null(strstr(d.reason, "namespace label"), "%s", d.reason);
    cr_assert_eq(json_array_size(e.warn), 1);
    cr_expect_str_eq(json_string_value(json_array_get(e.warn, 0)),
                     "workload label managed-mldiagnostics-gke=\"yes\" ignored: use \"true\" or "
                     "\"false\"");
    done(&e);

    /* annotation "FALSE" is not an opt-out */
    d = run(&e, "true", "FALSE", NULL, NULL);
    cr_expect(d.inject);
    cr_assert_eq(json_array_size(e.warn), 1);
    cr_expect_str_eq(json_string_value(json_array_get(e.warn, 0)),
                     "pod annotation managed-mldiagnostics-gke=\"FALSE\" ignored: use \"true\" or "
                     "\"false\"");
    done(&e);

    /* namespace "1" is unset */
    d = run(&e, NULL, NULL, NULL, "1");
    cr_expect_not(d.inject);
    cr_assert_eq(json_array_size(e.warn), 1);
    cr_expect_str_eq(json_string_value(json_array_get(e.warn, 0)),
                     "namespace label managed-mldiagnostics-gke=\"1\" ignored: use \"true\" or "
                     "\"false\"");
    done(&e);

    /* several at once: one warning each */
    d = run(&e, "True", "no", "yes", "TRUE");
    cr_expect_not(d.inject);
    cr_expect_eq(json_array_size(e.warn), 4);
    done(&e);

    /* "" is not a value either */
    d = run(&e, "", NULL, NULL, NULL);
    cr_expect_not(d.inject);
    cr_expect_eq(json_array_size(e.warn), 1);
    done(&e);
}

Test(wh_policy, non_string_value_is_unset)
{
    json_t *pod = json_pack("{s:{s:b}}", "labels", M, 1);
    struct wh_workload w;
    workload(&w, "JobSet", true, NULL);
    json_t *warn = json_array();
    struct wh_decision d = decide(pod, &w, NULL, NULL, warn);
    cr_expect_not(d.inject);
    json_decref(pod);
    json_decref(warn);
    wh_workload_done(&w);
}

Test(wh_policy, workload_labels_unknown_reason)
{
    json_t *pod = pod_meta(NULL, NULL);
    struct wh_workload w = {0};
    snprintf(w.kind, sizeof(w.kind), "JobSet");
    snprintf(w.name, sizeof(w.name), "train");
    snprintf(w.ns, sizeof(w.ns), "team-a");
    w.ml_kind = true;
    snprintf(w.unknown_why, sizeof(w.unknown_why), "standalone: JobSet team-a/train not looked up");
    struct wh_decision d =
        decide(pod, &w, NULL, "standalone: namespace team-a not looked up", NULL);
    cr_expect_not(d.inject);
    cr_expect_str_eq(d.reason, "no opt-in label on the pod; workload labels unknown (standalone: "
                               "JobSet team-a/train not looked up)");
    /* the pod label still works without any API view */
    json_object_set_new(json_object_get(pod, "labels"), M, json_string("true"));
    d = decide(pod, &w, NULL, "x", NULL);
    cr_expect(d.inject);
    cr_expect_str_eq(d.reason, "pod label managed-mldiagnostics-gke=true");
    json_decref(pod);
}

Test(wh_policy, namespace_unknown_reason)
{
    json_t *pod = pod_meta(NULL, NULL);
    struct wh_workload w;
    workload(&w, "Job", true, NULL);
    struct wh_decision d = decide(pod, &w, NULL, "lookup of namespace team-a: timed out", NULL);
    cr_expect_not(d.inject);
    cr_expect_str_eq(d.reason, "no opt-in label on pod or workload; namespace labels unknown "
                               "(lookup of namespace team-a: timed out)");
    json_decref(pod);
    wh_workload_done(&w);
}

Test(wh_policy, bare_pod_uses_pod_labels_only)
{
    /* for a bare pod the "workload labels" are the pod's own labels */
    json_t *pod = pod_meta(NULL, NULL);
    struct wh_workload w;
    workload(&w, "Pod", false, "true");
    w.bare_pod = true;
    struct wh_decision d = decide(pod, &w, NULL, NULL, NULL);
    cr_expect_not(d.inject, "a bare pod is opted in by its pod label, not twice");
    json_decref(pod);
    wh_workload_done(&w);

    pod = pod_meta("true", NULL);
    workload(&w, "Pod", false, "true");
    w.bare_pod = true;
    d = decide(pod, &w, NULL, NULL, NULL);
    cr_expect(d.inject);
    cr_expect_str_eq(d.reason, "pod label managed-mldiagnostics-gke=true");
    json_decref(pod);
    wh_workload_done(&w);
}

Test(wh_policy, missing_pod_metadata)
{
    struct wh_workload w;
    workload(&w, "JobSet", true, "true");
    struct wh_decision d = decide(NULL, &w, NULL, NULL, NULL);
    cr_expect(d.inject);
    cr_expect_str_eq(d.reason, "workload label managed-mldiagnostics-gke=true (JobSet/train)");
    wh_workload_done(&w);
}
