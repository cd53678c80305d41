"""tests/bench/summary.py: make bench's current table gathers every target
row of the reports, and says when one is missing; tests/bench/patch_size.py
counts a patch's operations and bytes against the fewest that give the
same pod."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SUMMARY = os.path.join(ROOT, "tests", "bench", "summary.py")

WEBHOOK = """# webhook

| review | arm | req/s |
|---|---|---:|
| 5k | webhook | 9000 |

## Targets

| target | figure | goal | verdict |
|---|---:|---:|---|
| 5k: webhook / Go throughput | 4.25× | ≥ 3× | PASS |
| 5k: Go p99 / webhook p99 | 2.49× | ≥ 3× | MISS |

Rows marked info are context.
"""
OPERATOR = """| target | figure | goal | verdict |
|---|---:|---:|---|
| creation → last RPC at the profilers | 88 ms | ≤ 1000 ms | PASS |
| steady RSS after the captures | 9.1 MiB | - | info |
"""
APISERVER = """# Admission seen from kube-apiserver

| target | figure | goal | verdict |
|---|---:|---:|---|
| API server's call p50, one at a time: ours − floor / Go − floor | 0.40× | ≤ 0.5× | PASS |
"""


PATCH = """| target | figure | goal | verdict |
|---|---:|---:|---|
| patch operations: fixtures at the fewest | 7 of 26 | all | MISS |
"""


class PatchSize(unittest.TestCase):
    def test_one_operation_per_value_and_its_per_element_form(self):
        sys.path.insert(0, os.path.dirname(SUMMARY))
        import patch_size
        env = [{"name": "USER_%d" % i, "value": "x" * 20} for i in range(2)]
        attrs = {"name": "OTEL_RESOURCE_ATTRIBUTES", "value": "a=b"}
        pod = {"metadata": {"annotations": {"a": "b"}},
               "spec": {"containers": [{"name": "c", "env": env + [attrs]}]}}
        ours_env = [{"name": "V0", "value": "y"}] + env + \
            [{"name": "OTEL_RESOURCE_ATTRIBUTES", "value": "a=b,c=d"},
             {"name": "V1", "value": "y"}]
        ours = [{"op": "add", "path": "/spec/containers/0/env", "value": ours_env},
                {"op": "add", "path": "/metadata/annotations",
                 "value": {"a": "b", "diagon.gke.io/x": "z"}}]
        ops, nbytes, touched, per_ops, per_bytes = patch_size.measure(pod, ours)
        self.assertEqual((ops, touched), (2, 2), "one operation per value touched")
        per = patch_size.per_element(pod, ours)
        self.assertEqual([(o["op"], o["path"]) for o in per], [
            ("add", "/spec/containers/0/env/0"),
            ("replace", "/spec/containers/0/env/3/value"),
            ("add", "/spec/containers/0/env/-"),
            ("add", "/metadata/annotations/diagon.gke.io~1x")])
        self.assertEqual(per_ops, 4)
        self.assertEqual(patch_size.root_of("/spec/containers/0/env/3/value"),
                         "/spec/containers/0/env")
        # a list that was absent stays one operation in both forms
        one = [{"op": "add", "path": "/spec/volumes", "value": [{"name": "v"}]}]
        self.assertEqual(patch_size.measure(pod, one), (1, len(json.dumps(
            one, separators=(",", ":"))), 1, 1, len(json.dumps(one, separators=(",", ":")))))

    def test_the_fixtures_table(self):
        with tempfile.TemporaryDirectory() as d:
            # PATCH_COST=0: not timed here (make bench builds and runs patchcost)
            r = subprocess.run([sys.executable, os.path.join(os.path.dirname(SUMMARY),
                                                             "patch_size.py"), d],
                               capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, PATCH_COST="0"))
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, "patch.md")) as f:
                text = f.read()
        self.assertIn("| seed-000 | 4 | 4 | 11 | ", text)
        self.assertIn("| patch operations: cases at one per value touched", text)
        self.assertIn("| target | figure | goal | verdict |", text)


class Summary(unittest.TestCase):
    def run_summary(self, files):
        with tempfile.TemporaryDirectory() as d:
            for name, text in files.items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            r = subprocess.run([sys.executable, SUMMARY, d], capture_output=True, text=True,
                               timeout=60)
            with open(os.path.join(d, "summary.md")) as f:
                written = f.read()
        self.assertIn(written, r.stdout, "what it prints is what it writes")
        return r.returncode, written

    def test_every_target_row_of_every_report_in_one_table(self):
        rc, text = self.run_summary({"report.md": WEBHOOK, "operator-report.md": OPERATOR,
                                     "apiserver.md": APISERVER, "patch.md": PATCH})
        self.assertEqual(rc, 0, text)
        rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
        self.assertEqual([r.split(" | ")[0] for r in rows],
                         ["| webhook", "| webhook", "| operator", "| operator",
                          "| kube-apiserver", "| patch"])
        self.assertIn("| webhook | 5k: Go p99 / webhook p99 | 2.49× | ≥ 3× | MISS |", rows)
        self.assertNotIn("9000", text, "only target tables are gathered")
        self.assertIn("3 PASS, 2 MISS.", text)
        self.assertTrue(text.startswith("`make bench` at "), text)

    def test_a_missing_report_is_a_row_and_a_failure(self):
        rc, text = self.run_summary({"report.md": WEBHOOK, "operator-report.md": "no table\n"})
        self.assertEqual(rc, 1)
        self.assertIn("| operator | no target table in operator-report.md | - | - | MISSING |",
                      text)
        self.assertIn("| kube-apiserver | no target table in apiserver.md | - | - | MISSING |",
                      text)
        self.assertIn("3 report(s) missing", text)


if __name__ == "__main__":
    unittest.main()
