"""The tier's real node (node.py): a kubelet of the tier's version on
containerd and runc, with the project's images pulled from the tier's
registry through containerd's mirror configuration, the securityContext
enforced by the runtime, and kube-proxy carrying the API server's calls to
a webhook's Service as in a cluster."""
import base64
import http.client
import os
import re
import ssl
import subprocess
import unittest

import e2e
import kubeapi
import node
from procs import make_ca, make_leaf, wait_until

WEBHOOK_IMAGE = "ghcr.io/mldiagnostics/mldiagnostics-webhook:0.1.0"
# What the chart's Deployment sets for the webhook's container.
RESTRICTED = {"runAsNonRoot": True, "readOnlyRootFilesystem": True,
              "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def pod(name, args, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "nodeSelector": {"kubernetes.io/hostname": node.NODE_NAME},
        "automountServiceAccountToken": False, "restartPolicy": "Never",
        "containers": [{"name": "c", "image": WEBHOOK_IMAGE, "args": args,
                        "securityContext": RESTRICTED}], **spec}}


class RealNodeTest(e2e.E2ETest):
    def setUp(self):
        super().setUp()
        if self.c.real_node is None:
            self.fail("the tier has no real node: %s" % self.c.no_real_node)

    def wait_phase(self, ns, name, phases, timeout=90):
        return self.api.wait(kubeapi.path_for("Pod", ns, name),
                             lambda p: p.get("status", {}).get("phase") in phases, timeout,
                             what="pod %s/%s in %s" % (ns, name, phases))

    def container_pid(self, p):
        """The host pid of the pod's first container, from its cgroup."""
        cid = p["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
        root = "/sys/fs/cgroup/pids" + node.cgroup_root(self.c.networks.slot)
        for d, _, files in os.walk(root):
            if os.path.basename(d) == cid and "cgroup.procs" in files:
                with open(os.path.join(d, "cgroup.procs")) as f:
                    return int(f.read().split()[0])
        self.fail("no cgroup for container %s under %s" % (cid, root))

    def test_the_node_is_a_kubelet_on_containerd(self):
        n = self.api.get(kubeapi.path_for("Node", name=node.NODE_NAME))
        info = n["status"]["nodeInfo"]
        out = subprocess.run([os.path.join(self.c.bins["containerd"], "containerd"),
                              "--version"], capture_output=True, text=True).stdout
        version = out.split()[2]  # "containerd PACKAGE VERSION REVISION"
        self.assertEqual(info["containerRuntimeVersion"], "containerd://" + version)
        with open(os.path.join(e2e.HERE, "kube", "go.mod")) as f:
            kube = re.search(r"k8s\.io/kubernetes (v\S+)", f.read()).group(1)
        self.assertEqual(info["kubeletVersion"], kube)
        ready = {c["type"]: c["status"] for c in n["status"]["conditions"]}
        self.assertEqual(ready["Ready"], "True")

    def test_the_image_comes_from_the_tiers_registry(self):
        ns = self.namespace("node")
        self.api.create(pod("version", ["--version"]), ns)
        p = self.wait_phase(ns, "version", ("Succeeded", "Failed"))
        self.assertEqual(p["status"]["phase"], "Succeeded", p["status"])
        self.assertEqual(p["spec"]["nodeName"], node.NODE_NAME)
        self.assertRegex(self.kubectl("logs", "-n", ns, "version").stdout,
                         r"^mldiagnostics-webhook \d+\.\d+\.\d+")
        pulled = self.wait_event(ns, "Pod", "version", lambda e: e["reason"] == "Pulled")
        self.assertIn(WEBHOOK_IMAGE, pulled["message"])
        # the registry served it: the mirror's path is the charts' repository path
        ctx = ssl.create_default_context(cafile=self.c.cp.ca[0])
        conn = http.client.HTTPSConnection(self.c.registry.host_ip, self.c.registry.port,
                                           context=ctx, timeout=10)
        conn.request("GET", "/v2/mldiagnostics/mldiagnostics-webhook/tags/list")
        self.assertIn(b'"0.1.0"', conn.getresponse().read())

    def test_the_runtime_enforces_the_charts_security_context(self):
        ns = self.namespace("node")
        self.api.create(pod("sleeper", ["300"], containers=[{
            "name": "c", "image": WEBHOOK_IMAGE, "command": ["/bin/sleep"], "args": ["300"],
            "securityContext": RESTRICTED}]), ns)
        p = self.wait_phase(ns, "sleeper", ("Running",))
        pid = self.container_pid(p)
        with open("/proc/%d/status" % pid) as f:
            status = dict(line.split(":", 1) for line in f.read().splitlines())
        self.assertEqual(status["Uid"].split(), ["65532"] * 4)  # the image's USER
        self.assertEqual(status["Gid"].split(), ["65532"] * 4)
        self.assertEqual(int(status["CapEff"], 16), 0)
        self.assertEqual(int(status["CapBnd"], 16), 0)
        self.assertEqual(status["NoNewPrivs"].strip(), "1")
        with open("/proc/%d/mountinfo" % pid) as f:
            root = next(line.split() for line in f if line.split()[4] == "/")
        self.assertIn("ro", root[5].split(","), root)
        # no shell, no package manager: the image holds the binary, its libraries, sleep
        proot = "/proc/%d/root" % pid
        for absent in ("bin/sh", "bin/bash", "usr/bin/apt-get", "usr/bin/dpkg"):
            self.assertFalse(os.path.lexists(os.path.join(proot, absent)), absent)
        self.assertTrue(os.path.exists(os.path.join(proot, "usr/local/bin/"
                                                    "mldiagnostics-webhook")))

    def test_the_api_server_reaches_a_webhook_service_through_kube_proxy(self):
        """A webhook pod behind a ClusterIP Service, registered by service
        reference: the API server's call crosses kube-proxy's DNAT."""
        ns = self.namespace("node", labels={"diagon-webhook-exempt": "true",
                                            "e2e-node-webhook": "on"})
        work = os.path.join(self.c.dir, "node-webhook-" + ns)
        os.makedirs(work, exist_ok=True)
        ca = make_ca(work, "ca", "node-webhook-ca")
        svc_host = "wh.%s.svc" % ns
        crt, key = make_leaf(work, "tls", ca, svc_host, sans=["DNS:" + svc_host])
        with open(crt, "rb") as c, open(key, "rb") as k:
            self.api.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls"},
                             "type": "kubernetes.io/tls", "data": {
                                 "tls.crt": base64.b64encode(c.read()).decode(),
                                 "tls.key": base64.b64encode(k.read()).decode()}}, ns)
        self.api.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "wh", "labels": {"app": "wh"}}, "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node.NODE_NAME},
            "automountServiceAccountToken": False,
            "containers": [{"name": "webhook", "image": WEBHOOK_IMAGE,
                            "args": ["serve", "--standalone", "--port=8443",
                                     "--cluster-name=e2e-cluster"],
                            "env": [{"name": "CERT_PATH", "value": "/certs/tls.crt"},
                                    {"name": "KEY_PATH", "value": "/certs/tls.key"}],
                            "ports": [{"containerPort": 8443, "name": "https"}],
                            "readinessProbe": {"httpGet": {"path": "/readyz", "port": "https",
                                                           "scheme": "HTTPS"},
                                               "periodSeconds": 1},
                            "securityContext": RESTRICTED,
                            "volumeMounts": [{"name": "certs", "mountPath": "/certs",
                                              "readOnly": True}]}],
            "volumes": [{"name": "certs", "secret": {"secretName": "tls"}}]}}, ns)
        self.api.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "wh"},
                         "spec": {"selector": {"app": "wh"}, "ports": [
                             {"port": 443, "targetPort": "https"}]}}, ns)
        self.api.wait(kubeapi.path_for("Pod", ns, "wh"), lambda p: any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p.get("status", {}).get("conditions", [])), 90, what="webhook pod Ready")
        with open(ca[0], "rb") as f:
            bundle = base64.b64encode(f.read()).decode()
        name = "e2e-node-" + ns
        self.api.create({"apiVersion": "admissionregistration.k8s.io/v1",
                         "kind": "MutatingWebhookConfiguration", "metadata": {"name": name},
                         "webhooks": [{
                             "name": "node.e2e.mldiagnostics", "sideEffects": "None",
                             "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
                             "timeoutSeconds": 10,
                             "clientConfig": {"caBundle": bundle, "service": {
                                 "namespace": ns, "name": "wh", "path": "/mutate"}},
                             "namespaceSelector": {"matchLabels": {"e2e-node-webhook": "on"}},
                             "rules": [{"operations": ["CREATE"], "apiGroups": [""],
                                        "apiVersions": ["v1"], "resources": ["pods"]}]}]})
        self.addCleanup(self.api.delete, kubeapi.path_for("MutatingWebhookConfiguration",
                                                          name=name))

        def injected_pod():
            name = "labelled-%d" % injected_pod.n
            injected_pod.n += 1
            p = self.api.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": name, "labels": {e2e.LABEL: "true"}}, "spec": {
                "nodeName": "e2e-node", "containers": [{"name": "c", "image": "x"}]}}, ns)
            return p if e2e.injected(p) else None
        injected_pod.n = 0
        # the webhook configuration reaches the API server's informer within a few seconds
        p = wait_until(injected_pod, 30, "a pod injected through the Service")
        self.assertIn("GKE_DIAGON_IDENTIFIER", e2e.env_list(p["spec"]["containers"][0]))


if __name__ == "__main__":
    unittest.main()
