"""The tier's process node: what kube-scheduler does for every pod of the
end-to-end tests, and what a kubelet does for the pods the real node
(node.py) cannot run, through the real API server.

- Scheduling: a pod without `spec.nodeName` is bound to the Node that
  place(pod) names (this one by default; cluster.py's rule when there is a
  real node too) with the `pods/binding` subresource (unless it has
  scheduling gates).
- Pods bound here name images nobody can pull (the upstream fixtures'
  placeholders, the bursts' pods): they run nothing. Each gets the status
  a kubelet posts (phase Running, a 127.x.y.z podIP nobody connects to,
  hostIP, the Initialized/PodReadyToStartContainers/ContainersReady/Ready
  conditions, containerStatuses) through `pods/status`.
- Deletion: a pod with a deletionTimestamp is removed with a zero grace
  period and a UID precondition, as the kubelet does.
Pods labelled `e2e.mldiagnostics/kubelet: ignore` are left alone (the
benchmark's bursts). Thread-safe; one watch thread, one worker thread.

The module also holds the tier's model of what the kubelet makes of a
container's env (container_env: fieldRefs, `$(VAR)` expansion by kubelet's
own rules), which test_node keeps honest against the real kubelet.
"""
import base64
import queue
import threading
import time

import kubeapi

IGNORE_LABEL = "e2e.mldiagnostics/kubelet"


def expand(value, *maps):
    """kubelet's $(VAR) expansion (k8s.io/kubernetes/third_party/forked/golang/
    expansion): $(NAME) becomes the value when NAME is known, else stays as
    written; $$ is a literal $; an unclosed $( is left as is."""
    out = []
    checkpoint = 0
    cursor = 0
    n = len(value)
    while cursor < n:
        if value[cursor] == "$" and cursor + 1 < n:
            out.append(value[checkpoint:cursor])
            rest = value[cursor + 1:]
            if rest[0] == "$":
                read, advance = "$", 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close >= 1:
                    name = rest[1:close]
                    read = next((m[name] for m in maps if name in m), "$(" + name + ")")
                    advance = close + 1
                else:
                    read, advance = "$(", 1
            else:
                read, advance = "$" + rest[0], 1
            out.append(read)
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(value[checkpoint:])
    return "".join(out)


def field_ref(pod, path):
    md, spec, st = pod["metadata"], pod["spec"], pod.get("status", {})
    simple = {
        "metadata.name": md.get("name", ""), "metadata.namespace": md.get("namespace", ""),
        "metadata.uid": md.get("uid", ""), "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.hostIP": st.get("hostIP", ""), "status.podIP": st.get("podIP", ""),
        "status.podIPs": ",".join(p["ip"] for p in st.get("podIPs", [])),
        "status.hostIPs": ",".join(p["ip"] for p in st.get("hostIPs", [])),
    }
    if path in simple:
        return simple[path]
    for prefix, src in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return md.get(src, {}).get(path[len(prefix) + 2:-2], "")
        if path == prefix:
            return "\n".join('%s="%s"' % (k, v) for k, v in sorted(md.get(src, {}).items()))
    raise ValueError("fieldRef %s is not supported by the tier's kubelet" % path)


def container_env(api, pod, container):
    """The environment the kubelet gives a container (without the service
    link variables, which nothing here reads), as an ordered dict."""
    ns = pod["metadata"]["namespace"]
    env = {}
    for src in container.get("envFrom", []):
        prefix = src.get("prefix", "")
        if "configMapRef" in src:
            data = api.get(kubeapi.path_for("ConfigMap", ns, src["configMapRef"]["name"]))
            env.update({prefix + k: v for k, v in data.get("data", {}).items()})
        elif "secretRef" in src:
            data = api.get(kubeapi.path_for("Secret", ns, src["secretRef"]["name"]))
            env.update({prefix + k: base64.b64decode(v).decode()
                        for k, v in data.get("data", {}).items()})
    for e in container.get("env", []):
        if "value" in e or "valueFrom" not in e:
            env[e["name"]] = expand(e.get("value", ""), env)
            continue
        vf = e["valueFrom"]
        if "fieldRef" in vf:
            env[e["name"]] = field_ref(pod, vf["fieldRef"]["fieldPath"])
        elif "configMapKeyRef" in vf:
            ref = vf["configMapKeyRef"]
            data = api.get(kubeapi.path_for("ConfigMap", ns, ref["name"]))
            env[e["name"]] = data.get("data", {}).get(ref["key"], "")
        elif "secretKeyRef" in vf:
            ref = vf["secretKeyRef"]
            data = api.get(kubeapi.path_for("Secret", ns, ref["name"]))
            env[e["name"]] = base64.b64decode(data.get("data", {}).get(ref["key"], "")).decode()
        elif "resourceFieldRef" in vf:
            env[e["name"]] = "0"
    return env


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class _Pod:
    def __init__(self, uid, ns, name, ip):
        self.uid, self.ns, self.name, self.ip = uid, ns, name, ip
        self.reported = False


class Kubelet:
    def __init__(self, api, node_name, log=None, place=None):
        """place(pod): the node an unscheduled pod is bound to (default: this one)."""
        self.api = api
        self.node = node_name
        self.log = log or (lambda msg: None)
        self.place = place or (lambda pod: self.node)
        self.pods = {}
        self.lock = threading.Lock()
        self.events = queue.Queue()
        self.stopping = threading.Event()
        self.next_ip = 1
        self.threads = []
        self.errors = []

    # ---- lifecycle ----
    def start(self):
        self.api.apply({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": self.node, "labels": {"kubernetes.io/hostname": self.node,
                                          "kubernetes.io/os": "linux"}}})
        self.api.patch(kubeapi.path_for("Node", name=self.node, sub="status"), {"status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "the end-to-end tier's node", "lastHeartbeatTime": now(),
                            "lastTransitionTime": now()}],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                          {"type": "Hostname", "address": self.node}],
            "capacity": {"cpu": "64", "memory": "256Gi", "pods": "1000"},
            "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "1000"}}}, "strategic")
        for target in (self._watch_loop, self._work_loop):
            t = threading.Thread(target=target, daemon=True, name="kubelet-" + target.__name__)
            t.start()
            self.threads.append(t)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=1)  # daemon threads: the watch may sit in a read for 8 s

    # ---- watch → queue ----
    def _watch_loop(self):
        rv = None
        while not self.stopping.is_set():
            try:
                if rv is None:
                    lst = self.api.get("/api/v1/pods")
                    rv = lst["metadata"]["resourceVersion"]
                    for pod in lst["items"]:
                        self.events.put(pod)
                for typ, obj in self.api.watch("/api/v1/pods", rv, timeout=8):
                    if self.stopping.is_set():
                        return
                    if typ == "ERROR":
                        rv = None
                        break
                    rv = obj["metadata"]["resourceVersion"]
                    if typ != "BOOKMARK":
                        self.events.put(obj if typ != "DELETED" else {"deleted": obj})
            except Exception as e:  # noqa: BLE001 - the API server may restart; relist
                if not self.stopping.is_set():
                    self.log("kubelet: watch: %s" % e)
                    rv = None
                    time.sleep(0.5)

    def _work_loop(self):
        while not self.stopping.is_set():
            try:
                pod = self.events.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                self._sync(pod)
            except Exception as e:  # noqa: BLE001 - one pod's trouble must not stop the node
                md = (pod.get("deleted") or pod)["metadata"]
                self.errors.append("%s/%s: %s" % (md.get("namespace"), md.get("name"), e))
                self.log("kubelet: %s/%s: %s" % (md.get("namespace"), md.get("name"), e))

    # ---- one pod ----
    def _sync(self, pod):
        if "deleted" in pod:
            with self.lock:
                self.pods.pop(pod["deleted"]["metadata"]["uid"], None)
            return
        md, spec = pod["metadata"], pod["spec"]
        if md.get("labels", {}).get(IGNORE_LABEL) == "ignore":
            return
        path = kubeapi.path_for("Pod", md["namespace"], md["name"])
        if md.get("deletionTimestamp"):
            with self.lock:
                self.pods.pop(md["uid"], None)
            if spec.get("nodeName") == self.node:
                try:
                    self.api.request("DELETE", path, {"gracePeriodSeconds": 0,
                                                      "preconditions": {"uid": md["uid"]}})
                except kubeapi.ApiError as e:
                    if e.code not in (404, 409):
                        raise
            return
        if not spec.get("nodeName"):
            if spec.get("schedulingGates"):
                return
            try:
                self.api.request("POST", path + "/binding", {
                    "apiVersion": "v1", "kind": "Binding", "metadata": {"name": md["name"]},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": self.place(pod)}})
            except kubeapi.ApiError as e:
                if e.code not in (404, 409):
                    raise
            return
        if spec["nodeName"] != self.node:
            return
        with self.lock:
            p = self.pods.get(md["uid"])
            if p is None:
                ip = "127.0.0.1" if spec.get("hostNetwork") else self._alloc_ip()
                p = self.pods[md["uid"]] = _Pod(md["uid"], md["namespace"], md["name"], ip)
        if not p.reported and pod.get("status", {}).get("phase") in ("Pending", None):
            self._report(p, pod)

    def _alloc_ip(self):  # under self.lock
        n = self.next_ip
        self.next_ip += 1
        return "127.61.%d.%d" % (n // 250, n % 250 + 1)

    def _report(self, p, pod):
        """Running, every container started and ready: what a kubelet posts."""
        spec = pod["spec"]
        t = now()
        statuses = [{"name": c["name"], "image": c.get("image", ""), "imageID": "",
                     "containerID": "e2e://%s/%s" % (p.uid, c["name"]), "ready": True,
                     "started": True, "restartCount": 0, "state": {"running": {"startedAt": t}}}
                    for c in spec["containers"]]
        inits = [{"name": c["name"], "image": c.get("image", ""), "imageID": "",
                  "ready": c.get("restartPolicy") == "Always", "restartCount": 0,
                  "started": c.get("restartPolicy") == "Always",
                  "state": {"running": {"startedAt": t}} if c.get("restartPolicy") ==
                  "Always" else {"terminated": {"exitCode": 0, "reason": "Completed",
                                                "startedAt": t, "finishedAt": t}}}
                 for c in spec.get("initContainers", [])]
        status = {
            "phase": "Running", "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
            "podIP": p.ip, "podIPs": [{"ip": p.ip}], "startTime": pod.get("status", {}).get(
                "startTime") or t,
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": t},
                {"type": "Initialized", "status": "True", "lastTransitionTime": t},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": t},
                {"type": "Ready", "status": "True", "lastTransitionTime": t},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": t}],
            "containerStatuses": statuses}
        if inits:
            status["initContainerStatuses"] = inits
        # A strategic-merge patch, as the kubelet's status manager sends: no
        # resourceVersion to conflict with the controllers' own writes.
        try:
            self.api.patch(kubeapi.path_for("Pod", p.ns, p.name, "status"), {"status": status},
                           "strategic")
        except kubeapi.ApiError as e:
            if e.code != 404:
                raise
        p.reported = True
