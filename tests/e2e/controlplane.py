"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and
kube-controller-manager built from their upstream modules (build.sh).

- etcd on 127.0.0.1, `--unsafe-no-fsync`, data in the work directory;
- kube-apiserver with TLS (its own CA), a static token file (an admin token
  in system:masters), ServiceAccount tokens (issuer, signing key), Node and
  RBAC authorization and the default admission plugins plus NodeRestriction,
  so mutating webhooks are called. With a real node (`bind_ip`, the tier's
  host address on its bridge) it serves there and its `kubernetes` Service
  has that address as Endpoints, as a cluster's does; without one, on
  127.0.0.1 with `--endpoint-reconciler-type=none` (Endpoints may not hold
  127/8 addresses);
- kube-controller-manager with the job, statefulset, replicaset, deployment,
  garbage-collector, namespace, serviceaccount(-token) and the Services'
  endpoint(-slice) controllers, which kube-proxy follows (no
  node lifecycle or pod GC: nothing heartbeats the node but the tier).
Everything is bounded in time; stop() tears it all down.
"""
import os
import shutil
import signal
import tempfile
import time

import kubeapi
from procs import Proc, free_port, make_ca, make_leaf, openssl, wait_until

CONTROLLERS = [n + "-controller" for n in (
    "job", "statefulset", "replicaset", "deployment", "garbage-collector", "namespace",
    "serviceaccount", "serviceaccount-token", "cronjob", "root-ca-certificate-publisher",
    "clusterrole-aggregation", "ttl-after-finished", "endpointslice",
    "endpointslice-mirroring", "endpoints")]
ADMIN_TOKEN_USER = "e2e-admin"
AUDITED_NAMESPACE = "gke-mldiagnostics"


class ControlPlane:
    def __init__(self, bin_dir, work_dir=None, log=print, tracing_endpoint=None, bind_ip=None,
                 service_cidr=None):
        self.bin = bin_dir
        self.dir = work_dir or tempfile.mkdtemp(prefix="mld-e2e-")
        self.pki = os.path.join(self.dir, "pki")
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.pki, exist_ok=True)
        os.makedirs(self.logs, exist_ok=True)
        self.log = log
        self.procs = []
        self.outages = 0  # outage() calls so far
        self.admin_token = os.urandom(16).hex()
        self.api = None
        self.tracing_endpoint = tracing_endpoint  # OTLP/gRPC host:port: trace every request
        self.bind_ip = bind_ip or "127.0.0.1"
        self.service_cidr = service_cidr or "10.96.0.0/16"

    # ---- PKI and credentials ----
    def _pki(self):
        self.ca = make_ca(self.pki, "ca", "mld-e2e-ca")
        import ipaddress
        first = ipaddress.ip_network(self.service_cidr).network_address + 1  # `kubernetes`
        self.serving = make_leaf(self.pki, "apiserver", self.ca, "kube-apiserver", sans=[
            "IP:127.0.0.1", "IP:" + self.bind_ip, "IP:%s" % first, "DNS:localhost",
            "DNS:kubernetes", "DNS:kubernetes.default", "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local"])
        self.sa_key = os.path.join(self.pki, "sa.key")
        self.sa_pub = os.path.join(self.pki, "sa.pub")
        openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                "-out", self.sa_key)
        openssl("pkey", "-in", self.sa_key, "-pubout", "-out", self.sa_pub)
        # the API server's client certificate for kubelets (logs, exec)
        self.kubelet_client = make_leaf(self.pki, "apiserver-kubelet-client", self.ca,
                                        "kube-apiserver-kubelet-client", client=True,
                                        org="system:masters")
        self.tokens = os.path.join(self.pki, "tokens.csv")
        with open(self.tokens, "w") as f:
            f.write('%s,%s,%s,"system:masters"\n' % (self.admin_token, ADMIN_TOKEN_USER,
                                                     "e2e-admin-uid"))
        os.chmod(self.tokens, 0o600)

    def kubeconfig(self, path, token, namespace=None, server=None):
        """A kubeconfig for `token` (JSON is valid YAML)."""
        import json
        ctx = {"cluster": "e2e", "user": "u"}
        if namespace:
            ctx["namespace"] = namespace
        with open(path, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "e2e",
                       "clusters": [{"name": "e2e", "cluster": {
                           "server": server or self.server,
                           "certificate-authority": self.ca[0]}}],
                       "users": [{"name": "u", "user": {"token": token}}],
                       "contexts": [{"name": "e2e", "context": ctx}]}, f, indent=1)
        os.chmod(path, 0o600)
        return path

    # ---- processes ----
    def _start(self, name, args, env=None):
        p = Proc(name, args, self.logs, env=env).start()
        self.procs.append(p)
        return p

    def start(self):
        t0 = time.time()
        self._pki()
        self._etcd()
        self._apiserver()
        self._controller_manager()
        self.log("control plane up in %.1fs: %s (logs in %s)" % (time.time() - t0, self.server,
                                                                  self.logs))
        return self

    def _etcd(self):
        client, peer = free_port(), free_port()
        self.etcd_url = "http://127.0.0.1:%d" % client
        data = os.path.join(self.dir, "etcd")
        self.etcd = self._start("etcd", [
            os.path.join(self.bin, "etcd"), "--name", "e2e", "--data-dir", data,
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-cluster", "e2e=http://127.0.0.1:%d" % peer,
            "--unsafe-no-fsync", "--quota-backend-bytes", str(2 << 30),
            "--listen-metrics-urls", "http://127.0.0.1:%d" % free_port(),
            "--log-level", "warn"])
        import urllib.request
        wait_until(lambda: urllib.request.urlopen(self.etcd_url + "/health", timeout=2).status
                   == 200 or self.etcd.check_alive(), 30, "etcd healthy")

    def _tracing_flags(self):
        if not self.tracing_endpoint:
            return []
        path = os.path.join(self.dir, "tracing.yaml")
        with open(path, "w") as f:
            f.write("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"
                    "endpoint: %s\nsamplingRatePerMillion: 1000000\n" % self.tracing_endpoint)
        return ["--tracing-config-file", path]

    def _audit_flags(self):
        """Audit every request of the ServiceAccounts of the charts' namespace
        (metadata level): what the chart's RBAC lets them do is compared with
        what they did (test_zz_rbac.py)."""
        policy = os.path.join(self.dir, "audit-policy.yaml")
        self.audit_log = os.path.join(self.logs, "audit.log")
        with open(policy, "w") as f:
            f.write("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n"
                    "rules:\n- level: Metadata\n  userGroups: [\"system:serviceaccounts:%s\"]\n"
                    "- level: None\n" % AUDITED_NAMESPACE)
        return ["--audit-policy-file", policy, "--audit-log-path", self.audit_log,
                "--audit-log-format", "json", "--audit-log-mode", "batch",
                "--audit-log-batch-max-wait", "1s"]

    def _apiserver(self):
        self.port = free_port(self.bind_ip)
        self.server = "https://%s:%d" % (self.bind_ip, self.port)
        endpoints = ["--endpoint-reconciler-type", "none"] if self.bind_ip == "127.0.0.1" \
            else []
        self.apiserver = self._start("kube-apiserver", [
            os.path.join(self.bin, "kube-apiserver")] + self._tracing_flags() +
            self._audit_flags() + [
            "--etcd-servers", self.etcd_url,
            "--bind-address", self.bind_ip, "--advertise-address", self.bind_ip,
            "--secure-port", str(self.port),
            "--cert-dir", os.path.join(self.dir, "apiserver-certs"),
            "--tls-cert-file", self.serving[0], "--tls-private-key-file", self.serving[1],
            "--client-ca-file", self.ca[0],
            "--token-auth-file", self.tokens,
            "--authorization-mode", "Node,RBAC",
            "--enable-admission-plugins", "NodeRestriction",
            "--kubelet-client-certificate", self.kubelet_client[0],
            "--kubelet-client-key", self.kubelet_client[1],
            "--kubelet-preferred-address-types", "InternalIP,Hostname",
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", self.sa_pub,
            "--service-account-signing-key-file", self.sa_key,
            "--service-cluster-ip-range", self.service_cidr,
            "--allow-privileged=true",
            "--profiling=false",
            "--v", "1"] + endpoints)
        self.admin_kubeconfig = self.kubeconfig(os.path.join(self.dir, "admin.kubeconfig"),
                                                self.admin_token, "default")
        self.api = kubeapi.Api(self.server, self.ca[0], self.admin_token)

        def ready():
            self.apiserver.check_alive()
            st, _, body = self.api.raw("GET", "/readyz", timeout=3)
            return st == 200
        wait_until(ready, 90, "kube-apiserver /readyz")

    def _controller_manager(self):
        self.kcm = self._start("kube-controller-manager", [
            os.path.join(self.bin, "kube-controller-manager"),
            "--kubeconfig", self.admin_kubeconfig,
            "--authentication-kubeconfig", self.admin_kubeconfig,
            "--authorization-kubeconfig", self.admin_kubeconfig,
            "--controllers", ",".join(CONTROLLERS),
            "--service-account-private-key-file", self.sa_key,
            "--root-ca-file", self.ca[0],
            "--leader-elect=false", "--use-service-account-credentials=false",
            "--bind-address", "127.0.0.1", "--secure-port", str(free_port()),
            "--concurrent-job-syncs", "10", "--v", "1"])

        def default_sa():
            self.kcm.check_alive()
            return self.api.exists("/api/v1/namespaces/default/serviceaccounts/default")
        wait_until(default_sa, 60, "the default ServiceAccount (serviceaccount controller)")

    def outage(self, which, seconds):
        """kill -9 `which` ("kube-apiserver" or "etcd"), keep it down `seconds`, then start it
        again with the same flags, ports and data, and wait until the API server is ready.
        Returns how long the API server could not answer (seconds)."""
        p = {"kube-apiserver": self.apiserver, "etcd": self.etcd}[which]
        t0 = time.time()
        p.stop(sig=signal.SIGKILL, timeout=10)
        time.sleep(seconds)
        p.start()
        if which == "etcd":
            import urllib.request
            wait_until(lambda: urllib.request.urlopen(self.etcd_url + "/health", timeout=2).status
                       == 200 or self.etcd.check_alive(), 60, "etcd healthy again")

        def ready():
            self.apiserver.check_alive()
            st, _, _ = self.api.raw("GET", "/readyz", timeout=3)
            return st == 200
        wait_until(ready, 120, "kube-apiserver /readyz after the %s outage" % which)
        down = time.time() - t0
        # back in service: the controller manager's informers have caught up too (a new
        # namespace gets its default ServiceAccount), within their backoff cap
        probe = "outage-probe-%d" % self.outages
        self.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": probe}})
        self.api.wait(kubeapi.path_for("ServiceAccount", probe, "default"), bool, 120)
        self.api.delete(kubeapi.path_for("Namespace", name=probe))
        self.outages += 1
        return down

    def stop(self):
        for p in reversed(self.procs):
            p.stop(timeout=10)
        self.procs = []

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)
