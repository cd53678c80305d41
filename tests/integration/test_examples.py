"""manifests/examples/ (DESIGN §5): the labelled JobSet, LeaderWorkerSet and RayJob with a
JAX container serving the profiler on 9999, a labelled Kubeflow PyTorchJob (PyTorch/XLA
serving it) and TrainJob (its templates are its runtime's), the labelled namespace, an MLDiagnosticsConnection
by pod names and one by workloadRef (valid against the CRD's schema and aimed at the example
workloads' pods), and seed 003's Diagon DaemonSet in one namespace. The workloads go through
`mldiagnostics-webhook inject` and every JAX container comes out with its identity."""
import glob
import os
import subprocess
import sys
import unittest

import yaml

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import crdcheck  # noqa: E402
from harness import BIN_DIR  # noqa: E402

EXAMPLES = os.path.abspath(os.path.join(HERE, "..", "..", "manifests", "examples"))
LABEL = "managed-mldiagnostics-gke"


def load(name):
    with open(os.path.join(EXAMPLES, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def pod_specs(obj):
    """(where, pod spec) of every pod template in a workload."""
    kind, spec = obj["kind"], obj["spec"]
    if kind == "JobSet":
        return [("replicatedJobs[%d]" % i, rj["template"]["spec"]["template"]["spec"])
                for i, rj in enumerate(spec["replicatedJobs"])]
    if kind == "LeaderWorkerSet":
        t = spec["leaderWorkerTemplate"]
        out = [("worker", t["workerTemplate"]["spec"])]
        if "leaderTemplate" in t:
            out.append(("leader", t["leaderTemplate"]["spec"]))
        return out
    if kind == "RayJob":
        c = spec["rayClusterSpec"]
        return [("head", c["headGroupSpec"]["template"]["spec"])] + [
            (g["groupName"], g["template"]["spec"]) for g in c["workerGroupSpecs"]]
    if kind == "PyTorchJob":
        return [(t, r["template"]["spec"]) for t, r in spec["pytorchReplicaSpecs"].items()]
    raise AssertionError(kind)


class ExamplesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.crd, cls.schema = crdcheck.load_schema()

    def test_every_file_parses(self):
        files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(EXAMPLES, "*.yaml")))
        self.assertEqual(files, ["connection-podnames.yaml", "connection-workloadref.yaml",
                                 "diagon-daemonset.yaml", "jobset.yaml", "leaderworkerset.yaml",
                                 "namespace.yaml", "pytorchjob.yaml", "rayjob.yaml",
                                 "trainjob.yaml"])
        for f in files:
            for d in load(f):
                self.assertTrue(d["apiVersion"] and d["kind"] and d["metadata"]["name"], f)

    def test_labelled_workloads_serve_the_profiler(self):
        for f, kind in (("jobset.yaml", "JobSet"), ("leaderworkerset.yaml", "LeaderWorkerSet"),
                        ("rayjob.yaml", "RayJob"), ("pytorchjob.yaml", "PyTorchJob")):
            (w,) = load(f)
            self.assertEqual(w["kind"], kind)
            self.assertEqual(w["metadata"]["labels"][LABEL], "true", f)
            with open(os.path.join(EXAMPLES, f)) as fh:
                text = fh.read()
            self.assertRegex(text, r"(jax\.profiler|xp)\.start_server\(9999\)", f)
            ports = [p for _, spec in pod_specs(w) for c in spec["containers"]
                     for p in c.get("ports", []) if p["containerPort"] == 9999]
            self.assertTrue(ports, "%s: no container exposes 9999" % f)

    def test_labelled_namespace(self):
        (ns,) = load("namespace.yaml")
        self.assertEqual(ns["kind"], "Namespace")
        self.assertEqual(ns["metadata"]["labels"][LABEL], "true")

    def test_connections_are_valid_and_aim_at_the_examples(self):
        (by_pods,) = load("connection-podnames.yaml")
        (by_ref,) = load("connection-workloadref.yaml")
        for c in (by_pods, by_ref):
            self.assertEqual(crdcheck.validate(c, self.schema), [], c["metadata"]["name"])
            tc = c["spec"]["triggerCapture"]
            self.assertEqual(tc["podNamespace"], c["metadata"]["namespace"])
            self.assertEqual(tc["capturePort"], 9999)
        (lws,) = load("leaderworkerset.yaml")
        name, size = lws["metadata"]["name"], lws["spec"]["leaderWorkerTemplate"]["size"]
        lws_pods = ["%s-0" % name] + ["%s-0-%d" % (name, i) for i in range(1, size)]
        self.assertEqual(by_pods["spec"]["triggerCapture"]["podName"].split(","), lws_pods)
        self.assertEqual(by_pods["metadata"]["namespace"], lws["metadata"]["namespace"])
        (js,) = load("jobset.yaml")
        self.assertEqual(by_ref["spec"]["triggerCapture"]["workloadRef"],
                         {"kind": "JobSet", "name": js["metadata"]["name"]})
        self.assertEqual(by_ref["metadata"]["namespace"], js["metadata"]["namespace"])

    def test_daemonset_uses_one_namespace(self):
        docs = load("diagon-daemonset.yaml")
        kinds = {d["kind"]: d for d in docs}
        self.assertEqual(sorted(kinds), ["DaemonSet", "Namespace", "ServiceAccount"])
        ns = kinds["Namespace"]["metadata"]["name"]
        for d in docs:
            if d["kind"] != "Namespace":
                self.assertEqual(d["metadata"]["namespace"], ns, d["kind"])
        pod = kinds["DaemonSet"]["spec"]["template"]["spec"]
        self.assertEqual(pod["serviceAccountName"], kinds["ServiceAccount"]["metadata"]["name"])
        self.assertTrue(pod["hostNetwork"])
        self.assertTrue(pod["containers"][0]["securityContext"]["privileged"])
        self.assertNotIn("kube-system", yaml.safe_dump_all(docs))
        self.assertNotIn("SERVICE_ACCOUNT_NAME", yaml.safe_dump_all(docs))

    def test_trainjob_is_labelled_and_has_no_template_to_rewrite(self):
        (tj,) = load("trainjob.yaml")
        self.assertEqual((tj["apiVersion"], tj["kind"]), ("trainer.kubeflow.org/v1alpha1",
                                                          "TrainJob"))
        self.assertEqual(tj["metadata"]["labels"][LABEL], "true")
        self.assertIn("jax.profiler.start_server(9999)", tj["spec"]["trainer"]["command"][2])
        p = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-webhook"), "inject", "-f",
                            os.path.join(EXAMPLES, "trainjob.yaml"), "--explain"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("kind TrainJob has no pod template we inject", p.stdout)

    def test_workloads_get_injected(self):
        for f in ("jobset.yaml", "leaderworkerset.yaml", "rayjob.yaml", "pytorchjob.yaml"):
            p = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-webhook"), "inject", "-f",
                                os.path.join(EXAMPLES, f), "--cluster-name", "demo"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            (out,) = [d for d in yaml.safe_load_all(p.stdout) if d]
            for where, spec in pod_specs(out):
                for c in spec["containers"]:
                    names = {e["name"] for e in c.get("env", [])}
                    self.assertIn("GKE_DIAGON_IDENTIFIER", names, "%s %s" % (f, where))
                    self.assertIn("OTEL_SERVICE_NAME", names, "%s %s" % (f, where))


if __name__ == "__main__":
    unittest.main()
