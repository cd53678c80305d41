"""The tier's node: what kube-scheduler and a kubelet do for the pods of the
end-to-end tests, through the real API server.

- Scheduling: a pod without `spec.nodeName` is bound to the Node that
  place(pod) names (this one by default; cluster.py's rule when there is a
  real node too) with the `pods/binding` subresource (unless it has
  scheduling gates).
- Running: a bound pod gets the status a kubelet posts (phase Running,
  podIP/podIPs, hostIP, the Initialized/PodReadyToStartContainers/
  ContainersReady/Ready conditions, containerStatuses) through `pods/status`.
- Containers of the `mld-e2e/python` image run as local processes, with
  the environment the kubelet would give them (`env`, `envFrom`,
  `fieldRef`, `$(VAR)` expanded by kubelet's own rules, see expand()): the
  tier's Python (its venv, with jax, xprof and the SDKs, which no image
  here holds) in a network namespace of the pod's own (netns.py), whose
  address is the podIP. Other images run nothing: the pod is reported
  Running with a 127.x.y.z address that nobody connects to. (The project's
  images run on the real node, node.py.)
- Exits: restartPolicy Never/OnFailure/Always as the kubelet applies it;
  all containers ended → phase Succeeded or Failed.
- Deletion: a pod with a deletionTimestamp has its processes stopped
  (SIGTERM, then SIGKILL after its grace period, capped) and is removed
  with a zero grace period and a UID precondition, as the kubelet does.
Pods labelled `e2e.mldiagnostics/kubelet: ignore` are left alone (the
benchmark's bursts). Thread-safe; one watch thread, one worker thread.
"""
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time

import kubeapi
import procs

IGNORE_LABEL = "e2e.mldiagnostics/kubelet"
# Runs in the pod's new UTS namespace: set the hostname, then exec the container.
SET_HOSTNAME = "import os, socket, sys; socket.sethostname(sys.argv[1]); " \
               "os.execv(sys.argv[2], sys.argv[2:])"
PYTHON_IMAGE = "mld-e2e/python"


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
            import base64
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
            import base64
            ref = vf["secretKeyRef"]
            data = api.get(kubeapi.path_for("Secret", ns, ref["name"]))
            env[e["name"]] = base64.b64decode(data.get("data", {}).get(ref["key"], "")).decode()
        elif "resourceFieldRef" in vf:
            env[e["name"]] = "0"
    return env


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class _Container:
    def __init__(self, spec, proc=None):
        self.spec = spec
        self.proc = proc
        self.started = now()
        self.restarts = 0
        self.exit_code = None
        self.finished = None


class _Pod:
    def __init__(self, uid, ns, name):
        self.uid, self.ns, self.name = uid, ns, name
        self.containers = {}
        self.netns = None
        self.ip = None
        self.dir = None
        self.phase = "Pending"
        self.reported = None


class Kubelet:
    def __init__(self, api, ca_file, node_name, work_dir, runtimes, networks=None, log=None,
                 place=None):
        """runtimes: {"python": path} for PYTHON_IMAGE; networks: netns.PodNetworks or None;
        place(pod): the node an unscheduled pod is bound to (default: this one)."""
        self.api = api
        self.ca_file = ca_file
        self.node = node_name
        self.dir = work_dir
        self.runtimes = runtimes
        self.networks = networks
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
        for target in (self._watch_loop, self._work_loop, self._reap_loop):
            t = threading.Thread(target=target, daemon=True, name="kubelet-" + target.__name__)
            t.start()
            self.threads.append(t)

    def stop(self):
        self.stopping.set()
        with self.lock:
            pods = list(self.pods.values())
        for p in pods:
            self._kill(p, 3)
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
                p = self.pods.pop(pod["deleted"]["metadata"]["uid"], None)
            if p:
                self._kill(p, 3)
            return
        md, spec = pod["metadata"], pod["spec"]
        if md.get("labels", {}).get(IGNORE_LABEL) == "ignore":
            return
        path = kubeapi.path_for("Pod", md["namespace"], md["name"])
        if md.get("deletionTimestamp"):
            with self.lock:
                p = self.pods.pop(md["uid"], None)
            if p:
                self._kill(p, min(int(md.get("deletionGracePeriodSeconds") or 0), 10))
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
                p = self.pods[md["uid"]] = _Pod(md["uid"], md["namespace"], md["name"])
        if p.reported is None and pod.get("status", {}).get("phase") in ("Pending", None):
            self._start(p, pod)
            self._report(p, pod)

    def _alloc_ip(self):
        with self.lock:
            n = self.next_ip
            self.next_ip += 1
        return "127.61.%d.%d" % (n // 250, n % 250 + 1)

    def _runtime(self, image):
        base = image.split("@")[0].rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] \
            else image.split("@")[0]
        return "python" if base == PYTHON_IMAGE else None

    def _start(self, p, pod):
        spec = pod["spec"]
        kinds = {c["name"]: self._runtime(c.get("image", "")) for c in spec["containers"]}
        wants_netns = "python" in kinds.values() and not spec.get("hostNetwork")
        if wants_netns:
            if self.networks is None:
                raise RuntimeError("pod needs a network namespace; none can be made here")
            p.netns, p.ip = self.networks.create()
        else:
            p.ip = "127.0.0.1" if spec.get("hostNetwork") else self._alloc_ip()
        p.dir = os.path.join(self.dir, "pods", "%s_%s_%s" % (p.ns, p.name, p.uid[:8]))
        os.makedirs(p.dir, exist_ok=True)
        # The env is computed from the pod as the kubelet sees it after binding:
        # status.podIP is what it is about to report.
        view = json.loads(json.dumps(pod))
        view.setdefault("status", {}).update({"podIP": p.ip, "podIPs": [{"ip": p.ip}],
                                              "hostIP": "127.0.0.1",
                                              "hostIPs": [{"ip": "127.0.0.1"}]})
        for c in spec["containers"]:
            kind = kinds[c["name"]]
            proc = self._spawn(p, view, c, kind) if kind else None
            p.containers[c["name"]] = _Container(c, proc)
        p.phase = "Running"
        self.log("kubelet: %s/%s running at %s (%s)" % (p.ns, p.name, p.ip, ", ".join(
            "%s=%s" % (k, v or "-") for k, v in kinds.items())))

    def _spawn(self, p, pod, c, kind):
        env = container_env(self.api, pod, c)
        argv = [expand(a, env) for a in c.get("command", [])] or None
        args = [expand(a, env) for a in c.get("args", [])]
        base_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": p.dir,
                    "HOSTNAME": p.name}
        if not argv or os.path.basename(argv[0]) not in ("python", "python3"):
            raise RuntimeError("container %s: %s runs only `python ...`" % (
                c["name"], PYTHON_IMAGE))
        argv = [self.runtimes["python"]] + argv[1:]
        netns = p.netns
        full_env = {**base_env, **env}
        cmd = argv + args
        if netns:
            # Its own network namespace and, as a kubelet gives every pod, its
            # own hostname (spec.hostname, else the pod name, at most 63).
            host = (pod["spec"].get("hostname") or p.name)[:63]
            full_env["HOSTNAME"] = host
            cmd = ["ip", "netns", "exec", netns, "unshare", "--uts", "--", argv[0], "-c",
                   SET_HOSTNAME, host] + cmd
        log = open(os.path.join(p.dir, c["name"] + ".log"), "ab")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=p.dir, env=full_env,
                                start_new_session=True, preexec_fn=procs.die_with_parent)
        log.close()
        return proc

    def _kill(self, p, grace):
        procs = [c.proc for c in p.containers.values() if c.proc and c.proc.poll() is None]
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + max(grace, 0.5)
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        if p.netns and self.networks:
            self.networks.delete(p.netns)
            p.netns = None

    # ---- exits ----
    def _reap_loop(self):
        while not self.stopping.wait(0.2):
            with self.lock:
                pods = list(self.pods.values())
            for p in pods:
                try:
                    self._reap(p)
                except Exception as e:  # noqa: BLE001
                    self.log("kubelet: reap %s/%s: %s" % (p.ns, p.name, e))

    def _reap(self, p):
        changed = False
        policy = None
        for c in p.containers.values():
            if c.proc is None or c.exit_code is not None or c.proc.poll() is None:
                continue
            code = c.proc.returncode
            policy = policy or self._policy(p)
            if policy == "Always" or (policy == "OnFailure" and code != 0):
                if c.restarts >= 5:
                    c.exit_code, c.finished = code, now()
                else:
                    time.sleep(min(1 + c.restarts, 3))
                    try:
                        pod = self.api.get(kubeapi.path_for("Pod", p.ns, p.name))
                    except kubeapi.ApiError as e:
                        if e.code == 404:  # deleted meanwhile (a failed Job's pod)
                            c.exit_code, c.finished = code, now()
                            continue
                        raise
                    c.restarts += 1
                    c.proc = self._spawn(p, pod, c.spec, self._runtime(c.spec["image"]))
                    c.started = now()
            else:
                c.exit_code, c.finished = code, now()
            changed = True
        if not changed:
            return
        ended = [c for c in p.containers.values() if c.exit_code is not None]
        if len(ended) == len(p.containers):
            p.phase = "Succeeded" if all(c.exit_code == 0 for c in ended) else "Failed"
        try:
            pod = self.api.get(kubeapi.path_for("Pod", p.ns, p.name))
        except kubeapi.ApiError:
            return
        self._report(p, pod)

    def _policy(self, p):
        try:
            return self.api.get(kubeapi.path_for("Pod", p.ns, p.name))["spec"].get(
                "restartPolicy", "Always")
        except kubeapi.ApiError:
            return "Never"

    # ---- status ----
    def _termination_message(self, p, c, code):
        """FallbackToLogsOnError, as the kubelet applies it: on a failure with
        no termination-log file, the last 80 lines (at most 2 KiB) of the log."""
        if code == 0 or c.get("terminationMessagePolicy") != "FallbackToLogsOnError":
            return None
        try:
            with open(os.path.join(p.dir, c["name"] + ".log"), "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()[-80:]
        except OSError:
            return None
        return "\n".join(lines)[-2048:]

    def _report(self, p, pod):
        spec = pod["spec"]
        running = p.phase == "Running"
        statuses = []
        for c in spec["containers"]:
            st = p.containers.get(c["name"])
            if st and st.exit_code is not None:
                state = {"terminated": {"exitCode": st.exit_code, "startedAt": st.started,
                                        "finishedAt": st.finished,
                                        "reason": "Completed" if st.exit_code == 0 else "Error"}}
                msg = self._termination_message(p, c, st.exit_code)
                if msg:
                    state["terminated"]["message"] = msg
                ready = False
            else:
                state = {"running": {"startedAt": st.started if st else now()}}
                ready = True
            statuses.append({"name": c["name"], "image": c.get("image", ""),
                             "imageID": "", "containerID": "e2e://%s/%s" % (p.uid, c["name"]),
                             "ready": ready and running, "started": running,
                             "restartCount": st.restarts if st else 0, "state": state})
        inits = [{"name": c["name"], "image": c.get("image", ""), "imageID": "",
                  "ready": c.get("restartPolicy") == "Always", "restartCount": 0,
                  "started": c.get("restartPolicy") == "Always",
                  "state": {"running": {"startedAt": now()}} if c.get("restartPolicy") ==
                  "Always" else {"terminated": {"exitCode": 0, "reason": "Completed",
                                                "startedAt": now(), "finishedAt": now()}}}
                 for c in spec.get("initContainers", [])]
        ready = "True" if running else "False"
        t = now()
        status = {
            "phase": p.phase, "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
            "podIP": p.ip, "podIPs": [{"ip": p.ip}], "startTime": pod.get("status", {}).get(
                "startTime") or t,
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": t},
                {"type": "Initialized", "status": "True", "lastTransitionTime": t},
                {"type": "ContainersReady", "status": ready, "lastTransitionTime": t},
                {"type": "Ready", "status": ready, "lastTransitionTime": t},
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
        p.reported = p.phase

    # ---- for tests ----
    def pod_dir(self, ns, name):
        with self.lock:
            for p in self.pods.values():
                if p.ns == ns and p.name == name:
                    return p.dir
        return None

    def container_log(self, ns, name, container):
        d = self.pod_dir(ns, name)
        if not d:
            return ""
        try:
            with open(os.path.join(d, container + ".log"), "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""


def rmtree(path):
    shutil.rmtree(path, ignore_errors=True)
