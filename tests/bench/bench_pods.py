"""Realistic pods for the operator benchmark (DESIGN §6): a JobSet TPU worker pod as
kube-apiserver serves it once the Job controller, the scheduler, the webhook and the kubelet
have written it, ~4 KiB of compact JSON: labels and annotations of a JobSet's Job,
ownerReferences, finalizers, managedFields of kube-controller-manager and the kubelet,
a container with env, ports, resources and volumeMounts, the projected service-account
volume, tolerations, and a status with its five conditions, podIPs and containerStatuses.

    pod(i, name, jobset, ip, node) -> dict   (metadata.uid/creationTimestamp set)"""
import uuid

T0 = "2026-12-01T08:00:00Z"
T1 = "2026-12-01T08:00:41Z"
NODE_POOL = "gke-tpu-v5p-pool-7f3a"
IMAGE_ID = ("us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu@sha256:"
            "4c1e7d0a3b9f2e6d5c8a7b1f0e3d2c4b6a9f8e7d1c0b3a5f4e2d6c8b7a9f0e1d")


def _uid(tag, i):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "mld-bench/%s/%d" % (tag, i)))


def _f(*names):
    """A fieldsV1 set: {"f:a": {}, "f:b": {}}."""
    return {"f:" + n: {} for n in names}


def _managed(job_uid, container, ip):
    spec = {"f:containers": {'k:{"name":"%s"}' % container: dict(
        _f("env", "image", "name", "resources", "volumeMounts"),
        **{"f:ports": {'k:{"containerPort":9999,"protocol":"TCP"}': _f("containerPort", "name")}})}}
    spec.update(_f("hostname", "nodeSelector", "restartPolicy", "subdomain", "tolerations",
                   "volumes"))
    cond = lambda t: {'k:{"type":"%s"}' % t: _f("lastProbeTime", "lastTransitionTime",  # noqa
                                                 "status", "type")}
    status = {"f:conditions": dict(**cond("ContainersReady"), **cond("Ready")),
              "f:podIPs": {'k:{"ip":"%s"}' % ip: _f("ip")}}
    status.update(_f("containerStatuses", "hostIP", "hostIPs", "phase", "podIP", "startTime"))
    return [
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": T0, "fieldsType": "FieldsV1", "fieldsV1": {
             "f:metadata": {"f:annotations": _f("batch.kubernetes.io/job-completion-index"),
                            "f:finalizers": {'v:"batch.kubernetes.io/job-tracking"': {}},
                            "f:generateName": {},
                            "f:labels": _f("batch.kubernetes.io/controller-uid",
                                           "batch.kubernetes.io/job-name",
                                           "jobset.sigs.k8s.io/jobset-name"),
                            "f:ownerReferences": {'k:{"uid":"%s"}' % job_uid: {}}},
             "f:spec": spec}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": T1,
         "fieldsType": "FieldsV1", "fieldsV1": {"f:status": status}, "subresource": "status"},
    ]


def _conditions():
    return [{"type": t, "status": "True", "lastProbeTime": None,
             "lastTransitionTime": T1 if t != "PodScheduled" else T0}
            for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                      "PodScheduled")]


def pod(i, name, jobset, ip, node):
    job = "%s-workers-0" % jobset
    job_uid = _uid("job/" + jobset, 0)
    labels = {"app": "train", "jobset.sigs.k8s.io/jobset-name": jobset,
              "jobset.sigs.k8s.io/replicatedjob-name": "workers",
              "jobset.sigs.k8s.io/job-index": "0",
              "batch.kubernetes.io/job-name": job, "batch.kubernetes.io/controller-uid": job_uid,
              "batch.kubernetes.io/job-completion-index": str(i)}
    annotations = {"batch.kubernetes.io/job-completion-index": str(i),
                   "diagon.gke.io/injection": "0.1.0;abc123def456"}
    env = [{"name": "JAX_PLATFORMS", "value": "tpu"},
           {"name": "TPU_WORKER_ID", "value": str(i)},
           {"name": "TPU_SKIP_MDS_QUERY", "value": "true"}]
    mounts = [{"name": "kube-api-access-x7k2q", "readOnly": True,
               "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
    container = {
        "name": "jax", "image": "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:jax0.8.0",
        "ports": [{"name": "profiler", "containerPort": 9999, "protocol": "TCP"}],
        "env": env, "resources": {"limits": {"google.com/tpu": "4"},
                                  "requests": {"google.com/tpu": "4"}},
        "volumeMounts": mounts, "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}
    volumes = [{"name": "kube-api-access-x7k2q", "projected": {"defaultMode": 420, "sources": [
                   {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                   {"configMap": {"name": "kube-root-ca.crt",
                                  "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                   {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                       "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}]
    host_ip = "10.128.%d.%d" % (i // 4 // 250, i // 4 % 250 + 2)
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "generateName": job + "-", "uid": _uid("pod", i),
                     "creationTimestamp": T0, "labels": labels, "annotations": annotations,
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                          "uid": job_uid, "controller": True,
                                          "blockOwnerDeletion": True}],
                     "finalizers": ["batch.kubernetes.io/job-tracking"],
                     "managedFields": _managed(job_uid, "jax", ip)},
        "spec": {"volumes": volumes, "containers": [container], "restartPolicy": "Never",
                 "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                 "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
                                  "cloud.google.com/gke-tpu-topology": "16x16x24"},
                 "serviceAccountName": "default", "serviceAccount": "default", "nodeName": node,
                 "securityContext": {}, "hostname": name, "subdomain": jobset,
                 "schedulerName": "default-scheduler",
                 "tolerations": [{"key": "google.com/tpu", "operator": "Exists",
                                  "effect": "NoSchedule"}],
                 "priority": 0},
        "status": {"phase": "Running", "conditions": _conditions(), "hostIP": host_ip,
                   "hostIPs": [{"ip": host_ip}], "podIP": ip, "podIPs": [{"ip": ip}],
                   "startTime": T0, "qosClass": "BestEffort",
                   "containerStatuses": [{
                       "name": "jax", "state": {"running": {"startedAt": T1}}, "lastState": {},
                       "ready": True, "restartCount": 0,
                       "image": "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:jax0.8.0",
                       "imageID": IMAGE_ID,
                       "containerID": "containerd://" + _uid("container", i).replace("-", "") * 2,
                       "started": True}]},
    }
