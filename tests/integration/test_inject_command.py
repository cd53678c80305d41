"""`mldiagnostics-webhook inject`: the offline command over upstream YAML
and JSON manifests — the same mutation core as the server, byte for byte."""
import base64
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import yaml  # noqa: E402

import controllers  # noqa: E402
import podcheck  # noqa: E402
from harness import FIXTURES, WEBHOOK, Webhook  # noqa: E402

CLUSTER = "projects/demo/locations/europe-west4/clusters/v5p"


def inject(*args, stdin=None):
    r = subprocess.run([WEBHOOK, "inject", "--cluster-name", CLUSTER, *args], input=stdin,
                       capture_output=True, timeout=60)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def labelled(path, kind=None):
    """An upstream manifest with managed-mldiagnostics-gke=true on the workload."""
    with open(os.path.join(FIXTURES, "upstream", path)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for d in docs:
        if kind is None or d["kind"] == kind:
            d["metadata"].setdefault("labels", {})["managed-mldiagnostics-gke"] = "true"
    return docs


def env_names(container):
    return [e["name"] for e in container.get("env", [])]


class InjectCommandTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mld-inject-")

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_jobset_yaml_templates_injected(self):
        path = self.write("js.yaml", yaml.safe_dump_all(labelled("jobset/resnet.yaml")))
        rc, out, err = inject("-f", path)
        self.assertEqual(rc, 0, err)
        (doc,) = list(yaml.safe_load_all(out))
        tmpl = doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        c = tmpl["spec"]["containers"][0]
        self.assertEqual(env_names(c)[:3], ["MASTER_ADDR", "MASTER_PORT", "PYTHONUNBUFFERED"])
        self.assertIn("OTEL_RESOURCE_ATTRIBUTES", env_names(c))
        ident = json.loads(tmpl["metadata"]["annotations"]["diagon.gke.io/identifier"])
        self.assertEqual(ident["metadata.kind"], "JobSet")
        self.assertEqual(ident["metadata.name"], "pytorch")
        self.assertEqual(podcheck.problems({"metadata": tmpl["metadata"], "spec": tmpl["spec"]},
                                           []), [])
        # idempotent: the output needs nothing more
        rc, patch, _ = inject("-f", "-", "--patch", stdin=out.encode())
        self.assertEqual(json.loads(patch), [])

    def test_multi_document_rayjob_and_unsupported_kinds_pass_through(self):
        docs = labelled("kuberay/ray-job.sample.yaml", "RayJob")
        path = self.write("ray.yaml", yaml.safe_dump_all(docs))
        rc, out, err = inject("-f", path, "-n", "team")
        self.assertEqual(rc, 0, err)
        outs = list(yaml.safe_load_all(out))
        self.assertEqual([d["kind"] for d in outs], [d["kind"] for d in docs])
        for before, after in zip(docs, outs):
            if before["kind"] != "RayJob":
                self.assertEqual(before, after, "other kinds are printed unchanged")
        rj = next(d for d in outs if d["kind"] == "RayJob")
        head = rj["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
        self.assertIn("GKE_DIAGON_IDENTIFIER", env_names(head["spec"]["containers"][0]))
        rc, text, _ = inject("-f", path, "--explain", "-n", "team")
        self.assertIn("RayJob team/rayjob-sample head template: inject", text)
        self.assertIn("ConfigMap team/ray-job-code-sample: skip", text)
        rc, text, _ = inject("-f", path, "--explain")
        self.assertIn("RayJob rayjob-sample head template: inject", text)
        self.assertIn("namespace unknown", text)

    def test_lws_and_list_and_json(self):
        lws = labelled("lws/leaderworkerset.yaml")[0]
        lst = {"apiVersion": "v1", "kind": "List", "items": [lws]}
        path = self.write("list.json", json.dumps(lst))
        rc, out, err = inject("-f", path)
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)  # JSON in, JSON out
        tmpl = doc["items"][0]["spec"]["leaderWorkerTemplate"]
        for key in ("leaderTemplate", "workerTemplate"):
            if key in tmpl:
                self.assertIn("OTEL_SERVICE_NAME", env_names(tmpl[key]["spec"]["containers"][0]))
        rc, patch, _ = inject("-f", path, "--patch")
        ops = json.loads(patch)
        self.assertTrue(ops and all(op["path"].startswith("/items/0/") for op in ops))
        self.assertEqual(podcheck.apply(lst, ops), doc, "the patch yields the printed document")

    def test_pod_patch_is_byte_identical_to_the_server(self):
        js = labelled("jobset/paralleljobs.yaml")[0]
        for rj in js["spec"]["replicatedJobs"]:
            rj["template"]["spec"]["template"].setdefault("metadata", {}).setdefault(
                "labels", {})["managed-mldiagnostics-gke"] = "true"
        pods = controllers.jobset_pods(js, "ns1", limit=1)
        with Webhook("--cluster-name", CLUSTER) as wh:
            for pod in pods:
                doc, _ = wh.review(controllers.review(pod, "ns1"))
                server = base64.b64decode(doc["response"]["patch"])
                path = self.write("pod.json", json.dumps(pod))
                rc, out, err = inject("-f", path, "--patch")
                self.assertEqual(rc, 0, err)
                self.assertEqual(out.encode(), server + b"\n")

    def test_errors(self):
        bad = self.write("bad.yaml", "a: [1, 2\nb: c\n")
        rc, _, err = inject("-f", bad)
        self.assertEqual(rc, 1)
        self.assertIn("bad.yaml: yaml: line", err)
        rc, _, err = inject()
        self.assertEqual(rc, 2)
        self.assertIn("missing -f", err)
        rc, _, err = inject("-f", bad, "--bogus")
        self.assertEqual(rc, 2)
        self.assertIn("unknown flag: --bogus", err)
        rc, _, err = inject("-f", os.path.join(self.tmp, "absent.yaml"))
        self.assertEqual(rc, 1)
        self.assertIn("absent.yaml", err)


if __name__ == "__main__":
    unittest.main()
