"""The charts against the real API server: seed 003's install is what the
tier runs on (cluster.py); here `helm test` of both releases (DESIGN §5)
passes, and fails with a message naming the cause when the webhook is
down; the default cert-manager mode's objects pass a server-side dry run
against cert-manager's own CRDs (its controller is not built here), which
do refuse a malformed Certificate."""
import json
import unittest

import yaml

import install
import kubeapi
from e2e import E2ETest

NS = install.NAMESPACE


class HelmTest(E2ETest):
    def helm_test(self, release):
        return self.c.install.helm.run("test", release, "-n", NS, "--timeout", "120s",
                                       check=False, timeout=180)

    def hook_pod(self, release):
        pods = [p for p in self.api.list(kubeapi.path_for("Pod", NS))
                if p["metadata"].get("annotations", {}).get("helm.sh/hook") == "test"
                and p["metadata"]["labels"].get("app.kubernetes.io/instance") == release]
        self.assertEqual(len(pods), 1, [p["metadata"]["name"] for p in pods])
        return pods[0]

    def test_both_charts_pass_helm_test(self):
        for release in (install.WEBHOOK_RELEASE, install.OPERATOR_RELEASE):
            r = self.helm_test(release)
            self.assertEqual(r.returncode, 0, "helm test %s:\n%s%s" % (release, r.stdout,
                                                                     r.stderr))
            self.assertRegex(r.stdout, r"Phase:\s+Succeeded")
            self.assertEqual(self.hook_pod(release)["status"]["phase"], "Succeeded")

    def test_webhook_helm_test_names_the_cause_when_down(self):
        wh = self.c.install.webhooks[0]
        wh.stop()
        try:
            r = self.helm_test(install.WEBHOOK_RELEASE)
        finally:
            wh.start()
            wh.wait_ready()
        self.assertNotEqual(r.returncode, 0, r.stdout)
        pod = self.hook_pod(install.WEBHOOK_RELEASE)
        self.assertEqual(pod["status"]["phase"], "Failed")
        msg = pod["status"]["containerStatuses"][0]["state"]["terminated"].get("message", "")
        self.assertRegex(msg, r"(?i)unreachable|cannot reach|connect", msg)
        # and with the webhook back, the test passes again
        self.assertEqual(self.helm_test(install.WEBHOOK_RELEASE).returncode, 0)


class CertManagerMode(E2ETest):
    """certManager.enabled=true (the chart's default): its Issuers,
    Certificates and the inject-ca-from annotation, dry-run on the server."""

    def render(self, ns, *sets):
        return self.c.install.helm.run("template", install.WEBHOOK_RELEASE,
                                       "charts/" + install.WEBHOOK_RELEASE, "--namespace", ns, "--skip-tests",
                                       *sets).stdout

    def dry_run(self, text, ns):
        return self.kubectl("apply", "--dry-run=server", "-n", ns, "-f", "-", input=text,
                            check=False)

    def test_default_mode_objects_pass_a_server_side_dry_run(self):
        ns = self.namespace("cm")
        text = self.render(ns)
        docs = [d for d in yaml.safe_load_all(text) if d]
        kinds = sorted({d["kind"] for d in docs})
        self.assertIn("Certificate", kinds)
        self.assertIn("Issuer", kinds)
        mwc = next(d for d in docs if d["kind"] == "MutatingWebhookConfiguration")
        ref = mwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        certs = {"%s/%s" % (d["metadata"].get("namespace", ns), d["metadata"]["name"])
                 for d in docs if d["kind"] == "Certificate"}
        self.assertIn(ref, certs, "inject-ca-from names a Certificate of the chart")
        # Cluster-scoped objects share names with the installed release: give
        # the dry run its own, so it checks creation, not an update.
        for d in docs:
            if "namespace" not in d["metadata"] and d["kind"] not in ("Namespace",):
                d["metadata"]["name"] = "cm-check-" + d["metadata"]["name"]
        p = self.dry_run(yaml.safe_dump_all(docs), ns)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for kind in ("certificate.cert-manager.io", "issuer.cert-manager.io",
                     "mutatingwebhookconfiguration.admissionregistration.k8s.io"):
            self.assertRegex(p.stdout, kind + r"/\S+ created \(server dry run\)", p.stdout)

    def test_the_dry_run_enforces_cert_managers_schema(self):
        ns = self.namespace("cmbad")
        bad = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
               "metadata": {"name": "bad", "namespace": ns},
               "spec": {"secretName": "x", "dnsNames": ["a"], "duration": 90,
                        "issuerRef": {"name": "i"}}}
        p = self.dry_run(json.dumps(bad), ns)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("spec.duration", p.stderr)


if __name__ == "__main__":
    unittest.main()
