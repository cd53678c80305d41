"""Pods as the upstream controllers create them, for admission tests.

Each function takes a workload manifest (as users apply it) and returns the
Pod objects its controller sends to the API server at CREATE, i.e. what a
mutating webhook sees (DESIGN §3.4 and reference/k8s-facts.md §1):
generateName instead of name (except StatefulSet-made pods), no uid, no
creationTimestamp, template labels plus the controller's labels, and the
controller ownerReference. The API server has already run the ServiceAccount
admission plugin, so pods carry the projected kube-api-access volume.

Sources: kubernetes-sigs/jobset pkg/controllers/jobset_controller.go
(constructJob, labelAndAnnotateObject), kubernetes pkg/controller/job,
kubernetes-sigs/lws pkg/controllers/{leaderworkerset,pod}_controller.go,
ray-project/kuberay ray-operator/controllers/ray/{raycluster,rayjob}_controller.go,
kubeflow/trainer pkg/runtime/framework/plugins/jobset/jobset.go (Build),
kubeflow/training-operator pkg/controller.v1/common/{pod,job_controller}.go
(createNewPod, GenLabels), volcano-sh/volcano pkg/controllers/job/
job_controller_util.go (createJobPod), kubeflow/mpi-operator
pkg/controller/mpi_job_controller.go (newWorker, newLauncherJob).
"""
import copy
import hashlib
import json
import uuid

SA_VOLUME = "kube-api-access-x7k2q"


def _uid(seed):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, seed))


def _owner(api, kind, name, seed):
    return {"apiVersion": api, "kind": kind, "name": name, "uid": _uid(seed),
            "controller": True, "blockOwnerDeletion": True}


def _service_account(spec):
    """What the ServiceAccount admission plugin adds before webhooks run."""
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("volumes", []).append({
        "name": SA_VOLUME,
        "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt",
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}})
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        c.setdefault("volumeMounts", []).append({
            "name": SA_VOLUME, "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("imagePullPolicy", "IfNotPresent")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    spec.setdefault("tolerations", []).extend([
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
         "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
         "effect": "NoExecute", "tolerationSeconds": 300}])


def _pod(template, ns, name=None, generate_name=None, labels=None,
         annotations=None, owner=None):
    meta = copy.deepcopy(template.get("metadata") or {})
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": copy.deepcopy(template["spec"])}
    m = pod["metadata"]
    if name:
        m["name"] = name
    if generate_name:
        m["generateName"] = generate_name
    m["namespace"] = ns
    m["labels"] = {**(meta.get("labels") or {}), **(labels or {})}
    ann = {**(meta.get("annotations") or {}), **(annotations or {})}
    if ann:
        m["annotations"] = ann
    if owner:
        m["ownerReferences"] = [owner]
    _service_account(pod["spec"])
    return pod


def job_pods(job, ns, owner_labels=None, owner_annotations=None, limit=None):
    """Pods of a batch/v1 Job (Indexed when completionMode says so)."""
    name = job["metadata"]["name"]
    spec = job["spec"]
    job_uid = _uid("job/" + ns + "/" + name)
    indexed = spec.get("completionMode") == "Indexed"
    n = spec.get("parallelism", 1)
    if limit:
        n = min(n, limit)
    pods = []
    for i in range(n):
        labels = dict(owner_labels or {})
        labels.update({"batch.kubernetes.io/controller-uid": job_uid,
                       "batch.kubernetes.io/job-name": name,
                       "controller-uid": job_uid, "job-name": name})
        ann = dict(owner_annotations or {})
        if indexed:
            labels["batch.kubernetes.io/job-completion-index"] = str(i)
            ann["batch.kubernetes.io/job-completion-index"] = str(i)
        gen = name + "-" + (str(i) + "-" if indexed else "")
        pod = _pod(spec["template"], ns, generate_name=gen, labels=labels, annotations=ann,
                   owner=_owner("batch/v1", "Job", name, "job/" + ns + "/" + name))
        pod["metadata"].setdefault("finalizers", []).append("batch.kubernetes.io/job-tracking")
        if indexed:
            pod["spec"]["hostname"] = name + "-" + str(i)
        pods.append(pod)
    return pods


def jobset_pods(js, ns, limit=None):
    """JobSet → one Job per replicatedJob replica → pods (JobSet defaults Indexed)."""
    jname = js["metadata"]["name"]
    js_uid = _uid("jobset/" + ns + "/" + jname)
    rjobs = js["spec"]["replicatedJobs"]
    global_replicas = sum(rj.get("replicas", 1) for rj in rjobs)
    pods, gidx = [], 0
    for rj in rjobs:
        replicas = rj.get("replicas", 1)
        for j in range(replicas):
            job_name = "%s-%s-%d" % (jname, rj["name"], j)
            key = hashlib.sha1((ns + "/" + job_name).encode()).hexdigest()
            lab = {"jobset.sigs.k8s.io/jobset-name": jname,
                   "jobset.sigs.k8s.io/jobset-uid": js_uid,
                   "jobset.sigs.k8s.io/replicatedjob-name": rj["name"],
                   "jobset.sigs.k8s.io/replicatedjob-replicas": str(replicas),
                   "jobset.sigs.k8s.io/job-index": str(j),
                   "jobset.sigs.k8s.io/job-global-index": str(gidx),
                   "jobset.sigs.k8s.io/global-replicas": str(global_replicas),
                   "jobset.sigs.k8s.io/job-key": key,
                   "jobset.sigs.k8s.io/restart-attempt": "0"}
            job = {"metadata": {"name": job_name},
                   "spec": {**copy.deepcopy(rj["template"]["spec"]), "completionMode": "Indexed"}}
            job["spec"].setdefault("parallelism", 1)
            for p in job_pods(job, ns, lab, dict(lab), limit):
                pods.append(p)
            gidx += 1
    return pods


def trainjob_jobset(tj, uid, template):
    """The JobSet Kubeflow Trainer builds for a TrainJob: the TrainJob's name and
    namespace, the runtime's replicated Jobs (here one, "node", from template, with
    the runtime's trainjob-ancestor-step label), the TrainJob as controller owner."""
    tmpl = copy.deepcopy(template)
    tmpl.setdefault("metadata", {}).setdefault("labels", {})[
        "trainer.kubeflow.org/trainjob-ancestor-step"] = "trainer"
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": tj["metadata"]["name"], "ownerReferences": [
                {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                 "name": tj["metadata"]["name"], "uid": uid, "controller": True,
                 "blockOwnerDeletion": True}]},
            "spec": {"replicatedJobs": [{"name": "node", "replicas": 1, "template": {"spec": {
                "parallelism": 2, "completions": 2, "template": tmpl}}}]}}


def pytorchjob_pods(pj, ns):
    """Pods of a Kubeflow PyTorchJob: the training-operator names them
    <job>-<type>-<index> (no generateName), labels them operator-name, job-name,
    replica-type (lower case), replica-index and job-role=master on the master, and
    owns them directly."""
    name = pj["metadata"]["name"]
    pods = []
    for rtype, rspec in pj["spec"]["pytorchReplicaSpecs"].items():
        rt = rtype.lower()
        for i in range(rspec.get("replicas", 1)):
            labels = {"training.kubeflow.org/operator-name": "pytorchjob-controller",
                      "training.kubeflow.org/job-name": name,
                      "training.kubeflow.org/replica-type": rt,
                      "training.kubeflow.org/replica-index": str(i)}
            if rtype == "Master":
                labels["training.kubeflow.org/job-role"] = "master"
            pods.append(_pod(rspec["template"], ns, name="%s-%s-%d" % (name, rt, i),
                             labels=labels, owner=_owner("kubeflow.org/v1", "PyTorchJob", name,
                                                         "pytorchjob/" + ns + "/" + name)))
    return pods


def volcano_job_pods(job, ns, uid):
    """Pods of a Volcano Job (batch.volcano.sh/v1alpha1): createJobPod names
    them <job>-<task>-<index> (no generateName), keeps the task template's
    labels and annotations and adds its own, takes the Job's schedulerName,
    and owns them directly. uid: the Job's (its PodGroup's name holds it)."""
    name = job["metadata"]["name"]
    pods = []
    for task in job["spec"]["tasks"]:
        for i in range(task.get("replicas", 1)):
            labels = {"volcano.sh/task-index": str(i), "volcano.sh/job-name": name,
                      "volcano.sh/task-spec": task["name"], "volcano.sh/job-namespace": ns,
                      "volcano.sh/queue-name": job["spec"].get("queue", "default")}
            annotations = {"volcano.sh/task-index": str(i), "volcano.sh/task-spec": task["name"],
                           "scheduling.k8s.io/group-name": "%s-%s" % (name, uid),
                           "volcano.sh/job-name": name,
                           "volcano.sh/queue-name": job["spec"].get("queue", "default"),
                           "volcano.sh/job-version": "0",
                           "volcano.sh/template-uid": "%s-%s" % (name, task["name"]),
                           "volcano.sh/job-retry-count": "0"}
            owner = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": name,
                     "uid": uid, "controller": True, "blockOwnerDeletion": True}
            pod = _pod(task["template"], ns, name="%s-%s-%d" % (name, task["name"], i),
                       labels=labels, annotations=annotations, owner=owner)
            pod["spec"]["schedulerName"] = job["spec"].get("schedulerName", "volcano")
            pods.append(pod)
    return pods


def mpijob_pods(mj, ns, uid):
    """Pods of a Kubeflow MPIJob (kubeflow.org/v2beta1): workers named
    <job>-worker-<i>, owned by the MPIJob; the launcher a pod of the batch
    Job <job>-launcher it owns (generateName, the Job's labels). Both carry
    operator-name mpi-operator, job-name and job-role; workers replica-index.
    Returns (launcher Job, pods)."""
    name = mj["metadata"]["name"]
    specs = mj["spec"]["mpiReplicaSpecs"]
    base = {"training.kubeflow.org/operator-name": "mpi-operator",
            "training.kubeflow.org/job-name": name}
    launcher = {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": name + "-launcher", "labels": {"app": name},
                             "ownerReferences": [dict(_owner("kubeflow.org/v2beta1", "MPIJob",
                                                             name, "x"), uid=uid)]},
                "spec": {"template": copy.deepcopy(specs["Launcher"]["template"])}}
    tmpl = launcher["spec"]["template"]
    tmpl.setdefault("metadata", {}).setdefault("labels", {}).update(
        dict(base, **{"training.kubeflow.org/job-role": "launcher"}))
    pods = job_pods(launcher, ns)
    for i in range(specs["Worker"].get("replicas", 1)):
        labels = dict(base, **{"training.kubeflow.org/job-role": "worker",
                               "training.kubeflow.org/replica-index": str(i)})
        pod = _pod(specs["Worker"]["template"], ns, name="%s-worker-%d" % (name, i),
                   labels=labels, owner=dict(_owner("kubeflow.org/v2beta1", "MPIJob", name, "x"),
                                             uid=uid))
        pod["spec"].update(hostname="%s-worker-%d" % (name, i), subdomain=name)
        pods.append(pod)
    return launcher, pods


def lws_pods(lws, ns, group=0, stored=False):
    """One group of a LeaderWorkerSet: the leader (from the leader StatefulSet)
    and its workers (from the worker StatefulSet owned by the leader pod).
    The LWS pod webhook's group-index/worker-index labels are absent: our
    webhook may run before it. stored=True: the pods as stored, with the
    labels the LWS pod webhook adds (group-index on every pod, worker-index
    on the workers too)."""
    name = lws["metadata"]["name"]
    lwt = lws["spec"]["leaderWorkerTemplate"]
    size = lwt.get("size", 1)
    leader_t = lwt.get("leaderTemplate") or lwt["workerTemplate"]
    rev = hashlib.sha1(json.dumps(lwt, sort_keys=True).encode()).hexdigest()[:10]
    common = {"leaderworkerset.sigs.k8s.io/name": name,
              "leaderworkerset.sigs.k8s.io/template-revision-hash": rev}
    leader_name = "%s-%d" % (name, group)
    leader = _pod(leader_t, ns, name=leader_name,
                  labels={**common, "leaderworkerset.sigs.k8s.io/worker-index": "0",
                          "apps.kubernetes.io/pod-index": str(group),
                          "statefulset.kubernetes.io/pod-name": leader_name,
                          "controller-revision-hash": name + "-" + rev[:8]},
                  annotations={"leaderworkerset.sigs.k8s.io/size": str(size)},
                  owner=_owner("apps/v1", "StatefulSet", name, "sts/" + ns + "/" + name))
    pods = [leader]
    for w in range(1, size):
        wname = "%s-%d" % (leader_name, w)
        sts = leader_name
        pods.append(_pod(lwt["workerTemplate"], ns, name=wname,
                         labels={**common, "apps.kubernetes.io/pod-index": str(w),
                                 "statefulset.kubernetes.io/pod-name": wname,
                                 "leaderworkerset.sigs.k8s.io/group-key": hashlib.sha1(
                                     (ns + "/" + leader_name).encode()).hexdigest()},
                         annotations={"leaderworkerset.sigs.k8s.io/size": str(size),
                                      "leaderworkerset.sigs.k8s.io/leader-name": leader_name},
                         owner=_owner("apps/v1", "StatefulSet", sts, "sts/" + ns + "/" + sts)))
    if stored:
        for w, pod in enumerate(pods):
            pod["metadata"]["labels"].update({"leaderworkerset.sigs.k8s.io/group-index": str(group),
                                              "leaderworkerset.sigs.k8s.io/worker-index": str(w)})
    return pods


def raycluster_name(rayjob):
    return rayjob["metadata"]["name"] + "-" + hashlib.sha1(
        rayjob["metadata"]["name"].encode()).hexdigest()[:5]


def rayjob_pods(rayjob, ns):
    """RayJob → RayCluster <rayjob>-xxxxx → head and worker pods; plus the
    submitter pod of the K8sJobMode Job named after the RayJob."""
    rj = rayjob["metadata"]["name"]
    rc = raycluster_name(rayjob)
    spec = rayjob["spec"]["rayClusterSpec"]
    owner = _owner("ray.io/v1", "RayCluster", rc, "raycluster/" + ns + "/" + rc)
    base = {"ray.io/cluster": rc, "ray.io/is-ray-node": "yes",
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator"}
    pods = [_pod(spec["headGroupSpec"]["template"], ns, generate_name=rc + "-head-",
                 labels={**base, "ray.io/node-type": "head", "ray.io/group": "headgroup",
                         "ray.io/identifier": rc + "-head"},
                 owner=owner)]
    for g in spec.get("workerGroupSpecs", []):
        for _ in range(min(g.get("replicas", 1), 2)):
            pods.append(_pod(g["template"], ns,
                             generate_name="%s-%s-worker-" % (rc, g["groupName"]),
                             labels={**base, "ray.io/node-type": "worker",
                                     "ray.io/group": g["groupName"],
                                     "ray.io/identifier": rc + "-worker"},
                             owner=owner))
    submitter_t = rayjob["spec"].get("submitterPodTemplate") or {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "ray-job-submitter", "image": "rayproject/ray:2.46.0",
                        "command": ["ray", "job", "submit", "--address",
                                    "http://%s-head-svc.%s.svc.cluster.local:8265" % (rc, ns),
                                    "--", "python", "/home/ray/samples/sample_code.py"]}]}}
    job = {"metadata": {"name": rj}, "spec": {"template": submitter_t}}
    pods += job_pods(job, ns, {"ray.io/originated-from-cr-name": rj,
                               "ray.io/originated-from-crd": "RayJob",
                               "app.kubernetes.io/created-by": "kuberay-operator"})
    return pods


def deployment_pod(dep, ns, pod_template_hash="5d8f7c9b6"):
    name = dep["metadata"]["name"]
    rs = name + "-" + pod_template_hash
    return _pod(dep["spec"]["template"], ns, generate_name=rs + "-",
                labels={"pod-template-hash": pod_template_hash},
                owner=_owner("apps/v1", "ReplicaSet", rs, "rs/" + ns + "/" + rs))


def statefulset_pod(sts, ns, ordinal=0):
    name = sts["metadata"]["name"]
    pname = "%s-%d" % (name, ordinal)
    return _pod(sts["spec"]["template"], ns, name=pname,
                labels={"statefulset.kubernetes.io/pod-name": pname,
                        "apps.kubernetes.io/pod-index": str(ordinal),
                        "controller-revision-hash": name + "-6b8d9c7f5d"},
                owner=_owner("apps/v1", "StatefulSet", name, "sts/" + ns + "/" + name))


def review(pod, ns, uid=None, operation="CREATE", version="v1"):
    """An AdmissionReview for pod as the API server sends it."""
    return {"apiVersion": "admission.k8s.io/" + version, "kind": "AdmissionReview",
            "request": {
                "uid": uid or _uid(json.dumps(pod, sort_keys=True)),
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
                "requestResource": {"group": "", "version": "v1", "resource": "pods"},
                "name": pod["metadata"].get("name", ""),
                "namespace": ns,
                "operation": operation,
                "userInfo": {"username": "system:serviceaccount:kube-system:job-controller",
                             "uid": _uid("job-controller"),
                             "groups": ["system:serviceaccounts",
                                        "system:serviceaccounts:kube-system",
                                        "system:authenticated"]},
                "object": pod,
                "oldObject": None,
                "dryRun": False,
                "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}}}
