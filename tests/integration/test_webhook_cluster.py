"""The webhook against the fake API server (tests/fakes/fake_apiserver.py):
--kubeconfig pointing at it, workloads created there as the real
controllers create them, every precedence rule and owner chain of DESIGN
§3.3–§3.5 end to end, the run identity shared by a workload's pods, zero
API calls in steady state, one GET for a burst of misses, and the caches
converging through dropped watches, 410s, 429 bursts and a restart while
admissions keep answering within the budget."""
import concurrent.futures
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "fakes"))
import controllers  # noqa: E402
import podcheck  # noqa: E402
from fake_apiserver import FakeApiServer  # noqa: E402
from harness import SLOW, Webhook  # noqa: E402

CLUSTER = "projects/p/locations/us-central2/clusters/v5p-pool"
LABEL = "managed-mldiagnostics-gke"
JOBSETS = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
LWS = ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
RAYJOBS = ("ray.io", "v1", "rayjobs")
RAYCLUSTERS = ("ray.io", "v1", "rayclusters")
TRAINJOBS = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")
PYTORCHJOBS = ("kubeflow.org", "v1", "pytorchjobs")
MPIJOBS = ("kubeflow.org", "v2beta1", "mpijobs")
VOLCANO_JOBS = ("batch.volcano.sh", "v1alpha1", "jobs")
JOBS = ("batch", "v1", "jobs")
DEPLOYMENTS = ("apps", "v1", "deployments")
# The longest a dropped watch of the webhook takes to return, from the product's timers
# (libk8s/kube/k8s_watch.h): one backoff at its cap (30 s) and one list request (60 s timeout).
WATCH_RETURN_S = 30 + 60


def env_of(pod, i=0):
    return {e["name"]: e for e in pod["spec"]["containers"][i].get("env", [])}


def template(labels=None, annotations=None):
    meta = {}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": {"containers": [{"name": "main", "image": "jax"}]}}


def rayjob(name, labels):
    """A RayJob with a head and one worker group, as users write it."""
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": name, "labels": labels},
            "spec": {"entrypoint": "python x.py", "rayClusterSpec": {
                "headGroupSpec": {"template": template()},
                "workerGroupSpecs": [{"groupName": "g", "replicas": 1,
                                      "template": template()}]}}}


class Cluster(unittest.TestCase):
    """One fake API server and one webhook for the whole class."""

    not_installed = ()  # CRDs (group, version, plural) absent when the webhook starts

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mld-cluster-")
        cls.api = FakeApiServer()
        cls.api.register_ml_crds()
        for crd in cls.not_installed:
            cls.api.unregister(*crd)
        cls.api.bookmark_interval = 0.5
        cls.api.start()
        cls.kubeconfig = os.path.join(cls.tmp, "kubeconfig")
        cls.api.kubeconfig(cls.kubeconfig)
        cls.wh = Webhook("--kubeconfig", cls.kubeconfig, "--cluster-name", CLUSTER,
                         standalone=False).__enter__()
        cls.wait_ready(cls.wh)

    @classmethod
    def tearDownClass(cls):
        cls.wh.__exit__(None, None, None)
        cls.api.stop()

    @staticmethod
    def wait_ready(wh, timeout=20):
        deadline = time.time() + timeout * SLOW
        while time.time() < deadline:
            if wh.request("GET", "/readyz")[0] == 200:
                return
            time.sleep(0.05)
        raise AssertionError("webhook never ready:\n" + wh.logs())

    # ---- helpers ----

    def namespace(self, name, labels=None, annotations=None):
        meta = {"name": name}
        if labels:
            meta["labels"] = labels
        if annotations:
            meta["annotations"] = annotations
        self.api.create(("", "v1", "namespaces"), {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": meta})
        return name

    def create(self, gvr, ns, obj):
        return self.api.create(gvr, obj, ns=ns)

    def admit(self, pod, ns):
        t0 = time.time()
        doc, patch = self.wh.review(controllers.review(pod, ns))
        self.assertLess(time.time() - t0, 2.5 * SLOW, "answered within the budget")
        resp = doc["response"]
        self.assertTrue(resp["allowed"])
        return resp, patch

    def injected(self, pod, ns):
        resp, patch = self.admit(pod, ns)
        self.assertIsNotNone(patch, "expected injection: %s" % resp)
        out = podcheck.apply(pod, patch)
        self.assertEqual([p for p in podcheck.problems(out) if p not in podcheck.problems(pod)], [])
        return out, resp

    def skipped(self, pod, ns):
        resp, patch = self.admit(pod, ns)
        self.assertIsNone(patch, "expected no injection: %s" % resp)
        return resp

    def identity(self, out):
        ann = out["metadata"]["annotations"]
        return (json.loads(ann["diagon.gke.io/identifier"]),
                json.loads(ann["diagon.gke.io/metadata"]))

    def until(self, fn, timeout=15):
        deadline = time.time() + timeout * SLOW
        while True:
            try:
                return fn()
            except AssertionError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)


class PrecedenceTest(Cluster):
    def jobset(self, ns, name, labels=None, pod_labels=None, pod_annotations=None):
        js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": name, "labels": labels or {}},
              "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
                  "parallelism": 2, "template": template(pod_labels, pod_annotations)}}}]}}
        self.create(JOBSETS, ns, js)
        return controllers.jobset_pods(js, ns)

    def test_namespace_label_covers_ml_kinds_only(self):
        ns = self.namespace("team-ns", labels={LABEL: "true"})
        pod = self.until(lambda: self.jobset(ns, "js1")[0])
        out, _ = self.until(lambda: self.injected(pod, ns))
        ident, meta = self.identity(out)
        self.assertEqual(ident["metadata.kind"], "JobSet")
        self.assertIn("creation-timestamp", meta)
        dep = {"metadata": {"name": "web"}, "spec": {"template": template()}}
        self.create(DEPLOYMENTS, ns, {"apiVersion": "apps/v1", "kind": "Deployment", **dep})
        self.skipped(controllers.deployment_pod(dep, ns), ns)
        bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": ns},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}
        self.skipped(bare, ns)

    def test_workload_label_and_opt_outs(self):
        ns = self.namespace("plain-ns")
        pods = self.jobset(ns, "opted", labels={LABEL: "true"})
        out, resp = self.until(lambda: self.injected(pods[0], ns))
        self.assertNotIn("warnings", resp, "everything known: no warning")
        self.assertIn(LABEL + "=true", self.identity(out)[1]["associated-labels"])
        # workload false beats namespace true
        ns2 = self.namespace("labelled-ns", labels={LABEL: "true"})
        no = self.jobset(ns2, "out", labels={LABEL: "false"})
        self.until(lambda: self.skipped(no[0], ns2))
        # pod label false beats workload true; pod annotation false too
        yes = self.jobset(ns, "yes", labels={LABEL: "true"}, pod_labels={LABEL: "false"})
        self.until(lambda: self.skipped(yes[0], ns))
        ann = self.jobset(ns, "ann", labels={LABEL: "true"}, pod_annotations={LABEL: "false"})
        self.until(lambda: self.skipped(ann[0], ns))
        # nothing anywhere
        self.skipped(self.jobset(ns, "none")[0], ns)

    def test_two_pods_share_identity_and_recreation_changes_it(self):
        ns = self.namespace("ident-ns")
        pods = self.jobset(ns, "train", labels={LABEL: "true", "team": "a", "app": "llm"})
        outs = [self.until(lambda p=p: self.injected(p, ns))[0] for p in pods]
        ids = {env_of(o)["GKE_DIAGON_IDENTIFIER"]["value"] for o in outs}
        self.assertEqual(len(ids), 1, "byte-identical identifier")
        metas = [self.identity(o)[1] for o in outs]
        self.assertEqual(len({m["creation-timestamp"] for m in metas}), 1)
        self.assertEqual(metas[0]["associated-labels"],
                         "app=llm,%s=true,team=a" % LABEL, "sorted by key")
        first = metas[0]["creation-timestamp"]
        self.api.delete(JOBSETS, "train", ns=ns)
        time.sleep(1.1)  # creation timestamps have one-second precision
        pods = self.jobset(ns, "train", labels={LABEL: "true"})

        def recreated():
            out, _ = self.injected(pods[0], ns)
            self.assertNotEqual(self.identity(out)[1]["creation-timestamp"], first)
            return out
        self.until(recreated)


class OwnerChainTest(Cluster):
    def test_raycluster_pods_resolve_to_their_rayjob(self):
        ns = self.namespace("ray-ns")
        rj = rayjob("tune", {LABEL: "true", "exp": "7"})
        created = self.create(RAYJOBS, ns, rj)
        rc_name = controllers.raycluster_name(rj)
        self.create(RAYCLUSTERS, ns, {
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": rc_name, "labels": {LABEL: "true", "exp": "7"},
                         "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayJob",
                                              "name": "tune", "uid": created["metadata"]["uid"],
                                              "controller": True}]},
            "spec": rj["spec"]["rayClusterSpec"]})
        pods = controllers.rayjob_pods(rj, ns)
        for pod in pods[:-1]:
            out, resp = self.until(lambda p=pod: self.injected(p, ns))
            ident, meta = self.identity(out)
            self.assertEqual((ident["metadata.kind"], ident["metadata.name"]), ("RayJob", "tune"))
            self.assertEqual(meta["parent-workload"], "RayCluster/" + rc_name)
            self.assertEqual(meta["creation-timestamp"], created["metadata"]["creationTimestamp"])
            self.assertIn("k8s.rayjob.name=tune", env_of(out)["OTEL_RESOURCE_ATTRIBUTES"]["value"])

    def test_kubeflow_pods_name_their_trainjob_and_pytorchjob(self):
        """Pod -> Job -> JobSet -> TrainJob, and Pod -> PyTorchJob, opted in by the
        namespace label; the identity names the top-level Kubeflow workload."""
        ns = self.namespace("kf-ns", labels={LABEL: "true"})
        tj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
              "metadata": {"name": "ft", "labels": {"exp": "3"}},
              "spec": {"runtimeRef": {"name": "torch-distributed"}}}
        created = self.create(TRAINJOBS, ns, tj)
        js = controllers.trainjob_jobset(tj, created["metadata"]["uid"], template())
        self.create(JOBSETS, ns, js)
        for pod in controllers.jobset_pods(js, ns):
            out, _ = self.until(lambda p=pod: self.injected(p, ns))
            ident, meta = self.identity(out)
            self.assertEqual((ident["metadata.kind"], ident["metadata.name"]), ("TrainJob", "ft"))
            self.assertEqual(meta["creation-timestamp"], created["metadata"]["creationTimestamp"])
            self.assertEqual(meta["associated-labels"], "exp=3")
        pj = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt"},
              "spec": {"pytorchReplicaSpecs": {
                  "Master": {"replicas": 1, "template": template()},
                  "Worker": {"replicas": 2, "template": template()}}}}
        self.create(PYTORCHJOBS, ns, pj)
        for pod in controllers.pytorchjob_pods(pj, ns):
            out, _ = self.until(lambda p=pod: self.injected(p, ns))
            ident, meta = self.identity(out)
            self.assertEqual((ident["metadata.kind"], ident["metadata.name"]), ("PyTorchJob", "pt"))
            self.assertEqual(meta["parent-workload"], "PyTorchJob/pt")

    def test_volcano_job_is_not_batchs_job(self):
        """Kinds are (group, kind): a Volcano Job's pods (owned by
        batch.volcano.sh/v1alpha1 Job "train") take the Volcano Job's identity,
        though a batch/v1 Job "train" that opts out sits beside it."""
        ns = self.namespace("vc-ns", labels={LABEL: "true"})
        vj = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
              "metadata": {"name": "train", "labels": {"team": "vc"}},
              "spec": {"schedulerName": "volcano", "queue": "default", "tasks": [
                  {"name": "ps", "replicas": 1, "template": template()},
                  {"name": "worker", "replicas": 2, "template": template()}]}}
        created = self.create(VOLCANO_JOBS, ns, vj)
        self.create(JOBS, ns, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": "train", "labels": {LABEL: "false"}}, "spec": {"template": template()}})
        for pod in controllers.volcano_job_pods(vj, ns, created["metadata"]["uid"]):
            out, _ = self.until(lambda p=pod: self.injected(p, ns))
            ident, meta = self.identity(out)
            self.assertEqual((ident["metadata.kind"], ident["metadata.name"]), ("Job", "train"))
            self.assertEqual(meta["creation-timestamp"], created["metadata"]["creationTimestamp"])
            self.assertEqual(meta["associated-labels"], "team=vc")

    def test_mpijob_launcher_and_workers(self):
        """MPIJob v2beta1 opted in by its own label: the launcher (a pod of the
        MPIJob's batch Job) and the workers (its own) name the MPIJob."""
        ns = self.namespace("mpi-ns")
        mj = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
              "metadata": {"name": "pi", "labels": {LABEL: "true"}},
              "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": template()},
                                           "Worker": {"replicas": 2, "template": template()}}}}
        created = self.create(MPIJOBS, ns, mj)
        launcher, pods = controllers.mpijob_pods(mj, ns, created["metadata"]["uid"])
        self.create(JOBS, ns, launcher)
        parents = []
        for pod in pods:
            out, _ = self.until(lambda p=pod: self.injected(p, ns))
            ident, meta = self.identity(out)
            self.assertEqual((ident["metadata.kind"], ident["metadata.name"]), ("MPIJob", "pi"))
            parents.append(meta["parent-workload"])
        self.assertEqual(parents, ["Job/pi-launcher", "MPIJob/pi", "MPIJob/pi"])

    def test_lws_leader_and_worker(self):
        ns = self.namespace("lws-ns")
        lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
               "metadata": {"name": "serve", "labels": {LABEL: "true"}},
               "spec": {"leaderWorkerTemplate": {"size": 3, "workerTemplate": template()}}}
        self.create(LWS, ns, lws)
        for pod in controllers.lws_pods(lws, ns):
            out, _ = self.until(lambda p=pod: self.injected(p, ns))
            self.assertEqual(self.identity(out)[0]["metadata.kind"], "LeaderWorkerSet")

    def test_job_chains_and_deployment_lookup(self):
        ns = self.namespace("job-ns")
        js = self.create(JOBSETS, ns, {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                       "metadata": {"name": "big", "labels": {LABEL: "true"}},
                                       "spec": {"replicatedJobs": []}})
        # a Job owned by the JobSet; its pod names only the Job (Pod→Job→JobSet)
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "big-w-0", "ownerReferences": [{
                   "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "big",
                   "uid": js["metadata"]["uid"], "controller": True}]},
               "spec": {"template": template()}}
        self.create(JOBS, ns, job)
        pod = controllers.job_pods(job, ns)[0]
        for k in list(pod["metadata"]["labels"]):
            if k.startswith("jobset."):
                del pod["metadata"]["labels"][k]
        out, _ = self.until(lambda: self.injected(pod, ns))
        self.assertEqual(self.identity(out)[0]["metadata.name"], "big")
        # a plain labelled Job
        plain = {"apiVersion": "batch/v1", "kind": "Job",
                 "metadata": {"name": "etl", "labels": {LABEL: "true"}},
                 "spec": {"template": template()}}
        self.create(JOBS, ns, plain)
        out, _ = self.until(lambda: self.injected(controllers.job_pods(plain, ns)[0], ns))
        self.assertEqual(self.identity(out)[0], {"metadata.name": "etl", "metadata.kind": "Job",
                                                "clustername": CLUSTER, "namespace": ns})
        # a Deployment (not watched: read through the miss path), pod-label opt-in
        dep = {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "svc", "labels": {"tier": "web"}},
               "spec": {"template": template({LABEL: "true"})}}
        made = self.create(DEPLOYMENTS, ns, dep)
        out, _ = self.injected(controllers.deployment_pod(dep, ns), ns)
        meta = self.identity(out)[1]
        self.assertEqual(meta["creation-timestamp"], made["metadata"]["creationTimestamp"])
        self.assertEqual(meta["associated-labels"], "tier=web")

    def test_annotations_precedence(self):
        ns = self.namespace("attr-ns", labels={LABEL: "true"},
                            annotations={"diagon.gke.io/otel-resource-attributes":
                                         "team=ns,tier=ns,rl.algo=ppo"})
        js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "rl", "annotations": {
                  "diagon.gke.io/otel-resource-attributes": "tier=workload,stage=w",
                  "diagon.gke.io/otel-service-name": "rl-trainer"}},
              "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {
                  "template": template(annotations={
                      "diagon.gke.io/otel-resource-attributes": "stage=pod"})}}}]}}
        self.create(JOBSETS, ns, js)
        pod = controllers.jobset_pods(js, ns)[0]
        out, _ = self.until(lambda: self.injected(pod, ns))
        env = env_of(out)
        attrs = dict(kv.split("=", 1) for kv in env["OTEL_RESOURCE_ATTRIBUTES"]["value"].split(","))
        self.assertEqual((attrs["team"], attrs["tier"], attrs["stage"]), ("ns", "workload", "pod"))
        self.assertEqual(env["OTEL_SERVICE_NAME"]["value"], "rl-trainer")
        # the SDK's run id (DESIGN §3.5; its formula is checked against the SDK's own
        # vectors in tests/unit/libk8s/ml/test_k8s_mlrun.c): sha256 of
        # <cluster short>_<namespace>_<Kind>_<name>_<%Y%m%d-%H%M%S UTC>
        created = self.identity(out)[1]["creation-timestamp"]
        stamp = time.strftime("%Y%m%d-%H%M%S", time.strptime(created, "%Y-%m-%dT%H:%M:%SZ"))
        want = hashlib.sha256(("v5p-pool_%s_JobSet_rl_%s" % (ns, stamp)).encode()).hexdigest()
        self.assertEqual(attrs["rl.run.id"], want)


class SteadyStateTest(Cluster):
    def test_zero_api_calls_when_cached(self):
        ns = self.namespace("steady-ns", labels={LABEL: "true"})
        js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "warm"},
              "spec": {"replicatedJobs": [{"name": "w", "replicas": 5, "template": {"spec": {
                  "parallelism": 4, "template": template()}}}]}}
        self.create(JOBSETS, ns, js)
        pods = controllers.jobset_pods(js, ns)
        self.until(lambda: self.injected(pods[0], ns))
        time.sleep(0.3)
        self.api.clear_requests()
        for pod in pods:
            self.injected(pod, ns)
        calls = [r for r in self.api.requests if not r["watch"]]
        self.assertEqual(calls, [], "no API call on the admission path")

    def test_burst_of_misses_costs_one_get(self):
        ns = self.namespace("burst-ns", labels={LABEL: "true"})
        collection = r"^/apis/jobset\.x-k8s\.io/v1alpha2/jobsets$"
        self.api.fail_next(100000, status=503, paths=collection)  # the watch cannot come back
        self.api.drop_watches()
        try:
            time.sleep(0.3)
            js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                  "metadata": {"name": "fresh", "labels": {LABEL: "true"}},
                  "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
                      "parallelism": 24, "template": template()}}}]}}
            self.create(JOBSETS, ns, js)
            pods = controllers.jobset_pods(js, ns)
            self.api.clear_requests()
            with concurrent.futures.ThreadPoolExecutor(12) as ex:
                outs = list(ex.map(lambda p: self.injected(p, ns)[0], pods))
            gets = self.api.count(method="GET", path_regex=r"/namespaces/burst-ns/jobsets/fresh$")
            self.assertEqual(gets, 1, "single-flight: one GET for %d pods" % len(pods))
            self.assertEqual(len({env_of(o)["GKE_DIAGON_IDENTIFIER"]["value"] for o in outs}), 1)
            self.assertTrue(all("creation-timestamp" in self.identity(o)[1] for o in outs))
        finally:
            self.api.fail_next(0, status=503, paths=collection)

    def test_metrics_show_sync_and_lookups(self):
        _, _, text = self.wh.request("GET", "/metrics")
        text = text.decode()
        self.assertIn('mldiagnostics_webhook_cache_synced{resource="jobsets"} 1', text)
        self.assertRegex(text, r'mldiagnostics_webhook_api_lookups_total\{result="found"\} \d+')


class ResilienceTest(Cluster):
    """Faults while admissions keep flowing: none may fail or exceed the
    budget; afterwards the cache converges to the server's state."""

    def setUp(self):
        self.stop = threading.Event()
        self.errors = []
        self.ns = self.namespace("res-%d" % int(time.time() * 1000 % 1e9), labels={LABEL: "true"})
        js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "steady"},
              "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {
                  "template": template()}}}]}}
        self.create(JOBSETS, self.ns, js)
        self.pod = controllers.jobset_pods(js, self.ns)[0]
        self.until(lambda: self.injected(self.pod, self.ns))
        self.load = threading.Thread(target=self.hammer)
        self.load.start()

    def tearDown(self):
        self.stop.set()
        self.load.join(timeout=30)
        self.api.fail_next(0, status=503)
        self.api.latency = 0
        self.assertEqual(self.errors, [], "admissions failed or were slow during faults")

    def hammer(self):
        while not self.stop.is_set():
            t0 = time.time()
            try:
                doc, patch = self.wh.review(controllers.review(self.pod, self.ns))
                if not doc["response"]["allowed"] or time.time() - t0 > 2.5 * SLOW:
                    self.errors.append("slow or denied: %.2fs" % (time.time() - t0))
            except Exception as e:
                self.errors.append(repr(e))
            time.sleep(0.02)

    def converges(self, name):
        """Objects created after the fault reach the caches through the
        watches again: the admission injects without any API call (a GET
        on the miss path would also inject, so it is not enough)."""
        ns = self.namespace(name, labels={LABEL: "true"})
        js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "after"},
              "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {
                  "template": template()}}}]}}
        self.create(JOBSETS, ns, js)
        pod = controllers.jobset_pods(js, ns)[0]

        def from_the_watch():
            time.sleep(0.3)
            self.api.clear_requests()
            self.injected(pod, ns)
            calls = [r for r in self.api.requests if not r["watch"]]
            self.assertEqual(calls, [], "still missing the cache")
        self.until(from_the_watch, timeout=40)

    def test_dropped_watches(self):
        for _ in range(3):
            self.api.drop_watches()
            time.sleep(0.2)
        self.converges(self.ns + "-a")

    def test_expired_resource_version_relists(self):
        self.api.clear_requests()
        # every watch ends and the revision it had reached is compacted away in one step
        # (no bookmark can move a watcher past it in between): each return gets ERROR 410
        self.api.expire_watches()

        def relisted():
            self.assertGreater(self.api.count(method="GET", path_regex=r"^/apis/jobset\.x-k8s\.io/v1alpha2/jobsets$",
                                              watch=False), 0, "410 leads to a new list")
        # the watch comes back at once, or after one backoff if its last stream was brief
        self.until(relisted, timeout=WATCH_RETURN_S)
        self.converges(self.ns + "-b")

    def test_429_burst(self):
        self.api.fail_next(30, status=429, retry_after=1)
        self.api.drop_watches()
        self.converges(self.ns + "-c")

    def test_api_server_restart(self):
        self.api.restart()
        self.converges(self.ns + "-d")

    def test_slow_api_server_keeps_admissions_within_budget(self):
        self.api.latency = 5
        pod = dict(self.pod)
        ns = self.ns
        js_pod = controllers.jobset_pods(
            {"metadata": {"name": "unknown-js"}, "spec": {"replicatedJobs": [
                {"name": "w", "template": {"spec": {"template": template()}}}]}}, ns)[0]
        resp, _ = self.admit(js_pod, ns)  # a miss: the GET times out inside the budget
        self.assertTrue(any("lookup" in w for w in resp.get("warnings", [])), resp)
        self.api.latency = 0
        del pod


class LateCrdTest(Cluster):
    """DESIGN §3.4 (issue 12, behaviour 3): a kind whose CRD is not installed
    is an empty cache, and is picked up within 30 s of its CRD being
    created: pods of workloads created after it resolve to them."""

    not_installed = (RAYJOBS, RAYCLUSTERS, LWS)

    def install(self, *crds):
        kinds = {RAYJOBS: "RayJob", RAYCLUSTERS: "RayCluster", LWS: "LeaderWorkerSet"}
        for crd in crds:
            self.api.register(*crd, kinds[crd], status=True)
        return time.time()

    def watching(self, resource):
        """Its watch runs (none while the resource is not served)."""
        _, _, text = self.wh.request("GET", "/metrics")
        m = re.search(r'mldiagnostics_webhook_watch_starts\{resource="%s"\} (\d+)' % resource,
                      text.decode())
        return m is not None and int(m.group(1)) > 0

    def test_rayjob_crd_created_after_start(self):
        self.assertIn("resource not served", self.wh.logs())
        ns = self.namespace("late-ray")
        t0 = self.install(RAYJOBS, RAYCLUSTERS)
        rj = rayjob("late", {LABEL: "true"})
        created = self.create(RAYJOBS, ns, rj)
        rc_name = controllers.raycluster_name(rj)
        self.create(RAYCLUSTERS, ns, {
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": rc_name, "labels": {LABEL: "true"},
                         "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayJob",
                                              "name": "late", "uid": created["metadata"]["uid"],
                                              "controller": True}]},
            "spec": rj["spec"]["rayClusterSpec"]})
        head = controllers.rayjob_pods(rj, ns)[0]

        def resolved():
            out, _ = self.injected(head, ns)
            ident, meta = self.identity(out)
            self.assertEqual((ident["metadata.kind"], ident["metadata.name"]), ("RayJob", "late"),
                             "the RayJob, not the RayCluster or a bare pod")
            self.assertEqual(meta["creation-timestamp"], created["metadata"]["creationTimestamp"])
        self.until(resolved, timeout=30 - (time.time() - t0))

        def watched():
            self.assertTrue(self.watching("rayjobs") and self.watching("rayclusters"))
        self.until(watched, timeout=30 - (time.time() - t0))

    def test_lws_crd_created_after_start(self):
        ns = self.namespace("late-lws")
        t0 = self.install(LWS)
        lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
               "metadata": {"name": "serve", "labels": {LABEL: "true"}},
               "spec": {"leaderWorkerTemplate": {"size": 2, "workerTemplate": template()}}}
        created = self.create(LWS, ns, lws)
        leader = controllers.lws_pods(lws, ns)[0]

        def resolved():  # the opt-in label is on the LeaderWorkerSet: injected = found
            out, _ = self.injected(leader, ns)
            ident, meta = self.identity(out)
            self.assertEqual((ident["metadata.kind"], ident["metadata.name"]),
                             ("LeaderWorkerSet", "serve"))
            self.assertEqual(meta["creation-timestamp"], created["metadata"]["creationTimestamp"])
        self.until(resolved, timeout=30 - (time.time() - t0))
        self.until(lambda: self.assertTrue(self.watching("leaderworkersets")),
                   timeout=30 - (time.time() - t0))


class TokenRotationTest(unittest.TestCase):
    def test_token_file_rotation_without_restart(self):
        tmp = tempfile.mkdtemp(prefix="mld-token-")
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write("first-token\n")
        api = FakeApiServer(tokens={"first-token"})
        api.register_ml_crds()
        api.start()
        kubeconfig = os.path.join(tmp, "kubeconfig")
        api.kubeconfig(kubeconfig, token_file=token_file)
        try:
            with Webhook("--kubeconfig", kubeconfig, "--cluster-name", CLUSTER,
                         standalone=False) as wh:
                Cluster.wait_ready(wh)
                with open(token_file + ".new", "w") as f:
                    f.write("second-token\n")
                os.rename(token_file + ".new", token_file)  # kubelet swaps it atomically
                api.tokens = {"second-token"}
                api.drop_watches()  # the next requests carry a token
                ns = "tok-ns"
                api.create(("", "v1", "namespaces"), {"metadata": {"name": ns,
                                                                   "labels": {LABEL: "true"}}})
                js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                      "metadata": {"name": "t"}, "spec": {"replicatedJobs": [
                          {"name": "w", "template": {"spec": {"template": template()}}}]}}
                api.create(JOBSETS, js, ns=ns)
                pod = controllers.jobset_pods(js, ns)[0]
                deadline = time.time() + 30 * SLOW
                while True:
                    doc, patch = wh.review(controllers.review(pod, ns))
                    if patch or time.time() > deadline:
                        break
                    time.sleep(0.2)
                self.assertIsNotNone(patch, "the rotated token was picked up:\n" + wh.logs())
                ok = [r for r in api.requests if r["status"] == 200 and not r["watch"]]
                self.assertTrue(ok)
        finally:
            api.stop()


class StartupTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mld-start-")
        self.api = FakeApiServer()
        self.api.register_ml_crds()
        self.api.start()
        self.kubeconfig = os.path.join(self.tmp, "kubeconfig")
        self.api.kubeconfig(self.kubeconfig)

    def tearDown(self):
        self.api.stop()

    def test_not_ready_until_the_caches_synced(self):
        self.api.latency = {r"^/apis/ray\.io/v1/rayjobs$": 2.0 * SLOW}
        with Webhook("--kubeconfig", self.kubeconfig, "--cluster-name", CLUSTER,
                     standalone=False) as wh:
            status, _, body = wh.request("GET", "/readyz")
            self.assertEqual(status, 503, "the rayjobs list is still running")
            self.assertIn(b"not synced", body)
            self.assertEqual(wh.request("GET", "/healthz")[0], 200, "alive meanwhile")
            Cluster.wait_ready(wh)
            _, _, text = wh.request("GET", "/metrics")
            self.assertIn(b"mldiagnostics_webhook_ready 1", text)

    def test_missing_crds_are_empty_and_synced(self):
        self.api.unregister("jobset.x-k8s.io", "v1alpha2", "jobsets")
        with Webhook("--kubeconfig", self.kubeconfig, "--cluster-name", CLUSTER,
                     standalone=False) as wh:
            Cluster.wait_ready(wh)
            self.assertIn("resource not served", wh.logs())
            self.assertEqual(wh.logs().count("resource not served"), 1, "logged once")

    def test_bad_kubeconfig_is_a_clear_startup_error(self):
        bad = os.path.join(self.tmp, "nope")
        wh = Webhook("--kubeconfig", bad, standalone=False, wait_ready=False)
        with wh:
            self.assertEqual(wh.proc.wait(timeout=20), 1)
            self.assertIn(bad, wh.logs())

    def test_cluster_name_from_the_gke_metadata_server(self):
        import http.server

        class Metadata(http.server.BaseHTTPRequestHandler):
            answers = {"/computeMetadata/v1/instance/attributes/cluster-name": "pool-a",
                       "/computeMetadata/v1/instance/attributes/cluster-location": "us-east5",
                       "/computeMetadata/v1/project/project-id": "proj-9"}

            def do_GET(self):
                value = self.answers.get(self.path)
                ok = value and self.headers.get("Metadata-Flavor") == "Google"
                self.send_response(200 if ok else 404)
                self.end_headers()
                if ok:
                    self.wfile.write(value.encode())

            def log_message(self, *a):
                pass

        md = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
        threading.Thread(target=md.serve_forever, daemon=True).start()
        try:
            env = {"GCE_METADATA_HOST": "127.0.0.1:%d" % md.server_address[1], "CLUSTER_NAME": ""}
            with Webhook("--kubeconfig", self.kubeconfig, standalone=False, env=env) as wh:
                Cluster.wait_ready(wh)
                pod = {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "p", "labels": {LABEL: "true"}},
                       "spec": {"containers": [{"name": "c", "image": "i"}]}}
                doc, patch = wh.review(controllers.review(pod, "default"))
                out = podcheck.apply(pod, patch)
                ident = json.loads(out["metadata"]["annotations"]["diagon.gke.io/identifier"])
                self.assertEqual(ident["clustername"], "projects/proj-9/locations/us-east5/clusters/pool-a")
                self.assertIn("k8s.cluster.name=pool-a",
                              env_of(out)["OTEL_RESOURCE_ATTRIBUTES"]["value"])
        finally:
            md.shutdown()

    def test_no_metadata_server_means_a_warning(self):
        env = {"GCE_METADATA_HOST": "127.0.0.1:9", "CLUSTER_NAME": ""}  # nothing listens
        with Webhook("--kubeconfig", self.kubeconfig, standalone=False, env=env) as wh:
            Cluster.wait_ready(wh)
            self.assertIn("cluster name unknown", wh.logs())
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "labels": {LABEL: "true"}},
                   "spec": {"containers": [{"name": "c", "image": "i"}]}}
            doc, _ = wh.review(controllers.review(pod, "default"))
            self.assertTrue(any("clustername" in w for w in doc["response"]["warnings"]))


if __name__ == "__main__":
    unittest.main()
