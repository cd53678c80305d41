"""`mldiagnostics-webhook inject` (DESIGN §3.6) against the real API server:
its output for every labelled example of manifests/examples (a JobSet, a
LeaderWorkerSet, a RayJob, and a bare Pod and a Deployment written here)
is accepted by a server-side dry run, so the injected pod templates pass
the workload CRDs' schemas and the pod validation as they are."""
import json
import os
import subprocess
import unittest

import yaml

from e2e import EXAMPLES, LABEL, E2ETest

EXTRA = [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare", "labels": {LABEL: "true"}},
     "spec": {"containers": [{"name": "jax", "image": "jax",
                              "env": [{"name": "OTEL_SERVICE_NAME", "value": "mine"}]}]}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web", LABEL: "true"}},
                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}},
]


class OfflineInject(E2ETest):
    def inject(self, text):
        exe = os.path.join(self.c.project_bin, "mldiagnostics-webhook")
        p = subprocess.run([exe, "inject", "-f", "-", "--cluster-name", "e2e-cluster"],
                           input=text.encode(), capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        return [d for d in yaml.safe_load_all(p.stdout) if d]

    def test_injected_examples_pass_a_server_side_dry_run(self):
        ns = self.namespace("offline")
        texts = []
        for name in ("jobset.yaml", "leaderworkerset.yaml", "rayjob.yaml"):
            with open(os.path.join(EXAMPLES, name)) as f:
                texts.append(f.read().replace("namespace: default", "namespace: " + ns))
        texts += [json.dumps(d) for d in EXTRA]
        kinds = []
        for text in texts:
            for doc in self.inject(text):
                doc["metadata"]["namespace"] = ns
                blob = json.dumps(doc)
                self.assertIn("GKE_DIAGON_IDENTIFIER", blob, doc["kind"])
                p = self.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                                 input=blob, check=False)
                self.assertEqual(p.returncode, 0, "%s: %s" % (doc["kind"], p.stderr))
                back = json.loads(p.stdout)
                self.assertIn("GKE_DIAGON_IDENTIFIER", json.dumps(back["spec"]),
                              "%s: the server kept the injection" % doc["kind"])
                kinds.append(doc["kind"])
        self.assertEqual(sorted(kinds), ["Deployment", "JobSet", "LeaderWorkerSet", "Pod",
                                         "RayJob"])


if __name__ == "__main__":
    unittest.main()
