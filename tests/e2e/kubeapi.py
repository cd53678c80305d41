"""A small Kubernetes REST client for the end-to-end tier (standard library only).

Bearer-token or client-certificate authentication, the cluster CA, JSON in and
out, one keep-alive connection per thread, watches as generators. Errors from
the server raise ApiError with the Status object's code, reason and message.
"""
import http.client
import json
import os
import ssl
import threading
import time
import urllib.parse

import yaml


class ApiError(Exception):
    def __init__(self, code, status, method, path):
        self.code = code
        self.status = status if isinstance(status, dict) else {"message": str(status)}
        self.reason = self.status.get("reason", "")
        super().__init__("%s %s: HTTP %d %s: %s" % (method, path, code, self.reason,
                                                    self.status.get("message", "")))


# Plural resource paths of the kinds the tier touches: (group/version, plural, namespaced).
RESOURCES = {
    "Namespace": ("v1", "namespaces", False),
    "Pod": ("v1", "pods", True),
    "Service": ("v1", "services", True),
    "ServiceAccount": ("v1", "serviceaccounts", True),
    "Secret": ("v1", "secrets", True),
    "ConfigMap": ("v1", "configmaps", True),
    "Event": ("v1", "events", True),
    "Node": ("v1", "nodes", False),
    "EndpointSlice": ("discovery.k8s.io/v1", "endpointslices", True),
    "CronJob": ("batch/v1", "cronjobs", True),
    "Lease": ("coordination.k8s.io/v1", "leases", True),
    "ClusterTrainingRuntime": ("trainer.kubeflow.org/v1alpha1", "clustertrainingruntimes", False),
    # The workload kinds; a name two kinds share is "Kind.group" but for Kubernetes' own.
    # kinds: generated from libk8s/ml/k8s_kinds.c (make manifests)
    "JobSet": ("jobset.x-k8s.io/v1alpha2", "jobsets", True),
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io/v1", "leaderworkersets", True),
    "RayJob": ("ray.io/v1", "rayjobs", True),
    "TrainJob": ("trainer.kubeflow.org/v1alpha1", "trainjobs", True),
    "PyTorchJob": ("kubeflow.org/v1", "pytorchjobs", True),
    "Job.batch.volcano.sh": ("batch.volcano.sh/v1alpha1", "jobs", True),
    "MPIJob": ("kubeflow.org/v2beta1", "mpijobs", True),
    "RayCluster": ("ray.io/v1", "rayclusters", True),
    "Job": ("batch/v1", "jobs", True),
    "Deployment": ("apps/v1", "deployments", True),
    "StatefulSet": ("apps/v1", "statefulsets", True),
    "ReplicaSet": ("apps/v1", "replicasets", True),
    # kinds: end
    "MLDiagnosticsConnection": ("diagon.gke.io/v1alpha1", "mldiagnosticsconnections", True),
    "MutatingWebhookConfiguration": ("admissionregistration.k8s.io/v1",
                                     "mutatingwebhookconfigurations", False),
    "ValidatingWebhookConfiguration": ("admissionregistration.k8s.io/v1",
                                       "validatingwebhookconfigurations", False),
    "CustomResourceDefinition": ("apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", "rolebindings", True),
}


def path_for(kind, namespace=None, name=None, sub=None, api_version=None):
    gv, plural, namespaced = RESOURCES[kind]
    gv = api_version or gv
    base = "/api/v1" if gv == "v1" else "/apis/" + gv
    if namespaced and namespace:
        base += "/namespaces/" + namespace
    base += "/" + plural
    if name:
        base += "/" + name
    if sub:
        base += "/" + sub
    return base


class Api:
    def __init__(self, server, ca_file=None, token=None, cert=None, key=None, timeout=30):
        u = urllib.parse.urlsplit(server)
        self.server = server.rstrip("/")
        self.host, self.port = u.hostname, u.port or (443 if u.scheme == "https" else 80)
        self.https = u.scheme == "https"
        self.token = token
        self.timeout = timeout
        self.ctx = None
        if self.https:
            self.ctx = ssl.create_default_context(cafile=ca_file)
            if cert:
                self.ctx.load_cert_chain(cert, key)
        self.local = threading.local()

    @classmethod
    def from_kubeconfig(cls, path):
        with open(path) as f:
            kc = yaml.safe_load(f)
        ctx = next(c["context"] for c in kc["contexts"] if c["name"] == kc["current-context"])
        cluster = next(c["cluster"] for c in kc["clusters"] if c["name"] == ctx["cluster"])
        user = next((u["user"] for u in kc.get("users", []) if u["name"] == ctx.get("user")), {})
        token = user.get("token")
        if not token and user.get("tokenFile"):
            with open(user["tokenFile"]) as f:
                token = f.read().strip()
        return cls(cluster["server"], cluster.get("certificate-authority"), token,
                   user.get("client-certificate"), user.get("client-key"))

    def _conn(self, timeout):
        c = getattr(self.local, "conn", None)
        if c is None:
            if self.https:
                c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                                timeout=timeout)
            else:
                c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            self.local.conn = c
        c.timeout = timeout
        if c.sock is not None:
            c.sock.settimeout(timeout)
        return c

    def _headers(self, ctype, accept):
        h = {"Accept": accept, "User-Agent": "mld-e2e"}
        if ctype:
            h["Content-Type"] = ctype
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h

    def raw(self, method, path, body=None, ctype="application/json", accept="application/json",
            query=None, timeout=None):
        """One request; returns (status, headers, bytes). Retries once on a stale
        keep-alive connection (the API server closes one idle for 90 s; over TLS
        the close shows as an SSL EOF)."""
        if query:
            path += ("&" if "?" in path else "?") + urllib.parse.urlencode(query)
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        for attempt in (0, 1):
            c = self._conn(timeout or self.timeout)
            try:
                c.request(method, path, body=body, headers=self._headers(
                    ctype if body is not None else None, accept))
                r = c.getresponse()
                data = r.read()
                return r.status, dict(r.getheaders()), data
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                    http.client.CannotSendRequest, http.client.ResponseNotReady,
                    ssl.SSLEOFError):
                c.close()
                self.local.conn = None
                if attempt:
                    raise

    def request(self, method, path, body=None, ctype="application/json", query=None,
                timeout=None, accept="application/json"):
        status, _, data = self.raw(method, path, body, ctype, accept, query, timeout)
        try:
            doc = json.loads(data) if data else {}
        except ValueError:
            doc = {"message": data.decode(errors="replace")[:500]}
        if status >= 300:
            raise ApiError(status, doc, method, path)
        return doc

    # ---- conveniences ----
    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def exists(self, path):
        try:
            self.get(path)
            return True
        except ApiError as e:
            if e.code == 404:
                return False
            raise

    def create(self, obj, namespace=None, query=None):
        ns = namespace or obj.get("metadata", {}).get("namespace")
        return self.request("POST", path_for(obj["kind"], ns, api_version=obj["apiVersion"]),
                            obj, query=query)

    def delete(self, path, grace=None, propagation="Background", missing_ok=True):
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if grace is not None:
            body["gracePeriodSeconds"] = grace
        try:
            return self.request("DELETE", path, body)
        except ApiError as e:
            if e.code == 404 and missing_ok:
                return None
            raise

    def patch(self, path, patch, kind="merge", query=None):
        ctype = {"merge": "application/merge-patch+json", "json": "application/json-patch+json",
                 "strategic": "application/strategic-merge-patch+json",
                 "apply": "application/apply-patch+yaml"}[kind]
        return self.request("PATCH", path, patch, ctype=ctype, query=query)

    def apply(self, obj, manager="mld-e2e", force=True):
        """Server-side apply (no 256 KiB last-applied annotation: KubeRay's CRDs are
        larger than that)."""
        md = obj["metadata"]
        path = path_for(obj["kind"], md.get("namespace"), md["name"],
                        api_version=obj["apiVersion"]) if obj["kind"] in RESOURCES else None
        if path is None:
            raise KeyError("no path known for kind " + obj["kind"])
        q = {"fieldManager": manager}
        if force:
            q["force"] = "true"
        return self.patch(path, obj, "apply", query=q)

    def list(self, path, **query):
        return self.get(path, query=query or None).get("items", [])

    def watch(self, path, resource_version=None, timeout=60, **query):
        """Yields (type, object) from a watch until the server ends it or `timeout`
        seconds pass. Uses its own connection."""
        q = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": str(int(timeout))}
        if resource_version:
            q["resourceVersion"] = resource_version
        q.update(query)
        full = path + "?" + urllib.parse.urlencode(q)
        if self.https:
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                            timeout=timeout + 10)
        else:
            c = http.client.HTTPConnection(self.host, self.port, timeout=timeout + 10)
        try:
            c.request("GET", full, headers=self._headers(None, "application/json"))
            r = c.getresponse()
            if r.status != 200:
                data = r.read()
                raise ApiError(r.status, json.loads(data or b"{}"), "WATCH", path)
            while True:
                line = r.readline()
                if not line:
                    return
                ev = json.loads(line)
                yield ev["type"], ev["object"]
        finally:
            c.close()

    def wait(self, path, pred, timeout=60, interval=0.2, what=None):
        """Poll GET path until pred(obj) is truthy; returns the object."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                last = self.get(path)
                if pred(last):
                    return last
            except ApiError as e:
                if e.code != 404:
                    raise
                last = None
            time.sleep(interval)
        if isinstance(last, dict) and "status" in last:  # what the wait was about first
            last = {"status": last["status"], "metadata": {
                k: v for k, v in last.get("metadata", {}).items() if k != "managedFields"}}
        raise AssertionError("timed out after %ds waiting for %s; last: %s" % (
            timeout, what or path, json.dumps(last)[:3000] if last else "not found"))


def load_yaml_docs(path_or_text):
    text = path_or_text
    if os.path.exists(path_or_text):
        with open(path_or_text) as f:
            text = f.read()
    return [d for d in yaml.safe_load_all(text) if d]
