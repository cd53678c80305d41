"""Seed 003's install, with real helm, into the tier's cluster, from the
tier's OCI registry: both charts are packaged and pushed there
(registry.py), then installed with the seed's commands against
`oci://<registry>/charts/<chart>` with `--version`. The charts' rendered pod
specs run unchanged on the real node (node.py): the Deployments' pods, the
certgen hook Jobs helm waits for and the `helm test` pods pull the
project's images from the registry through the node's mirror of the
charts' default repository; the MutatingWebhookConfiguration calls the
webhook through its Service, as rendered.

One difference from the seed's webhook command: `certManager.enabled=false`
(cert-manager's controller does not build from the module proxy), so the
chart's certgen hook makes the certificate.

Handles: `webhooks[0]` is the webhook's Deployment (stop() scales it to
zero: the webhook is down; start() scales it back); `operators` are the
operator Deployment's pods, one handle each (stop() deletes the pod: the
kubelet's SIGTERM; its ReplicaSet makes another).
"""
import base64
import http.client
import http.server
import os
import re
import socket
import ssl
import subprocess
import threading

import yaml

import kubeapi
from procs import wait_until

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


def chart_version(chart):
    with open(os.path.join(CHARTS, chart, "Chart.yaml")) as f:
        return re.search(r"^version:\s*\"?([^\s\"]+)", f.read(), re.M).group(1)


class MetadataServer:
    """The GKE metadata server as the webhook asks it for the cluster name
    (GCE_METADATA_HOST, as Google's client libraries honour it)."""

    def __init__(self, bind="127.0.0.1"):
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

        self.httpd = http.server.ThreadingHTTPServer((bind, 0), H)
        self.bind, self.port = bind, self.httpd.server_address[1]
        self.host = "%s:%d" % (bind, self.port)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


class Helm:
    def __init__(self, exe, kubeconfig, home, ca=None):
        self.exe = exe
        # SSL_CERT_FILE: helm trusts the tier's registry as a user's helm trusts theirs
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "KUBECONFIG": kubeconfig,
                    **({"SSL_CERT_FILE": ca} if ca else {}),
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


class _PodHTTPS(http.client.HTTPSConnection):
    """HTTPS to a pod's IP, verifying the certificate for its Service's name."""

    def __init__(self, ip, port, name, context, timeout):
        super().__init__(name, port, context=context, timeout=timeout)
        self.ip = ip

    def connect(self):
        sock = socket.create_connection((self.ip, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


class Deployment:
    """A chart's Deployment and its pods on the real node."""

    def __init__(self, inst, release, port, https=False, service=None):
        self.inst = inst
        self.api = inst.api
        self.release = release
        self.port = port
        self.https = https
        self.service = service  # the DNS name its serving certificate names
        dep = find(inst.helm.manifest(release), "Deployment")
        self.name = dep["metadata"]["name"]
        self.replicas = dep["spec"].get("replicas", 1)

    def path(self):
        return kubeapi.path_for("Deployment", NAMESPACE, self.name)

    def pods(self, timeout=120):
        """The pods of the current ReplicaSet, once rolled out and Ready."""
        def rolled_out():
            d = self.api.get(self.path())
            st, want = d.get("status", {}), d["spec"].get("replicas", 1)
            if st.get("observedGeneration", 0) < d["metadata"]["generation"] or \
               st.get("updatedReplicas", 0) != want or st.get("readyReplicas", 0) != want or \
               st.get("replicas", 0) != want:
                return None
            if want == 0:
                return []
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
        return wait_until(rolled_out, timeout, "Deployment %s rolled out" % self.name, 0.3)

    def wait_ready(self, timeout=120):
        self.pods(timeout)
        return self

    def scale(self, n, timeout=120):
        self.api.patch(self.path() + "/scale", {"spec": {"replicas": n}})
        if n == 0:  # down: no pod left to answer (kubelet ran preStop and SIGTERM)
            sel = ",".join("%s=%s" % kv for kv in self.selector().items())
            wait_until(lambda: not self.api.list(kubeapi.path_for("Pod", NAMESPACE),
                                                 labelSelector=sel), timeout,
                       "the pods of %s gone" % self.name, 0.3)
        else:
            self.pods(timeout)

    def selector(self):
        return self.api.get(self.path())["spec"]["selector"]["matchLabels"]

    # the webhook down and up again (the stand-in's stop/start)
    def stop(self):
        self.scale(0)

    def start(self):
        self.scale(self.replicas)
        return self

    def ca_file(self):
        """The CA the MutatingWebhookConfiguration trusts (certgen's)."""
        mwc = self.inst.webhook_configuration()
        path = os.path.join(self.inst.dir, "webhook-ca.crt")
        with open(path, "wb") as f:
            f.write(base64.b64decode(mwc["webhooks"][0]["clientConfig"]["caBundle"]))
        return path

    def request(self, method, path, body=None, headers=None, pod=None, port=None,
                timeout=10):
        """One request to a Ready pod (the first), as its Service would route it."""
        pod = pod or self.pods()[0]
        ip = pod["status"]["podIP"]
        if self.https:
            ctx = ssl.create_default_context(cafile=self.ca_file())
            c = _PodHTTPS(ip, port or self.port, self.service, ctx, timeout)
        else:
            c = http.client.HTTPConnection(ip, port or self.port, timeout=timeout)
        try:
            c.request(method, path, body, headers or {})
            r = c.getresponse()
            return r.status, r.read().decode(errors="replace")
        finally:
            c.close()


class Replica:
    """One pod of the operator's Deployment."""

    def __init__(self, deployment, pod):
        self.deployment = deployment
        self.pod = pod
        self.name = pod["metadata"]["name"]

    def get(self, path, port=None, timeout=3):
        return self.deployment.request("GET", path, pod=self.pod, port=port, timeout=timeout)

    def stop(self, timeout=60):
        """Delete the pod (the kubelet sends SIGTERM); wait until it is gone."""
        api = self.deployment.api
        path = kubeapi.path_for("Pod", NAMESPACE, self.name)
        api.delete(path)
        wait_until(lambda: not api.exists(path), timeout, "pod %s gone" % self.name, 0.3)

    def wait_ready(self, timeout=120):
        self.deployment.wait_ready(timeout)
        return self


class Installation:
    def __init__(self, cp, registry, node, helm_exe, work_dir, log=print):
        self.cp = cp
        self.api = cp.api
        self.node = node
        self.dir = work_dir
        self.log = log
        os.makedirs(work_dir, exist_ok=True)
        self.helm = Helm(helm_exe, cp.admin_kubeconfig, os.path.join(work_dir, "helm"),
                         ca=cp.ca[0])
        # The GKE metadata server the webhook asks for the cluster's name: at
        # metadata.google.internal (the cluster DNS) = 169.254.169.254 (the node's DNAT).
        self.metadata = MetadataServer(node.net.host_ip)
        node.route_metadata(self.metadata.bind, self.metadata.port)
        self.repo = registry.push_charts(self.helm)
        self.webhooks = []
        self.operators = []

    # ---- the seed's commands ----
    def install_webhook(self, *extra):
        return self.helm.run("upgrade", "--install", WEBHOOK_RELEASE,
                             "--namespace=" + NAMESPACE, "--create-namespace",
                             "--version", chart_version(WEBHOOK_RELEASE),
                             "%s/%s" % (self.repo, WEBHOOK_RELEASE),
                             "--set", "certManager.enabled=false", *extra)

    def install_operator(self, *extra, seed_args=True):
        sets = ["--set", SEED_OPERATOR_SET] if seed_args else []
        return self.helm.run("upgrade", "--install", OPERATOR_RELEASE,
                             "--namespace=" + NAMESPACE, "--create-namespace",
                             "--version", chart_version(OPERATOR_RELEASE),
                             "%s/%s" % (self.repo, OPERATOR_RELEASE), *sets, *extra)

    # ---- the running pods ----
    def start_webhook(self):
        svc = find(self.helm.manifest(WEBHOOK_RELEASE), "Service")["metadata"]["name"]
        wh = Deployment(self, WEBHOOK_RELEASE, 8443, https=True,
                        service="%s.%s.svc" % (svc, NAMESPACE)).wait_ready()
        self.webhooks = [wh]
        return wh

    def start_operator(self):
        return self.operator_replicas()[0]

    def operator_replicas(self):
        dep = Deployment(self, OPERATOR_RELEASE, 8081)
        self.operators = [Replica(dep, p) for p in dep.pods()]
        return self.operators

    def reinstall_operator(self, seed_args=True, *extra, replicas=1):
        """helm upgrade the operator release (the seed's JAX 0.8 line, or its
        JAX 0.9+ line: no --set, the chart's default arguments); returns the
        handles of its pods once rolled out."""
        sets = ["--set", "mldiagnosticsConnectionOperator.replicas=%d" % replicas]
        self.install_operator(*sets, *extra, seed_args=seed_args)
        return self.operator_replicas()

    def webhook_configuration(self):
        docs = self.helm.manifest(WEBHOOK_RELEASE)
        name = find(docs, "MutatingWebhookConfiguration")["metadata"]["name"]
        return self.api.get(kubeapi.path_for("MutatingWebhookConfiguration", name=name))

    def stop(self):
        self.metadata.close()
