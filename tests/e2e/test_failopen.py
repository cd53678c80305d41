"""The webhook fails open and the operator makes it visible: with the
webhook process stopped, the chart's `failurePolicy: Ignore` lets the API
server create the pods uninjected, and the operator's audit puts a Warning
Event on their workload (DESIGN §3.2, §4.4)."""
import time
import unittest

from e2e import LABEL, E2ETest, injected
from test_injection import JOBSET


class WebhookDown(E2ETest):
    def test_pods_created_without_injection_and_audited(self):
        mwc = self.c.install.webhook_configuration()
        self.assertEqual({w["failurePolicy"] for w in mwc["webhooks"]}, {"Ignore"})
        wh = self.c.install.webhooks[0]
        wh.stop()
        try:
            ns = self.namespace("down")
            t0 = time.time()
            self.apply_yaml(JOBSET % ("unserved", '%s: "true"' % LABEL, ""), ns)
            pods = self.wait_pods(ns, 2, "jobset.sigs.k8s.io/jobset-name=unserved")
            created_in = time.time() - t0
        finally:
            wh.start()
            wh.wait_ready()
        for p in pods:
            self.assertFalse(injected(p), "%s injected with the webhook down?" %
                             p["metadata"]["name"])
        self.assertLess(created_in, 30, "pod creation waited on the absent webhook")
        ev = self.wait_event(ns, "JobSet", "unserved", lambda e: e["type"] == "Warning", 90)
        self.assertEqual(ev["reason"], "PodsNotInjected", ev)
        self.assertIn("2", ev["message"], ev["message"])
        # With the webhook back, new pods are injected again.
        ns2 = self.namespace("back")
        self.apply_yaml(JOBSET % ("served", '%s: "true"' % LABEL, ""), ns2)
        for p in self.wait_pods(ns2, 2, "jobset.sigs.k8s.io/jobset-name=served"):
            self.assertTrue(injected(p))


if __name__ == "__main__":
    unittest.main()
