"""Kubeflow workloads through their real controllers: a TrainJob through
Kubeflow Trainer v2 (TrainJob → JobSet → Jobs → Pods, the JobSet controller
and kube-controller-manager doing the rest) and a PyTorchJob through the
training-operator v1 (it owns its pods), each opted in by its own label or
by the namespace label; the API server accepts every patched pod, and the
identity names the top-level Kubeflow workload (DESIGN §3). The operator
captures a PyTorchJob's pods, CPU JAX profilers, by workloadRef."""
import os
import re
import unittest

import e2e
import test_profiler
from e2e import EXAMPLES, LABEL, E2ETest, identity, injected


def example(name, namespace, labelled=True):
    with open(os.path.join(EXAMPLES, name)) as f:
        text = f.read().replace("namespace: default", "namespace: " + namespace)
    if not labelled:
        text = text.replace('    %s: "true"\n' % LABEL, "")
        text = text.replace("  labels:\n", "  labels: {}\n", 1)
    return text


def controller_ref(obj):
    refs = [r for r in obj["metadata"].get("ownerReferences", []) if r.get("controller")]
    return (refs[0]["kind"], refs[0]["name"]) if refs else None


class TrainJobs(E2ETest):
    def check_trainjob(self, ns, name):
        pods = self.wait_pods(ns, 2, "jobset.sigs.k8s.io/jobset-name=" + name, timeout=90)
        tj = self.get("TrainJob", ns, name)
        self.assertEqual(controller_ref(self.get("JobSet", ns, name)), ("TrainJob", name),
                         "Trainer made the JobSet, owned by the TrainJob")
        self.assert_one_identity(pods, "TrainJob", name, tj)
        for p in pods:
            job = p["metadata"]["labels"]["job-name"]
            self.assertEqual(controller_ref(p), ("Job", job))
            self.assertEqual(identity(p)[1]["parent-workload"], "Job/" + job)
            self.assertEqual(self.expanded_env(p)["OTEL_RESOURCE_ATTRIBUTES"].count(
                "k8s.trainjob.name=" + name), 1, p["metadata"]["name"])
        return pods

    def test_labelled_trainjob(self):
        """manifests/examples/trainjob.yaml (its runtime is Trainer's own
        jax-distributed): both node pods injected, one identity naming the
        TrainJob with its creationTimestamp."""
        ns = self.namespace("trainjob")
        self.apply_yaml(example("trainjob.yaml", ns), ns)
        self.check_trainjob(ns, "jax-finetune")

    def test_trainers_own_webhook_is_called(self):
        """Trainer's validating webhook, registered by URL, refuses a
        TrainJob whose runtime does not exist (so it sits in the chain)."""
        ns = self.namespace("trainjob-bad")
        bad = example("trainjob.yaml", ns).replace("name: jax-distributed",
                                                   "name: no-such-runtime")
        r = self.kubectl("apply", "--dry-run=server", "-n", ns, "-f", "-", input=bad,
                         check=False)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn('admission webhook "validator.trainjob.trainer.kubeflow.org" denied',
                      r.stderr)

    def test_unlabelled_trainjob_is_left_alone(self):
        ns = self.namespace("trainjob-off")
        self.apply_yaml(example("trainjob.yaml", ns, labelled=False), ns)
        for p in self.wait_pods(ns, 2, "jobset.sigs.k8s.io/jobset-name=jax-finetune",
                                timeout=90):
            self.assertIsNone(identity(p)[0], p["metadata"]["name"])


class PyTorchJobs(E2ETest):
    def check_pytorchjob(self, ns, name):
        pods = self.wait_pods(ns, 2, "training.kubeflow.org/job-name=" + name, timeout=90)
        pj = self.get("PyTorchJob", ns, name)
        self.assert_one_identity(pods, "PyTorchJob", name, pj)
        roles = {}
        for p in pods:
            self.assertEqual(controller_ref(p), ("PyTorchJob", name))
            self.assertEqual(identity(p)[1]["parent-workload"], "PyTorchJob/" + name)
            roles[p["metadata"]["labels"]["training.kubeflow.org/replica-type"]] = \
                p["metadata"]["name"]
        self.assertEqual(roles, {"master": name + "-master-0", "worker": name + "-worker-0"})
        return pods

    def test_labelled_pytorchjob_master_and_worker(self):
        """manifests/examples/pytorchjob.yaml: the operator's master and
        worker pods (and the worker's init container it adds) injected."""
        ns = self.namespace("pytorchjob")
        self.apply_yaml(example("pytorchjob.yaml", ns), ns)
        pods = self.check_pytorchjob(ns, "pytorch-xla")
        worker = [p for p in pods if re.search("-worker-", p["metadata"]["name"])][0]
        env = self.expanded_env(worker)
        self.assertIn("MASTER_ADDR", env, "the operator's own env is kept beside ours")
        self.assertIn("GKE_DIAGON_IDENTIFIER", env)

    def test_operators_own_webhook_is_called(self):
        """The training-operator's validating webhook, registered by URL with
        the CA its cert-controller injected, refuses two masters."""
        ns = self.namespace("pytorchjob-bad")
        bad = example("pytorchjob.yaml", ns).replace("replicas: 1", "replicas: 2", 1)
        r = self.kubectl("apply", "--dry-run=server", "-n", ns, "-f", "-", input=bad,
                         check=False)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn('admission webhook "validator.pytorchjob.training-operator.kubeflow.org" '
                      'denied', r.stderr)

    def test_namespace_label_covers_pytorchjob(self):
        """An unlabelled PyTorchJob in a namespace labelled
        managed-mldiagnostics-gke=true is injected (PyTorchJob is a kind the
        namespace label covers)."""
        ns = self.namespace("pytorchjob-ns", labels={LABEL: "true"})
        self.apply_yaml(example("pytorchjob.yaml", ns, labelled=False), ns)
        self.assertNotIn(LABEL, self.get("PyTorchJob", ns, "pytorch-xla")["metadata"].get(
            "labels", {}))
        self.check_pytorchjob(ns, "pytorch-xla")


def jax_pytorchjob(name, image, storage):
    """A PyTorchJob whose master and worker are CPU JAX processes serving
    the profiler on 9999 (the tier's Python image, on the real node), with
    `storage` mounted where the captures write."""
    vol, mount = e2e.host_dir(storage, "profiles")
    replica = {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
        "volumes": [vol], "containers": [{
            "name": "pytorch", "image": image, "command": ["python", "-c", test_profiler.PROGRAM],
            "volumeMounts": [mount],
            "ports": [{"name": "profiler", "containerPort": 9999}]}]}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "labels": {LABEL: "true"}},
            "spec": {"pytorchReplicaSpecs": {"Master": replica, "Worker": replica}}}


class PyTorchJobCapture(test_profiler.Captures):
    """A capture by workloadRef kind PyTorchJob through the operator as seed
    003 installs it: one xplane.pb per pod of the job, named as xprof's
    client names them (<podIP>_<port>), that xprof reads."""

    @classmethod
    def setUpClass(cls):
        c = e2e.cluster()
        cls.case = E2ETest()
        cls.case.setUp()
        cls.ns = cls.case.namespace("pytorchjob-jax")
        cls.storage = test_profiler.profile_storage(c, "pytorchjob-profiles-")
        c.api.create(jax_pytorchjob("jax-pt", cls.case.python_image(), cls.storage), cls.ns)
        cls.pods = cls.case.wait_pods(cls.ns, 2, "training.kubeflow.org/job-name=jax-pt",
                                      timeout=180)
        test_profiler.wait_profilers(c, cls.ns, cls.pods, "pytorch")

    @classmethod
    def tearDownClass(cls):
        cls.case.tearDown()

    def target_ns(self):
        return self.ns

    def test_workload_ref_captures_master_and_worker(self):
        self.assertTrue(all(injected(p) for p in self.pods))
        storage = self.storage
        mldc = self.capture("whole-pytorchjob", {
            "workloadRef": {"kind": "PyTorchJob", "name": "jax-pt"}, "storageLocation": storage})
        self.assert_profiles(mldc, storage, ["%s_9999" % p["status"]["podIP"]
                                             for p in self.pods])


if __name__ == "__main__":
    unittest.main()
