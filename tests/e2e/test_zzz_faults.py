"""Nothing lost when the control plane fails: the kube-apiserver, then etcd, killed with
SIGKILL for 10 s and started again (same flags, ports and data), once during a capture
across four real JAX profilers and once during a burst of 200 labelled pod creations.

A capture ends Succeeded or Failed with its cause, never stuck in Running; every pod the
client asked for exists afterwards (a creation refused during the outage is retried, as
kubectl and the controllers do) and is injected. Named test_zzz_ so it runs last: a
restarted API server refuses requests (403) until its RBAC informers have synced, which
test_zz_rbac would count against the charts, and the tier's process node can be slow to
start pods again after an outage."""
import http.client
import json
import os
import threading
import time
import unittest

import e2e
import kubeapi
from e2e import LABEL, E2ETest, injected
from test_profiler import jax_jobset, profile_storage, wait_profilers

OUTAGE_S = 10
HOSTS = 4
JAX = {}


def setUpModule():
    c = e2e.cluster()
    t = E2ETest()
    t.setUp()
    ns = t.namespace("faults")
    storage = profile_storage(c, "profiles-")
    c.api.create(jax_jobset("jax-faults", HOSTS, t.python_image(), storage), ns)
    pods = t.wait_pods(ns, HOSTS, "jobset.sigs.k8s.io/jobset-name=jax-faults", timeout=180)
    wait_profilers(c, ns, pods, "jax")
    JAX.update(ns=ns, pods=[p["metadata"]["name"] for p in pods], case=t, storage=storage)


def tearDownModule():
    if "case" in JAX:
        JAX["case"].tearDown()


class Outages(E2ETest):
    def retrying(self, fn, what, timeout=180):
        """fn() until it works: the API server may be away (refused, reset, 5xx, timeout,
        or killed in the middle of its answer: http.client's IncompleteRead)."""
        deadline = time.time() + timeout
        while True:
            try:
                return fn()
            except (OSError, http.client.HTTPException, kubeapi.ApiError) as e:
                if isinstance(e, kubeapi.ApiError) and e.code < 500 and e.code != 429:
                    raise
                if time.time() > deadline:
                    raise AssertionError("%s: the API server never came back: %r" % (what, e))
                time.sleep(0.2)

    def capture_through(self, which, name):
        ns = JAX["ns"]
        duration = 20  # the outage and the restart fall inside it
        self.api.create({"apiVersion": "diagon.gke.io/v1alpha1",
                         "kind": "MLDiagnosticsConnection", "metadata": {"name": name},
                         "spec": {"triggerCapture": {
                             "profiler": "google_cloud_mldiagnostics", "podNamespace": ns,
                             "capturePort": 9999, "durationSeconds": duration,
                             "storageLocation": JAX["storage"],
                             "podName": ",".join(JAX["pods"])}}}, ns)
        path = kubeapi.path_for("MLDiagnosticsConnection", ns, name)
        self.api.wait(path, lambda o: o.get("status", {}).get("phase") == "Running", 60,
                      what="capture %s Running" % name)
        down = self.c.cp.outage(which, OUTAGE_S)

        t0 = time.time()
        o = self.retrying(lambda: self.api.wait(path, lambda o: o.get("status", {}).get("phase")
                                                in ("Succeeded", "Failed"), duration + 120,
                                                what="capture %s terminal" % name),
                          "capture %s" % name)
        st = o["status"]
        print("\n%s down %.1f s during a %d-host capture: %s %.1f s after it was back: %s"
              % (which, down, HOSTS, st["phase"], time.time() - t0, st.get("message", "")[:200]))
        self.assertTrue(st.get("message"), "a terminal phase says why: %s" % json.dumps(st))
        if st["phase"] == "Succeeded":  # every host's file is where the status says
            self.assertEqual(sorted(h["pod"] for h in st["hosts"]), sorted(JAX["pods"]))
            out = st["captureResult"]["outputLocation"]
            self.assertEqual(sorted(f for f in os.listdir(out) if f.endswith(".xplane.pb")),
                             sorted(os.path.basename(h["outputFile"]) for h in st["hosts"]))
            self.assertEqual(len(os.listdir(out)), HOSTS)

    def burst_through(self, which, prefix):
        ns = self.namespace(prefix)
        n, made, errors = 200, [], []

        def pod(i):
            # bound to a node that does not exist: admitted (and injected) like any pod,
            # never started, so 200 of them cost the tier nothing
            return {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "p-%03d" % i, "labels": {LABEL: "true"}},
                    "spec": {"nodeName": "mld-e2e-nowhere", "containers": [
                        {"name": "main", "image": "mld-e2e/python:3.11",
                         "command": ["sleep", "1"]}]}}

        def create(i):
            try:
                self.api.create(pod(i), ns)
            except kubeapi.ApiError as e:
                if e.code != 409:  # created before a reset lost the answer: it is there
                    raise

        def creator():
            try:
                for i in range(n):
                    self.retrying(lambda: create(i), "pod %d" % i)
                    made.append(i)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
        t = threading.Thread(target=creator)
        t.start()
        deadline = time.time() + 60
        while len(made) < 40 and time.time() < deadline and t.is_alive():
            time.sleep(0.05)
        before = len(made)
        down = self.c.cp.outage(which, OUTAGE_S)
        t.join(300)
        self.assertEqual(errors, [])
        self.assertEqual(len(made), n)
        pods = self.retrying(lambda: self.pods(ns), "list")
        names = sorted(p["metadata"]["name"] for p in pods)
        self.assertEqual(names, ["p-%03d" % i for i in range(n)])
        missed = [p["metadata"]["name"] for p in pods if not injected(p)]
        print("\n%s down %.1f s after %d of %d labelled pods were created: all %d exist, "
              "%d not injected" % (which, down, before, n, len(pods), len(missed)))
        self.assertEqual(missed, [], "pods created around the outage were not injected")

    def test_apiserver_killed_during_a_four_host_capture(self):
        self.capture_through("kube-apiserver", "through-apiserver")

    def test_apiserver_killed_during_a_burst_of_pod_creations(self):
        self.burst_through("kube-apiserver", "burst-api")

    def test_etcd_killed_during_a_four_host_capture(self):
        self.capture_through("etcd", "through-etcd")

    def test_etcd_killed_during_a_burst_of_pod_creations(self):
        self.burst_through("etcd", "burst-etcd")


if __name__ == "__main__":
    unittest.main()
