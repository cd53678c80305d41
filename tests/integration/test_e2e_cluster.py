"""End to end against a real kube-apiserver, when one is available (DESIGN
§7); skipped with a clear message otherwise. Two ways to get one:

  MLD_E2E_KUBECONFIG=/path/to/kubeconfig   an existing cluster (kind, GKE, ...)
  KUBEBUILDER_ASSETS=/path/to/bin          envtest's binaries: etcd and
                                           kube-apiserver are started here

What it checks with the real server's validation, defaulting and watch
cache: the CRD installs and serves; the operator (real binary, --kubeconfig)
becomes ready, fails a capture of a missing pod at once, and its status
writes pass the server's structural schema; the webhook's offline inject
output is accepted by the server (dry-run create)."""
import base64
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import yaml

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from harness import BIN_DIR, Operator, free_port  # noqa: E402

ROOT = os.path.join(HERE, "..", "..")
CRD = os.path.join(ROOT, "manifests", "crd", "mldiagnosticsconnections.diagon.gke.io.yaml")


class Api:
    """Just enough of a client: bearer token or client certificate, CA."""

    def __init__(self, kubeconfig):
        with open(kubeconfig) as f:
            kc = yaml.safe_load(f)
        ctx = next(c["context"] for c in kc["contexts"] if c["name"] == kc["current-context"])
        cluster = next(c["cluster"] for c in kc["clusters"] if c["name"] == ctx["cluster"])
        user = next((u["user"] for u in kc.get("users", []) if u["name"] == ctx.get("user")), {})
        self.server = cluster["server"].rstrip("/")
        self.tmp = tempfile.mkdtemp(prefix="mld-e2e-")
        self.ssl = None
        if self.server.startswith("https"):
            self.ssl = ssl.create_default_context()
            ca = cluster.get("certificate-authority")
            if cluster.get("certificate-authority-data"):
                ca = self._file("ca.crt", cluster["certificate-authority-data"])
            if ca:
                self.ssl.load_verify_locations(ca)
            if cluster.get("insecure-skip-tls-verify"):
                self.ssl.check_hostname = False
                self.ssl.verify_mode = ssl.CERT_NONE
            cert, key = user.get("client-certificate"), user.get("client-key")
            if user.get("client-certificate-data"):
                cert = self._file("tls.crt", user["client-certificate-data"])
                key = self._file("tls.key", user["client-key-data"])
            if cert:
                self.ssl.load_cert_chain(cert, key)
        self.token = user.get("token")

    def _file(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def call(self, method, path, body=None, ok=(200, 201)):
        req = urllib.request.Request(self.server + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, context=self.ssl, timeout=30) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")


def start_envtest(assets, tmp):
    """etcd + kube-apiserver from envtest's binaries; returns (kubeconfig, procs)."""
    etcd_port, api_port = free_port(), free_port()
    procs = [subprocess.Popen([os.path.join(assets, "etcd"), "--data-dir", os.path.join(tmp, "etcd"),
                               "--listen-client-urls", "http://127.0.0.1:%d" % etcd_port,
                               "--advertise-client-urls", "http://127.0.0.1:%d" % etcd_port,
                               "--listen-peer-urls", "http://127.0.0.1:%d" % free_port()],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    token = "e2e-token"
    with open(os.path.join(tmp, "tokens.csv"), "w") as f:
        f.write('%s,admin,admin,"system:masters"\n' % token)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", os.path.join(tmp, "sa.key"), "-out", os.path.join(tmp, "sa.crt"),
                    "-subj", "/CN=sa"], check=True, capture_output=True)
    procs.append(subprocess.Popen([
        os.path.join(assets, "kube-apiserver"), "--etcd-servers", "http://127.0.0.1:%d" % etcd_port,
        "--secure-port", str(api_port), "--bind-address", "127.0.0.1",
        "--cert-dir", os.path.join(tmp, "certs"), "--token-auth-file",
        os.path.join(tmp, "tokens.csv"), "--authorization-mode", "RBAC",
        "--service-account-issuer", "https://e2e", "--service-account-key-file",
        os.path.join(tmp, "sa.crt"), "--service-account-signing-key-file",
        os.path.join(tmp, "sa.key"), "--service-cluster-ip-range", "10.0.0.0/24"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    kc = os.path.join(tmp, "kubeconfig")
    with open(kc, "w") as f:
        yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "e2e",
                        "clusters": [{"name": "e2e", "cluster": {
                            "server": "https://127.0.0.1:%d" % api_port,
                            "insecure-skip-tls-verify": True}}],
                        "users": [{"name": "e2e", "user": {"token": token}}],
                        "contexts": [{"name": "e2e", "context": {"cluster": "e2e",
                                                                 "user": "e2e"}}]}, f)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", api_port), 1).close()
            if Api(kc).call("GET", "/readyz", ok=(200,))[0] == 200:
                return kc, procs
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError("envtest kube-apiserver did not start")


class RealClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.procs, cls.tmp = [], tempfile.mkdtemp(prefix="mld-e2e-")
        kc = os.environ.get("MLD_E2E_KUBECONFIG")
        assets = os.environ.get("KUBEBUILDER_ASSETS")
        if not kc and assets and os.path.exists(os.path.join(assets, "kube-apiserver")):
            kc, cls.procs = start_envtest(assets, cls.tmp)
        if not kc:
            raise unittest.SkipTest("no real API server: set MLD_E2E_KUBECONFIG to a kubeconfig, "
                                    "or KUBEBUILDER_ASSETS to envtest's etcd + kube-apiserver "
                                    "(a kube-apiserver cannot be installed on these machines)")
        cls.kubeconfig = kc
        cls.api = Api(kc)
        with open(CRD) as f:
            crd = yaml.safe_load(f)
        st, _ = cls.api.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        assert st in (201, 409), st
        cls.ns = "mld-e2e-%d" % os.getpid()
        cls.api.call("POST", "/api/v1/namespaces", {"metadata": {"name": cls.ns}})
        for _ in range(60):
            if cls.api.call("GET", "/apis/diagon.gke.io/v1alpha1/mldiagnosticsconnections")[0] \
                    == 200:
                break
            time.sleep(0.5)

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "api"):
            cls.api.call("DELETE", "/api/v1/namespaces/" + cls.ns)
        for p in cls.procs:
            p.terminate()
            p.wait(30)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_operator_fails_a_missing_pod_through_the_real_schema(self):
        path = "/apis/diagon.gke.io/v1alpha1/namespaces/%s/mldiagnosticsconnections" % self.ns
        with Operator(self.kubeconfig, "--namespace", self.ns):
            st, _ = self.api.call("POST", path, {
                "apiVersion": "diagon.gke.io/v1alpha1", "kind": "MLDiagnosticsConnection",
                "metadata": {"name": "missing"},
                "spec": {"triggerCapture": {"capturePort": 9999, "durationSeconds": 5,
                                            "podName": "nope", "podNamespace": self.ns,
                                            "profiler": "google_cloud_mldiagnostics",
                                            "storageLocation": "gs://bucket/run"}}})
            self.assertEqual(st, 201)
            status = {}
            for _ in range(60):
                status = self.api.call("GET", path + "/missing")[1].get("status", {})
                if status.get("phase") == "Failed":
                    break
                time.sleep(0.5)
        self.assertEqual(status.get("phase"), "Failed", status)
        self.assertIn("not found", status["message"])
        self.assertIn("conditions", status, "extensions survive the server's pruning")

    def test_injected_pods_are_accepted_by_the_server(self):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "inj", "labels": {"managed-mldiagnostics-gke": "true"}},
               "spec": {"containers": [{"name": "jax", "image": "jax"}]}}
        out = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-webhook"), "inject", "-f", "-",
                              ], input=json.dumps(pod).encode(),
                             capture_output=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        mutated = yaml.safe_load(out.stdout)
        st, body = self.api.call("POST", "/api/v1/namespaces/%s/pods?dryRun=All" % self.ns,
                                 mutated)
        self.assertEqual(st, 201, body)


if __name__ == "__main__":
    unittest.main(verbosity=2)
