#include "k8s_kinds.h"

#include <stdio.h>
#include <string.h>

/* One API group/version and plural, written once per row. */
#define API(g, v, p)                                                                               \
    .group = g, .api_version = g "/" v, .prefix = "/apis/" g "/" v, .plural = p, .resource = p "." g
#define ALL_ROLES (K8S_KIND_NS_LABEL | K8S_KIND_WEBHOOK_WATCH | K8S_KIND_WORKLOAD_REF)

const struct k8s_kind k8s_kinds[K8S_KIND_COUNT] = {
    [K8S_KIND_JOBSET] =
        {
            .kind = "JobSet",
            API("jobset.x-k8s.io", "v1alpha2", "jobsets"),
            .flags = ALL_ROLES | K8S_KIND_NAMES_BY_LABEL,
            .pod_label = {"jobset.sigs.k8s.io/jobset-name"},
            .owners = {&k8s_kinds[K8S_KIND_TRAINJOB]},
            .sites = {{K8S_SITE_EACH_ITEM, "/spec/replicatedJobs", "/template/spec/template",
                       "replicatedJobs", NULL}},
            .pods_by = K8S_KIND_JOBSET,
            .hosts = {{{"jobset.sigs.k8s.io/replicatedjob-name"}},
                      {"jobset.sigs.k8s.io/job-global-index",
                       "batch.kubernetes.io/job-completion-index"}},
        },
    [K8S_KIND_LWS] =
        {
            .kind = "LeaderWorkerSet",
            API("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
            .flags = ALL_ROLES | K8S_KIND_NAMES_BY_LABEL,
            .pod_label = {"leaderworkerset.sigs.k8s.io/name"},
            .sites = {{K8S_SITE_ONE, "/spec/leaderWorkerTemplate/leaderTemplate", NULL,
                       "leader template", "StatefulSet"},
                      {K8S_SITE_ONE, "/spec/leaderWorkerTemplate/workerTemplate", NULL,
                       "worker template", NULL}},
            .pods_by = K8S_KIND_LWS,
            .hosts = {{{"leaderworkerset.sigs.k8s.io/worker-index", "0", "leader"},
                       {"leaderworkerset.sigs.k8s.io/worker-index", NULL, "worker"}},
                      {"leaderworkerset.sigs.k8s.io/group-index",
                       "leaderworkerset.sigs.k8s.io/worker-index"}},
        },
    [K8S_KIND_RAYJOB] =
        {
            .kind = "RayJob",
            API("ray.io", "v1", "rayjobs"),
            .flags = ALL_ROLES | K8S_KIND_NAMES_BY_LABEL,
            .pod_label = {"ray.io/originated-from-cr-name", "ray.io/originated-from-crd", "RayJob"},
            .sites = {{K8S_SITE_ONE, "/spec/rayClusterSpec/headGroupSpec/template", NULL,
                       "head template", NULL},
                      {K8S_SITE_EACH_ITEM, "/spec/rayClusterSpec/workerGroupSpecs", "/template",
                       "worker group", NULL},
                      {K8S_SITE_ONE, "/spec/submitterPodTemplate", NULL, "submitter template",
                       "Job"}},
            .pods_by = K8S_KIND_RAYCLUSTER,
            .pods_by_status = "rayClusterName",
        },
    [K8S_KIND_RAYCLUSTER] =
        {
            .kind = "RayCluster",
            API("ray.io", "v1", "rayclusters"),
            .flags = K8S_KIND_NS_LABEL | K8S_KIND_WEBHOOK_WATCH,
            .pod_label = {"ray.io/cluster"},
            .owners = {&k8s_kinds[K8S_KIND_RAYJOB]},
            .sites = {{K8S_SITE_ONE, "/spec/headGroupSpec/template", NULL, "head template",
                       "RayCluster"},
                      {K8S_SITE_EACH_ITEM, "/spec/workerGroupSpecs", "/template", "worker group",
                       "RayCluster"}},
            .pods_by = K8S_KIND_NONE,
            .hosts = {{{"ray.io/node-type", "head", "head"}, {"ray.io/group"}}},
        },
    [K8S_KIND_JOB] =
        {
            .kind = "Job",
            API("batch", "v1", "jobs"),
            .flags = K8S_KIND_NS_LABEL | K8S_KIND_WEBHOOK_WATCH,
            .pod_label = {"batch.kubernetes.io/job-name"},
            .owners = {&k8s_kinds[K8S_KIND_JOBSET], &k8s_kinds[K8S_KIND_RAYJOB],
                       &k8s_kinds[K8S_KIND_MPIJOB]},
            .sites = {{K8S_SITE_ONE, "/spec/template", NULL, "template", "Job"}},
            .pods_by = K8S_KIND_NONE,
        },
    /* Kubeflow Trainer: its JobSet has its name and names it as the
     * controller owner; its pods carry only the JobSet's labels */
    [K8S_KIND_TRAINJOB] =
        {
            .kind = "TrainJob",
            API("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
            .flags = ALL_ROLES,
            .pods_by = K8S_KIND_JOBSET,
        },
    /* Kubeflow training-operator: it owns its pods (<name>-<type>-<index>);
     * the job-name label is shared by every framework it runs, the
     * operator-name label says which */
    [K8S_KIND_PYTORCHJOB] =
        {
            .kind = "PyTorchJob",
            API("kubeflow.org", "v1", "pytorchjobs"),
            .flags = ALL_ROLES | K8S_KIND_NAMES_BY_LABEL,
            .pod_label = {"training.kubeflow.org/job-name", "training.kubeflow.org/operator-name",
                          "pytorchjob-controller"},
            .sites = {{K8S_SITE_EACH_MEMBER, "/spec/pytorchReplicaSpecs", "/template",
                       "pytorchReplicaSpecs", "PyTorchJob"}},
            .pods_by = K8S_KIND_PYTORCHJOB,
            .hosts = {{{"training.kubeflow.org/replica-type", "master", "master"},
                       {"training.kubeflow.org/replica-type"}},
                      {"training.kubeflow.org/replica-index"}},
        },
    /* Volcano: its pods are its own (<job>-<task>-<index>), labelled with
     * its name; a kind named Job beside batch's, told apart by its group */
    [K8S_KIND_VOLCANO_JOB] =
        {
            .kind = "Job",
            API("batch.volcano.sh", "v1alpha1", "jobs"),
            .flags = ALL_ROLES | K8S_KIND_NAMES_BY_LABEL,
            .pod_label = {"volcano.sh/job-name"},
            .sites = {{K8S_SITE_EACH_ITEM, "/spec/tasks", "/template", "tasks", "Job"}},
            .pods_by = K8S_KIND_VOLCANO_JOB,
            .hosts = {{{"volcano.sh/task-spec"}}, {"volcano.sh/task-index"}},
        },
    /* Kubeflow MPI operator (v2beta1): it owns its workers and its
     * launcher's batch Job; both carry its job-name label, told apart from
     * the training-operator's pods by operator-name */
    [K8S_KIND_MPIJOB] =
        {
            .kind = "MPIJob",
            API("kubeflow.org", "v2beta1", "mpijobs"),
            .flags = ALL_ROLES | K8S_KIND_NAMES_BY_LABEL,
            .pod_label = {"training.kubeflow.org/job-name", "training.kubeflow.org/operator-name",
                          "mpi-operator"},
            .sites = {{K8S_SITE_EACH_MEMBER, "/spec/mpiReplicaSpecs", "/template",
                       "mpiReplicaSpecs", NULL}},
            .pods_by = K8S_KIND_MPIJOB,
            .hosts = {{{"training.kubeflow.org/job-role", "launcher", "launcher"},
                       {"training.kubeflow.org/job-role"}},
                      {"training.kubeflow.org/replica-index"}},
        },
    /* read one at a time on a miss (pod-label opt-in of other workloads) */
    [K8S_KIND_DEPLOYMENT] =
        {
            .kind = "Deployment",
            API("apps", "v1", "deployments"),
            .sites = {{K8S_SITE_ONE, "/spec/template", NULL, "template", NULL}},
            .pods_by = K8S_KIND_NONE,
        },
    [K8S_KIND_STATEFULSET] =
        {
            .kind = "StatefulSet",
            API("apps", "v1", "statefulsets"),
            .owners = {&k8s_kinds[K8S_KIND_LWS]},
            .sites = {{K8S_SITE_ONE, "/spec/template", NULL, "template", "StatefulSet"}},
            .pods_by = K8S_KIND_NONE,
        },
    [K8S_KIND_REPLICASET] =
        {
            .kind = "ReplicaSet",
            API("apps", "v1", "replicasets"),
            .owners = {&k8s_kinds[K8S_KIND_DEPLOYMENT]},
            .pods_by = K8S_KIND_NONE,
        },
};

const struct k8s_kind k8s_kind_namespace = {
    .kind = "Namespace",
    .group = "",
    .api_version = "v1",
    .prefix = "/api/v1",
    .plural = "namespaces",
    .resource = "namespaces",
    .pods_by = K8S_KIND_NONE,
};

const struct k8s_kind *k8s_kind_find(const char *group, const char *kind)
{
    for (int i = 0; group && kind && i < K8S_KIND_COUNT; i++)
        if (!strcmp(k8s_kinds[i].kind, kind) && !strcmp(k8s_kinds[i].group, group))
            return &k8s_kinds[i];
    return NULL;
}

const struct k8s_kind *k8s_kind_of_ref(const char *api_version, const char *kind)
{
    if (!api_version || !kind)
        return NULL;
    const char *slash = strchr(api_version, '/');
    size_t glen = slash ? (size_t)(slash - api_version) : 0; /* "v1": the core group */
    for (int i = 0; i < K8S_KIND_COUNT; i++) {
        const struct k8s_kind *k = &k8s_kinds[i];
        if (strlen(k->group) == glen && !memcmp(k->group, api_version, glen) &&
            !strcmp(k->kind, kind))
            return k;
    }
    return NULL;
}

const struct k8s_kind *k8s_kind_named(const char *kind, unsigned flags, int *count)
{
    const struct k8s_kind *found = NULL;
    int n = 0;
    for (int i = 0; kind && i < K8S_KIND_COUNT; i++)
        if ((k8s_kinds[i].flags & flags) == flags && !strcmp(k8s_kinds[i].kind, kind)) {
            found = &k8s_kinds[i];
            n++;
        }
    if (count)
        *count = n;
    return n == 1 ? found : NULL;
}

bool k8s_kind_owned_by(const struct k8s_kind *k, const struct k8s_kind *owner)
{
    for (size_t i = 0; k && owner && i < K8S_KIND_MAX_OWNERS && k->owners[i]; i++)
        if (k->owners[i] == owner)
            return true;
    return false;
}

static const char *label_of(const void *labels, const char *key)
{
    return json_string_value(json_object_get(labels, key));
}

const char *k8s_kind_pod_label_in(const struct k8s_kind *k, k8s_label_fn *get, const void *labels)
{
    const struct k8s_kind_label *l = &k->pod_label;
    const char *v = l->key ? get(labels, l->key) : NULL;
    if (!v)
        return NULL;
    const char *cond = l->when ? get(labels, l->when) : NULL;
    if (l->when && !(cond && !strcmp(cond, l->is)))
        return NULL;
    return v;
}

const char *k8s_kind_pod_label(const struct k8s_kind *k, const json_t *labels)
{
    return k8s_kind_pod_label_in(k, label_of, labels);
}

int k8s_kind_host_role(const struct k8s_kind *k, k8s_label_fn *get, const void *labels,
                       const char **ret_name)
{
    for (int i = 0; i < K8S_KIND_MAX_ROLES && k->hosts.roles[i].key; i++) {
        const struct k8s_kind_role *r = &k->hosts.roles[i];
        const char *v = get(labels, r->key);
        if (v && (!r->is || !strcmp(v, r->is))) {
            *ret_name = r->name ? r->name : v;
            return i;
        }
    }
    *ret_name = NULL;
    return -1;
}

bool k8s_kind_selects_pods(enum k8s_kind_id id)
{
    for (int i = 0; i < K8S_KIND_COUNT; i++)
        if ((k8s_kinds[i].flags & K8S_KIND_WORKLOAD_REF) && k8s_kinds[i].pods_by == id)
            return true;
    return false;
}

const char *k8s_kind_label(const struct k8s_kind *k, char *out, size_t cap)
{
    int shared = 0; /* a name two rows have is told by its group, but Kubernetes' own */
    (void)k8s_kind_named(k->kind, 0, &shared);
    if (shared > 1 && strchr(k->group, '.'))
        snprintf(out, cap, "%s (%s)", k->kind, k->group);
    else
        snprintf(out, cap, "%s", k->kind);
    return out;
}

const char *k8s_kinds_names(unsigned flags, char *out, size_t cap)
{
    int picked[K8S_KIND_COUNT], n = 0;
    for (int i = 0; i < K8S_KIND_COUNT; i++)
        if ((k8s_kinds[i].flags & flags) == flags)
            picked[n++] = i;
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < n && len < cap; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
        char label[128];
        int w = snprintf(out + len, cap - len, "%s%s", sep,
                         k8s_kind_label(&k8s_kinds[picked[i]], label, sizeof(label)));
        len += w > 0 ? (size_t)w : 0;
    }
    return out;
}

static json_t *owner_names(const struct k8s_kind *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n && v[i]; i++)
        json_array_append_new(a, json_pack("{s:s, s:s}", "group", v[i]->group, "kind", v[i]->kind));
    return a;
}

static json_t *strings(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

json_t *k8s_kinds_json(void)
{
    json_t *all = json_array();
    for (int i = 0; all && i < K8S_KIND_COUNT; i++) {
        const struct k8s_kind *k = &k8s_kinds[i];
        const char *sites[K8S_KIND_MAX_SITES];
        for (size_t s = 0; s < K8S_KIND_MAX_SITES; s++)
            sites[s] = k->sites[s].path;
        char label[128];
        json_t *row =
            json_pack("{s:s, s:s, s:s, s:s, s:s, s:s?, s:o, s:o, s:b, s:b, s:b, s:b}", "kind",
                      k->kind, "label", k8s_kind_label(k, label, sizeof(label)), "group", k->group,
                      "apiVersion", k->api_version, "plural", k->plural, "podLabel",
                      k->pod_label.key, "owners", owner_names(k->owners, K8S_KIND_MAX_OWNERS),
                      "sites", strings(sites, K8S_KIND_MAX_SITES), "namesByLabel",
                      (k->flags & K8S_KIND_NAMES_BY_LABEL) != 0, "namespaceLabel",
                      (k->flags & K8S_KIND_NS_LABEL) != 0, "webhookWatch",
                      (k->flags & K8S_KIND_WEBHOOK_WATCH) != 0, "workloadRef",
                      (k->flags & K8S_KIND_WORKLOAD_REF) != 0);
        if (!row || json_array_append_new(all, row) < 0) {
            json_decref(all);
            return NULL;
        }
    }
    return all;
}
