"""The webhook binary over real TLS: reviews of pods as the JobSet, LWS,
KubeRay, Job, Deployment and StatefulSet controllers create them (built from
the upstream manifests in tests/fixtures/upstream), every patch applied with
python3-jsonpatch and checked for what the API server would reject; then the
admission protocol and malformed input."""
import copy
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import yaml  # noqa: E402  (Debian python3-yaml)

import controllers  # noqa: E402
import podcheck  # noqa: E402
from harness import Webhook, fixture  # noqa: E402

NS = "ml-team"
CLUSTER = "projects/demo/locations/us-central1/clusters/tpu-1"
INJECTED = ["GKE_DIAGON_IDENTIFIER", "GKE_DIAGON_METADATA", "OTEL_RESOURCE_ATTRIBUTES_POD_NAME",
            "OTEL_RESOURCE_ATTRIBUTES_POD_UID", "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME",
            "OTEL_COLLECTOR_NAME", "OTEL_COLLECTOR_NAMESPACE",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
            "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"]


def upstream(path, kind=None):
    docs = [d for d in yaml.safe_load_all(fixture("upstream", path)) if d]
    return next(d for d in docs if kind is None or d.get("kind") == kind)


def opt_in(template):
    """Label a pod template managed-mldiagnostics-gke=true (pod-level opt-in:
    the only rule a standalone webhook can evaluate)."""
    template.setdefault("metadata", {}).setdefault("labels", {})[
        "managed-mldiagnostics-gke"] = "true"
    return template


def env_of(container):
    return {e["name"]: e for e in container.get("env") or []}


class AdmissionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.wh = Webhook("--cluster-name", CLUSTER).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.wh.__exit__(None, None, None)

    def admit(self, pod, ns=NS):
        doc, patch = self.wh.review(controllers.review(pod, ns))
        self.assertEqual(doc["apiVersion"], "admission.k8s.io/v1")
        self.assertEqual(doc["kind"], "AdmissionReview")
        self.assertTrue(doc["response"]["allowed"])
        return doc["response"], patch

    def check_injected(self, pod, kind, name, parent=None):
        """Inject pod, validate the result, re-review it; returns the result."""
        resp, patch = self.admit(pod)
        self.assertIsNotNone(patch, resp)
        self.assertEqual(resp["patchType"], "JSONPatch")
        before = podcheck.problems(pod)
        out = podcheck.apply(pod, patch)
        new = [p for p in podcheck.problems(out, INJECTED) if p not in before]
        self.assertEqual(new, [], "patch makes the pod invalid")
        ident = json.loads(out["metadata"]["annotations"]["diagon.gke.io/identifier"])
        self.assertEqual(ident, {"metadata.name": name, "metadata.kind": kind,
                                 "clustername": CLUSTER, "namespace": NS})
        meta = json.loads(out["metadata"]["annotations"]["diagon.gke.io/metadata"])
        if parent:
            self.assertEqual(meta.get("parent-workload"), parent)
        self.assertRegex(out["metadata"]["annotations"]["diagon.gke.io/injection"],
                         r"^\d+\.\d+\.\d+;[0-9a-f]{12}$")
        for c in out["spec"]["containers"]:
            env = env_of(c)
            for n in INJECTED:
                self.assertIn(n, env, "%s lacks %s" % (c["name"], n))
            self.assertEqual(json.loads(env["GKE_DIAGON_IDENTIFIER"]["value"]), ident)
            mounts = [m for m in c["volumeMounts"] if m["name"] == "mldiagnostics-metadata"]
            self.assertEqual(mounts, [{"name": "mldiagnostics-metadata", "readOnly": True,
                                       "mountPath": "/var/run/mldiagnostics"}])
        # idempotent: the patched pod, reviewed again, needs nothing
        resp2, patch2 = self.admit(out)
        self.assertIsNone(patch2, "second review must not patch: %s" % resp2)
        return out

    def test_jobset_resnet_pods(self):
        js = upstream("jobset/resnet.yaml")
        for rj in js["spec"]["replicatedJobs"]:
            opt_in(rj["template"]["spec"]["template"])
        pods = controllers.jobset_pods(js, NS, limit=2)
        self.assertTrue(pods)
        for pod in pods:
            owner = pod["metadata"]["ownerReferences"][0]["name"]
            out = self.check_injected(pod, "JobSet", "pytorch", "Job/" + owner)
            env = env_of(out["spec"]["containers"][0])
            self.assertEqual(env["MASTER_ADDR"]["value"], "pytorch-workers-0-0.pytorch")
            attrs = env["OTEL_RESOURCE_ATTRIBUTES"]["value"]
            self.assertIn("k8s.jobset.name=pytorch", attrs)
            self.assertIn("k8s.cluster.name=tpu-1", attrs)
            self.assertIn("k8s.pod.name=$(OTEL_RESOURCE_ATTRIBUTES_POD_NAME)", attrs)

    def test_jobset_paralleljobs_identity_is_shared(self):
        js = upstream("jobset/paralleljobs.yaml")
        for rj in js["spec"]["replicatedJobs"]:
            opt_in(rj["template"]["spec"]["template"])
        idents = set()
        for pod in controllers.jobset_pods(js, NS, limit=2):
            _, patch = self.admit(pod)
            out = podcheck.apply(pod, patch)
            idents.add(env_of(out["spec"]["containers"][0])["GKE_DIAGON_IDENTIFIER"]["value"])
        self.assertEqual(len(idents), 1, "every pod of one JobSet gets one identifier")

    def test_leaderworkerset_leader_and_workers(self):
        lws = upstream("lws/leaderworkerset.yaml")
        lwt = lws["spec"]["leaderWorkerTemplate"]
        for t in ("leaderTemplate", "workerTemplate"):
            if t in lwt:
                opt_in(lwt[t])
        pods = controllers.lws_pods(lws, NS)
        name = lws["metadata"]["name"]
        self.check_injected(pods[0], "LeaderWorkerSet", name, "StatefulSet/" + name)
        for w in pods[1:]:
            self.check_injected(w, "LeaderWorkerSet", name, "StatefulSet/%s-0" % name)

    def test_rayjob_submitter_and_cluster_pods(self):
        rj = upstream("kuberay/ray-job.sample.yaml", "RayJob")
        spec = rj["spec"]["rayClusterSpec"]
        opt_in(spec["headGroupSpec"]["template"])
        for g in spec["workerGroupSpecs"]:
            opt_in(g["template"])
        rj["spec"]["submitterPodTemplate"] = opt_in({"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "ray-job-submitter", "image": "rayproject/ray:2.46.0"}]}})
        pods = controllers.rayjob_pods(rj, NS)
        rc = controllers.raycluster_name(rj)
        for pod in pods[:-1]:  # head and workers name only their RayCluster
            resp, _ = self.admit(pod)
            self.assertTrue(any("RayCluster" in w for w in resp.get("warnings", [])),
                            "standalone must say the RayJob owner is unknown: %s" % resp)
            self.check_injected(pod, "RayCluster", rc, "RayCluster/" + rc)
        submitter = pods[-1]  # labelled ray.io/originated-from-* by KubeRay
        self.check_injected(submitter, "RayJob", rj["metadata"]["name"],
                            "Job/" + rj["metadata"]["name"])

    def test_job_from_maximal_upstream_job(self):
        job = json.loads(fixture("upstream", "kubernetes-api", "batch.v1.Job.json"))
        job["metadata"]["name"] = "train"
        t = job["spec"]["template"]
        opt_in(t)
        t["metadata"].pop("ownerReferences", None)  # the template's own garbage
        job["spec"]["parallelism"] = 1
        pod = controllers.job_pods(job, NS)[0]
        self.check_injected(pod, "Job", "train", "Job/train")

    def test_deployment_statefulset_and_bare_pods(self):
        tmpl = opt_in({"spec": {"containers": [{"name": "app", "image": "busybox"}]}})
        dep = {"metadata": {"name": "web"}, "spec": {"template": tmpl}}
        self.check_injected(controllers.deployment_pod(dep, NS), "Deployment", "web")
        sts = {"metadata": {"name": "db"}, "spec": {"template": tmpl}}
        self.check_injected(controllers.statefulset_pod(sts, NS, 2), "StatefulSet", "db",
                            "StatefulSet/db")
        bare = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "debug", "namespace": NS,
                             "labels": {"managed-mldiagnostics-gke": "true"}},
                "spec": {"containers": [{"name": "sh", "image": "busybox"}]}}
        out = self.check_injected(bare, "Pod", "debug")
        meta = json.loads(out["metadata"]["annotations"]["diagon.gke.io/metadata"])
        self.assertNotIn("parent-workload", meta, "a bare pod has no parent")
        self.assertRegex(meta["creation-timestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

    def test_maximal_upstream_pod(self):
        pod = json.loads(fixture("upstream", "kubernetes-api", "core.v1.Pod.json"))
        pod["metadata"]["labels"]["managed-mldiagnostics-gke"] = "true"
        resp, patch = self.admit(pod, ns="namespaceValue")
        self.assertIsNotNone(patch, resp)
        before = podcheck.problems(pod)
        out = podcheck.apply(pod, patch)
        self.assertEqual([p for p in podcheck.problems(out, INJECTED) if p not in before], [])
        # the upstream pod's own init container is a plain one: never injected
        for c in out["spec"].get("initContainers", []):
            if c.get("restartPolicy") != "Always":
                self.assertNotIn("GKE_DIAGON_IDENTIFIER", env_of(c))
        _, again = self.admit(out, ns="namespaceValue")
        self.assertIsNone(again)

    def test_not_opted_in_is_allowed_without_patch(self):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"generateName": "x-", "labels": {"app": "x"}},
               "spec": {"containers": [{"name": "c", "image": "i"}]}}
        resp, patch = self.admit(pod)
        self.assertIsNone(patch)
        self.assertNotIn("patchType", resp)
        pod["metadata"]["labels"]["managed-mldiagnostics-gke"] = "false"
        self.assertIsNone(self.admit(pod)[1])

    def test_v1beta1_answered_in_v1beta1(self):
        pod = opt_in({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"},
                      "spec": {"containers": [{"name": "c", "image": "i"}]}})
        rv = controllers.review(pod, NS, uid="uid-beta", version="v1beta1")
        doc, patch = self.wh.review(rv)
        self.assertEqual(doc["apiVersion"], "admission.k8s.io/v1beta1")
        self.assertEqual(doc["response"]["uid"], "uid-beta")
        self.assertIsNotNone(patch)

    def test_uid_echoed_with_odd_characters(self):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "u"},
               "spec": {"containers": [{"name": "c", "image": "i"}]}}
        uid = 'weird "uid" \\ \u00e9 \u2603'
        doc, _ = self.wh.review(controllers.review(pod, NS, uid=uid))
        self.assertEqual(doc["response"]["uid"], uid)

    def test_non_pod_and_update_are_allowed_untouched(self):
        pod = opt_in({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "n"},
                      "spec": {"containers": [{"name": "c", "image": "i"}]}})
        rv = controllers.review(pod, NS, operation="UPDATE")
        doc, patch = self.wh.review(rv)
        self.assertTrue(doc["response"]["allowed"])
        self.assertIsNone(patch)
        rv = controllers.review(pod, NS)
        rv["request"]["kind"] = {"group": "apps", "version": "v1", "kind": "Deployment"}
        rv["request"]["resource"] = {"group": "apps", "version": "v1", "resource": "deployments"}
        doc, patch = self.wh.review(rv)
        self.assertIsNone(patch)
        rv = controllers.review(pod, NS)
        rv["request"]["subResource"] = "ephemeralcontainers"
        self.assertIsNone(self.wh.review(rv)[1])


class MalformedInputTest(unittest.TestCase):
    """Each bad input gets its status and a one-line reason, and a valid
    review still succeeds right after it."""

    @classmethod
    def setUpClass(cls):
        cls.wh = Webhook("--max-request-bytes", "256Ki").__enter__()
        cls.valid = controllers.review(opt_in(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ok"},
             "spec": {"containers": [{"name": "c", "image": "i"}]}}), NS)

    @classmethod
    def tearDownClass(cls):
        cls.wh.__exit__(None, None, None)

    def expect(self, status, body, method="POST", path="/mutate", fragment=None, headers=None):
        st, hdrs, data = self.wh.request(method, path, body,
                                         headers or {"Content-Type": "application/json"})
        self.assertEqual(st, status, data[:200])
        if status != 200:
            text = data.decode()
            self.assertTrue(text.endswith("\n") and text.count("\n") == 1,
                            "one-line reason: %r" % text)
            if fragment:
                self.assertIn(fragment, text)
        _, patch = self.wh.review(self.valid)
        self.assertIsNotNone(patch, "a valid review must still succeed")
        return data

    def test_not_json(self):
        self.expect(400, b"hello", fragment="not valid JSON")

    def test_empty_body(self):
        self.expect(400, b"", fragment="not valid JSON")

    def test_truncated(self):
        self.expect(400, json.dumps(self.valid)[:-40].encode(), fragment="not valid JSON")

    def test_deeply_nested(self):
        self.expect(400, b"[" * 100000 + b"]" * 100000)
        self.expect(400, b'{"a":' * 20000 + b"1" + b"}" * 20000)

    def test_invalid_utf8(self):
        body = json.dumps(self.valid).replace('"ok"', '"o\\u00e9k"').encode()
        body = body.replace(b"o\\u00e9k", b"o\xff\xfek")
        self.expect(400, body, fragment="not valid JSON")

    def test_huge_body(self):
        self.expect(413, b"{" + b" " * (300 * 1024) + b"}")

    def test_huge_body_without_content_length(self):
        def chunks():
            for _ in range(40):
                yield b" " * 10240
        c = self.wh.connect()
        c.putrequest("POST", "/mutate")
        c.putheader("Content-Type", "application/json")
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        try:
            for ch in chunks():
                c.send(b"%x\r\n%s\r\n" % (len(ch), ch))
            c.send(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer and close before we finish
        r = c.getresponse()
        self.assertEqual(r.status, 413)
        c.close()
        self.assertIsNotNone(self.wh.review(self.valid)[1])

    def test_wrong_types(self):
        for mutate in (lambda d: d.__setitem__("request", "x"),
                       lambda d: d["request"].__setitem__("uid", 7),
                       lambda d: d.__setitem__("kind", "Pod"),
                       lambda d: d.__setitem__("apiVersion", "v1"),
                       lambda d: d.__delitem__("apiVersion")):
            d = copy.deepcopy(self.valid)
            mutate(d)
            self.expect(400, json.dumps(d).encode())
        self.expect(400, b"[]")
        self.expect(400, b'"AdmissionReview"')

    def test_missing_uid(self):
        d = copy.deepcopy(self.valid)
        del d["request"]["uid"]
        self.expect(400, json.dumps(d).encode(), fragment="no uid")

    def test_pod_of_wrong_shape_is_allowed_with_warning(self):
        for bad in ({"spec": {"containers": "nope"}}, {"spec": None}, [], "pod",
                    {"metadata": [], "spec": {"containers": []}}):
            d = copy.deepcopy(self.valid)
            d["request"]["object"] = bad
            data = self.expect(200, json.dumps(d).encode())
            resp = json.loads(data)["response"]
            self.assertTrue(resp["allowed"])
            self.assertNotIn("patch", resp)
        d = copy.deepcopy(self.valid)
        d["request"]["object"]["spec"]["containers"][0]["env"] = "x"
        resp = json.loads(self.expect(200, json.dumps(d).encode()))["response"]
        self.assertTrue(any("env is not a list" in w for w in resp["warnings"]), resp)

    def test_wrong_method_and_path(self):
        self.expect(405, None, method="GET")
        self.expect(405, b"{}", method="PUT")
        self.expect(404, b"{}", path="/validate")
        self.expect(405, b"{}", path="/healthz")

    def test_query_string_accepted(self):
        st, _, _ = self.wh.request("POST", "/mutate?timeout=10s", json.dumps(self.valid),
                                   {"Content-Type": "application/json"})
        self.assertEqual(st, 200)

    def test_log_line_per_admission(self):
        d = copy.deepcopy(self.valid)
        d["request"]["uid"] = "log-check-uid"
        self.wh.review(d)
        # admission lines are gathered for up to 100 ms before they are written
        deadline = time.monotonic() + 5
        while True:
            lines = [x for x in self.wh.log_lines() if x.get("uid") == "log-check-uid"]
            if lines or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.assertEqual(len(lines), 1)
        line = lines[0]
        for k in ("ts", "level", "namespace", "object", "workload", "decision", "reason", "us"):
            self.assertIn(k, line)
        self.assertEqual(line["decision"], "injected")


if __name__ == "__main__":
    unittest.main()
