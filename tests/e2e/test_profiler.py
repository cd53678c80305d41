"""Captures against real JAX profilers: the pods' containers are CPU JAX
processes (`jax.profiler.start_server(9999)`) in the tier's Python image on
the real node, each with its podIP and its own hostname. The operator, installed with seed 003's arguments (so
--disable-hostname-override: each server names its file after its own
hostname, the pod name), relays MLDiagnosticsConnections to them; xprof
reads the files back, and xprof's own client captures the same processes
for comparison."""
import calendar
import glob
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import e2e
import kubeapi
from e2e import LABEL, E2ETest

PROGRAM = r"""
import time
import jax
import jax.numpy as jnp
jax.profiler.start_server(9999)
x = jnp.ones((128, 128))
while True:
    x = jnp.tanh(x @ x) / 128
    x.block_until_ready()
    time.sleep(0.02)
"""

def jax_jobset(name, hosts, image, storage):
    """A JobSet of `hosts` JAX profilers; `storage`, a folder of the tier's
    host, is mounted where the captures write (the storageLocation)."""
    vol, mount = e2e.host_dir(storage, "profiles")
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "labels": {LABEL: "true"}},
        "spec": {"replicatedJobs": [{"name": "host", "replicas": hosts, "template": {"spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "volumes": [vol], "containers": [{
                "name": "jax", "image": image, "command": ["python", "-c", PROGRAM],
                "volumeMounts": [mount],
                "ports": [{"name": "profiler", "containerPort": 9999}]}]}}}}}]}}


def profile_storage(c, prefix):
    """A folder of the host for captures, writable by the pods' user."""
    d = tempfile.mkdtemp(prefix=prefix, dir=c.dir)
    os.chmod(d, 0o777)
    return d


# xprof's trace viewer takes one host's XSpace at a time.
XPROF_READ = r"""
import json, sys
from xprof.convert import raw_to_tool_data
out = {}
for path in sys.argv[1:]:
    tools = raw_to_tool_data.xspace_to_tool_names([path])
    data, ctype = raw_to_tool_data.xspace_to_tool_data([path], "trace_viewer", {})
    events = json.loads(data).get("traceEvents", []) if data else []
    # the Python tracer's events are named "$<file>:<line> <function>"
    python = sum(1 for e in events if str(e.get("name", "")).startswith("$"))
    out[path] = {"tools": tools, "trace_events": len(events), "python_events": python}
print(json.dumps(out))
"""

XPROF_TRACE = r"""
import sys
from xprof.convert import _pywrap_profiler_plugin as p
p.trace(sys.argv[1], sys.argv[2], "", True, int(sys.argv[3]), 3, {})
"""


def port_open(ip, port):
    try:
        socket.create_connection((ip, port), timeout=1).close()
        return True
    except OSError:
        return False


def wait_profilers(c, ns, pods, container, timeout=180):
    """Until each pod's JAX profiler listens on its podIP:9999."""
    deadline = time.time() + timeout
    for p in pods:
        ip = p["status"]["podIP"]
        while not port_open(ip, 9999):
            if time.time() > deadline:
                raise AssertionError("profiler of %s at %s:9999 never listened:\n%s" % (
                    p["metadata"]["name"], ip,
                    e2e.container_log(c, ns, p["metadata"]["name"], container)[-2000:]))
            time.sleep(0.5)


JAX = {}  # the module's JobSet of three JAX pods: namespace, pods


def setUpModule():
    c = e2e.cluster()
    t = E2ETest()
    t.setUp()
    ns = t.namespace("jax")
    storage = profile_storage(c, "profiles-")
    c.api.create(jax_jobset("jax-train", 3, t.python_image(), storage), ns)
    pods = t.wait_pods(ns, 3, "jobset.sigs.k8s.io/jobset-name=jax-train", timeout=180)
    wait_profilers(c, ns, pods, "jax")
    JAX.update(ns=ns, pods=pods, case=t, storage=storage)


def tearDownModule():
    if "case" in JAX:
        JAX["case"].tearDown()


class Captures(E2ETest):
    def target_ns(self):
        """The namespace of the pods captured (and of the connections)."""
        return JAX["ns"]

    def capture(self, name, trigger, duration=2, wait=True, timeout=120):
        ns = self.target_ns()
        self.api.create({"apiVersion": "diagon.gke.io/v1alpha1",
                         "kind": "MLDiagnosticsConnection",
                         "metadata": {"name": name},
                         "spec": {"triggerCapture": {
                             "profiler": "google_cloud_mldiagnostics", "podNamespace": ns,
                             "capturePort": 9999, "durationSeconds": duration, **trigger}}}, ns)
        if not wait:
            return None
        return self.wait_phase(name, ("Succeeded", "Failed"), timeout)

    def wait_phase(self, name, phases, timeout=120):
        path = kubeapi.path_for("MLDiagnosticsConnection", self.target_ns(), name)
        return self.api.wait(path, lambda o: o.get("status", {}).get("phase") in phases,
                             timeout, what="capture %s in %s" % (name, phases))

    def xprof_read(self, files):
        p = subprocess.run([sys.executable, "-c", XPROF_READ, *files], capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        return json.loads(p.stdout.strip().splitlines()[-1])

    def assert_profiles(self, mldc, storage, stems):
        """Succeeded; one file per host named `stem`.xplane.pb where status
        says; xprof reads them."""
        st = mldc["status"]
        self.assertEqual(st["phase"], "Succeeded", json.dumps(st, indent=1))
        out = os.path.join(storage, "plugins", "profile", st["sessionId"])
        self.assertEqual(st["captureResult"]["outputLocation"], out)
        want = sorted(s + ".xplane.pb" for s in stems)
        self.assertEqual(sorted(f for f in os.listdir(out) if f.endswith(".xplane.pb")), want)
        self.assertEqual(sorted(h["outputFile"] for h in st["hosts"]),
                         [os.path.join(out, f) for f in want])
        for path, got in self.xprof_read([os.path.join(out, f) for f in want]).items():
            self.assertTrue(any(t.startswith("trace_viewer") for t in got["tools"]), (path, got))
            self.assertGreater(got["trace_events"], 0, "xprof found no trace events in " + path)
        return out


class Schedules(Captures):
    """spec.schedule against the real profilers and the real garbage collector:
    one capture per minute, owned by its schedule."""

    def schedule(self, name, pod, storage, duration=2, **fields):
        ns = self.target_ns()
        self.api.create({"apiVersion": "diagon.gke.io/v1alpha1",
                         "kind": "MLDiagnosticsConnection", "metadata": {"name": name},
                         "spec": {"schedule": "* * * * *", **fields, "triggerCapture": {
                             "profiler": "google_cloud_mldiagnostics", "podNamespace": ns,
                             "capturePort": 9999, "durationSeconds": duration,
                             "podName": pod["metadata"]["name"], "storageLocation": storage}}}, ns)
        return kubeapi.path_for("MLDiagnosticsConnection", ns, name)

    def test_a_failed_schedule_resumes_once_its_spec_is_fixed(self):
        """A spec the operator refuses (a duration above its
        --max-capture-duration, which the CRD cannot know) fails the schedule;
        kubectl patch fixes it (a new generation) and the schedule runs."""
        ns, storage = self.target_ns(), os.path.join(JAX["storage"], "schedule-fixed")
        path = self.schedule("fixed-later", JAX["pods"][1], storage, duration=7200)
        failed = self.api.wait(path, lambda o: o.get("status", {}).get("phase") == "Failed", 60,
                               what="the refused schedule Failed")
        self.assertIn("--max-capture-duration", failed["status"]["message"])
        self.assertEqual(failed["status"]["observedGeneration"], failed["metadata"]["generation"])
        self.kubectl("patch", "mldc", "fixed-later", "-n", ns, "--type=merge",
                     "-p", '{"spec": {"triggerCapture": {"durationSeconds": 2}}}')
        o = self.api.wait(path, lambda o: o.get("status", {}).get("lastScheduleTime"), 90,
                          what="the fixed schedule's first tick")
        self.kubectl("patch", "mldc", "fixed-later", "-n", ns, "--type=merge",
                     "-p", '{"spec": {"suspend": true}}')
        self.assertNotIn("phase", o["status"], "the failure is cleared")
        self.assertNotIn("completionTime", o["status"])
        (child,) = self.children("fixed-later")
        done = self.wait_phase(child["metadata"]["name"], ("Succeeded", "Failed"))
        self.assert_profiles(done, storage, ["%s_9999" % JAX["pods"][1]["status"]["podIP"]])
        self.api.delete(path)

    def children(self, parent):
        return [o for o in self.api.list(kubeapi.path_for("MLDiagnosticsConnection",
                                                          self.target_ns()))
                if any(r.get("name") == parent and r.get("controller")
                       for r in o["metadata"].get("ownerReferences", []))]

    def test_a_one_minute_schedule_and_its_captures(self):
        storage = os.path.join(JAX["storage"], "schedule")  # one each: a tick's sessions share a name
        keep = self.schedule("every-minute", JAX["pods"][0], storage, successfulHistoryLimit=1)
        drop = self.schedule("every-minute-no-history", JAX["pods"][2], storage + "-no-history",
                             successfulHistoryLimit=0)
        # the first tick (within a minute): a capture named for its minute, owned by it
        self.api.wait(keep, lambda o: o.get("status", {}).get("lastScheduleTime"), 90,
                      what="the first tick")
        # suspended at once: no second capture on the pod the next tests use
        self.kubectl("patch", "mldc", "every-minute", "-n", self.target_ns(), "--type=merge",
                     "-p", '{"spec": {"suspend": true}}')
        (child,) = self.children("every-minute")
        tick = self.api.get(keep)["status"]["lastScheduleTime"]
        minute = calendar.timegm(time.strptime(tick, "%Y-%m-%dT%H:%M:%SZ")) // 60
        self.assertEqual(child["metadata"]["name"], "every-minute-%d" % minute)
        done = self.wait_phase(child["metadata"]["name"], ("Succeeded", "Failed"))
        self.assert_profiles(done, storage, ["%s_9999" % JAX["pods"][0]["status"]["podIP"]])
        # no history kept: the other's capture is deleted once it is over
        self.api.wait(drop, lambda o: o.get("status", {}).get("lastScheduleTime") and
                      not o["status"].get("active") and not self.children(
                          "every-minute-no-history"), 120, what="a capture made and deleted")
        # deleting a schedule deletes its captures (the garbage collector)
        self.api.delete(keep)
        self.api.delete(drop)
        deadline = time.time() + 60
        while self.children("every-minute") and time.time() < deadline:
            time.sleep(1)
        self.assertEqual(self.children("every-minute"), [], "collected with their schedule")


class SeedOperatorJax08(Captures):
    """The operator as seed 003 installs it for JAX 0.8.x (its --set line:
    --disable-hostname-override, no --leader-elect)."""

    def test_capture_by_pod_name(self):
        pod = JAX["pods"][0]
        storage = os.path.join(JAX["storage"], "seed-by-pod")
        mldc = self.capture("seed-one-pod", {"podName": pod["metadata"]["name"],
                                             "storageLocation": storage})
        # xprof's own naming: <podIP>_<port> (never an empty host_name).
        self.assert_profiles(mldc, storage, ["%s_9999" % pod["status"]["podIP"]])
        table = self.kubectl("get", "mldc", "-n", JAX["ns"]).stdout
        self.assertRegex(table.splitlines()[0], r"NAME\s+STATUS\s+AGE")
        self.assertRegex(table, r"seed-one-pod\s+Succeeded")
        reasons = [e["reason"] for e in self.events(JAX["ns"], "MLDiagnosticsConnection",
                                                    "seed-one-pod")]
        self.assertGreaterEqual(len(set(reasons)), 2, reasons)


    def test_python_tracer_level_reaches_the_real_profiler(self):
        """spec.triggerCapture.options travel in ProfileOptions: the real JAX
        server records Python function calls at level 1 and none at 0."""
        pod = JAX["pods"][1]
        storage = os.path.join(JAX["storage"], "python-tracer")
        python = {}
        for level in (0, 1):
            mldc = self.capture("python-tracer-%d" % level, {
                "podName": pod["metadata"]["name"], "storageLocation": storage,
                "options": {"pythonTracerLevel": level, "hostTracerLevel": 2}})
            out = self.assert_profiles(mldc, storage, ["%s_9999" % pod["status"]["podIP"]])
            (got,) = self.xprof_read(glob.glob(os.path.join(out, "*.xplane.pb"))).values()
            python[level] = got["python_events"]
        self.assertEqual(python[0], 0, python)
        self.assertGreater(python[1], 0, python)


CAPTURER_RBAC = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: capturer}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: capturer}
rules:
- apiGroups: [diagon.gke.io]
  resources: [mldiagnosticsconnections]
  verbs: [create, get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: capturer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: capturer}
subjects:
- {kind: ServiceAccount, name: capturer}
"""


class KubectlMldiag(Captures):
    """kubectl mldiag, found by the real kubectl on PATH, for a user who may
    only create, get and list MLDiagnosticsConnections in the workload's
    namespace, against the real profilers (the seed's install:
    --disable-hostname-override)."""

    def test_capture_wait_list_and_status_with_the_users_own_rbac(self):
        c, ns = e2e.cluster(), JAX["ns"]
        self.apply_yaml(CAPTURER_RBAC, ns)
        token = self.kubectl("create", "token", "capturer", "-n", ns).stdout.strip()
        kc = c.cp.kubeconfig(os.path.join(c.dir, "capturer.kubeconfig"), token=token,
                             namespace=ns)
        env = dict(os.environ, KUBECONFIG=kc, PATH=c.project_bin + ":" + os.environ["PATH"])

        def mldiag(*args):
            return subprocess.run([os.path.join(c.bins["kube"], "kubectl"), "mldiag", *args],
                                  env=env, capture_output=True, text=True, timeout=300)
        pod = next(p for p in JAX["pods"]
                   if p["metadata"]["labels"]["jobset.sigs.k8s.io/job-global-index"] == "1")
        storage = os.path.join(JAX["storage"], "plugin")
        r = mldiag("capture", "jobset/jax-train", "--storage", storage, "--port", "9999",
                   "--duration", "2s", "--hosts", "1", "--name", "by-plugin", "--wait")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("mldiagnosticsconnection.diagon.gke.io/by-plugin created", r.stdout)
        self.assertIn("Succeeded: captured 1 of 3 hosts into " + storage, r.stdout)
        self.assertIn("kubectl cp %s/%s:%s/plugins/profile/" % (
            ns, pod["metadata"]["name"], storage), r.stdout)
        mldc = self.wait_phase("by-plugin", ("Succeeded",))
        self.assert_profiles(mldc, storage, ["%s_9999" % pod["status"]["podIP"]])
        r = mldiag("list")
        self.assertRegex(r.stdout, r"by-plugin\s+JobSet/jax-train\s+Succeeded\s+1\s")
        r = mldiag("status", "by-plugin")
        self.assertIn("Phase:      Succeeded", r.stdout)
        r = mldiag("list", "-A")  # cluster-wide: not granted
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("forbidden", r.stderr.lower())


class DefaultOperatorJax09(Captures):
    """Seed 003's JAX 0.9+ command (the chart's default arguments, with
    --leader-elect) and two replicas."""

    @classmethod
    def setUpClass(cls):
        cls.inst = e2e.cluster().install
        cls.ops = cls.inst.reinstall_operator(False, replicas=2)
        for p in cls.ops:
            p.wait_ready()

    @classmethod
    def tearDownClass(cls):
        cls.inst.reinstall_operator(True)[0].wait_ready()

    def leader(self):
        lease = self.api.get(kubeapi.path_for("Lease", "gke-mldiagnostics",
                                              "mldiagnostics-connection-operator"))
        holder = lease["spec"].get("holderIdentity")
        return next((p for p in self.inst.operators if p.pod["metadata"]["name"] == holder),
                    None), holder

    def test_workload_ref_names_files_after_pods_like_xprof_layout(self):
        pods = JAX["pods"]
        storage = os.path.join(JAX["storage"], "by-ref")
        mldc = self.capture("whole-jobset", {
            "workloadRef": {"kind": "JobSet", "name": "jax-train"}, "storageLocation": storage})
        self.assert_profiles(mldc, storage, [p["metadata"]["name"] for p in pods])
        # xprof's own client against the same three processes: the same layout.
        logdir = os.path.join(JAX["storage"], "xprof-client")
        addrs = ",".join("%s:9999" % p["status"]["podIP"] for p in pods)
        t = subprocess.run([sys.executable, "-c", XPROF_TRACE, addrs, logdir, "2000"],
                           capture_output=True, text=True, timeout=180)
        self.assertEqual(t.returncode, 0, t.stderr[-3000:])
        theirs = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
        self.assertEqual(len(theirs), len(pods), theirs)
        self.xprof_read(theirs)

    def test_hosts_capture_some_of_the_real_jobsets_pods(self):
        """spec.triggerCapture.hosts over the pods the real JobSet controller
        labelled: indices 0 and 2 of its global order, and nothing else."""
        by_index = {int(p["metadata"]["labels"]["jobset.sigs.k8s.io/job-global-index"]): p
                    for p in JAX["pods"]}
        want = [by_index[0]["metadata"]["name"], by_index[2]["metadata"]["name"]]
        storage = os.path.join(JAX["storage"], "some-hosts")
        mldc = self.capture("some-hosts", {
            "workloadRef": {"kind": "JobSet", "name": "jax-train"}, "storageLocation": storage,
            "hosts": {"replicatedJobs": ["host"], "indices": "0,2"}})
        self.assert_profiles(mldc, storage, want)
        self.assertIn("captured 2 of 3 hosts", mldc["status"]["message"])

    def test_leader_sigterm_moves_lease_and_checkpoint_resumes(self):
        leader, holder = None, None
        deadline = time.time() + 30
        while leader is None and time.time() < deadline:
            leader, holder = self.leader()
            time.sleep(0.2)
        self.assertIsNotNone(leader, "no operator pod holds the Lease (holder %s)" % holder)
        pod = JAX["pods"][1]
        storage = os.path.join(JAX["storage"], "failover")
        self.capture("failover", {"podName": pod["metadata"]["name"],
                                  "storageLocation": storage}, duration=20, wait=False)
        running = self.wait_phase("failover", ("Running",), 30)
        session = running["status"]["sessionId"]
        # Only the leader reconciles: every Event so far is its own.
        before = {e["reportingInstance"] for e in self.events(JAX["ns"],
                                                              "MLDiagnosticsConnection",
                                                              "failover")}
        self.assertEqual(before, {holder})
        # delete the leader's pod: the kubelet's SIGTERM; it records the capture as
        # interrupted and releases the Lease, which the standby (or the pod that
        # replaces the deleted one) takes
        leader.stop()
        wait_for(lambda: self.leader()[1] not in (None, holder), 30, "the Lease to move")
        new = self.leader()[1]
        done = self.wait_phase("failover", ("Succeeded", "Failed"), 120)
        st = done["status"]
        self.assertEqual(st["phase"], "Succeeded", json.dumps(st, indent=1))
        self.assertEqual(st["sessionId"], session, "the checkpoint keeps the session")
        self.assertGreaterEqual(st["attempts"], 2)
        after = {e["reportingInstance"] for e in self.events(JAX["ns"],
                                                             "MLDiagnosticsConnection",
                                                             "failover")} - before
        self.assertEqual(after, {new}, "the new leader finished it")
        leader.wait_ready()

    def test_delete_mid_capture_cancels_the_rpc(self):
        """A real JAX server holds one profiling session at a time: a second
        capture of the same pod succeeds right after the deletion only if
        the first RPC was cancelled."""
        pod = JAX["pods"][2]
        storage = os.path.join(JAX["storage"], "deleted")
        self.capture("to-delete", {"podName": pod["metadata"]["name"],
                                   "storageLocation": storage}, duration=30, wait=False)
        self.wait_phase("to-delete", ("Running",), 30)
        time.sleep(1)
        self.kubectl("delete", "mldc", "to-delete", "-n", JAX["ns"])
        t0 = time.time()
        mldc = self.capture("after-delete", {"podName": pod["metadata"]["name"],
                                             "storageLocation": storage})
        self.assertEqual(mldc["status"]["phase"], "Succeeded", json.dumps(mldc["status"]))
        self.assertLess(time.time() - t0, 25, "the deleted capture's session was still held")


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


if __name__ == "__main__":
    unittest.main()
