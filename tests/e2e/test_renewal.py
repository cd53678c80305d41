"""Certificate renewal without cert-manager, through the kubelet: certgen
makes a new CA and serving pair in the webhook's Secret and puts the new CA
in the MutatingWebhookConfiguration beside the old one; the kubelet's
Secret-volume refresh brings the new files into the running webhook pods,
which reload them. Both paths: the chart's renewal CronJob on its schedule
(set to every minute here), and a renewal forced by hand (`kubectl create
job --from=cronjob/...`). Labelled pods are created all along, and every one
of them must come back injected: zero failed admissions."""
import base64
import socket
import ssl
import threading
import time
import unittest

import install
import kubeapi
from e2e import LABEL, E2ETest, injected
from procs import wait_until

NS = install.NAMESPACE


def served_cert(ip, port=8443):
    """The DER certificate a webhook pod serves now."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection((ip, port), 5) as s:
        with ctx.wrap_socket(s) as t:
            return t.getpeercert(binary_form=True)


class Admissions(threading.Thread):
    """Creates a labelled pod every 0.2 s and records how each came back."""

    def __init__(self, api, ns):
        super().__init__(daemon=True)
        self.api, self.ns = api, ns
        self.stop = threading.Event()
        self.injected, self.missed, self.errors = 0, [], []

    def run(self):
        n = 0
        while not self.stop.is_set():
            n += 1
            try:
                p = self.api.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
                    "name": "p%d" % n, "labels": {LABEL: "true"}}, "spec": {
                    "nodeName": "e2e-node", "containers": [{"name": "c", "image": "x"}]}},
                    self.ns)
                if injected(p):
                    self.injected += 1
                else:
                    self.missed.append(p["metadata"]["name"])
            except Exception as e:  # noqa: BLE001 - every failure is the finding
                self.errors.append(str(e))
            self.stop.wait(0.2)


class Renewal(E2ETest):
    def secret(self):
        return self.api.get(kubeapi.path_for("Secret", NS, "%s-tls" % install.WEBHOOK_RELEASE))

    def renew(self, how, cron):
        """Delete the Secret (nothing to keep: certgen makes a new CA and
        pair) and let `how` run certgen; returns the new serving certificate."""
        self.api.delete(kubeapi.path_for("Secret", NS, "%s-tls" % install.WEBHOOK_RELEASE))
        jobs = kubeapi.path_for("Job", NS)
        before = {j["metadata"]["name"] for j in self.api.list(jobs)}
        if how == "schedule":
            self.api.patch(kubeapi.path_for("CronJob", NS, cron["metadata"]["name"]),
                           {"spec": {"schedule": "* * * * *"}})
        else:
            self.kubectl("create", "job", "renew-forced", "-n", NS,
                         "--from=cronjob/" + cron["metadata"]["name"])
        try:
            def done():
                new = [j for j in self.api.list(jobs) if j["metadata"]["name"] not in before]
                return new if new and all(j.get("status", {}).get("succeeded")
                                          for j in new) else None
            new = wait_until(done, 150, "certgen's Job (%s) succeeded" % how, 0.5)
        finally:
            if how == "schedule":
                self.api.patch(kubeapi.path_for("CronJob", NS, cron["metadata"]["name"]),
                               {"spec": {"schedule": cron["spec"]["schedule"]}})
        for j in new:
            self.api.delete(kubeapi.path_for("Job", NS, j["metadata"]["name"]))
        pem = base64.b64decode(self.secret()["data"]["tls.crt"]).decode()
        return ssl.PEM_cert_to_DER_cert(pem)

    def test_renewal_reaches_the_running_webhook_with_zero_failed_admissions(self):
        cron = next(c for c in self.api.list(kubeapi.path_for("CronJob", NS))
                    if c["metadata"]["name"].endswith("certgen-renew"))
        wh = self.c.install.webhooks[0]
        ns = self.namespace("renew")
        load = Admissions(self.api, ns)
        load.start()
        try:
            for how in ("schedule", "forced"):
                old = {p["status"]["podIP"]: served_cert(p["status"]["podIP"])
                       for p in wh.pods()}
                new = self.renew(how, cron)
                self.assertNotIn(new, old.values(), "certgen made a new certificate")
                t0 = time.time()
                wait_until(lambda: all(served_cert(ip) == new for ip in old), 120,
                           "every webhook pod serving the renewed certificate (%s)" % how, 0.5)
                self.c.log("renewal (%s): both webhook pods serve the new certificate %.1fs "
                           "after certgen's Secret" % (how, time.time() - t0))
        finally:
            load.stop.set()
            load.join(10)
        self.assertEqual(load.errors, [], "admissions that failed")
        self.assertEqual(load.missed, [], "pods admitted without injection")
        self.assertGreater(load.injected, 100, "too few admissions to judge")
        self.c.log("renewals: %d labelled pods created meanwhile, all injected" % load.injected)
        mwc = self.c.install.webhook_configuration()
        bundle = base64.b64decode(mwc["webhooks"][0]["clientConfig"]["caBundle"]).decode()
        ca = base64.b64decode(self.secret()["data"]["ca.crt"]).decode()
        self.assertIn(ca.strip(), bundle, "the configuration trusts the new CA")


if __name__ == "__main__":
    unittest.main()
