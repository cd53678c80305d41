"""Seed 003's install, with real helm, into the tier's cluster; then the
webhook and the operator as local processes standing in for the charts'
Deployment pods.

- The two `helm upgrade --install` commands of the seed, with local chart
  paths (`certManager.enabled=false`: cert-manager's controller is not
  built). helm waits for the certgen hook Job, which the tier's kubelet runs
  with the hook's own ServiceAccount token.
- The Deployments' pods are stand-ins: their long-running process is started
  here, once, with the arguments and environment the chart rendered, a
  token of the chart's ServiceAccount from the TokenRequest API (bound to
  the stand-in pod), and only the host-specific flags changed (loopback
  ports, certificate paths, --kubeconfig). Two webhook replicas could not
  share one host port, and the API server must call the webhook by URL:
  the chart's MutatingWebhookConfiguration is used as rendered with only
  its clientConfig switched to https://127.0.0.1:PORT/mutate and a caBundle
  for the local serving certificate.
"""
import base64
import http.client
import http.server
import json
import os
import ssl
import subprocess
import threading

import yaml

import kubeapi
from procs import Proc, free_port, make_ca, make_leaf, wait_until

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHARTS = os.path.join(ROOT, "charts")
NAMESPACE = "gke-mldiagnostics"
WEBHOOK_RELEASE = "mldiagnostics-injection-webhook"
OPERATOR_RELEASE = "mldiagnostics-connection-operator"
# Seed 003's --set line for JAX 0.8.x, as written there.
SEED_OPERATOR_SET = ("mldiagnosticsConnectionOperator.controller.args={--metrics-bind-address="
                     ":8443,--health-probe-bind-address=:8081,--sidecar-timeout=65m,"
                     "--disable-hostname-override}")
GKE = {"cluster-name": "e2e-cluster", "cluster-location": "us-central1",
       "project-id": "mld-e2e-project"}


class MetadataServer:
    """The GKE metadata server as the webhook asks it for the cluster name
    (GCE_METADATA_HOST, as Google's client libraries honour it)."""

    def __init__(self):
        values = {"/computeMetadata/v1/instance/attributes/cluster-name": GKE["cluster-name"],
                  "/computeMetadata/v1/instance/attributes/cluster-location":
                      GKE["cluster-location"],
                  "/computeMetadata/v1/project/project-id": GKE["project-id"]}

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                v = values.get(self.path.split("?")[0])
                ok = v is not None and self.headers.get("Metadata-Flavor") == "Google"
                body = (v if ok else "not found").encode()
                self.send_response(200 if ok else 404)
                self.send_header("Metadata-Flavor", "Google")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.host = "127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


class Helm:
    def __init__(self, exe, kubeconfig, home):
        self.exe = exe
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "KUBECONFIG": kubeconfig,
                    "HELM_CACHE_HOME": os.path.join(home, "cache"),
                    "HELM_CONFIG_HOME": os.path.join(home, "config"),
                    "HELM_DATA_HOME": os.path.join(home, "data")}

    def run(self, *args, timeout=300, check=True):
        p = subprocess.run([self.exe, *args], capture_output=True, text=True, env=self.env,
                           timeout=timeout, cwd=ROOT)
        if check and p.returncode != 0:
            raise RuntimeError("helm %s failed (%d):\n%s%s" % (" ".join(args), p.returncode,
                                                               p.stdout[-3000:], p.stderr[-3000:]))
        return p

    def manifest(self, release, namespace=NAMESPACE):
        return [d for d in yaml.safe_load_all(self.run("get", "manifest", release, "-n",
                                                       namespace).stdout) if d]


def find(docs, kind, name=None):
    out = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] ==
                                                     name)]
    if len(out) != 1:
        raise AssertionError("expected one %s %s, found %d" % (kind, name or "", len(out)))
    return out[0]


class LocalProcess(Proc):
    """A stand-in pod's process, with HTTP(S) helpers for its probes."""

    def __init__(self, name, args, log_dir, env, pod, probe_port, https=False, ca=None):
        super().__init__(name, args, log_dir, env=env)
        self.pod = pod
        self.probe_port = probe_port
        self.https = https
        self.ca = ca

    def get(self, path, port=None, timeout=3):
        port = port or self.probe_port
        if self.https:
            ctx = ssl.create_default_context(cafile=self.ca)
            c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=timeout)
        else:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode(errors="replace")
        finally:
            c.close()

    def wait_ready(self, timeout=60):
        def ready():
            self.check_alive()
            return self.get("/readyz")[0] == 200
        wait_until(ready, timeout, self.name + " /readyz")
        return self


def _arg_value(args, flag):
    for a in args:
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def _replace_flag(args, flag, value):
    out = [a for a in args if not (a == flag or a.startswith(flag + "="))]
    return out + ["%s=%s" % (flag, value)]


class Installation:
    def __init__(self, cp, kubelet, helm_exe, project_bin, work_dir, log=print):
        self.cp = cp
        self.api = cp.api
        self.kubelet = kubelet
        self.bin = project_bin
        self.dir = work_dir
        self.log = log
        os.makedirs(work_dir, exist_ok=True)
        self.helm = Helm(helm_exe, cp.admin_kubeconfig, os.path.join(work_dir, "helm"))
        self.metadata = MetadataServer()
        self.pki = os.path.join(work_dir, "webhook-pki")
        os.makedirs(self.pki, exist_ok=True)
        self.webhooks = []
        self.operators = []

    # ---- the seed's commands ----
    def install_webhook(self, *extra):
        return self.helm.run("upgrade", "--install", WEBHOOK_RELEASE,
                             "--namespace=" + NAMESPACE, "--create-namespace",
                             "charts/" + WEBHOOK_RELEASE, "--set", "certManager.enabled=false",
                             *extra)

    def install_operator(self, *extra, seed_args=True):
        sets = ["--set", SEED_OPERATOR_SET] if seed_args else []
        return self.helm.run("upgrade", "--install", OPERATOR_RELEASE,
                             "--namespace=" + NAMESPACE, "--create-namespace",
                             "charts/" + OPERATOR_RELEASE, *sets, *extra)

    # ---- stand-in pods ----
    def _standin_pods(self, deployment):
        """The pods of the Deployment's current ReplicaSet, once rolled out."""
        name = deployment["metadata"]["name"]

        def rolled_out():
            d = self.api.get(kubeapi.path_for("Deployment", NAMESPACE, name))
            st, want = d.get("status", {}), d["spec"].get("replicas", 1)
            if st.get("observedGeneration", 0) < d["metadata"]["generation"] or \
               st.get("updatedReplicas") != want or st.get("readyReplicas") != want:
                return None
            rs = [r for r in self.api.list(kubeapi.path_for("ReplicaSet", NAMESPACE))
                  if any(o["uid"] == d["metadata"]["uid"]
                         for o in r["metadata"].get("ownerReferences", []))]
            newest = max(rs, key=lambda r: int(r["metadata"].get("annotations", {}).get(
                "deployment.kubernetes.io/revision", "0")))
            h = newest["metadata"]["labels"]["pod-template-hash"]
            pods = [p for p in self.api.list(kubeapi.path_for("Pod", NAMESPACE),
                                             labelSelector="pod-template-hash=" + h)
                    if not p["metadata"].get("deletionTimestamp")]
            return sorted(pods, key=lambda p: p["metadata"]["name"]) \
                if len(pods) == want else None
        return wait_until(rolled_out, 90, "Deployment %s rolled out" % name)

    def _standin_pod(self, deployment, index=0):
        pods = self._standin_pods(deployment)
        return pods[min(index, len(pods) - 1)]

    def reinstall_operator(self, seed_args=True, *extra, replicas=1, names=("operator",)):
        """helm upgrade the operator release (the seed's JAX 0.8 line, or its
        JAX 0.9+ line: no --set, the chart's default arguments) and run one
        stand-in process per replica."""
        for p in self.operators:
            p.stop(timeout=15)
        self.operators = []
        sets = ["--set", "mldiagnosticsConnectionOperator.replicas=%d" % replicas] \
            if replicas != 1 else []
        self.install_operator(*sets, *extra, seed_args=seed_args)
        return [self.start_operator(n, i, wait=False) for i, n in enumerate(names)]

    def sa_kubeconfig(self, pod, name):
        sa = pod["spec"]["serviceAccountName"]
        tr = self.api.request("POST", kubeapi.path_for("ServiceAccount", NAMESPACE, sa, "token"), {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 7200, "boundObjectRef": {
                "apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"],
                "uid": pod["metadata"]["uid"]}}})
        return self.cp.kubeconfig(os.path.join(self.dir, name + ".kubeconfig"),
                                  tr["status"]["token"], NAMESPACE)

    def _container_env(self, pod, container):
        import kubelet
        env = kubelet.container_env(self.api, pod, container)
        return {"PATH": os.environ.get("PATH", ""), "HOME": self.dir, **env}

    def start_webhook(self, name="webhook", index=0, extra_args=(), env=None, register=True):
        docs = self.helm.manifest(WEBHOOK_RELEASE)
        dep = find(docs, "Deployment")
        c = dep["spec"]["template"]["spec"]["containers"][0]
        pod = self._standin_pod(dep, index)
        crt, key = self.serving_cert()
        port = free_port()
        args = list(c.get("args", []))
        for flag, value in (("--port", port), ("--bind-address", "127.0.0.1"),
                            ("--tls-cert-file", crt), ("--tls-key-file", key),
                            ("--kubeconfig", self.sa_kubeconfig(pod, name))):
            args = _replace_flag(args, flag, value)
        penv = self._container_env(pod, c)
        penv["GCE_METADATA_HOST"] = self.metadata.host
        penv.update(env or {})
        p = LocalProcess(name, [os.path.join(self.bin, "mldiagnostics-webhook")] + args +
                         list(extra_args), self.cp.logs, penv, pod, port, https=True,
                         ca=self.ca[0]).start()
        self.webhooks.append(p)
        p.wait_ready()
        if register:
            self.point_webhook_at(port)
        return p

    def serving_cert(self):
        if not hasattr(self, "ca"):
            self.ca = make_ca(self.pki, "ca", "mld-e2e-webhook-ca")
            self.crt = make_leaf(self.pki, "tls", self.ca, "mldiagnostics-injection-webhook",
                                 sans=["IP:127.0.0.1", "DNS:localhost"])
        return self.crt

    def webhook_configuration(self):
        docs = self.helm.manifest(WEBHOOK_RELEASE)
        name = find(docs, "MutatingWebhookConfiguration")["metadata"]["name"]
        return self.api.get(kubeapi.path_for("MutatingWebhookConfiguration", name=name))

    def point_webhook_at(self, port):
        """Switch only clientConfig of every entry to the local URL."""
        mwc = self.webhook_configuration()
        with open(self.ca[0], "rb") as f:
            bundle = base64.b64encode(f.read()).decode()
        ops = []
        for i, wh in enumerate(mwc["webhooks"]):
            path = wh["clientConfig"].get("service", {}).get("path") or "/mutate"
            ops.append({"op": "replace", "path": "/webhooks/%d/clientConfig" % i, "value": {
                "url": "https://127.0.0.1:%d%s" % (port, path), "caBundle": bundle}})
        self.api.patch(kubeapi.path_for("MutatingWebhookConfiguration",
                                        name=mwc["metadata"]["name"]), ops, "json")

    def start_operator(self, name="operator", index=0, extra_args=(), wait=True):
        docs = self.helm.manifest(OPERATOR_RELEASE)
        dep = find(docs, "Deployment")
        c = dep["spec"]["template"]["spec"]["containers"][0]
        pod = self._standin_pod(dep, index)
        health, metrics = free_port(), free_port()
        args = list(c.get("args", []))
        if _arg_value(args, "--health-probe-bind-address") != "0":
            args = _replace_flag(args, "--health-probe-bind-address", "127.0.0.1:%d" % health)
        if _arg_value(args, "--metrics-bind-address") != "0":
            args = _replace_flag(args, "--metrics-bind-address", "127.0.0.1:%d" % metrics)
        args = _replace_flag(args, "--kubeconfig", self.sa_kubeconfig(pod, name))
        penv = self._container_env(pod, c)
        p = LocalProcess(name, [os.path.join(self.bin, "mldiagnostics-operator")] + args +
                         list(extra_args), self.cp.logs, penv, pod, health).start()
        p.metrics_port = metrics
        self.operators.append(p)
        if wait:
            p.wait_ready()
        return p

    def stop(self):
        for p in self.operators + self.webhooks:
            p.stop(timeout=15)
        self.metadata.close()
