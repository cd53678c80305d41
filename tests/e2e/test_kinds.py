"""Kinds are (group, kind), through the real API server: a Volcano Job and a
batch Job of one name side by side, and an MPIJob whose launcher is a batch
Job of its own. Neither controller runs here (the tier builds neither), so
the pods they would make are made as they make them (tests/tools/
controllers.py: Volcano's createJobPod, the MPI operator's newWorker); the
launcher's pod is the real Job controller's. The webhook's identity names
the right workload, and the operator captures the right pods' absence."""
import json
import os
import sys
import unittest

import kubeapi
from e2e import LABEL, E2ETest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import controllers  # noqa: E402

TEMPLATE = {"spec": {"restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "mld-e2e/placeholder:1"}]}}


def identity(pod):
    ann = pod["metadata"]["annotations"]
    return (json.loads(ann["diagon.gke.io/identifier"]),
            json.loads(ann["diagon.gke.io/metadata"]))


class KindsByGroup(E2ETest):
    def test_a_volcano_job_is_not_the_batch_job_of_its_name(self):
        ns = self.namespace("vcjob", labels={LABEL: "true"})
        vj = self.api.create({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                              "metadata": {"name": "train", "labels": {"team": "vc"}},
                              "spec": {"schedulerName": "volcano", "queue": "default",
                                       "tasks": [{"name": "worker", "replicas": 2,
                                                  "template": TEMPLATE}]}}, ns)
        # batch's Job of the same name opts out; suspended, it makes no pods
        self.api.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": "train", "labels": {LABEL: "false"}}, "spec": {
            "suspend": True, "template": TEMPLATE}}, ns)
        for pod in controllers.volcano_job_pods(vj, ns, vj["metadata"]["uid"]):
            pod["metadata"].pop("namespace")
            made = self.api.create(pod, ns)
            ident, meta = identity(made)
            self.assertEqual((ident["metadata.kind"], ident["metadata.name"]), ("Job", "train"))
            self.assertEqual(meta["creation-timestamp"], vj["metadata"]["creationTimestamp"])
            self.assertEqual(meta["associated-labels"], "team=vc")

    def test_an_mpijobs_launcher_and_workers_name_it(self):
        ns = self.namespace("mpijob")
        mj = self.api.create({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                              "metadata": {"name": "pi", "labels": {LABEL: "true"}},
                              "spec": {"slotsPerWorker": 1, "mpiReplicaSpecs": {
                                  "Launcher": {"replicas": 1, "template": TEMPLATE},
                                  "Worker": {"replicas": 2, "template": TEMPLATE}}}}, ns)
        launcher, pods = controllers.mpijob_pods(mj, ns, mj["metadata"]["uid"])
        # the launcher's Job as the operator makes it; the real Job controller makes its pod
        self.api.create(launcher, ns)
        for pod in pods[1:]:  # the workers, as newWorker makes them
            pod["metadata"].pop("namespace")
            made = self.api.create(pod, ns)
            ident, meta = identity(made)
            self.assertEqual((ident["metadata.kind"], ident["metadata.name"]), ("MPIJob", "pi"))
            self.assertEqual(meta["parent-workload"], "MPIJob/pi")
        (lp,) = self.wait_pods(ns, 1, "batch.kubernetes.io/job-name=pi-launcher", running=False,
                               timeout=60)
        ident, meta = identity(lp)
        self.assertEqual((ident["metadata.kind"], ident["metadata.name"]), ("MPIJob", "pi"))
        self.assertEqual(meta["parent-workload"], "Job/pi-launcher")
        self.assertEqual(meta["creation-timestamp"], mj["metadata"]["creationTimestamp"])

    def test_a_workload_ref_names_its_group(self):
        """A capture of a Volcano Job that does not exist fails naming it (the
        operator confirms the absence with a GET of batch.volcano.sh's path,
        which test_zz_rbac sees in the audit log)."""
        ns = self.namespace("vcref")
        self.api.create({"apiVersion": "diagon.gke.io/v1alpha1",
                         "kind": "MLDiagnosticsConnection", "metadata": {"name": "vc"},
                         "spec": {"triggerCapture": {
                             "profiler": "google_cloud_mldiagnostics", "podNamespace": ns,
                             "capturePort": 9999, "durationSeconds": 1,
                             "storageLocation": "/tmp/vc",
                             "workloadRef": {"apiVersion": "batch.volcano.sh/v1alpha1",
                                             "kind": "Job", "name": "nowhere"}}}}, ns)
        o = self.api.wait(kubeapi.path_for("MLDiagnosticsConnection", ns, "vc"),
                          lambda o: o.get("status", {}).get("phase") == "Failed", 90)
        self.assertIn("Job %s/nowhere not found" % ns, o["status"].get("message", ""))


if __name__ == "__main__":
    unittest.main()
