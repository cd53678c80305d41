"""tests/bench/summary.py: make bench's current table gathers every target
row of the three reports, and says when one is missing."""
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
                                     "apiserver.md": APISERVER})
        self.assertEqual(rc, 0, text)
        rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
        self.assertEqual([r.split(" | ")[0] for r in rows],
                         ["| webhook", "| webhook", "| operator", "| operator",
                          "| kube-apiserver"])
        self.assertIn("| webhook | 5k: Go p99 / webhook p99 | 2.49× | ≥ 3× | MISS |", rows)
        self.assertNotIn("9000", text, "only target tables are gathered")
        self.assertIn("3 PASS, 1 MISS.", text)
        self.assertTrue(text.startswith("`make bench` at "), text)

    def test_a_missing_report_is_a_row_and_a_failure(self):
        rc, text = self.run_summary({"report.md": WEBHOOK, "operator-report.md": "no table\n"})
        self.assertEqual(rc, 1)
        self.assertIn("| operator | no target table in operator-report.md | - | - | MISSING |",
                      text)
        self.assertIn("| kube-apiserver | no target table in apiserver.md | - | - | MISSING |",
                      text)
        self.assertIn("2 report(s) missing", text)


if __name__ == "__main__":
    unittest.main()
