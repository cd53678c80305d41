/* wh_inject: the offline command's core over documents of every kind the
 * kind table locates templates in (tests/fixtures/unit/inject/): which
 * templates get a patch, what parent their pods will have, what --explain
 * says, and how a List's operations are re-rooted. The command's I/O runs
 * in tests/integration/test_inject_command.py. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_buf.h"
#include "k8s_jsonpatch.h"
#include "k8s_names.h"
#include "wh_inject.h"
#include "test_support.h"

#define NOW ((time_t)1709622489)

static struct wh_config cfg;

static void setup(void)
{
    wh_config_init(&cfg);
    cfg.cluster_name = "projects/p/locations/l/clusters/prod";
    struct k8s_error err = {0};
    cr_assert_eq(wh_config_finish(&cfg, &err), 0, "%s", err.message);
}

static void teardown(void)
{
    wh_config_done(&cfg);
}

TestSuite(wh_inject, .init = setup, .fini = teardown);

struct result {
    json_t *doc, *patch, *patched;
    char *explain;
};

static struct result inject(const char *fixture)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "unit/inject/%s", fixture);
    struct result r = {.doc = ts_load_json(rel)};
    struct k8s_buf explain;
    k8s_buf_init(&explain, 1 << 20);
    cr_assert_eq(wh_inject_doc(&cfg, r.doc, NULL, NOW, &r.patch, &explain), 0);
    r.explain = k8s_buf_take(&explain, NULL);
    cr_assert_eq(k8s_jsonpatch_apply(r.doc, r.patch, &r.patched, NULL), 0, "the patch applies");
    return r;
}

static void done(struct result *r)
{
    json_decref(r->doc);
    json_decref(r->patch);
    json_decref(r->patched);
    free(r->explain);
}

/* An annotation's JSON value of the template at ptr, parsed (new). */
static json_t *annotation(const struct result *r, const char *ptr, const char *key)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/metadata/annotations", ptr);
    const char *v = json_string_value(json_object_get(k8s_jsonptr_get(r->patched, path), key));
    cr_assert_not_null(v, "%s %s", ptr, key);
    json_t *o = json_loads(v, 0, NULL);
    cr_assert_not_null(o, "%s: %s", key, v);
    return o;
}

static void expect_identity(const struct result *r, const char *ptr, const char *kind,
                            const char *name, const char *parent)
{
    json_t *id = annotation(r, ptr, K8S_ANN_IDENTIFIER),
           *meta = annotation(r, ptr, K8S_ANN_METADATA);
    cr_expect_str_eq(json_string_value(json_object_get(id, "metadata.kind")), kind, "%s", ptr);
    cr_expect_str_eq(json_string_value(json_object_get(id, "metadata.name")), name, "%s", ptr);
    const char *got = json_string_value(json_object_get(meta, "parent-workload"));
    if (parent)
        cr_expect_str_eq(got ? got : "(none)", parent, "%s", ptr);
    else
        cr_expect_null(got, "%s: the controller names its pods' owner", ptr);
    json_decref(id);
    json_decref(meta);
}

static void expect_line(const struct result *r, const char *line)
{
    cr_expect_not_null(strstr(r->explain, line), "no \"%s\" in:\n%s", line, r->explain);
}

/* The operator owns the pods of every replica type: each template's pods
 * have the PyTorchJob as parent. */
Test(wh_inject, pytorchjob_every_replica_spec)
{
    struct result r = inject("pytorchjob.json");
    expect_identity(&r, "/spec/pytorchReplicaSpecs/Master/template", "PyTorchJob", "pt-1",
                    "PyTorchJob/pt-1");
    expect_identity(&r, "/spec/pytorchReplicaSpecs/Worker/template", "PyTorchJob", "pt-1",
                    "PyTorchJob/pt-1");
    expect_line(&r, "PyTorchJob team-a/pt-1 pytorchReplicaSpecs[Master]: inject: ");
    expect_line(&r, "PyTorchJob team-a/pt-1 pytorchReplicaSpecs[Worker]: inject: ");
    done(&r);
}

/* Volcano's Job (batch.volcano.sh) owns its task pods: each task's template
 * is found by its group's row, not batch's (whose template is elsewhere). */
Test(wh_inject, volcano_job_every_task)
{
    struct result r = inject("volcano-job.json");
    expect_identity(&r, "/spec/tasks/0/template", "Job", "vtrain", "Job/vtrain");
    expect_identity(&r, "/spec/tasks/1/template", "Job", "vtrain", "Job/vtrain");
    expect_line(&r, "Job team-a/vtrain tasks[0] (ps): inject: ");
    expect_line(&r, "Job team-a/vtrain tasks[1] (worker): inject: ");
    done(&r);
    r = inject("batch-job.json");
    expect_identity(&r, "/spec/template", "Job", "one", "Job/one");
    done(&r);
}

/* The MPI operator owns its workers and its launcher's batch Job, whose
 * name the document does not say: no parent is guessed. */
Test(wh_inject, mpijob_launcher_and_worker)
{
    struct result r = inject("mpijob.json");
    expect_identity(&r, "/spec/mpiReplicaSpecs/Launcher/template", "MPIJob", "pi-mpi", NULL);
    expect_identity(&r, "/spec/mpiReplicaSpecs/Worker/template", "MPIJob", "pi-mpi", NULL);
    expect_line(&r, "MPIJob team-a/pi-mpi mpiReplicaSpecs[Launcher]: inject: ");
    done(&r);
}

/* A TrainJob's templates are its runtime's: nothing to rewrite, said so. */
Test(wh_inject, trainjob_has_no_template)
{
    struct result r = inject("trainjob.json");
    cr_expect_eq(json_array_size(r.patch), 0);
    cr_expect_str_eq(r.explain,
                     "TrainJob team-a/tj-1: skip: kind TrainJob has no pod template we inject\n");
    done(&r);
}

Test(wh_inject, raycluster_head_and_worker_groups)
{
    struct result r = inject("raycluster.json");
    expect_identity(&r, "/spec/headGroupSpec/template", "RayCluster", "rc-1", "RayCluster/rc-1");
    expect_identity(&r, "/spec/workerGroupSpecs/0/template", "RayCluster", "rc-1",
                    "RayCluster/rc-1");
    expect_line(&r, "RayCluster team-a/rc-1 head template: inject");
    expect_line(&r, "RayCluster team-a/rc-1 worker group[0] (small): inject");
    done(&r);
}

/* The RayJob's cluster is named by KubeRay (no parent known); its
 * submitter's Job has the RayJob's name. */
Test(wh_inject, rayjob_cluster_and_submitter)
{
    struct result r = inject("rayjob.json");
    expect_identity(&r, "/spec/rayClusterSpec/headGroupSpec/template", "RayJob", "rj-1", NULL);
    expect_identity(&r, "/spec/rayClusterSpec/workerGroupSpecs/0/template", "RayJob", "rj-1", NULL);
    expect_identity(&r, "/spec/submitterPodTemplate", "RayJob", "rj-1", "Job/rj-1");
    done(&r);
}

Test(wh_inject, list_items_rerooted_and_unknown_kinds_explained)
{
    struct result r = inject("list.json");
    cr_assert_gt(json_array_size(r.patch), 0);
    size_t i;
    json_t *op;
    json_array_foreach(r.patch, i, op)
    {
        const char *path = json_string_value(json_object_get(op, "path"));
        cr_expect_eq(strncmp(path, "/items/0/spec/template", 22), 0, "%s", path);
    }
    expect_identity(&r, "/items/0/spec/template", "Job", "pi", "Job/pi");
    expect_line(&r, "ReplicaSet team-a/rs: skip: kind ReplicaSet has no pod template we inject\n");
    done(&r);
}
