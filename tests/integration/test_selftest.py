"""The charts' `helm test` commands (DESIGN §5) against the fake API server, with the
credentials of a kubeconfig token as the servers use them.

`mldiagnostics-webhook selftest`: the API server's part is played by an admission
stand-in on the fake (the chart's rendered MutatingWebhookConfiguration, its clientConfig
switched to the real webhook on 127.0.0.1 over TLS; namespaceSelector, caBundle and
failurePolicy applied as the API server applies them). A dry-run create that comes back
injected passes; every failure names its cause: namespace missing or excluded, webhook
unreachable, certificate not trusted (another CA, empty caBundle), the API server unable
to call a webhook that answers from inside the cluster (the GKE firewall rule for 8443),
the dry run refused for a reason of its own, no webhook configuration; it retries while
an install settles and stops at once on an excluded namespace; nothing is stored.

`mldiagnostics-operator selftest`: passes when the MLDiagnosticsConnection API is served
and the Deployment has a ready replica; names the missing CRD, the missing Deployment,
the unready one (with its conditions) and a forbidden request; retries until ready."""
import base64
import copy
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "fakes"))
import charts  # noqa: E402
import controllers  # noqa: E402
from fake_apiserver import ApiError, FakeApiServer, json_patch  # noqa: E402
from harness import BIN_DIR, SLOW, Webhook, free_port, make_cert  # noqa: E402

MWC = ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations")
DEPLOYMENTS = ("apps", "v1", "deployments")
CONFIG = charts.WEBHOOK
NS = charts.NAMESPACE
TOKEN = "selftest-sa-token"
_rendered = {}


def chart_mwc(url, ca_pem=None, failure_policy="Ignore"):
    """The chart's MutatingWebhookConfiguration (rendered by helm), called at url."""
    if "mwc" not in _rendered:
        _rendered["mwc"] = charts.find(charts.render(charts.WEBHOOK, tests=False),
                                       "MutatingWebhookConfiguration")
    mwc = copy.deepcopy(_rendered["mwc"])
    hook = mwc["webhooks"][0]
    hook["clientConfig"] = {"url": url}
    if ca_pem:
        hook["clientConfig"]["caBundle"] = base64.b64encode(ca_pem).decode()
    hook["failurePolicy"] = failure_policy
    mwc["metadata"].pop("annotations", None)
    return mwc


def selected(selector, labels):
    """LabelSelector semantics, written independently of the C k8s_selector."""
    for k, v in (selector or {}).get("matchLabels", {}).items():
        if labels.get(k) != v:
            return False
    for e in (selector or {}).get("matchExpressions", []):
        have, op, values = labels.get(e["key"]), e["operator"], e.get("values", [])
        ok = {"In": have in values, "NotIn": have not in values, "Exists": have is not None,
              "DoesNotExist": have is None}[op]
        if not ok:
            return False
    return True


class ApiServerStandIn:
    """The API server's mutating admission for pod creates on the fake: namespace
    lifecycle (404 for a missing namespace), the configuration's namespaceSelector, a
    TLS call to its url trusting only its caBundle, failurePolicy for failed calls.
    unreachable_calls: that many calls never arrive (a firewall in between)."""

    def __init__(self, api):
        self.api, self.unreachable_calls, self.calls, self.refuse = api, 0, 0, None

    def __call__(self, res, obj, dry_run):
        if res.plural != "pods":
            return obj
        ns = obj["metadata"]["namespace"]
        try:
            labels = self.api.get("namespaces", ns)["metadata"].get("labels", {})
        except ApiError:
            raise ApiError(404, "NotFound", 'namespaces "%s" not found' % ns,
                           {"name": ns, "kind": "namespaces"})
        if self.refuse:
            raise self.refuse
        mwcs = [m for m in self.api.objects(*MWC) if m["metadata"]["name"] == CONFIG]
        if not mwcs:
            return obj
        hook = mwcs[0]["webhooks"][0]
        if not selected(hook.get("namespaceSelector"), labels):
            return obj
        try:
            patch = self.call(hook, obj, ns)
        except (OSError, ssl.SSLError) as e:
            if hook["failurePolicy"] == "Fail":
                raise ApiError(500, "InternalError", 'Internal error occurred: failed calling '
                               'webhook "%s": failed to call webhook: Post "%s": %s'
                               % (hook["name"], hook["clientConfig"]["url"], e))
            return obj
        return json_patch(obj, patch) if patch else obj

    def call(self, hook, obj, ns):
        self.calls += 1
        if self.calls <= self.unreachable_calls:
            raise OSError("dial tcp: i/o timeout")
        cc = hook["clientConfig"]
        ca = base64.b64decode(cc["caBundle"]).decode() if cc.get("caBundle") else None
        ctx = ssl.create_default_context(cadata=ca) if ca else ssl.create_default_context()
        u = urllib.parse.urlsplit(cc["url"])
        conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=5 * SLOW)
        try:
            conn.request("POST", u.path + "?timeout=5s", json.dumps(controllers.review(obj, ns)),
                         {"Content-Type": "application/json"})
            resp = json.loads(conn.getresponse().read())["response"]
        finally:
            conn.close()
        return json.loads(base64.b64decode(resp["patch"])) if "patch" in resp else None


class FakeCluster(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mld-selftest-")
        self.api = FakeApiServer(tokens={TOKEN})
        self.api.start()
        self.kubeconfig = os.path.join(self.tmp, "kubeconfig")
        self.api.kubeconfig(self.kubeconfig, token=TOKEN)
        self.api.create("namespaces", {"metadata": {"name": NS}})

    def tearDown(self):
        self.api.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_selftest(self, binary, *args, expect=None, timeout="0s"):
        p = subprocess.run([os.path.join(BIN_DIR, binary), "selftest", "--kubeconfig",
                            self.kubeconfig, "--timeout", timeout, "--interval", "100ms", *args],
                           capture_output=True, text=True, timeout=60 * SLOW)
        out = p.stdout + p.stderr
        if expect is not None:
            self.assertEqual(p.returncode, expect, out)
        lines = [ln for ln in out.splitlines() if ln.strip()]
        self.assertEqual(len(lines), 1, "one line: %r" % out)
        for r in self.api.requests:
            self.assertTrue(r["headers"]["Authorization"], r["path"])  # the kubeconfig's token
        return lines[0]


class WebhookSelftestTest(FakeCluster):
    @classmethod
    def setUpClass(cls):
        cls.wh = Webhook("--cluster-name", "selftest-cluster").__enter__()
        with open(cls.wh.crt, "rb") as f:
            cls.ca = f.read()
        cls.url = "https://127.0.0.1:%d/mutate" % cls.wh.port

    @classmethod
    def tearDownClass(cls):
        cls.wh.__exit__(None, None, None)

    def setUp(self):
        super().setUp()
        self.standin = ApiServerStandIn(self.api)
        self.api.admission = self.standin

    def install(self, url=None, ca=True, failure_policy="Ignore"):
        self.api.create(MWC, chart_mwc(url or self.url, self.ca if ca is True else ca or None,
                                       failure_policy))

    def selftest(self, *args, expect=1, **kw):
        return self.run_selftest("mldiagnostics-webhook", *args, expect=expect, **kw)

    def test_injected_dry_run_passes_and_stores_nothing(self):
        self.install()
        line = self.selftest(expect=0)
        self.assertRegex(line, r"^selftest passed: a dry-run pod in namespace default came back "
                               r"injected \(diagon.gke.io/injection=[^)]+\) \(attempts: 1\)$")
        self.assertEqual(self.api.objects("", "v1", "pods"), [])
        (post,) = [r for r in self.api.requests if r["method"] == "POST"]
        self.assertEqual((post["path"], post["query"].get("dryRun")),
                         ("/api/v1/namespaces/default/pods", "All"))
        self.assertEqual(self.standin.calls, 1)

    def test_release_namespace_is_excluded_at_once(self):
        self.install()
        t0 = time.time()
        line = self.selftest("--namespace", NS, timeout="30s")
        self.assertLess(time.time() - t0, 10 * SLOW, "no retrying an excluded namespace")
        self.assertIn("namespace excluded: namespace %s is not selected by the namespaceSelector "
                      "of MutatingWebhookConfiguration %s (label kubernetes.io/metadata.name=%s "
                      "fails kubernetes.io/metadata.name NotIn [kube-system, %s])"
                      % (NS, CONFIG, NS, NS), line)
        self.assertIn("selftest.namespace", line)
        self.assertTrue(line.endswith("(attempts: 1)"), line)
        self.assertEqual(self.standin.calls, 0)

    def test_exempt_label_is_named(self):
        self.install()
        self.api.create("namespaces", {"metadata": {"name": "ml", "labels": {
            "diagon-webhook-exempt": "true"}}})
        line = self.selftest("--namespace", "ml")
        self.assertIn("namespace excluded", line)
        self.assertIn("label diagon-webhook-exempt=true fails diagon-webhook-exempt NotIn [true]",
                      line)

    def test_missing_namespace(self):
        self.install()
        line = self.selftest("--namespace", "nope")
        self.assertIn("namespace nope does not exist", line)
        self.assertIn('the API server answered the dry run: namespaces "nope" not found', line)

    def test_unreachable_webhook_ignore_and_fail(self):
        closed = "https://127.0.0.1:%d/mutate" % free_port()
        self.install(url=closed)
        line = self.selftest()
        self.assertRegex(line, r"^selftest failed: webhook unreachable: %s: " % closed)
        self.assertIn("firewall rule", line)
        self.assertIn("TCP 8443", line)
        self.api.delete(MWC, CONFIG)
        self.install(url=closed, failure_policy="Fail")
        line = self.selftest()
        self.assertIn("webhook unreachable: %s" % closed, line)
        self.assertIn('the API server answered the dry run: Internal error occurred: failed '
                      'calling webhook "pods.mldiagnostics.diagon.gke.io"', line)

    def test_certificate_not_trusted(self):
        other, _ = make_cert(self.tmp, "other")
        with open(other, "rb") as f:
            self.install(ca=f.read())
        line = self.selftest()
        self.assertIn("certificate not trusted: the serving certificate of the webhook at %s "
                      "does not verify against the caBundle of MutatingWebhookConfiguration %s"
                      % (self.url, CONFIG), line)
        self.assertIn("cert-manager.io/inject-ca-from", line)
        self.assertIn("certgen", line)

    def test_empty_ca_bundle(self):
        self.install(ca=b"")
        line = self.selftest()
        self.assertIn("certificate not trusted", line)
        self.assertIn("the caBundle is empty", line)

    def test_api_server_cannot_reach_a_webhook_that_works(self):
        self.install()
        self.standin.unreachable_calls = 10**6
        line = self.selftest()
        self.assertIn("webhook unreachable from the API server: called from inside the cluster, "
                      "%s answers, is trusted by the caBundle and injects the pod" % self.url, line)
        self.assertIn("on GKE private clusters the control plane needs a firewall rule", line)

    def test_retries_while_the_install_settles(self):
        self.install()
        self.standin.unreachable_calls = 2
        line = self.selftest(expect=0, timeout="30s")
        self.assertTrue(line.startswith("selftest passed"), line)
        self.assertTrue(line.endswith("(attempts: 3)"), line)

    def test_no_webhook_configuration(self):
        line = self.selftest()
        self.assertIn("webhook not installed: MutatingWebhookConfiguration %s not found" % CONFIG,
                      line)

    def test_dry_run_refused_for_its_own_reason(self):
        self.install()
        self.standin.refuse = ApiError(403, "Forbidden", 'pods "x" is forbidden: violates '
                                       'PodSecurity "restricted:latest"')
        line = self.selftest()
        self.assertIn("failed for a reason other than the webhook: pods \"x\" is forbidden: "
                      "violates PodSecurity", line)

    def test_forbidden_configuration_read(self):
        self.install()
        self.standin.unreachable_calls = 10**6
        self.api.fail_next(1, status=403, paths=r"mutatingwebhookconfigurations")
        line = self.selftest()
        self.assertRegex(line, r"^selftest failed: MutatingWebhookConfiguration %s: " % CONFIG)

    def test_bad_flags(self):
        p = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-webhook"), "selftest",
                            "--timeout", "soon"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--timeout", p.stderr)


class OperatorSelftestTest(FakeCluster):
    DEP = charts.OPERATOR

    def deployment(self, ready, replicas=1, conditions=()):
        d = self.api.create(DEPLOYMENTS, {"metadata": {"name": self.DEP},
                                          "spec": {"replicas": replicas}}, ns=NS)
        self.status(ready, replicas, conditions)
        return d

    def status(self, ready, replicas=1, conditions=()):
        d = self.api.get(DEPLOYMENTS, self.DEP, ns=NS)
        d["status"] = {"replicas": replicas, "readyReplicas": ready,
                       "conditions": list(conditions)}
        self.api.update(DEPLOYMENTS, d, ns=NS, subresource="status")

    def selftest(self, *args, expect=1, **kw):
        return self.run_selftest("mldiagnostics-operator", "--namespace", NS, *args,
                                 expect=expect, **kw)

    def test_served_and_ready_passes(self):
        self.api.register_ml_crds()
        self.deployment(1)
        line = self.selftest(expect=0)
        self.assertEqual(line, "selftest passed: the MLDiagnosticsConnection CRD is served and "
                               "Deployment %s/%s has 1 of 1 replicas ready (attempts: 1)"
                         % (NS, self.DEP))

    def test_crd_not_served(self):
        self.deployment(1)
        line = self.selftest()
        self.assertIn("the MLDiagnosticsConnection CRD is not served", line)
        self.assertIn("mldiagnosticsconnections.diagon.gke.io", line)

    def test_deployment_missing(self):
        self.api.register_ml_crds()
        line = self.selftest("--deployment", "other")
        self.assertIn("the operator's Deployment %s/other does not exist" % NS, line)

    def test_not_ready_names_the_conditions(self):
        self.api.register_ml_crds()
        self.deployment(0, conditions=[{"type": "Available", "status": "False",
                                        "reason": "MinimumReplicasUnavailable",
                                        "message": "Deployment does not have minimum "
                                                   "availability."}])
        line = self.selftest()
        self.assertIn("the operator is not ready: Deployment %s/%s has 0 of 1 replicas ready; "
                      "Available=False (MinimumReplicasUnavailable: Deployment does not have "
                      "minimum availability.)" % (NS, self.DEP), line)

    def test_retries_until_ready(self):
        self.api.register_ml_crds()
        self.deployment(0)
        t = threading.Timer(0.5 * SLOW, self.status, args=(1,))
        t.start()
        try:
            line = self.selftest(expect=0, timeout="30s")
        finally:
            t.cancel()
        self.assertTrue(line.startswith("selftest passed"), line)
        self.assertNotIn("(attempts: 1)", line)

    def test_forbidden(self):
        self.api.register_ml_crds()
        self.deployment(1)
        self.api.fail_next(1, status=403)
        line = self.selftest()
        self.assertRegex(line, r"^selftest failed: cannot list mldiagnosticsconnections in %s: "
                         % NS)

    def test_namespace_from_the_pod(self):
        self.api.register_ml_crds()
        self.deployment(1)
        p = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-operator"), "selftest",
                            "--kubeconfig", self.kubeconfig, "--timeout", "0s"],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, POD_NAMESPACE=NS))
        self.assertEqual(p.returncode, 0, p.stderr)


if __name__ == "__main__":
    unittest.main()
