"""The tier's real node (node.py): a kubelet of the tier's version on
containerd and runc, with the project's images pulled from the tier's
registry through containerd's mirror configuration, the securityContext
enforced by the runtime, kube-proxy carrying the API server's calls to a
webhook's Service as in a cluster, and what the kubelet makes of what the
webhook injects, read from the container's own process."""
import base64
import http.client
import json
import os
import re
import ssl
import subprocess
import unittest
import urllib.parse

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


class NodeCase(e2e.E2ETest):
    """What the real node's tests share (no tests of its own)."""

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



class RealNodeTest(NodeCase):
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


class WhatTheKubeletMakesOfIt(NodeCase):
    def injected_job(self, ns, name, meant, container, timeout=90):
        """A labelled Job on the real node whose annotation asks for `meant` as
        resource attributes; returns its one pod, checked injected."""
        self.api.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": name, "labels": {e2e.LABEL: "true"}, "annotations": {
                "diagon.gke.io/otel-resource-attributes": ",".join(
                    "%s=%s" % kv for kv in meant.items())}},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"kubernetes.io/hostname": node.NODE_NAME},
                "containers": [dict(container, securityContext=RESTRICTED)]}}}}, ns)
        (p,) = self.wait_pods(ns, 1, "job-name=" + name, timeout=timeout)
        self.assertTrue(e2e.injected(p), p["metadata"].get("annotations"))
        return p

    def environ(self, pid):
        with open("/proc/%d/environ" % pid, "rb") as f:
            return dict(kv.split("=", 1) for kv in f.read().decode().split("\0") if kv)

    def test_the_container_sees_what_the_webhook_meant(self):
        """An injected Job's container on the real node: its environment as its
        process sees it (the kubelet's $(VAR) expansion and fieldRefs) equals
        the tier's model of the kubelet (kubelet.container_env), every value
        the annotation meant decodes back unexpanded, and the metadata
        volume is mounted read-only with the downward API's files."""
        meant = {"team": "a=b", "note": "$(OTEL_COLLECTOR_NAME) 100% \u00fcn\u00efcode",
                 "pct": "%41", "dollar": "$$ $(HOME)"}
        ns = self.namespace("env")
        p = self.injected_job(ns, "envjob", meant, {
            "name": "c", "image": WEBHOOK_IMAGE, "command": ["/bin/sleep"], "args": ["300"],
            "env": [{"name": "MINE", "value": "$(OTEL_SERVICE_NAME)/x"}]})
        pid = self.container_pid(p)
        seen = self.environ(pid)
        model = self.expanded_env(p)
        for name, value in model.items():
            self.assertEqual(seen.get(name), value, "%s: the kubelet gave %r" % (
                name, seen.get(name)))
        self.assertIn("GKE_DIAGON_IDENTIFIER", seen)
        self.assertEqual(seen["MINE"], seen["OTEL_SERVICE_NAME"] + "/x", "user's $(VAR) kept")
        attrs = dict(kv.split("=", 1) for kv in seen["OTEL_RESOURCE_ATTRIBUTES"].split(","))
        decoded = {k: urllib.parse.unquote(v) for k, v in attrs.items()}
        for k, v in meant.items():
            self.assertEqual(decoded.get(k), v, "%s: %s" % (k, seen["OTEL_RESOURCE_ATTRIBUTES"]))
        self.assertEqual(decoded["k8s.pod.name"], p["metadata"]["name"])
        self.assertEqual(decoded["k8s.pod.uid"], p["metadata"]["uid"])
        # the metadata volume: read-only, with the files its downward-API items name
        vol = next(v for v in p["spec"]["volumes"] if v["name"] == "mldiagnostics-metadata")
        mount = next(m for m in p["spec"]["containers"][0]["volumeMounts"]
                     if m["name"] == vol["name"])
        with open("/proc/%d/mountinfo" % pid) as f:
            opts = next(line.split()[5] for line in f if line.split()[4] == mount["mountPath"])
        self.assertIn("ro", opts.split(","))
        live = self.get("Pod", ns, p["metadata"]["name"])
        root = "/proc/%d/root%s" % (pid, mount["mountPath"])
        for item in vol["downwardAPI"]["items"]:
            with open(os.path.join(root, item["path"])) as f:
                text = f.read()
            field = item["fieldRef"]["fieldPath"]
            if field in ("metadata.labels", "metadata.annotations"):
                want = live["metadata"].get(field.split(".")[1], {})
                # values quoted as Go's strconv.Quote does (for these, JSON's quoting)
                got = {k: json.loads(v) for k, v in
                       (line.split("=", 1) for line in text.splitlines() if line)}
                # the kubelet adds its own two to the annotations it writes
                extra = {k for k in got.keys() - want.keys()
                         if k not in ("kubernetes.io/config.seen", "kubernetes.io/config.source")}
                self.assertEqual(extra, set(), field)
                self.assertEqual({k: got.get(k) for k in want}, want, field)
            else:
                self.assertEqual(text, {"metadata.name": live["metadata"]["name"],
                                        "metadata.namespace": ns,
                                        "metadata.uid": live["metadata"]["uid"]}[field], field)


    def test_the_sdks_read_it_in_a_real_container(self):
        """google-cloud-mldiagnostics' own functions and OpenTelemetry's
        resource detector, in the tier's Python image on the real node, read what
        the webhook injected and the kubelet expanded (test_consumers' report
        program, here under the restricted securityContext)."""
        from test_consumers import REPORT
        meant = {"team": "a=b", "note": "$(OTEL_COLLECTOR_NAME) 100% \u00fcn\u00efcode",
                 "pct": "%41", "rl.algorithm": "PPO"}  # an rl. key: rl.run.id joins them
        ns = self.namespace("sdk")
        p = self.injected_job(ns, "sdkjob", meant, {
            "name": "app", "image": self.python_image(), "args": ["-c", REPORT]},
            timeout=120)
        name = p["metadata"]["name"]

        def report():
            out = self.kubectl("logs", "-n", ns, name, check=False).stdout
            line = next((x for x in out.splitlines() if x.startswith("REPORT ")), None)
            return json.loads(line[len("REPORT "):]) if line else None
        r = wait_until(report, 60, "the consumer's report")
        self.assertNotIn("sdk_error", r, r)
        self.assertEqual(r["pod"], name, "the kubelet's hostname")
        self.assertEqual(r["details"]["cluster"].split("/")[-1], "e2e-cluster",
                         "the webhook pod asked the metadata server")
        self.assertEqual(r["resource"]["rl.run.id"], r["run_id"])
        for k, v in meant.items():
            self.assertEqual(r["resource"].get(k), v, "%s: %s" % (k, r["resource"]))
        self.assertEqual(r["resource"]["k8s.pod.name"], name)
        self.assertEqual(r["resource"]["k8s.namespace.name"], ns)


if __name__ == "__main__":
    unittest.main()
