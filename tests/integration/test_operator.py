"""The connection operator end to end: the real binary against the fake
API server (tests/fakes/fake_apiserver.py) and real gRPC profiler servers
(tests/fakes/fake_profiler.py, python3-grpcio), one per fake pod on its own
127.x.y.z address. DESIGN §4: captures over several pods with the exact
request fields, failures naming the pod and the reason, invalid specs
failing without an RPC (a duration that cannot fit in --sidecar-timeout
among them), workloadRef targets, --disable-hostname-override,
one capture per pod, deletion cancelling RPCs, retries of UNAVAILABLE,
events, metrics and the audit (uninjected pods, namespace-label opt-ins, pods
whose injected identity the google-cloud-mldiagnostics SDK would refuse)."""
import itertools
import os
import socket
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "fakes"))
from fake_apiserver import FakeApiServer  # noqa: E402
from fake_profiler import FakeProfiler  # noqa: E402
import controllers  # noqa: E402
import crdcheck  # noqa: E402
from harness import SLOW, Operator, free_port  # noqa: E402

CONN = ("diagon.gke.io", "v1alpha1", "mldiagnosticsconnections")
JOBSETS = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
LWS = ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
RAYJOBS = ("ray.io", "v1", "rayjobs")
TRAINJOBS = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")
PYTORCHJOBS = ("kubeflow.org", "v1", "pytorchjobs")
VOLCANO_JOBS = ("batch.volcano.sh", "v1alpha1", "jobs")
MPIJOBS = ("kubeflow.org", "v2beta1", "mpijobs")
NS = "ml"
_ips = itertools.count(1)


def next_ip():
    n = next(_ips)
    return "127.2.%d.%d" % (n // 250, n % 250 + 1)


def make_pod(api, name, ip, labels=None, annotations=None, phase="Running", hostname=None,
             ns=NS):
    meta = {"name": name, "labels": labels or {}}
    if annotations:
        meta["annotations"] = annotations
    spec = {"containers": [{"name": "jax", "image": "jax"}]}
    if hostname:
        spec["hostname"] = hostname
    api.create("pods", {"metadata": meta, "spec": spec}, ns=ns)
    status = {"phase": phase}
    if ip:
        status["podIP"] = ip
    api.patch("pods", name, {"status": status}, ns=ns, subresource="status")


def wait_until(pred, timeout, step=0.05):
    deadline = time.time() + timeout * SLOW
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


class OperatorTest(unittest.TestCase):
    """A fake API server and fake profilers shared by a class; each class
    starts its operator(s) with the flags it needs."""

    operator_args = ()

    @classmethod
    def setUpClass(cls):
        cls.crd, cls.schema = crdcheck.load_schema()
        cls.tmp = tempfile.mkdtemp(prefix="mld-optest-")
        cls.api = FakeApiServer()
        cls.api.register_ml_crds()
        cls.api.bookmark_interval = 0.5
        cls.api.start()
        cls.kubeconfig = os.path.join(cls.tmp, "kubeconfig")
        cls.api.kubeconfig(cls.kubeconfig)
        cls.api.create(("", "v1", "namespaces"), {"metadata": {"name": NS}})
        cls.port = free_port()
        cls.prof = FakeProfiler(cls.port, os.path.join(cls.tmp, "gcs"), slow_extra=6)
        cls.prof.start()
        cls.op = None
        if cls.operator_args is not None:
            cls.op = Operator(cls.kubeconfig, *cls.operator_args).start()

    @classmethod
    def tearDownClass(cls):
        if cls.op:
            cls.op.stop()
        cls.prof.stop()
        cls.api.stop()

    # ---------- helpers ----------

    def pods(self, prefix, n, mode="ok", labels=None, **kw):
        names = []
        for i in range(n):
            name = "%s-%d" % (prefix, i)
            ip = next_ip()
            self.prof.add_pod(name, ip, hostname=kw.get("hostname"), mode=mode)
            make_pod(self.api, name, ip, labels=labels, **kw)
            names.append(name)
        return names

    def pods_cached(self, timeout=10):
        """Until the operator's pod cache holds every pod the API server has: a workloadRef
        capture targets the pods of the workload in that cache (a pod created a moment
        before may still be on its way there), within a watch event's delivery."""
        want = len(self.api.objects("", "v1", "pods"))

        def cached():
            for line in self.op.metrics().splitlines():
                if line.startswith('mldiagnostics_operator_cache_objects{resource="pods"} '):
                    return float(line.split()[1]) >= want
            return False
        self.assertTrue(wait_until(cached, timeout), "the operator never cached %d pods" % want)

    def capture(self, name, ns=NS, **tc):
        spec = {"capturePort": self.port, "durationSeconds": 1, "podNamespace": ns,
                "profiler": "google_cloud_mldiagnostics",
                "storageLocation": os.path.join(self.tmp, "out", name)}
        spec.update(tc)
        spec = {k: v for k, v in spec.items() if v is not None}
        self.api.create(CONN, {"apiVersion": "diagon.gke.io/v1alpha1",
                               "kind": "MLDiagnosticsConnection", "metadata": {"name": name},
                               "spec": {"triggerCapture": spec}}, ns=ns)
        return spec

    def get(self, name, ns=NS):
        return self.api.get(CONN, name, ns=ns)

    def wait_phase(self, name, phases=("Succeeded", "Failed"), timeout=30, ns=NS):
        def done():
            o = self.get(name, ns)
            return o if o.get("status", {}).get("phase") in phases else None
        o = wait_until(done, timeout)
        self.assertIsNotNone(o, "%s never reached %s: %s\n%s" % (
            name, phases, self.get(name, ns).get("status"), self.op.logs()[-3000:] if self.op
            else ""))
        # what the operator writes must pass the CRD's schema untouched
        errors = crdcheck.validate(o["status"], self.schema["properties"]["status"], "status")
        self.assertEqual(errors, [], o["status"])
        return o

    def events(self, name, ns=NS):
        return [e for e in self.api.objects("", "v1", "events", ns=ns)
                if e["involvedObject"]["name"] == name]


class CaptureTest(OperatorTest):
    operator_args = ("--capture-max-retries=1", "--sidecar-timeout=5s", "--pod-ready-timeout=3s",
                     "--audit-interval=300ms", "-v", "3")

    def test_capture_over_several_pods_sends_the_exact_request(self):
        pods = self.pods("multi", 4)
        created = time.time_ns()
        spec = self.capture("multi", podName=",".join(pods), durationSeconds=2)
        o = self.wait_phase("multi")
        st = o["status"]
        self.assertEqual(st["phase"], "Succeeded", st)
        session = st["sessionId"]
        self.assertRegex(session, r"^\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d$")
        root = spec["storageLocation"] + "/plugins/profile"
        self.assertEqual(st["captureResult"], {"status": "Succeeded",
                                               "outputLocation": root + "/" + session})
        self.assertEqual(st["attempts"], 1)
        self.assertEqual(st["observedGeneration"], 1)
        for key in ("startTime", "completionTime"):
            self.assertRegex(st[key], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        starts = set()
        for pod in pods:
            reqs = self.prof.requests_for(pod)
            self.assertEqual(len(reqs), 1, reqs)
            r = reqs[0]
            self.assertEqual(r["duration_ms"], 2000)
            self.assertEqual(r["opts"]["duration_ms"], 2000)
            self.assertEqual(r["opts"]["version"], 1)
            self.assertEqual(r["opts"]["host_tracer_level"], 2)
            self.assertEqual(r["opts"]["device_tracer_level"], 1)
            self.assertEqual(r["opts"]["python_tracer_level"], 1)
            self.assertTrue(r["opts"]["include_dataset_ops"])
            self.assertEqual(r["max_events"], 1000000)
            self.assertEqual(r["repository_root"], root)
            self.assertEqual(r["session_id"], session)
            self.assertEqual(r["host_name"], pod)
            self.assertGreater(r["opts"]["start_timestamp_ns"], created)
            self.assertGreater(r["opts"]["start_timestamp_ns"], r["received_ns"],
                               "the common start is in the future when the RPC arrives")
            starts.add(r["opts"]["start_timestamp_ns"])
            # grpc-timeout: max(60 s, 2 x duration) + delay, capped by --sidecar-timeout=5s
            self.assertLessEqual(r["time_remaining"], 5.0)
            self.assertGreater(r["time_remaining"], 3.0)
            path = self.prof.output_path(root, session, pod)
            self.assertTrue(os.path.exists(path), path)
            self.assertEqual(r["outcome"], "OK")
        self.assertEqual(len(starts), 1, "one common start time")
        hosts = {h["pod"]: h for h in st["hosts"]}
        self.assertEqual(sorted(hosts), sorted(pods))
        for pod, h in hosts.items():
            self.assertEqual(h["phase"], "Succeeded")
            self.assertEqual(h["outputFile"], "%s/%s/%s.xplane.pb" % (root, session, pod))
        want = {"Pending", "Started", "Succeeded"}  # the last Event follows the status write
        self.assertTrue(wait_until(lambda: want <= {e["reason"] for e in self.events("multi")},
                                   5), self.events("multi"))
        conds = {c["type"]: c for c in st["conditions"]}
        self.assertEqual(conds["Complete"]["status"], "True")
        self.assertEqual(conds["Complete"]["reason"], "Succeeded")

    def test_the_profilers_options_reach_every_host(self):
        pods = self.pods("opts", 2)
        created = time.time_ns()
        self.capture("opts", podName=",".join(pods), durationSeconds=1,
                     options={"hostTracerLevel": 3, "deviceTracerLevel": 0,
                              "pythonTracerLevel": 0, "delayMs": 1500})
        st = self.wait_phase("opts")["status"]
        self.assertEqual(st["phase"], "Succeeded", st)
        for pod in pods:
            (r,) = self.prof.requests_for(pod)
            self.assertEqual((r["opts"]["host_tracer_level"], r["opts"]["device_tracer_level"],
                              r["opts"]["python_tracer_level"]), (3, 0, 0))
            self.assertEqual(r["opts"]["version"], 1, "else the profiler drops the levels")
            start = r["opts"]["start_timestamp_ns"]
            self.assertGreaterEqual(start - created, 1500 * 10**6, "delayMs moves the start")
            self.assertLess(start - created, 3500 * 10**6)

    def test_gcs_storage_location(self):
        pods = self.pods("gcs", 2)
        self.capture("gcs", podName=",".join(pods), storageLocation="gs://my-bucket/runs/r1/")
        st = self.wait_phase("gcs")["status"]
        self.assertEqual(st["phase"], "Succeeded", st)
        loc = "gs://my-bucket/runs/r1/plugins/profile/" + st["sessionId"]
        self.assertEqual(st["captureResult"]["outputLocation"], loc)
        for pod in pods:
            self.assertTrue(os.path.exists(self.prof.output_path(
                "gs://my-bucket/runs/r1/plugins/profile", st["sessionId"], pod)))

    def test_busy_down_slow_and_missing_pods_fail_naming_each(self):
        ok = self.pods("mix-ok", 1)
        busy = self.pods("mix-busy", 1, mode="busy")
        down = self.pods("mix-down", 1, mode="down")
        slow = self.pods("mix-slow", 1, mode="slow")
        self.capture("mix", podName=",".join(ok + busy + down + slow))
        st = self.wait_phase("mix", timeout=40)["status"]
        self.assertEqual(st["phase"], "Failed", st)
        err = st["captureResult"]["errorMessage"]
        self.assertIn("pod %s: INTERNAL: Another profiling session active." % busy[0], err)
        self.assertRegex(err, "pod %s: UNAVAILABLE: .*(refused|connect)" % down[0])
        self.assertRegex(err, "pod %s: (CANCELLED|DEADLINE_EXCEEDED)" % slow[0])
        self.assertNotIn(ok[0], err)
        self.assertEqual(st["message"], "3 of 4 hosts failed")
        hosts = {h["pod"]: h for h in st["hosts"]}
        self.assertEqual(hosts[ok[0]]["phase"], "Succeeded")
        self.assertEqual(hosts[busy[0]]["phase"], "Failed")
        self.assertIn("INTERNAL", hosts[busy[0]]["error"])
        self.assertFalse(os.path.exists(self.prof.output_path(
            st["captureResult"]["outputLocation"].rsplit("/", 1)[0], st["sessionId"], slow[0])),
            "a cancelled session saves nothing")
        # the Event follows the status write
        self.assertTrue(wait_until(lambda: "Failed" in [e["reason"] for e in self.events("mix")],
                                   5), self.events("mix"))

    def test_requests_wait_for_every_connection(self):
        """The messages of a capture leave together once every host is connected: a host
        whose connection hangs (its listener's accept queue is full, so the kernel drops
        the SYNs) holds the others' requests for up to 500 ms, then it is left behind."""
        ok = self.pods("hold-ok", 1)
        ip = next_ip()
        lst = socket.socket()
        lst.bind((ip, self.port))
        lst.listen(0)
        fillers = []
        for _ in range(2):  # fill the accept queue; never accepted
            f = socket.socket()
            f.setblocking(False)
            f.connect_ex((ip, self.port))
            fillers.append(f)
        time.sleep(0.1)
        make_pod(self.api, "hold-stuck", ip)
        try:
            self.capture("hold", podName=ok[0] + ",hold-stuck")
            st = self.wait_phase("hold", timeout=40)["status"]
        finally:
            for f in fillers:
                f.close()
            lst.close()
        self.assertEqual(st["phase"], "Failed", st)
        self.assertIn("pod hold-stuck: UNAVAILABLE", st["captureResult"]["errorMessage"])
        (req,) = [r for r in self.prof.requests if r["pod"] == ok[0]]
        # start_timestamp_ns = dispatch + 250 ms + 1 ms per 2 hosts (op_capture)
        dispatched = req["opts"]["start_timestamp_ns"] - 251 * 10**6
        held_ms = (req["received_ns"] - dispatched) / 1e6
        self.assertGreaterEqual(held_ms, 450, "the request left before the hold ended")

    def test_missing_pod_fails_at_once_without_rpcs(self):
        pods = self.pods("miss", 1)
        self.capture("miss", podName=pods[0] + ",no-such-pod")
        st = self.wait_phase("miss", timeout=10)["status"]
        self.assertEqual(st["phase"], "Failed")
        self.assertIn("no-such-pod", st["message"])
        self.assertIn("not found", st["captureResult"]["errorMessage"])
        self.assertEqual(self.prof.requests_for(pods[0]), [])

    def test_pod_not_running_waits_then_fails(self):
        self.prof.add_pod("late-0", next_ip())
        make_pod(self.api, "late-0", None, phase="Pending")
        self.capture("late", podName="late-0")
        st = self.wait_phase("late", ("Pending",), timeout=10)["status"]
        pending = wait_until(lambda: "late-0 (Pending)" in self.get("late")["status"]["message"],
                             10)
        self.assertTrue(pending, self.get("late")["status"])
        st = self.wait_phase("late", timeout=15)["status"]
        self.assertEqual(st["phase"], "Failed")
        self.assertIn("not ready after 3s", st["message"])
        self.assertIn("late-0 (Pending)", st["message"])

    def test_pod_becoming_ready_is_captured(self):
        ip = next_ip()
        self.prof.add_pod("soon-0", ip)
        make_pod(self.api, "soon-0", None, phase="Pending")
        self.capture("soon", podName="soon-0")
        self.wait_phase("soon", ("Pending",), timeout=10)
        self.api.patch("pods", "soon-0", {"status": {"phase": "Running", "podIP": ip}}, ns=NS,
                       subresource="status")
        st = self.wait_phase("soon")["status"]
        self.assertEqual(st["phase"], "Succeeded", st)

    def test_unavailable_is_retried(self):
        pods = self.pods("flaky", 1, mode="unavailable:1")
        self.capture("flaky", podName=pods[0])
        st = self.wait_phase("flaky", timeout=30)["status"]
        self.assertEqual(st["phase"], "Succeeded", st)
        self.assertEqual([r["outcome"] for r in self.prof.requests_for(pods[0])],
                         ["UNAVAILABLE", "OK"])

    def test_unavailable_past_the_retries_fails(self):
        pods = self.pods("gone", 1, mode="unavailable:5")
        self.capture("gone", podName=pods[0])
        st = self.wait_phase("gone", timeout=30)["status"]
        self.assertEqual(st["phase"], "Failed", st)
        self.assertIn("pod %s: UNAVAILABLE" % pods[0], st["captureResult"]["errorMessage"])
        self.assertIn("after 2 attempts", st["captureResult"]["errorMessage"])
        self.assertEqual(len(self.prof.requests_for(pods[0])), 2)

    def test_invalid_specs_fail_naming_the_field_without_rpcs(self):
        pods = self.pods("inv", 1)
        before = len(self.prof.requests)
        cases = {
            "port-zero": ({"capturePort": 0}, r"capturePort: must be between 1 and 65535"),
            "port-big": ({"capturePort": 70000}, r"capturePort"),
            "port-text": ({"capturePort": "x"}, r"capturePort: must be an integer"),
            "dur-zero": ({"durationSeconds": 0}, r"durationSeconds: must be between 1"),
            "dur-long": ({"durationSeconds": 7200},
                         r"durationSeconds: 7200s exceeds --max-capture-duration \(1h0m0s\)"),
            "no-storage": ({"storageLocation": None}, r"storageLocation: required"),
            "rel-storage": ({"storageLocation": "bucket/x"}, r"storageLocation: must be gs://"),
            "dotdot": ({"storageLocation": "/data/../etc"}, r"storageLocation"),
            "bad-bucket": ({"storageLocation": "gs://B/x"}, r"storageLocation"),
            "profiler": ({"profiler": "perf"}, r"profiler: must be google_cloud_mldiagnostics"),
            "no-target": ({"podName": None}, r"podName: required"),
            "bad-pod": ({"podName": pods[0] + ",Bad_Name"}, r"podName: \"Bad_Name\""),
            "empty-pod": ({"podName": pods[0] + ",,x"}, r"podName: empty pod name"),
            "cross-ns": ({"podName": pods[0], "podNamespace": "other"},
                         r"podNamespace: \"other\" differs .*--allow-cross-namespace"),
            "bad-kind": ({"podName": None, "workloadRef": {"kind": "Deployment", "name": "x"}},
                         r"workloadRef.kind: must be JobSet, LeaderWorkerSet, RayJob, TrainJob, "
                         r"PyTorchJob, Job \(batch.volcano.sh\) or MPIJob"),
            "both": ({"podName": pods[0], "workloadRef": {"kind": "JobSet", "name": "x"}},
                     r"set one of them, not both"),
        }
        for name, (change, _) in cases.items():
            tc = {"podName": pods[0]}
            tc.update(change)
            self.capture("inv-" + name, **tc)
        for name, (_, pattern) in cases.items():
            st = self.wait_phase("inv-" + name, timeout=10)["status"]
            self.assertEqual(st["phase"], "Failed", (name, st))
            self.assertRegex(st["message"], pattern, name)
            self.assertRegex(st["captureResult"]["errorMessage"], pattern, name)
            self.assertEqual(st["captureResult"]["status"], "Failed")
            conds = {c["type"]: c for c in st["conditions"]}
            self.assertEqual(conds["Valid"]["status"], "False", name)
        self.assertEqual(len(self.prof.requests), before, "no RPC for an invalid spec")
        self.assertTrue(wait_until(lambda: "Warning" in [e["type"] for e in
                                                         self.events("inv-port-zero")], 5))
        # a spec without triggerCapture at all
        self.api.create(CONN, {"apiVersion": "diagon.gke.io/v1alpha1",
                               "kind": "MLDiagnosticsConnection",
                               "metadata": {"name": "inv-empty"}, "spec": {}}, ns=NS)
        st = self.wait_phase("inv-empty", timeout=10)["status"]
        self.assertEqual(st["message"], "spec.triggerCapture: required")

    def test_workload_refs_target_their_pods(self):
        self.api.create(JOBSETS, {"metadata": {"name": "trainer"}, "spec": {}}, ns=NS)
        js = self.pods("trainer-w", 3, labels={"jobset.sigs.k8s.io/jobset-name": "trainer"})
        self.pods("other-w", 2, labels={"jobset.sigs.k8s.io/jobset-name": "other"})
        done = self.pods("trainer-old", 1, labels={"jobset.sigs.k8s.io/jobset-name": "trainer"},
                         phase="Succeeded")
        self.api.create(LWS, {"metadata": {"name": "serve"}, "spec": {}}, ns=NS)
        lws = self.pods("serve-w", 2, labels={"leaderworkerset.sigs.k8s.io/name": "serve"})
        self.api.create(RAYJOBS, {"metadata": {"name": "rl"}, "spec": {}}, ns=NS)
        self.api.patch(RAYJOBS, "rl", {"status": {"rayClusterName": "rl-raycluster-x1"}}, ns=NS,
                       subresource="status")
        ray = self.pods("rl-head", 2, labels={"ray.io/cluster": "rl-raycluster-x1"})
        self.pods_cached()
        for name, kind, expect in (("ref-js", "JobSet", js), ("ref-lws", "LeaderWorkerSet", lws),
                                   ("ref-ray", "RayJob", ray)):
            wl = {"JobSet": "trainer", "LeaderWorkerSet": "serve", "RayJob": "rl"}[kind]
            self.capture(name, podName=None, workloadRef={"kind": kind, "name": wl})
            st = self.wait_phase(name)["status"]
            self.assertEqual(st["phase"], "Succeeded", (name, st))
            self.assertEqual(sorted(h["pod"] for h in st["hosts"]), sorted(expect))
            for pod in expect:
                self.assertEqual(len(self.prof.requests_for(pod)), 1, pod)
        for pod in ["other-w-0", "other-w-1"] + done:
            self.assertEqual(self.prof.requests_for(pod), [], pod)
        self.capture("ref-missing", podName=None, workloadRef={"kind": "JobSet", "name": "nope"})
        st = self.wait_phase("ref-missing", timeout=10)["status"]
        self.assertEqual(st["phase"], "Failed")
        self.assertIn("JobSet ml/nope not found", st["message"])

    def test_kubeflow_workload_refs_target_their_pods(self):
        """A TrainJob's pods carry its JobSet's label (the JobSet has its name); a
        PyTorchJob's carry training.kubeflow.org/job-name with operator-name
        pytorchjob-controller (a TFJob's pods share the job-name key)."""
        self.api.create(TRAINJOBS, {"metadata": {"name": "tj"}, "spec": {}}, ns=NS)
        tj = self.pods("tj-node-0", 2, labels={"jobset.sigs.k8s.io/jobset-name": "tj",
                                               "trainer.kubeflow.org/trainjob-ancestor-step":
                                               "trainer"})
        self.api.create(PYTORCHJOBS, {"metadata": {"name": "pt"}, "spec": {}}, ns=NS)
        kf = {"training.kubeflow.org/job-name": "pt",
              "training.kubeflow.org/operator-name": "pytorchjob-controller"}
        pt = self.pods("pt-master", 1, labels=kf) + self.pods("pt-worker", 2, labels=kf)
        tf = self.pods("pt-tf", 1, labels=dict(kf, **{
            "training.kubeflow.org/operator-name": "tfjob-controller"}))
        self.pods_cached()
        self.captures_of_refs((("ref-tj", {"kind": "TrainJob", "name": "tj"}, tj),
                               ("ref-pt", {"kind": "PyTorchJob", "name": "pt"}, pt)))
        self.assertEqual(self.prof.requests_for(tf[0]), [])

    def test_hosts_capture_some_of_a_jobsets_pods(self):
        """spec.triggerCapture.hosts: the JobSet controller's labels give each pod
        its replicated job and index; the capture talks to exactly the pods
        chosen and says how many of how many."""
        js = {"metadata": {"name": "mix"}, "spec": {"replicatedJobs": [
            {"name": "driver", "replicas": 1, "template": {"spec": {
                "parallelism": 1, "completionMode": "Indexed",
                "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}},
            {"name": "workers", "replicas": 2, "template": {"spec": {
                "parallelism": 2, "completionMode": "Indexed",
                "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}}]}}
        self.api.create(JOBSETS, js, ns=NS)
        names = []
        for pod in controllers.jobset_pods(js, NS):
            m = pod["metadata"]
            name = "%s%d-%s" % (m["generateName"], len(names), m["labels"][
                "batch.kubernetes.io/job-completion-index"])
            ip = next_ip()
            self.prof.add_pod(name, ip)
            make_pod(self.api, name, ip, labels=m["labels"])
            names.append(name)
        self.pods_cached()
        # index order: driver, workers-0 (two pods), workers-1 (two pods)
        self.capture("some", podName=None, workloadRef={"kind": "JobSet", "name": "mix"},
                     hosts={"replicatedJobs": ["workers"], "indices": "2-4", "max": 2})
        st = self.wait_phase("some")["status"]
        self.assertEqual(st["phase"], "Succeeded", st)
        want = names[2:4]
        self.assertEqual(sorted(h["pod"] for h in st["hosts"]), sorted(want))
        self.assertIn("captured 2 of 5 hosts", st["message"])
        for name in names:
            self.assertEqual(len(self.prof.requests_for(name)), name in want, name)

    def captures_of_refs(self, cases):
        """Each (name, workloadRef, pods): the capture succeeds on exactly those pods."""
        for name, ref, expect in cases:
            self.capture(name, podName=None, workloadRef=ref)
            st = self.wait_phase(name)["status"]
            self.assertEqual(st["phase"], "Succeeded", (name, st))
            self.assertEqual(sorted(h["pod"] for h in st["hosts"]), sorted(expect))

    def test_volcano_and_mpijob_workload_refs_by_group(self):
        """workloadRef names a kind by its group: Volcano's Job (by apiVersion, or
        by its name alone, the one workloadRef kind named Job) captures the pods
        labelled volcano.sh/job-name, never a batch Job's; MPIJob captures its
        launcher and workers (operator-name mpi-operator), never a PyTorchJob's."""
        self.api.create(VOLCANO_JOBS, {"metadata": {"name": "vc"}, "spec": {"tasks": []}}, ns=NS)
        vc = self.pods("vc-worker", 2, labels={"volcano.sh/job-name": "vc"})
        batch = self.pods("vc-batch", 1, labels={"batch.kubernetes.io/job-name": "vc"})
        self.api.create(MPIJOBS, {"metadata": {"name": "mpi"}, "spec": {}}, ns=NS)
        mpi = {"training.kubeflow.org/job-name": "mpi",
               "training.kubeflow.org/operator-name": "mpi-operator"}
        mp = self.pods("mpi-launcher", 1, labels=mpi) + self.pods("mpi-worker", 2, labels=mpi)
        pt = self.pods("mpi-pt", 1, labels=dict(mpi, **{
            "training.kubeflow.org/operator-name": "pytorchjob-controller"}))
        self.pods_cached()
        self.captures_of_refs((
            ("ref-vc", {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "vc"},
             vc),
            ("ref-vc-name", {"kind": "Job", "name": "vc"}, vc),
            ("ref-mpi", {"kind": "MPIJob", "name": "mpi"}, mp)))
        self.assertEqual(self.prof.requests_for(batch[0]), [])
        self.assertEqual(self.prof.requests_for(pt[0]), [])

    def test_one_capture_per_pod_at_a_time(self):
        pods = self.pods("shared", 2)
        self.capture("first", podName=",".join(pods), durationSeconds=2)
        self.wait_phase("first", ("Running",), timeout=10)
        self.capture("second", podName=pods[1])
        waiting = wait_until(lambda: "busy" in self.get("second").get("status", {}).get(
            "message", ""), 10)
        self.assertTrue(waiting, self.get("second").get("status"))
        self.assertEqual(self.get("second")["status"]["phase"], "Pending")
        self.assertEqual(self.wait_phase("first")["status"]["phase"], "Succeeded")
        self.assertEqual(self.wait_phase("second")["status"]["phase"], "Succeeded")
        outcomes = [r["outcome"] for r in self.prof.requests_for(pods[1])]
        self.assertEqual(outcomes, ["OK", "OK"], "never two sessions at once on one pod")

    def test_deleting_a_running_capture_cancels_its_rpcs(self):
        pods = self.pods("del", 2)
        self.capture("del", podName=",".join(pods), durationSeconds=3)
        o = self.wait_phase("del", ("Running",), timeout=10)
        self.assertTrue(self.prof.wait_requests(len(self.prof.requests), 5))
        wait_until(lambda: all(self.prof.requests_for(p) for p in pods), 5)
        self.api.delete(CONN, "del", ns=NS)
        cancelled = wait_until(lambda: all(
            self.prof.requests_for(p)[0]["outcome"] == "CLIENT_CANCELLED" for p in pods), 10)
        self.assertTrue(cancelled, [self.prof.requests_for(p) for p in pods])
        for p in pods:
            self.assertFalse(os.path.exists(self.prof.output_path(
                o["spec"]["triggerCapture"]["storageLocation"] + "/plugins/profile",
                o["status"]["sessionId"], p)))

    def test_terminal_resources_are_not_rerun(self):
        pods = self.pods("once", 1)
        self.capture("once", podName=pods[0])
        self.assertEqual(self.wait_phase("once")["status"]["phase"], "Succeeded")
        o = self.get("once")
        o["metadata"].setdefault("labels", {})["touched"] = "yes"
        self.api.update(CONN, o, ns=NS)
        time.sleep(1)
        self.assertEqual(len(self.prof.requests_for(pods[0])), 1)

    def test_running_without_attempts_left_fails_with_history(self):
        pods = self.pods("spent", 1)
        # a capture some earlier operator left Running after its last attempt
        self.op.stop()
        try:
            self.capture("spent", podName=pods[0])
            self.api.patch(CONN, "spent", {"status": {
                "phase": "Running", "sessionId": "2026_01_02_03_04_05", "attempts": 2,
                "message": "interrupted: the operator shut down during attempt 2"}},
                ns=NS, subresource="status")
        finally:
            type(self).op = Operator(self.kubeconfig, *self.operator_args).start()
        st = self.wait_phase("spent", timeout=10)["status"]
        self.assertEqual(st["phase"], "Failed")
        self.assertIn("interrupted 2 times, no attempts left", st["message"])
        self.assertIn("last: interrupted: the operator shut down during attempt 2", st["message"])
        self.assertEqual(self.prof.requests_for(pods[0]), [])

    def test_metrics(self):
        pods = self.pods("met", 1)
        self.capture("met", podName=pods[0])
        self.wait_phase("met")
        text = self.op.metrics()
        for series in ('mldiagnostics_operator_captures_total{outcome="succeeded"}',
                       "mldiagnostics_operator_capture_duration_seconds_count",
                       "mldiagnostics_operator_rpc_duration_seconds_bucket",
                       'mldiagnostics_operator_rpcs_total{code="OK"}',
                       "mldiagnostics_operator_workqueue_depth",
                       'mldiagnostics_operator_watch_restarts_total{resource="pods"}',
                       'mldiagnostics_operator_cache_objects{resource="pods"}',
                       "mldiagnostics_operator_leader 1"):
            self.assertIn(series, text)
        self.assertEqual(self.op.get("/healthz")[0], 200)
        self.assertEqual(self.op.get("/readyz")[0], 200)
        self.assertEqual(self.op.get("/nope")[0], 404)

    def test_audit_reports_uninjected_pods_of_opted_in_workloads(self):
        self.api.create(JOBSETS, {"metadata": {"name": "audited",
                                               "labels": {"managed-mldiagnostics-gke": "true"}},
                                  "spec": {}}, ns=NS)
        label = {"jobset.sigs.k8s.io/jobset-name": "audited"}
        make_pod(self.api, "audited-0", next_ip(), labels=label,
                 annotations={"diagon.gke.io/injection": "0.1.0;abc"})
        make_pod(self.api, "audited-1", next_ip(), labels=label)
        make_pod(self.api, "audited-2", next_ip(), labels=label)
        make_pod(self.api, "audited-out", next_ip(), labels={**label,
                                                            "managed-mldiagnostics-gke": "false"})
        ev = wait_until(lambda: [e for e in self.events("audited")
                                 if e["reason"] == "PodsNotInjected"], 10)
        self.assertTrue(ev, self.op.logs()[-2000:])
        self.assertEqual(ev[0]["type"], "Warning")
        self.assertEqual(ev[0]["involvedObject"]["kind"], "JobSet")
        self.assertIn("2 pods of JobSet ml/audited were admitted without ML Diagnostics "
                      "injection", ev[0]["message"])
        self.assertIn("audited-1", ev[0]["message"])
        self.assertNotIn("audited-out", ev[0]["message"])
        self.assertIn('mldiagnostics_operator_uninjected_pods{namespace="ml",kind="JobSet",'
                      'name="audited"} 2', self.op.metrics())
        time.sleep(1)  # no repeat while the count stays
        self.assertEqual(len([e for e in self.events("audited")
                              if e["reason"] == "PodsNotInjected"]), 1)


    def test_audit_covers_the_namespace_label(self):
        """DESIGN §4.4: every opt-in path of §3.3, the namespace label
        included (a JobSet without its own label in a labelled namespace)."""
        ns = "ml-labelled"
        self.api.create(("", "v1", "namespaces"),
                        {"metadata": {"name": ns, "labels": {"managed-mldiagnostics-gke": "true"}}})
        self.api.create(JOBSETS, {"metadata": {"name": "by-ns"}, "spec": {}}, ns=ns)
        label = {"jobset.sigs.k8s.io/jobset-name": "by-ns"}
        make_pod(self.api, "by-ns-0", next_ip(), labels=label, ns=ns)
        ev = wait_until(lambda: [e for e in self.events("by-ns", ns=ns)
                                 if e["reason"] == "PodsNotInjected"], 10)
        self.assertTrue(ev, self.op.logs()[-2000:])
        self.assertIn("1 pod of JobSet ml-labelled/by-ns was admitted without ML Diagnostics "
                      "injection", ev[0]["message"])

    def test_audit_warns_of_an_identity_the_sdk_refuses(self):
        """DESIGN §3.5/§4.4: an injected pod whose identity lacks a field the
        SDK requires (here: a --standalone webhook wrote no creation
        timestamp) gets a Warning Event on its workload naming the field and
        saying the SDK will refuse to start."""
        self.api.create(JOBSETS, {"metadata": {"name": "standalone",
                                               "labels": {"managed-mldiagnostics-gke": "true"}},
                                  "spec": {}}, ns=NS)
        ident = ('{"metadata.name":"standalone","metadata.kind":"JobSet",'
                 '"clustername":"projects/p/locations/l/clusters/prod","namespace":"ml"}')
        for i in range(2):
            make_pod(self.api, "standalone-%d" % i, next_ip(),
                     labels={"jobset.sigs.k8s.io/jobset-name": "standalone"},
                     annotations={"diagon.gke.io/injection": "0.1.0;abc",
                                  "diagon.gke.io/identifier": ident,
                                  "diagon.gke.io/metadata": '{"parent-workload":"Job/x"}'})
        ev = wait_until(lambda: [e for e in self.events("standalone")
                                 if e["reason"] == "IncompleteIdentity"
                                 and e["message"].startswith("2 pods")], 10)
        self.assertTrue(ev, self.op.logs()[-2000:])
        self.assertEqual(ev[0]["type"], "Warning")
        self.assertEqual((ev[0]["involvedObject"]["kind"], ev[0]["involvedObject"]["apiVersion"]),
                         ("JobSet", "jobset.x-k8s.io/v1alpha2"))
        self.assertIn("2 pods of JobSet ml/standalone were injected with an identity that lacks "
                      "creation-timestamp", ev[0]["message"])
        self.assertIn("the google-cloud-mldiagnostics SDK will refuse to start a run in them",
                      ev[0]["message"])
        self.assertIn('mldiagnostics_operator_incomplete_identity_pods{namespace="ml",'
                      'kind="JobSet",name="standalone"} 2', self.op.metrics())
        self.assertFalse([e for e in self.events("standalone")
                          if e["reason"] == "PodsNotInjected"], "they were injected")


class HostnameOverrideTest(OperatorTest):
    operator_args = ("--disable-hostname-override",)

    def test_host_name_is_the_address_as_xprof_names_it(self):
        """Not the pod name, and never empty: JAX's server writes
        <host_name>.xplane.pb verbatim, so an empty name would make every
        host of a capture write the same ".xplane.pb" (found by the end-to-end
        tier against jax 0.10). xprof's own client sends "<ip>:<port>"."""
        self.prof.add_pod("hn-0", "127.3.0.1", hostname="trainer-host-0")
        make_pod(self.api, "hn-0", "127.3.0.1", hostname="trainer-host-0")
        spec = self.capture("hn", podName="hn-0")
        st = self.wait_phase("hn")["status"]
        self.assertEqual(st["phase"], "Succeeded", st)
        r = self.prof.requests_for("hn-0")[0]
        self.assertEqual(r["host_name"], "127.3.0.1:%d" % self.prof.port)
        root = spec["storageLocation"] + "/plugins/profile"
        stem = "127.3.0.1_%d" % self.prof.port
        self.assertTrue(os.path.exists(self.prof.output_path(root, st["sessionId"], stem)))
        self.assertEqual(st["hosts"][0]["outputFile"],
                         "%s/%s/%s.xplane.pb" % (root, st["sessionId"], stem))


class CrossNamespaceTest(OperatorTest):
    operator_args = ("--allow-cross-namespace",)

    def test_allowed_with_the_flag(self):
        self.api.create(("", "v1", "namespaces"), {"metadata": {"name": "team-b"}})
        self.prof.add_pod("xns-0", "127.3.1.1")
        make_pod(self.api, "xns-0", "127.3.1.1", ns="team-b")
        self.capture("xns", podName="xns-0", podNamespace="team-b")
        self.assertEqual(self.wait_phase("xns")["status"]["phase"], "Succeeded")


class SidecarTimeoutCase(OperatorTest):
    """DESIGN §4.2/§4.3 (issue 12, behaviour 5): the RPC deadline is capped by
    --sidecar-timeout and a profiler cut short saves nothing, so a capture whose
    duration plus start delay does not fit can never succeed: Failed at once,
    without an RPC, naming durationSeconds and --sidecar-timeout with both values."""
    operator_args = None

    def assert_refused(self, name, pods, pattern):
        t0 = time.time()
        st = self.wait_phase(name, timeout=10)["status"]
        self.assertLess(time.time() - t0, 10 * SLOW)
        self.assertEqual(st["phase"], "Failed", st)
        self.assertRegex(st["message"], pattern)
        self.assertRegex(st["captureResult"]["errorMessage"], pattern)
        conds = {c["type"]: c for c in st["conditions"]}
        self.assertEqual((conds["Valid"]["status"], conds["Valid"]["reason"]),
                         ("False", "InvalidSpec"))
        for pod in pods:
            self.assertEqual(self.prof.requests_for(pod), [], "no RPC for a doomed capture")
        self.assertTrue(wait_until(lambda: "InvalidSpec" in [e["reason"] for e in
                                                             self.events(name)], 5))

    def assert_dispatched(self, name, pod, duration):
        self.wait_phase(name, ("Running",), timeout=10)
        self.assertTrue(wait_until(lambda: self.prof.requests_for(pod), 5))
        r = self.prof.requests_for(pod)[0]
        self.assertEqual(r["duration_ms"], duration * 1000)
        self.api.delete(CONN, name, ns=NS)  # cancels it
        return r


class SidecarTimeoutTest(SidecarTimeoutCase):
    """The chart's default, --sidecar-timeout=5m."""
    operator_args = ("--sidecar-timeout=5m",)

    def test_ten_minutes_in_five_fails_at_once(self):
        pods = self.pods("ten", 2)
        self.capture("ten", podName=",".join(pods), durationSeconds=600)
        self.assert_refused("ten", pods, r"^spec\.triggerCapture\.durationSeconds: 600s plus the "
                            r"251ms start delay exceeds --sidecar-timeout \(5m0s\)")

    def test_what_fits_is_dispatched(self):
        pods = self.pods("fits", 1)
        self.capture("fits", podName=pods[0], durationSeconds=299)
        r = self.assert_dispatched("fits", pods[0], 299)
        self.assertLessEqual(r["time_remaining"], 300, "the deadline is capped by the timeout")


class SidecarTimeoutHostsTest(SidecarTimeoutCase):
    """The start delay grows with the hosts (250 ms + 1 ms per 2): a workloadRef's
    count is known only once its pods are resolved, and checked then."""
    operator_args = ("--sidecar-timeout=2251ms",)

    def test_a_workload_counts_its_pods(self):
        self.api.create(JOBSETS, {"metadata": {"name": "edge"}, "spec": {}}, ns=NS)
        pods = self.pods("edge-w", 4, labels={"jobset.sigs.k8s.io/jobset-name": "edge"})
        self.pods_cached()
        self.capture("edge", podName=None, workloadRef={"kind": "JobSet", "name": "edge"},
                     durationSeconds=2)  # 2 s + 250 ms fit, 2 s + 252 ms do not
        self.assert_refused("edge", pods, r"^spec\.triggerCapture\.durationSeconds: 2s plus the "
                            r"252ms start delay exceeds --sidecar-timeout \(2\.251s\)")


class SeedSidecarTimeoutTest(SidecarTimeoutCase):
    """The seed's --sidecar-timeout=65m, with a --max-capture-duration that lets
    longer captures through to this rule."""
    operator_args = ("--sidecar-timeout=65m", "--max-capture-duration=2h")

    def test_sixty_five_minutes_and_more_fail_at_once(self):
        pods = self.pods("long", 1)
        self.capture("long", podName=pods[0], durationSeconds=3900)
        self.assert_refused("long", pods, r"^spec\.triggerCapture\.durationSeconds: 3900s plus "
                            r"the 250ms start delay exceeds --sidecar-timeout \(1h5m0s\)")

    def test_an_hour_is_dispatched(self):
        pods = self.pods("hour", 1)
        self.capture("hour", podName=pods[0], durationSeconds=3600)
        self.assert_dispatched("hour", pods[0], 3600)


class FlagsTest(unittest.TestCase):
    def run_op(self, *args):
        import subprocess
        from harness import OPERATOR
        return subprocess.run([OPERATOR, *args], capture_output=True, timeout=30 * SLOW)

    def test_unknown_flag_is_named(self):
        r = self.run_op("--no-such-flag")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--no-such-flag", r.stderr)

    def test_bad_duration_is_named(self):
        r = self.run_op("--sidecar-timeout=5 minutes")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--sidecar-timeout", r.stderr)

    def test_go_syntax_and_help(self):
        r = self.run_op("--help")
        self.assertEqual(r.returncode, 0)
        for flag in (b"--leader-elect", b"--health-probe-bind-address", b"--metrics-bind-address",
                     b"--sidecar-timeout", b"--disable-hostname-override", b"--kubeconfig",
                     b"--namespace", b"--capture-max-retries", b"--max-capture-duration",
                     b"--allow-cross-namespace", b"--leader-election-namespace",
                     b"--leader-election-id"):
            self.assertIn(flag, r.stdout)
        r = self.run_op("version")
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"mldiagnostics-operator", r.stdout)

    def test_bad_bind_address(self):
        r = self.run_op("--metrics-bind-address=nope")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--metrics-bind-address", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
