"""`mldiagnostics-webhook certgen` (DESIGN §3.6, the chart's certManager.enabled=false
path) against the fake API server: the Secret it writes, the caBundle JSON patch of that
field only, idempotence (no writes on a re-run), renewal when the certificate nears expiry
or its DNS names change (old CA kept in the bundle), conflicts, clear errors, and a real
TLS handshake with the minted pair verified through the caBundle as the API server would."""
import base64
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "fakes"))
from fake_apiserver import FakeApiServer  # noqa: E402
from harness import BIN_DIR, SLOW, Webhook  # noqa: E402

SECRETS = ("", "v1", "secrets")
MWC = ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations")
NS = "gke-mldiagnostics"
SVC = "mldiagnostics-injection-webhook"
CONFIG = "mldiagnostics-injection-webhook"
SANS = [SVC, SVC + "." + NS, SVC + "." + NS + ".svc", SVC + "." + NS + ".svc.cluster.local"]


def webhook_config(*services):
    hooks = []
    for i, (name, ns) in enumerate(services):
        hooks.append({"name": "hook%d.diagon.gke.io" % i, "admissionReviewVersions": ["v1"],
                      "sideEffects": "None",
                      "clientConfig": {"service": {"name": name, "namespace": ns,
                                                   "path": "/mutate", "port": 443}},
                      "rules": [{"operations": ["CREATE"], "apiGroups": [""],
                                 "apiVersions": ["v1"], "resources": ["pods"]}]})
    return {"metadata": {"name": CONFIG}, "webhooks": hooks}


def openssl(*args, stdin=None):
    return subprocess.run(["openssl", *args], input=stdin, capture_output=True, text=True,
                          check=True).stdout


class CertgenTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mld-certgen-")
        self.api = FakeApiServer()
        self.api.start()
        self.kubeconfig = os.path.join(self.tmp, "kubeconfig")
        self.api.kubeconfig(self.kubeconfig)
        self.api.create(("", "v1", "namespaces"), {"metadata": {"name": NS}})

    def tearDown(self):
        self.api.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def certgen(self, *extra, expect=0, env=None):
        args = [os.path.join(BIN_DIR, "mldiagnostics-webhook"), "certgen", "--kubeconfig",
                self.kubeconfig, "--service", SVC, "--namespace", NS,
                "--webhook-config", CONFIG, *extra]
        p = subprocess.run(args, capture_output=True, text=True, timeout=60 * SLOW,
                           env=dict(os.environ, **(env or {})))
        self.assertEqual(p.returncode, expect, p.stdout + p.stderr)
        if expect == 0:
            return json.loads(p.stderr.strip().splitlines()[-1])
        return p.stderr + p.stdout

    def secret(self):
        s = self.api.get(SECRETS, SVC + "-tls", ns=NS)
        return {k: base64.b64decode(v).decode() for k, v in s["data"].items()}, s

    def bundle(self, index=0):
        cfg = self.api.get(MWC, CONFIG)
        b64 = cfg["webhooks"][index]["clientConfig"].get("caBundle")
        return base64.b64decode(b64).decode() if b64 else None

    def writes(self):
        return sum(self.api.count(method=m) for m in ("POST", "PUT", "PATCH", "DELETE"))

    def sans_of(self, cert):
        text = openssl("x509", "-noout", "-ext", "subjectAltName", stdin=cert)
        return sorted(re.findall(r"DNS:([^,\s]+)", text))

    def test_creates_secret_then_patches_bundle_then_does_nothing(self):
        # pre-install: no configuration yet
        out = self.certgen()
        self.assertEqual(out["secret"], "created")
        self.assertEqual(out["caBundle"], "configuration not found (yet)")
        data, obj = self.secret()
        self.assertEqual(obj["type"], "kubernetes.io/tls")
        self.assertEqual(sorted(data), ["ca.crt", "tls.crt", "tls.key"])
        self.assertEqual(self.sans_of(data["tls.crt"]), sorted(SANS))
        with open(os.path.join(self.tmp, "ca.pem"), "w") as f:
            f.write(data["ca.crt"])
        self.assertIn("OK", openssl("verify", "-CAfile", os.path.join(self.tmp, "ca.pem"),
                                    stdin=data["tls.crt"]))
        self.assertIn("NIST CURVE: P-256", openssl("x509", "-noout", "-text", stdin=data["tls.crt"]))
        # post-install: the configuration exists, with an entry of another service too
        self.api.create(MWC, webhook_config((SVC, NS), ("other", NS)))
        self.api.clear_requests()
        out = self.certgen()
        self.assertEqual((out["secret"], out["caBundle"], out["webhooksPatched"]),
                         ("kept", "patched", 1))
        self.assertEqual(self.bundle(0), data["ca.crt"])
        self.assertIsNone(self.bundle(1))
        (patch,) = [e for e in self.api.requests if e["method"] == "PATCH"]
        ops = json.loads(patch["body"])
        self.assertEqual([(o["op"], o["path"]) for o in ops],
                         [("test", "/webhooks/0/name"),
                          ("add", "/webhooks/0/clientConfig/caBundle")])
        # re-run (every helm upgrade): nothing to write
        self.api.clear_requests()
        out = self.certgen()
        self.assertEqual((out["secret"], out["caBundle"]), ("kept", "unchanged"))
        self.assertEqual(self.writes(), 0)
        self.assertEqual(self.secret()[0], data)

    def test_the_pair_serves_tls_trusted_through_the_bundle(self):
        self.api.create(MWC, webhook_config((SVC, NS)))
        self.certgen()
        data, _ = self.secret()
        certs = os.path.join(self.tmp, "certs")
        os.mkdir(certs)
        for k in ("tls.crt", "tls.key"):
            with open(os.path.join(certs, k), "w") as f:
                f.write(data[k])
        ctx = ssl.create_default_context(cadata=self.bundle())
        with Webhook(cert_dir=certs, wait_ready=False) as wh:
            deadline = time.time() + 10 * SLOW
            for name in SANS:
                while True:
                    try:
                        raw = socket.create_connection(("127.0.0.1", wh.port), timeout=10)
                        break
                    except OSError:
                        if time.time() > deadline:
                            raise
                        time.sleep(0.05)
                with raw, ctx.wrap_socket(raw, server_hostname=name) as s:
                    self.assertIn(s.version(), ("TLSv1.2", "TLSv1.3"))
            with socket.create_connection(("127.0.0.1", wh.port), timeout=10) as raw:
                with self.assertRaises(ssl.SSLCertVerificationError):
                    ctx.wrap_socket(raw, server_hostname="other.example")

    def test_renews_when_names_change_and_keeps_the_old_ca_trusted(self):
        self.api.create(MWC, webhook_config((SVC, NS)))
        self.certgen()
        old, _ = self.secret()
        out = self.certgen("--cluster-domain", "corp.internal")
        self.assertEqual(out["secret"], "renewed")
        self.assertIn("DNS names differ", out["reason"])
        new, _ = self.secret()
        self.assertNotEqual(new["ca.crt"], old["ca.crt"])
        self.assertIn(SVC + "." + NS + ".svc.corp.internal", self.sans_of(new["tls.crt"]))
        bundle = self.bundle()
        self.assertTrue(bundle.startswith(new["ca.crt"]))
        self.assertIn(old["ca.crt"], bundle)  # the old serving cert stays valid meanwhile

    def test_renews_within_the_renewal_window(self):
        self.api.create(MWC, webhook_config((SVC, NS)))
        self.certgen("--validity", "800h", "--renew-before", "24h")  # 33 days and 8 hours
        self.assertEqual(self.certgen("--renew-before", "24h")["secret"], "kept")
        self.assertEqual(self.certgen()["secret"], "kept")  # default 720h: not yet due
        out = self.certgen("--renew-before", "792h")  # 33 days
        self.assertEqual(out["secret"], "renewed")
        self.assertIn("expires within 33 days", out["reason"])

    def test_replaces_a_garbled_secret(self):
        self.api.create(SECRETS, {"metadata": {"name": SVC + "-tls"}, "type": "kubernetes.io/tls",
                                  "data": {"tls.crt": base64.b64encode(b"junk").decode(),
                                           "tls.key": "", "ca.crt": ""}}, ns=NS)
        out = self.certgen()
        self.assertEqual(out["secret"], "renewed")
        self.assertEqual(self.sans_of(self.secret()[0]["tls.crt"]), sorted(SANS))

    def test_long_names(self):
        ns = "a-rather-long-namespace-name-for-training"  # the CA's name would pass 64 chars
        self.api.create(("", "v1", "namespaces"), {"metadata": {"name": ns}})
        args = [os.path.join(BIN_DIR, "mldiagnostics-webhook"), "certgen", "--kubeconfig",
                self.kubeconfig, "--service", SVC, "--namespace", ns]
        p = subprocess.run(args, capture_output=True, text=True, timeout=60 * SLOW)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = self.api.get(SECRETS, SVC + "-tls", ns=ns)
        cert = base64.b64decode(s["data"]["tls.crt"]).decode()
        self.assertIn("%s.%s.svc.cluster.local" % (SVC, ns), self.sans_of(cert))

    def test_a_secret_of_another_type_is_a_clear_error(self):
        self.api.create(SECRETS, {"metadata": {"name": SVC + "-tls"}, "type": "Opaque",
                                  "data": {"x": "eA=="}}, ns=NS)
        err = self.certgen(expect=1)
        self.assertIn("secret %s/%s-tls: it exists with type Opaque, not kubernetes.io/tls"
                      % (NS, SVC), err)
        self.assertEqual(self.api.get(SECRETS, SVC + "-tls", ns=NS)["data"], {"x": "eA=="})

    def test_renewal_keeps_foreign_metadata(self):
        self.certgen()
        s = self.api.get(SECRETS, SVC + "-tls", ns=NS)
        s["metadata"].setdefault("labels", {})["team"] = "ml"
        s["metadata"]["annotations"] = {"backup": "yes"}
        self.api.update(SECRETS, s, ns=NS)
        self.assertEqual(self.certgen("--cluster-domain", "x.local")["secret"], "renewed")
        meta = self.api.get(SECRETS, SVC + "-tls", ns=NS)["metadata"]
        self.assertEqual((meta["labels"]["team"], meta["annotations"]["backup"]), ("ml", "yes"))
        self.assertEqual(meta["labels"]["app.kubernetes.io/managed-by"], "mldiagnostics-certgen")

    def test_bundle_keeps_trusting_the_old_ca_after_a_failed_patch(self):
        self.api.create(MWC, webhook_config((SVC, NS)))
        self.certgen()
        old, _ = self.secret()
        # the renewal writes the Secret, then every PATCH of the configuration fails
        self.api.fail_next(10, status=500, paths=r"/mutatingwebhookconfigurations/",
                           methods=["PATCH"])
        self.certgen("--cluster-domain", "x.local", expect=1)
        self.api.clear_faults()
        new, _ = self.secret()
        self.assertNotEqual(new["ca.crt"], old["ca.crt"])
        # the next run keeps the Secret and adds the new CA without dropping the old one,
        # which the webhook may still be serving with
        out = self.certgen("--cluster-domain", "x.local")
        self.assertEqual((out["secret"], out["caBundle"]), ("kept", "patched"))
        bundle = self.bundle()
        self.assertTrue(bundle.startswith(new["ca.crt"]))
        self.assertIn(old["ca.crt"], bundle)

    def test_conflict_starts_over(self):
        self.certgen()
        self.api.fail_next(1, status=409, paths=r"/secrets/", methods=["PUT"])
        out = self.certgen("--cluster-domain", "x.local")
        self.assertEqual(out["secret"], "renewed")
        self.assertEqual(self.api.count(method="PUT", path_regex="/secrets/"), 2)

    def test_clear_errors(self):
        err = self.certgen("--namespace", "", expect=2)
        self.assertIn("--service and --namespace are required", err)
        err = self.certgen("--bogus", expect=2)
        self.assertIn("--bogus", err)
        self.api.create(MWC, webhook_config(("other", NS)))
        err = self.certgen(expect=1)
        self.assertIn("mutatingwebhookconfiguration %s: no webhook in it calls service %s/%s"
                      % (CONFIG, NS, SVC), err)
        self.api.fail_next(5, status=403, paths=r"/secrets/")
        err = self.certgen(expect=1)
        self.assertIn("secret %s/%s-tls" % (NS, SVC), err)
        dead = os.path.join(self.tmp, "dead-kubeconfig")
        with open(self.kubeconfig) as f:
            text = f.read()
        with open(dead, "w") as f:
            f.write(re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:1", text))
        err = self.certgen("--kubeconfig", dead, expect=1)
        self.assertIn("certgen failed", err)

    def test_concurrent_runs_agree(self):
        self.api.create(MWC, webhook_config((SVC, NS)))
        results = []

        def run():
            results.append(self.certgen())

        threads = [threading.Thread(target=run) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(results), 3)
        data, _ = self.secret()
        self.assertIn(data["ca.crt"], self.bundle())


if __name__ == "__main__":
    unittest.main()
