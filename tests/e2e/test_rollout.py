"""`kubectl rollout restart` of the webhook's Deployment on the real node
while labelled pods are created (at least 200, and until the rollout has
ended): the kubelet runs the chart's preStop
and SIGTERM on each old pod, kube-proxy moves the Service to the new ones,
and the API server's calls follow; not one pod may come back uninjected."""
import threading
import time
import unittest

import install
import kubeapi
from e2e import LABEL, E2ETest, injected
from procs import wait_until

BURST = 200
THREADS = 8


class RolloutRestart(E2ETest):
    def test_a_rollout_restart_during_a_burst_loses_no_injection(self):
        wh = self.c.install.webhooks[0]
        before = {p["metadata"]["name"] for p in wh.pods()}
        ns = self.namespace("rollout")
        lock = threading.Lock()
        made, missed, errors = [], [], []
        rolled_out = threading.Event()
        count = [0]

        def creator():
            while True:
                with lock:
                    n = count[0]
                    if n >= BURST and rolled_out.is_set():
                        return
                    count[0] += 1
                pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
                    "name": "b%04d" % n, "labels": {LABEL: "true"}}, "spec": {
                    "nodeName": "e2e-node", "containers": [{"name": "c", "image": "x"}]}}
                try:
                    p = self.api.create(pod, ns)
                except Exception as e:  # noqa: BLE001 - every failure is the finding
                    errors.append("%s: %s" % (pod["metadata"]["name"], e))
                    continue
                with lock:
                    made.append(p["metadata"]["name"])
                    if not injected(p):
                        missed.append(p["metadata"]["name"])
                time.sleep(0.2)  # spread the burst over the rollout
        threads = [threading.Thread(target=creator, daemon=True) for _ in range(THREADS)]
        for t in threads:
            t.start()
        time.sleep(1)
        t0 = time.time()
        self.kubectl("rollout", "restart", "deployment/" + wh.name, "-n", install.NAMESPACE)
        self.kubectl("rollout", "status", "deployment/" + wh.name, "-n", install.NAMESPACE,
                     "--timeout=180s", timeout=200)
        after = {p["metadata"]["name"] for p in wh.pods()}
        # until the old pods are gone: their preStop and SIGTERM drain are the risk
        for name in before:
            path = kubeapi.path_for("Pod", install.NAMESPACE, name)
            wait_until(lambda: not self.api.exists(path), 120, "old webhook pod %s gone" % name)
        rolled = time.time() - t0
        rolled_out.set()
        for t in threads:
            t.join(120)
        self.assertFalse(before & after, "the rollout replaced every webhook pod")
        self.assertEqual(errors, [], "creates that failed")
        self.assertGreaterEqual(len(made), BURST)
        self.assertEqual(missed, [], "pods admitted without injection during the rollout")
        self.c.log("rollout restart took %.1fs; %d labelled pods created during it, all "
                   "injected" % (rolled, len(made)))


if __name__ == "__main__":
    unittest.main()
