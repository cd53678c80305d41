"""Injection through the real chain: the API server calls the webhook the
chart configured (after JobSet's and LWS's own webhooks), the real
controllers make the pods, and the API server accepts every patched pod.

Seed 003's labelled workloads (manifests/examples, as users apply them), the
namespace label path with the seed's exact kubectl commands, opt-out, the
excluded namespaces, and re-invocation by a later webhook."""
import base64
import http.server
import json
import os
import ssl
import threading
import unittest

import kubeapi
from e2e import EXAMPLES, LABEL, E2ETest, env_list, identity, injected
from procs import make_ca, make_leaf


def example(name, namespace):
    with open(os.path.join(EXAMPLES, name)) as f:
        return f.read().replace("namespace: default", "namespace: " + namespace)


JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: train
  labels: {%s}
spec:
  parallelism: 2
  completions: 2
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: trainer
          image: busybox
          command: [sleep, "3600"]
"""

JOBSET = """apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: %s
  labels: {%s}
spec:
  replicatedJobs:
    - name: workers
      replicas: 2
      template:
        spec:
          parallelism: 1
          completions: 1
          template:
            metadata:
              labels: {%s}
            spec:
              restartPolicy: Never
              containers:
                - name: jax
                  image: busybox
                  command: [sleep, "3600"]
"""


class SeedWorkloads(E2ETest):
    def test_seed_jobset(self):
        """Seed 003's JobSet → JobSet controller → Jobs → Pods: all injected,
        one identity, the JobSet's creationTimestamp, parent = own Job."""
        ns = self.namespace("jobset")
        self.apply_yaml(example("jobset.yaml", ns), ns)
        pods = self.wait_pods(ns, 2, "jobset.sigs.k8s.io/jobset-name=single-host-tpu-v3-jobset2")
        js = self.get("JobSet", ns, "single-host-tpu-v3-jobset2")
        ident = self.assert_one_identity(pods, "JobSet", "single-host-tpu-v3-jobset2", js)
        self.assertTrue(ident["clustername"].endswith("/clusters/e2e-cluster"), ident)
        for p in pods:
            job = p["metadata"]["labels"]["job-name"]
            self.assertEqual(identity(p)[1]["parent-workload"], "Job/" + job)

    def test_leaderworkerset_leader_and_workers(self):
        ns = self.namespace("lws")
        self.apply_yaml(example("leaderworkerset.yaml", ns), ns)
        pods = self.wait_pods(ns, 2, "leaderworkerset.sigs.k8s.io/name=llama-serve")
        lws = self.get("LeaderWorkerSet", ns, "llama-serve")
        self.assert_one_identity(pods, "LeaderWorkerSet", "llama-serve", lws)
        parents = {p["metadata"]["name"]: identity(p)[1]["parent-workload"] for p in pods}
        self.assertEqual(parents, {"llama-serve-0": "StatefulSet/llama-serve",
                                   "llama-serve-0-1": "StatefulSet/llama-serve-0"})
        # LWS's own webhook ran before ours: its index labels are on the pods,
        # and ours reaches them through fieldRefs only.
        for p in pods:
            self.assertIn("leaderworkerset.sigs.k8s.io/worker-index", p["metadata"]["labels"])

    def test_rayjob_head_workers_and_submitter(self):
        ns = self.namespace("ray")
        self.apply_yaml(example("rayjob.yaml", ns), ns)
        pods = self.wait_pods(ns, 3, timeout=90)
        rj = self.get("RayJob", ns, "jax-on-ray")
        self.assert_one_identity(pods, "RayJob", "jax-on-ray", rj)
        kinds = sorted(identity(p)[1]["parent-workload"].split("/")[0] for p in pods)
        self.assertEqual(kinds, ["Job", "RayCluster", "RayCluster"],
                         "head and worker belong to the RayCluster, the submitter to the Job")

    def test_plain_job(self):
        ns = self.namespace("job")
        self.apply_yaml(JOB % ('%s: "true"' % LABEL), ns)
        pods = self.wait_pods(ns, 2, "job-name=train")
        self.assert_one_identity(pods, "Job", "train", self.get("Job", ns, "train"))


class WhoIsInjected(E2ETest):
    def test_namespace_label_seed_commands(self):
        """`kubectl create namespace ai-workloads` + `kubectl label namespace
        ai-workloads managed-mldiagnostics-gke=true`: an unlabelled JobSet
        there is injected; a Deployment's pods (not an ML kind) are not."""
        self.kubectl("create", "namespace", "ai-workloads")
        self.namespaces.append("ai-workloads")
        self.kubectl("label", "namespace", "ai-workloads", "managed-mldiagnostics-gke=true")
        self.api.wait(kubeapi.path_for("ServiceAccount", "ai-workloads", "default"), bool, 30)
        self.apply_yaml(JOBSET % ("unlabelled", "", ""), "ai-workloads")
        self.apply_yaml("""apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
""", "ai-workloads")
        pods = self.wait_pods("ai-workloads", 2, "jobset.sigs.k8s.io/jobset-name=unlabelled")
        self.assert_one_identity(pods, "JobSet", "unlabelled",
                                 self.get("JobSet", "ai-workloads", "unlabelled"))
        web = self.wait_pods("ai-workloads", 1, "app=web")
        self.assertFalse(injected(web[0]), "a Deployment is not covered by the namespace label")

    def test_opt_out_wins(self):
        ns = self.namespace("optout", labels={LABEL: "true"})
        self.apply_yaml(JOBSET % ("wl-false", '%s: "false"' % LABEL, ""), ns)
        self.apply_yaml(JOBSET % ("pod-false", "", '%s: "false"' % LABEL), ns)
        for name in ("wl-false", "pod-false"):
            pods = self.wait_pods(ns, 2, "jobset.sigs.k8s.io/jobset-name=" + name)
            for p in pods:
                self.assertFalse(injected(p), "%s: opt-out ignored" % p["metadata"]["name"])
                self.assertNotIn("GKE_DIAGON_IDENTIFIER", env_list(p["spec"]["containers"][0]))

    def test_excluded_namespaces_untouched(self):
        """kube-system, the release namespace and diagon-webhook-exempt=true
        are outside the chart's namespaceSelector: a labelled pod there is
        created exactly as written."""
        exempt = self.namespace("exempt", labels={"diagon-webhook-exempt": "true",
                                                  LABEL: "true"})
        for ns in ("kube-system", "gke-mldiagnostics", exempt):
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "generateName": "labelled-", "labels": {LABEL: "true"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
            out = self.api.create(pod, ns, query={"dryRun": "All"})
            self.assertFalse(injected(out), ns)
            self.assertNotIn("env", out["spec"]["containers"][0], ns)
        # The same pod elsewhere is injected (the dry run reaches the webhook).
        ns = self.namespace("control")
        out = self.api.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "generateName": "labelled-", "labels": {LABEL: "true"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, ns,
            query={"dryRun": "All"})
        self.assertTrue(injected(out))


class SidecarWebhook:
    """A mutating webhook that sorts after ours and adds a container to pods
    labelled e2e/add-sidecar=true, so that the API server re-invokes ours
    (reinvocationPolicy: IfNeeded)."""
    NAME = "zz-e2e-sidecar"

    def __init__(self, api, workdir):
        self.api = api
        ca = make_ca(workdir, "sidecar-ca", "sidecar-ca")
        crt, key = make_leaf(workdir, "sidecar", ca, "sidecar", sans=["IP:127.0.0.1"])
        self.calls = 0

        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.calls += 1
                pod = review["request"]["object"]
                names = [c["name"] for c in pod["spec"]["containers"]]
                resp = {"uid": review["request"]["uid"], "allowed": True}
                if "late-sidecar" not in names:
                    patch = [{"op": "add", "path": "/spec/containers/-", "value": {
                        "name": "late-sidecar", "image": "busybox"}}]
                    resp.update(patchType="JSONPatch",
                                patch=base64.b64encode(json.dumps(patch).encode()).decode())
                body = json.dumps({"apiVersion": "admission.k8s.io/v1",
                                   "kind": "AdmissionReview", "response": resp}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(crt, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        with open(ca[0], "rb") as f:
            bundle = base64.b64encode(f.read()).decode()
        api.apply({"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "MutatingWebhookConfiguration", "metadata": {"name": self.NAME},
                   "webhooks": [{"name": "sidecar.e2e.mld", "admissionReviewVersions": ["v1"],
                                 "sideEffects": "None", "failurePolicy": "Fail",
                                 "reinvocationPolicy": "Never",
                                 "objectSelector": {"matchLabels": {"e2e/add-sidecar": "true"}},
                                 "clientConfig": {"url": "https://127.0.0.1:%d/mutate" %
                                                  self.httpd.server_address[1],
                                                  "caBundle": bundle},
                                 "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                            "operations": ["CREATE"], "resources": ["pods"]}]}]})

    def close(self):
        self.api.delete(kubeapi.path_for("MutatingWebhookConfiguration", name=self.NAME))
        self.httpd.shutdown()


class Reinvocation(E2ETest):
    def test_later_webhook_container_is_injected_nothing_doubled(self):
        import tempfile
        side = SidecarWebhook(self.api, tempfile.mkdtemp(prefix="sidecar-", dir=self.c.dir))
        try:
            ns = self.namespace("reinvoke")
            self.apply_yaml(JOBSET % ("side", '%s: "true"' % LABEL, '"e2e/add-sidecar": "true"'),
                            ns)
            pods = self.wait_pods(ns, 2, "jobset.sigs.k8s.io/jobset-name=side")
        finally:
            side.close()
        self.assertGreaterEqual(side.calls, 2)
        self.assert_one_identity(pods, "JobSet", "side", self.get("JobSet", ns, "side"))
        for p in pods:
            names = [c["name"] for c in p["spec"]["containers"]]
            self.assertEqual(names, ["jax", "late-sidecar"])
            late = env_list(p["spec"]["containers"][1])
            self.assertIn("GKE_DIAGON_IDENTIFIER", late, "the re-invocation injected the sidecar")
            mounts = [m["name"] for m in p["spec"]["containers"][1].get("volumeMounts", [])]
            self.assertIn("mldiagnostics-metadata", mounts)

    def test_second_review_of_an_injected_pod_adds_nothing(self):
        ns = self.namespace("again")
        self.apply_yaml(JOBSET % ("again", '%s: "true"' % LABEL, ""), ns)
        pod = self.wait_pods(ns, 1, "jobset.sigs.k8s.io/jobset-name=again")[0]
        self.assertTrue(injected(pod))
        wh = self.c.install.webhooks[0]
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": "again-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "CREATE", "namespace": ns, "object": pod,
            "userInfo": {"username": "e2e"}}}
        status, body = wh.request("POST", "/mutate?timeout=5s", json.dumps(review),
                                  {"Content-Type": "application/json"})
        self.assertEqual(status, 200, body)
        resp = json.loads(body)["response"]
        self.assertTrue(resp["allowed"])
        self.assertNotIn("patch", resp, "a second review must add nothing")


if __name__ == "__main__":
    unittest.main()
