/* wh_workload: the pod's top-level workload (DESIGN §3.4), first in
 * standalone mode (labels and ownerReferences only), then with a fake
 * wh_lookup serving metadata from tests/fixtures/unit/workload/objects.json
 * ("Kind/ns/name" → metadata, or {"$error": "ETIMEDOUT", "message": ...}). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "wh_workload.h"
#include "test_support.h"

#define NOW      ((time_t)1709622489) /* 2024-03-05T07:08:09Z */
#define NOW_S    "2024-03-05T07:08:09Z"
#define DEADLINE ((int64_t)123456789)

/* ---------- fake lookup ---------- */

struct fake {
    json_t *objects;
    json_t *calls; /* ["Kind/ns/name", ...] */
    int64_t last_deadline;
};

static int err_code(const char *name)
{
    static const struct {
        const char *n;
        int e;
    } t[] = {{"ETIMEDOUT", K8S_ETIMEDOUT},
             {"ENOTFOUND", K8S_ENOTFOUND},
             {"EUNAVAIL", K8S_EUNAVAIL},
             {"EIO", K8S_EIO}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(t[i].n, name))
            return -t[i].e;
    cr_assert_fail("unknown error %s in fixture", name);
    return -K8S_EIO;
}

/* Objects are keyed "Kind/ns/name", or "resource/ns/name" (jobs.batch.volcano.sh/...)
 * where two kinds share a name: that key is tried first. */
static int fake_get(void *ud, const struct k8s_kind *kind, const char *ns, const char *name,
                    int64_t deadline_ns, json_t **ret_meta, struct k8s_error *reterr)
{
    struct fake *f = ud;
    char key[512], exact[512];
    snprintf(key, sizeof(key), "%s/%s/%s", kind->kind, ns, name);
    snprintf(exact, sizeof(exact), "%s/%s/%s", kind->resource, ns, name);
    json_array_append_new(f->calls, json_string(key));
    f->last_deadline = deadline_ns;
    json_t *o = json_object_get(f->objects, exact);
    o = o ? o : json_object_get(f->objects, key);
    if (!o)
        return k8s_error_set(reterr, -K8S_ENOTFOUND, "%s not found", key);
    const char *e = json_string_value(json_object_get(o, "$error"));
    if (e) {
        const char *msg = json_string_value(json_object_get(o, "message"));
        if (!msg)
            return err_code(e); /* no detail at all */
        return k8s_error_set(reterr, err_code(e), "%s", msg);
    }
    *ret_meta = json_deep_copy(o);
    return 0;
}

static struct fake fk;
static struct wh_lookup lk = {.get_meta = fake_get, .ud = &fk};

/* The pods resolved by a test and their metadata as read, kept to the
 * test's end: a bare pod's workload borrows the pod's labels. */
static json_t *held_pods;
static struct wh_meta held[8];
static size_t n_held;

static void fake_init(void)
{
    fk.objects = ts_load_json("unit/workload/objects.json");
    fk.calls = json_array();
    fk.last_deadline = 0;
    held_pods = json_array();
    n_held = 0;
}

static void fake_fini(void)
{
    json_decref(fk.objects);
    json_decref(fk.calls);
    json_decref(held_pods);
    for (size_t i = 0; i < n_held; i++)
        wh_meta_done(&held[i]);
}

TestSuite(wh_workload, .init = fake_init, .fini = fake_fini);

static void expect_calls(const char *const *want, size_t n)
{
    cr_expect_eq(json_array_size(fk.calls), n, "lookups: %zu, want %zu", json_array_size(fk.calls),
                 n);
    for (size_t i = 0; i < n && i < json_array_size(fk.calls); i++)
        cr_expect_str_eq(json_string_value(json_array_get(fk.calls, i)), want[i]);
}

static void resolve(const char *pod_name, const struct wh_lookup *l, struct wh_workload *w)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "unit/workload/pods/%s.json", pod_name);
    json_t *pod = ts_load_json(rel);
    cr_assert_lt(n_held, sizeof(held) / sizeof(held[0]));
    struct wh_meta *m = &held[n_held++];
    json_array_append_new(held_pods, pod);
    cr_assert_eq(wh_meta_from_json(json_object_get(pod, "metadata"), m), 0);
    memset(w, 0xA5, sizeof(*w)); /* resolve must initialise everything */
    cr_assert_eq(wh_workload_resolve(m, "team-a", l, NOW, DEADLINE, w), 0);
}

static void expect_wl(const struct wh_workload *w, const char *kind, const char *name,
                      const char *parent, bool ml)
{
    cr_expect_str_eq(w->kind, kind);
    cr_expect_str_eq(w->name, name);
    cr_expect_str_eq(w->ns, "team-a");
    cr_expect_str_eq(w->parent, parent);
    cr_expect_eq(w->ml_kind, ml, "ml_kind of %s", kind);
    cr_expect_not(w->bare_pod);
}

static void expect_standalone_unknown(const struct wh_workload *w)
{
    cr_expect_null(w->labels);
    cr_expect_null(w->annotations);
    cr_expect_str_eq(w->created, "");
    char want[160];
    snprintf(want, sizeof(want), "standalone: %s team-a/%s not looked up", w->kind, w->name);
    cr_expect_str_eq(w->unknown_why, want);
}

static void expect_label(const struct wh_workload *w, const char *k, const char *v)
{
    cr_assert_not_null(w->labels);
    cr_expect_str_eq(wh_map_get(w->labels, k), v, "label %s", k);
}

/* ---------- standalone ---------- */

Test(wh_workload, standalone_jobset_pod)
{
    struct wh_workload w;
    resolve("jobset", NULL, &w);
    expect_wl(&w, "JobSet", "train", "Job/train-workers-0", true);
    expect_standalone_unknown(&w);
    wh_workload_done(&w);
    cr_expect_null(w.labels);
}

Test(wh_workload, standalone_lws_leader_and_worker)
{
    struct wh_workload w;
    resolve("lws-leader", NULL, &w);
    expect_wl(&w, "LeaderWorkerSet", "lws-a", "StatefulSet/lws-a", true);
    expect_standalone_unknown(&w);
    wh_workload_done(&w);
    resolve("lws-worker", NULL, &w);
    expect_wl(&w, "LeaderWorkerSet", "lws-a", "StatefulSet/lws-a-0", true);
    expect_standalone_unknown(&w);
    wh_workload_done(&w);
}

Test(wh_workload, standalone_rayjob_submitter)
{
    struct wh_workload w;
    resolve("rayjob-submitter", NULL, &w);
    expect_wl(&w, "RayJob", "rj-1", "Job/rj-1", true);
    expect_standalone_unknown(&w);
    wh_workload_done(&w);
}

Test(wh_workload, standalone_raycluster_pod)
{
    struct wh_workload w;
    resolve("raycluster", NULL, &w);
    expect_wl(&w, "RayCluster", "rc-1", "RayCluster/rc-1", true);
    expect_standalone_unknown(&w);
    wh_workload_done(&w);
}

Test(wh_workload, standalone_raycluster_pod_of_rayjob_by_label)
{
    struct wh_workload w;
    resolve("raycluster-of-rayjob", NULL, &w);
    expect_wl(&w, "RayJob", "rj-1", "RayCluster/rc-1", true);
    wh_workload_done(&w);
    /* originated from a RayCluster: the RayCluster is the workload */
    resolve("raycluster-originated-raycluster", NULL, &w);
    expect_wl(&w, "RayCluster", "rc-2", "RayCluster/rc-2", true);
    wh_workload_done(&w);
}

Test(wh_workload, standalone_job_pod)
{
    struct wh_workload w;
    resolve("job", NULL, &w);
    expect_wl(&w, "Job", "pi", "Job/pi", true);
    expect_standalone_unknown(&w);
    wh_workload_done(&w);
}

Test(wh_workload, standalone_deployment_pod)
{
    struct wh_workload w;
    resolve("deployment", NULL, &w);
    expect_wl(&w, "Deployment", "web", "ReplicaSet/web-5d4f8c7b9", false);
    expect_standalone_unknown(&w);
    wh_workload_done(&w);
}

Test(wh_workload, standalone_replicaset_without_matching_hash)
{
    struct wh_workload w;
    resolve("replicaset-hash-mismatch", NULL, &w);
    expect_wl(&w, "ReplicaSet", "lone-rs", "ReplicaSet/lone-rs", false);
    expect_standalone_unknown(&w);
    wh_workload_done(&w);
    resolve("replicaset-nohash", NULL, &w);
    expect_wl(&w, "ReplicaSet", "web-5d4f8c7b9", "ReplicaSet/web-5d4f8c7b9", false);
    wh_workload_done(&w);
}

Test(wh_workload, standalone_statefulset_pod)
{
    struct wh_workload w;
    resolve("statefulset", NULL, &w);
    expect_wl(&w, "StatefulSet", "db", "StatefulSet/db", false);
    expect_standalone_unknown(&w);
    wh_workload_done(&w);
}

Test(wh_workload, standalone_daemonset_and_custom_owner)
{
    struct wh_workload w;
    resolve("daemonset", NULL, &w);
    expect_wl(&w, "DaemonSet", "agent", "DaemonSet/agent", false);
    wh_workload_done(&w);
    /* the controller reference wins over an earlier non-controller one */
    resolve("custom-owner", NULL, &w);
    expect_wl(&w, "TFJob", "tf-1", "TFJob/tf-1", false);
    wh_workload_done(&w);
}

Test(wh_workload, bare_pod_with_name)
{
    struct wh_workload w;
    resolve("bare-named", NULL, &w);
    cr_expect_str_eq(w.kind, "Pod");
    cr_expect_str_eq(w.name, "debug");
    cr_expect_str_eq(w.parent, "");
    cr_expect(w.bare_pod);
    cr_expect_not(w.ml_kind);
    expect_label(&w, "a", "b");
    cr_expect_eq(w.labels->n, 1);
    cr_expect_str_eq(wh_map_get(w.annotations, "x"), "y");
    cr_expect_str_eq(w.created, NOW_S, "a bare pod's creation time is the admission time");
    cr_expect_str_eq(w.unknown_why, "");
    wh_workload_done(&w);
}

Test(wh_workload, bare_pod_with_only_generate_name)
{
    struct wh_workload w;
    resolve("bare-generate", NULL, &w);
    cr_expect_str_eq(w.kind, "Pod");
    cr_expect_str_eq(w.name, "debug-");
    cr_expect(w.bare_pod);
    cr_assert_not_null(w.labels);
    cr_expect_eq(w.labels->n, 0, "known to have no labels");
    cr_expect_str_eq(w.created, NOW_S);
    wh_workload_done(&w);
}

Test(wh_workload, bare_pod_own_creation_timestamp_normalised)
{
    struct wh_workload w;
    resolve("bare-created", NULL, &w);
    cr_expect_str_eq(w.created, "2024-01-02T02:04:05Z");
    wh_workload_done(&w);
}

Test(wh_workload, bare_pod_without_metadata)
{
    struct wh_workload w;
    resolve("bare-nometa", NULL, &w);
    cr_expect_str_eq(w.kind, "Pod");
    cr_expect_str_eq(w.name, "");
    cr_expect(w.bare_pod);
    cr_expect_str_eq(w.created, NOW_S);
    wh_workload_done(&w);
}

Test(wh_workload, non_controller_owner_is_bare)
{
    struct wh_workload w;
    resolve("non-controller-owner", &lk, &w);
    cr_expect_str_eq(w.kind, "Pod");
    cr_expect_str_eq(w.name, "orphan");
    cr_expect(w.bare_pod);
    cr_expect_str_eq(w.parent, "");
    expect_calls(NULL, 0);
    wh_workload_done(&w);
}

Test(wh_workload, bare_pod_makes_no_lookup)
{
    struct wh_workload w;
    resolve("bare-named", &lk, &w);
    cr_expect(w.bare_pod);
    expect_calls(NULL, 0);
    wh_workload_done(&w);
}

/* ---------- with lookups ---------- */

Test(wh_workload, chain_pod_jobset_by_label_one_lookup)
{
    struct wh_workload w;
    resolve("jobset", &lk, &w);
    expect_wl(&w, "JobSet", "train", "Job/train-workers-0", true);
    expect_label(&w, "managed-mldiagnostics-gke", "true");
    expect_label(&w, "team", "ml");
    cr_expect_str_eq(wh_map_get(w.annotations, "diagon.gke.io/otel-service-name"), "trainer");
    cr_expect_str_eq(w.created, "2024-03-05T07:08:09Z", "offset normalised to Z");
    cr_expect_str_eq(w.unknown_why, "");
    const char *want[] = {"JobSet/team-a/train"};
    expect_calls(want, 1);
    cr_expect_eq(fk.last_deadline, DEADLINE, "the deadline is passed through");
    wh_workload_done(&w);
}

Test(wh_workload, chain_pod_job_jobset_by_owner)
{
    struct wh_workload w;
    resolve("job-of-jobset-nolabel", &lk, &w);
    expect_wl(&w, "JobSet", "train", "Job/train-workers-0", true);
    expect_label(&w, "team", "ml");
    cr_expect_null(wh_map_get(w.labels, "jobset.sigs.k8s.io/jobset-name"),
                   "the Job's labels are not the JobSet's");
    cr_expect_str_eq(w.created, "2024-03-05T07:08:09Z");
    const char *want[] = {"Job/team-a/train-workers-0", "JobSet/team-a/train"};
    expect_calls(want, 2);
    wh_workload_done(&w);
}

Test(wh_workload, chain_pod_raycluster_rayjob)
{
    struct wh_workload w;
    resolve("raycluster", &lk, &w);
    expect_wl(&w, "RayJob", "rj-1", "RayCluster/rc-1", true);
    expect_label(&w, "team", "rl");
    cr_expect_null(wh_map_get(w.labels, "ray.io/originated-from-crd"));
    cr_expect_str_eq(w.created, "2024-03-05T07:08:09Z");
    cr_expect_str_eq(wh_map_get(w.annotations, "diagon.gke.io/otel-resource-attributes"),
                     "rl.algo=ppo");
    const char *want[] = {"RayCluster/team-a/rc-1", "RayJob/team-a/rj-1"};
    expect_calls(want, 2);
    wh_workload_done(&w);
}

Test(wh_workload, chain_raycluster_without_owner_stays)
{
    struct wh_workload w;
    resolve("raycluster-originated-raycluster", &lk, &w);
    expect_wl(&w, "RayCluster", "rc-2", "RayCluster/rc-2", true);
    expect_label(&w, "x", "y");
    const char *want[] = {"RayCluster/team-a/rc-2"};
    expect_calls(want, 1);
    wh_workload_done(&w);
}

Test(wh_workload, chain_pod_job_rayjob_submitter)
{
    struct wh_workload w;
    resolve("submitter-nolabels", &lk, &w);
    expect_wl(&w, "RayJob", "rj-1", "Job/rj-1", true);
    expect_label(&w, "team", "rl");
    const char *want[] = {"Job/team-a/rj-1", "RayJob/team-a/rj-1"};
    expect_calls(want, 2);
    wh_workload_done(&w);
    /* with the originated-from labels it is one lookup */
    json_array_clear(fk.calls);
    resolve("rayjob-submitter", &lk, &w);
    expect_wl(&w, "RayJob", "rj-1", "Job/rj-1", true);
    const char *want2[] = {"RayJob/team-a/rj-1"};
    expect_calls(want2, 1);
    wh_workload_done(&w);
}

Test(wh_workload, chain_job_owned_by_cronjob_stays_job)
{
    struct wh_workload w;
    resolve("job-of-cronjob", &lk, &w);
    expect_wl(&w, "Job", "nightly-123", "Job/nightly-123", true);
    expect_label(&w, "cron", "nightly");
    const char *want[] = {"Job/team-a/nightly-123"};
    expect_calls(want, 1);
    wh_workload_done(&w);
}

/* Kinds are (group, kind): a Volcano Job's pod is Volcano's, looked up as
 * that row (the batch Job of the same name beside it is a decoy). */
Test(wh_workload, chain_pod_volcano_job)
{
    struct wh_workload w;
    resolve("volcano-job", &lk, &w);
    expect_wl(&w, "Job", "vtrain", "Job/vtrain", true);
    cr_expect_eq(w.row, &k8s_kinds[K8S_KIND_VOLCANO_JOB]);
    expect_label(&w, "team", "volcano");
    cr_expect_str_eq(w.created, "2024-04-01T10:00:00Z");
    const char *want[] = {"Job/team-a/vtrain"};
    expect_calls(want, 1);
    wh_workload_done(&w);
}

/* A controller owner of another group named like a table kind is not it:
 * never looked up, not a kind the namespace label covers. */
Test(wh_workload, owner_of_another_group_is_not_the_tables)
{
    struct wh_workload w;
    resolve("job-of-another-group", &lk, &w);
    expect_wl(&w, "Job", "other", "Job/other", false);
    cr_expect_null(w.row);
    cr_expect_null(w.labels);
    expect_calls(NULL, 0);
    wh_workload_done(&w);
}

/* The MPI operator's launcher pod (its batch Job's) and worker (its own)
 * both carry the MPIJob's labels; without them the launcher is found up
 * its Job's owner. */
Test(wh_workload, mpijob_launcher_and_worker)
{
    struct wh_workload w;
    resolve("mpijob-launcher", &lk, &w);
    expect_wl(&w, "MPIJob", "pi-mpi", "Job/pi-mpi-launcher", true);
    cr_expect_eq(w.row, &k8s_kinds[K8S_KIND_MPIJOB]);
    expect_label(&w, "team", "hpc");
    wh_workload_done(&w);
    resolve("mpijob-worker", &lk, &w);
    expect_wl(&w, "MPIJob", "pi-mpi", "MPIJob/pi-mpi", true);
    wh_workload_done(&w);
    json_array_clear(fk.calls);
    resolve("mpijob-launcher-nolabel", &lk, &w);
    expect_wl(&w, "MPIJob", "pi-mpi", "Job/pi-mpi-launcher", true);
    cr_expect_str_eq(w.created, "2024-04-02T11:00:00Z");
    const char *want[] = {"Job/team-a/pi-mpi-launcher", "MPIJob/team-a/pi-mpi"};
    expect_calls(want, 2);
    wh_workload_done(&w);
}

Test(wh_workload, chain_pod_replicaset_deployment)
{
    struct wh_workload w;
    resolve("replicaset-nohash", &lk, &w);
    expect_wl(&w, "Deployment", "web", "ReplicaSet/web-5d4f8c7b9", false);
    expect_label(&w, "managed-mldiagnostics-gke", "true");
    const char *want[] = {"ReplicaSet/team-a/web-5d4f8c7b9", "Deployment/team-a/web"};
    expect_calls(want, 2);
    wh_workload_done(&w);
    /* with pod-template-hash the Deployment is read directly */
    json_array_clear(fk.calls);
    resolve("deployment", &lk, &w);
    expect_wl(&w, "Deployment", "web", "ReplicaSet/web-5d4f8c7b9", false);
    expect_label(&w, "managed-mldiagnostics-gke", "true");
    const char *want2[] = {"Deployment/team-a/web"};
    expect_calls(want2, 1);
    wh_workload_done(&w);
}

Test(wh_workload, chain_pod_statefulset_lws)
{
    struct wh_workload w;
    resolve("sts-of-lws", &lk, &w);
    expect_wl(&w, "LeaderWorkerSet", "lws-a", "StatefulSet/lws-a", true);
    expect_label(&w, "managed-mldiagnostics-gke", "true");
    cr_expect_null(wh_map_get(w.labels, "leaderworkerset.sigs.k8s.io/name"));
    const char *want[] = {"StatefulSet/team-a/lws-a", "LeaderWorkerSet/team-a/lws-a"};
    expect_calls(want, 2);
    wh_workload_done(&w);
    json_array_clear(fk.calls);
    resolve("lws-worker", &lk, &w);
    expect_wl(&w, "LeaderWorkerSet", "lws-a", "StatefulSet/lws-a-0", true);
    expect_label(&w, "managed-mldiagnostics-gke", "true");
    const char *want2[] = {"LeaderWorkerSet/team-a/lws-a"};
    expect_calls(want2, 1);
    wh_workload_done(&w);
}

Test(wh_workload, statefulset_without_labels_or_valid_timestamp)
{
    struct wh_workload w;
    resolve("statefulset", &lk, &w);
    expect_wl(&w, "StatefulSet", "db", "StatefulSet/db", false);
    cr_assert_not_null(w.labels, "looked up: labels are known (empty)");
    cr_expect_eq(w.labels->n, 0);
    cr_expect_str_eq(w.created, "", "an unparsable creationTimestamp is unknown");
    wh_workload_done(&w);
}

Test(wh_workload, lookup_timeout_leaves_labels_unknown)
{
    struct wh_workload w;
    resolve("jobset-timeout", &lk, &w);
    expect_wl(&w, "JobSet", "train-timeout", "Job/slow-workers-0", true);
    cr_expect_null(w.labels);
    cr_expect_null(w.annotations);
    cr_expect_str_eq(w.created, "");
    cr_expect_str_eq(w.unknown_why,
                     "lookup of JobSet team-a/train-timeout: GET jobsets/train-timeout: deadline "
                     "exceeded");
    wh_workload_done(&w);
}

Test(wh_workload, lookup_failure_without_message_named_by_error)
{
    struct wh_workload w;
    resolve("jobset-bare-error", &lk, &w);
    cr_expect_null(w.labels);
    cr_expect_str_eq(w.unknown_why, "lookup of JobSet team-a/train-noerrmsg: timed out");
    wh_workload_done(&w);
}

Test(wh_workload, lookup_unavailable_kind)
{
    struct wh_workload w;
    resolve("lws-missing-crd", &lk, &w);
    expect_wl(&w, "LeaderWorkerSet", "lws-b", "StatefulSet/lws-b", true);
    cr_expect_null(w.labels);
    cr_expect_str_eq(w.unknown_why, "lookup of LeaderWorkerSet team-a/lws-b: "
                                    "leaderworkersets.leaderworkerset.x-k8s.io: CRD not installed");
    wh_workload_done(&w);
}

Test(wh_workload, climbing_to_failed_owner_clears_child_labels)
{
    struct wh_workload w;
    resolve("raycluster-owner-gone", &lk, &w);
    expect_wl(&w, "RayJob", "rj-gone", "RayCluster/rc-3", true);
    cr_expect_null(w.labels, "the RayCluster's labels must not pass for the RayJob's");
    cr_expect_null(w.annotations);
    cr_expect_str_eq(w.created, "");
    cr_expect_str_eq(w.unknown_why, "lookup of RayJob team-a/rj-gone: rayjobs.ray.io \"rj-gone\" "
                                    "not found");
    const char *want[] = {"RayCluster/team-a/rc-3", "RayJob/team-a/rj-gone"};
    expect_calls(want, 2);
    wh_workload_done(&w);
}

/* ---------- helpers and offline documents ---------- */

/* The controller owner and label lookups of metadata read from a tree. */
static void read_meta(json_t *doc, struct wh_meta *m)
{
    cr_assert_eq(wh_meta_from_json(doc, m), 0);
    json_array_append_new(held_pods, doc);
}

Test(wh_workload, controller_owner)
{
    struct wh_meta m;
    read_meta(json_pack("{s:[{s:s,s:s},{s:s,s:s,s:b},{s:s,s:s,s:b}]}", "ownerReferences", "kind",
                        "A", "name", "a", "kind", "B", "name", "b", "controller", 0, "kind", "C",
                        "name", "c", "controller", 1),
              &m);
    cr_expect_str_eq(m.owner_kind, "C");
    cr_expect_str_eq(m.owner_name, "c");
    wh_meta_done(&m);
    read_meta(json_pack("{s:[{s:s,s:b}]}", "ownerReferences", "kind", "C", "controller", 1), &m);
    cr_expect_null(m.owner_kind, "a controller without a name");
    wh_meta_done(&m);
    read_meta(json_pack("{s:s}", "ownerReferences", "junk"), &m);
    cr_expect_null(m.owner_kind);
    wh_meta_done(&m);
    cr_assert_eq(wh_meta_from_json(NULL, &m), 0);
    cr_expect_null(m.owner_kind);
}

Test(wh_workload, meta_helpers)
{
    struct wh_meta m;
    read_meta(
        json_pack("{s:{s:s,s:i},s:{s:s}}", "labels", "a", "1", "n", 2, "annotations", "x", "y"),
        &m);
    cr_expect_str_eq(wh_meta_label(&m, "a"), "1");
    cr_expect_null(wh_meta_label(&m, "n"), "not a string");
    cr_expect_not_null(wh_map_find(&m.labels, "n"), "present all the same");
    cr_expect_null(wh_meta_label(&m, "zz"));
    cr_expect_str_eq(wh_meta_annotation(&m, "x"), "y");
    cr_expect_null(wh_meta_annotation(&m, "a"));
    cr_expect_null(wh_meta_label(NULL, "a"));
    wh_meta_done(&m);
}

Test(wh_workload, from_doc)
{
    json_t *doc = ts_load_json("unit/identity/jobset.json");
    struct wh_workload w;
    cr_assert_eq(wh_workload_from_doc(doc, "other-ns", "Job/j", &w), 0);
    cr_expect_str_eq(w.kind, "JobSet");
    cr_expect_str_eq(w.name, "train-7");
    cr_expect_str_eq(w.ns, "other-ns");
    cr_expect_str_eq(w.parent, "Job/j");
    cr_expect_str_eq(w.created, "2024-03-05T07:08:09Z");
    cr_expect(w.ml_kind);
    cr_expect_not(w.bare_pod);
    expect_label(&w, "zeta", "z");
    cr_expect_str_eq(w.unknown_why, "");
    wh_workload_done(&w);
    json_decref(doc);

    doc = ts_load_json("unit/identity/jobset-nolabels.json");
    cr_assert_eq(wh_workload_from_doc(doc, "team-a", NULL, &w), 0);
    cr_expect_str_eq(w.parent, "");
    cr_expect_str_eq(w.created, "");
    cr_assert_not_null(w.labels);
    cr_expect_eq(w.labels->n, 0);
    cr_expect_str_eq(w.unknown_why, "offline: JobSet train-8 has no creationTimestamp");
    wh_workload_done(&w);
    json_decref(doc);
}

Test(wh_workload, done_releases_and_is_safe)
{
    struct wh_workload w;
    resolve("jobset", &lk, &w);
    cr_assert_not_null(w.labels);
    cr_assert_not_null(w.annotations);
    wh_workload_done(&w);
    cr_expect_null(w.labels);
    cr_expect_null(w.annotations);
    wh_workload_done(&w);
    struct wh_workload z = {0};
    wh_workload_done(&z);
    wh_workload_done(NULL);
    cr_expect_null(z.labels);
}

/* ---------- Kubeflow: TrainJob (Pod→Job→JobSet→TrainJob), PyTorchJob ---------- */

Test(wh_workload, standalone_trainjob_pod_names_its_jobset)
{
    struct wh_workload w;
    resolve("trainjob", NULL, &w);
    expect_wl(&w, "JobSet", "tj-1", "Job/tj-1-node-0", true); /* its owner is not known */
    expect_standalone_unknown(&w);
    wh_workload_done(&w);
}

Test(wh_workload, chain_pod_job_jobset_trainjob)
{
    struct wh_workload w;
    resolve("trainjob", &lk, &w);
    expect_wl(&w, "TrainJob", "tj-1", "Job/tj-1-node-0", true);
    expect_label(&w, "managed-mldiagnostics-gke", "true");
    cr_expect_null(wh_map_get(w.labels, "team"), "the JobSet's labels are not the TrainJob's");
    cr_expect_str_eq(w.created, "2024-03-05T07:08:09Z");
    const char *want[] = {"JobSet/team-a/tj-1", "TrainJob/team-a/tj-1"};
    expect_calls(want, 2);
    wh_workload_done(&w);
}

Test(wh_workload, pytorchjob_pod_by_label_and_owner)
{
    struct wh_workload w;
    resolve("pytorchjob", NULL, &w);
    expect_wl(&w, "PyTorchJob", "pt-1", "PyTorchJob/pt-1", true);
    expect_standalone_unknown(&w);
    wh_workload_done(&w);
    resolve("pytorchjob", &lk, &w);
    expect_wl(&w, "PyTorchJob", "pt-1", "PyTorchJob/pt-1", true);
    expect_label(&w, "managed-mldiagnostics-gke", "true");
    const char *want[] = {"PyTorchJob/team-a/pt-1"};
    expect_calls(want, 1);
    wh_workload_done(&w);
}

/* The training-operator stamps the same job-name label for every framework:
 * only operator-name=pytorchjob-controller makes it a PyTorchJob's. */
Test(wh_workload, tfjob_pod_is_not_a_pytorchjob)
{
    struct wh_workload w;
    resolve("tfjob", NULL, &w);
    expect_wl(&w, "TFJob", "tf-2", "TFJob/tf-2", false);
    wh_workload_done(&w);
}
