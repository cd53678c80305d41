"""Hostile MLDiagnosticsConnections against the real operator (the fake API server, which,
unlike the real one, does not apply the CRD's schema, so every value reaches the operator;
the fake profilers of test_operator): 1,000 comma-separated pod names, 64 KiB strings in
every string field, control characters and newlines in every field, ports and durations
out of range, another namespace without --allow-cross-namespace, pods named like another
namespace's pods, and 5,000 such resources created at once.

Each must end Failed with a message that names the field, at most MESSAGE_MAX bytes, with
no control character in the status, the Events or the operator's log; no profiler hears
of any of them; the operator's peak RSS stays within DESIGN §6's 32 MiB."""
import os
import re
import sys
import time
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
import test_operator as base  # noqa: E402
from harness import SANITIZED, status_kb  # noqa: E402

CONN, NS = base.CONN, base.NS
F = "spec.triggerCapture."
MESSAGE_MAX = 512       # k8s_error's message: one line, 511 bytes at most
RSS_BOUND_KB = 32 * 1024  # DESIGN §6
NASTY = "x\n\r\t\x1b[31m\x07\x7f\u0085y"
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def with_ref(kind="JobSet", name="train"):
    return {"podName": None, "workloadRef": {"kind": kind, "name": name}}


class HostileResourcesTest(base.OperatorTest):
    operator_args = ("--sidecar-timeout=5s", "--pod-ready-timeout=3s", "-v", "3")

    def make(self, name, **tc):
        """A resource whose triggerCapture is the base one changed by tc (None deletes)."""
        spec = {"capturePort": self.port, "durationSeconds": 1, "podNamespace": NS,
                "profiler": "google_cloud_mldiagnostics", "storageLocation": "/tmp/out",
                "podName": "p"}
        spec.update(tc)
        spec = {k: v for k, v in spec.items() if v is not None}
        self.api.create(CONN, {"apiVersion": "diagon.gke.io/v1alpha1",
                               "kind": "MLDiagnosticsConnection", "metadata": {"name": name},
                               "spec": {"triggerCapture": spec}}, ns=NS)

    def assert_clean(self, text, what):
        self.assertLessEqual(len(text.encode()), MESSAGE_MAX, "%s is %d bytes" % (what, len(text)))
        self.assertIsNone(CONTROL.search(text), "%s has a control character: %r" % (what, text))

    def assert_failed(self, name, pattern, timeout=20):
        st = self.wait_phase(name, timeout=timeout)["status"]
        self.assertEqual(st["phase"], "Failed", (name, st))
        self.assertRegex(st["message"], pattern, name)
        self.assert_clean(st["message"], name + " status.message")
        self.assert_clean(st["captureResult"]["errorMessage"], name + " errorMessage")
        for c in st.get("conditions", []):
            self.assert_clean(c.get("message", ""), name + " condition message")
        return st

    def assert_events_and_log_clean(self, names):
        ok = base.wait_until(lambda: all(self.events(n) for n in names), 10)
        self.assertTrue(ok, "every failure has its Event")
        for n in names:
            for e in self.events(n):
                self.assert_clean(e["message"], n + " Event")
        with open(self.op.log_path, "rb") as f:
            raw = f.read()
        self.assertIsNone(re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", raw), "raw control bytes in the log")
        for line in self.op.log_lines():
            for k, v in line.items():
                if isinstance(v, str):
                    self.assertIsNone(CONTROL.search(v), "log field %s: %r" % (k, v))

    def fail_each(self, cases):
        """Create every case's resource, then each must fail matching its pattern."""
        for name, (tc, _) in cases.items():
            self.make(name, **tc)
        for name, (_, pattern) in cases.items():
            self.assert_failed(name, pattern)

    def assert_no_rpc(self, before):
        time.sleep(0.2)
        self.assertEqual(len(self.prof.requests), before, "a profiler heard of an invalid one")

    def test_a_thousand_pod_names(self):
        before = len(self.prof.requests)
        names = ["ghost-%d" % i for i in range(1000)]
        self.make("h-thousand-missing", podName=",".join(names))
        self.make("h-thousand-one-bad", podName=",".join(names[:999] + ["Bad_Name"]))
        st = self.assert_failed("h-thousand-missing", r"pods not found in namespace ml: ghost-0, ")
        print("1,000 missing pod names: %r" % st["message"][:160], file=sys.stderr)
        self.assert_failed("h-thousand-one-bad", F + r'podName: "Bad_Name" is not a valid pod name')
        self.assert_events_and_log_clean(["h-thousand-missing", "h-thousand-one-bad"])
        self.assert_no_rpc(before)

    def test_64_kib_strings_in_every_string_field(self):
        before = len(self.prof.requests)
        big = "a" * 65536
        cases = {
            "h-big-pod": ({"podName": big}, F + r'podName: "a{48}\.\.\. \(65536 bytes\)" is not'),
            "h-big-ns": ({"podNamespace": big}, F + r"podNamespace: .*\(65536 bytes\).* not a valid"),
            "h-big-profiler": ({"profiler": big}, F + r"profiler: must be google_cloud_mldiagnostics"),
            "h-big-storage": ({"storageLocation": "/" + big},
                              F + r"storageLocation: longer than 1024 bytes \(got 65537"),
            "h-big-gcs": ({"storageLocation": "gs://" + big}, F + r"storageLocation: longer than"),
            "h-big-kind": (with_ref(kind=big), F + r"workloadRef.kind: must be .*\(65536 bytes\)"),
            "h-big-name": (with_ref(name=big), F + r"workloadRef.name: required, a DNS-1123"),
        }
        self.fail_each(cases)
        self.assert_events_and_log_clean(list(cases))
        self.assert_no_rpc(before)

    def test_control_characters_and_newlines_in_every_field(self):
        before = len(self.prof.requests)
        cases = {
            "h-cc-pod": ({"podName": "p," + NASTY}, F + r'podName: "x\\n\\r\\t\\x1b\[31m\\x07\\x7f'
                                                      r'\\u0085y" is not a valid pod name'),
            "h-cc-ns": ({"podNamespace": NASTY}, F + r"podNamespace: .* is not a valid"),
            "h-cc-profiler": ({"profiler": NASTY}, F + r"profiler: must be"),
            "h-cc-storage": ({"storageLocation": "/data/" + NASTY},
                             F + r"storageLocation: control character in"),
            "h-cc-gcs": ({"storageLocation": "gs://bucket/" + NASTY}, F + r"storageLocation"),
            "h-cc-kind": (with_ref(kind=NASTY), F + r"workloadRef.kind: must be"),
            "h-cc-name": (with_ref(name=NASTY), F + r"workloadRef.name: required"),
            "h-cc-port": ({"capturePort": NASTY}, F + r"capturePort: must be an integer"),
            "h-cc-duration": ({"durationSeconds": NASTY}, F + r"durationSeconds: must be an integer"),
        }
        self.fail_each(cases)
        self.assert_events_and_log_clean(list(cases))
        self.assert_no_rpc(before)

    def test_ports_and_durations_out_of_range(self):
        before = len(self.prof.requests)
        cases = {
            "h-port-0": ({"capturePort": 0}, F + r"capturePort: must be between 1 and 65535 \(got 0\)"),
            "h-port-65536": ({"capturePort": 65536}, F + r"capturePort: .*\(got 65536\)"),
            "h-port-neg": ({"capturePort": -1}, F + r"capturePort: .*\(got -1\)"),
            "h-dur-0": ({"durationSeconds": 0}, F + r"durationSeconds: must be between 1 and"),
            "h-dur-max": ({"durationSeconds": 2 ** 31 - 1},
                          F + r"durationSeconds: 2147483647s exceeds --max-capture-duration"),
            "h-dur-over": ({"durationSeconds": 2 ** 31}, F + r"durationSeconds: must be between"),
            "h-dur-huge": ({"durationSeconds": 2 ** 63 - 1}, F + r"durationSeconds: must be between"),
        }
        self.fail_each(cases)
        self.assert_no_rpc(before)

    def test_other_namespaces_and_their_pods_are_out_of_reach(self):
        self.api.create(("", "v1", "namespaces"), {"metadata": {"name": "other"}})
        ip = base.next_ip()  # a live profiler behind a pod of the other namespace only
        self.prof.add_pod("twin-0", ip)
        base.make_pod(self.api, "twin-0", ip, ns="other")
        before = len(self.prof.requests)
        self.make("h-cross", podName="twin-0", podNamespace="other")
        self.make("h-twin", podName="twin-0")  # the name exists, but not in this namespace
        self.make("h-twin-ref", **with_ref(name="twin"))
        self.assert_failed("h-cross", F + r'podNamespace: "other" differs from the resource\'s '
                                          r'namespace "ml" \(cross-namespace targets need '
                                          r'--allow-cross-namespace\)')
        self.assert_failed("h-twin", r"pod not found in namespace ml: twin-0")
        self.assert_failed("h-twin-ref", r"JobSet ml/twin not found")
        self.assertEqual(self.prof.requests_for("twin-0"), [], "the other namespace's pod")
        self.assert_no_rpc(before)

    def test_five_thousand_at_once(self):
        before = len(self.prof.requests)
        kinds = [({"capturePort": 0}, "capturePort"), ({"durationSeconds": 0}, "durationSeconds"),
                 ({"podName": NASTY}, "podName"), ({"storageLocation": "rel/x"}, "storageLocation"),
                 ({"profiler": "perf"}, "profiler"), (with_ref(kind="Deployment"), "workloadRef"),
                 ({"podNamespace": "other"}, "podNamespace"), ({"podName": "ghost"}, "ghost")]
        n = 5000
        t0 = time.monotonic()
        for i in range(n):
            self.make("h5k-%d" % i, **kinds[i % len(kinds)][0])
        made = time.monotonic() - t0

        def failed():
            done = 0
            for o in self.api.objects(*CONN, ns=NS):
                if o["metadata"]["name"].startswith("h5k-") and \
                        o.get("status", {}).get("phase") == "Failed":
                    done += 1
            return done == n
        self.assertTrue(base.wait_until(failed, 300, step=0.5), "not all 5,000 failed")
        took = time.monotonic() - t0
        hwm = status_kb(self.op.proc.pid, "VmHWM")
        print("5,000 invalid resources: created in %.1f s, all Failed %.1f s after the first; "
              "operator peak RSS (VmHWM) %.1f MiB" % (made, took, hwm / 1024), file=sys.stderr)
        for o in self.api.objects(*CONN, ns=NS):
            name = o["metadata"]["name"]
            if not name.startswith("h5k-"):
                continue
            field = kinds[int(name[4:]) % len(kinds)][1]
            msg = o["status"]["message"]
            self.assertIn(field if field != "ghost" else "not found in namespace ml: ghost", msg)
            self.assert_clean(msg, name)
        self.assert_no_rpc(before)
        if not SANITIZED:
            self.assertLessEqual(hwm, RSS_BOUND_KB, "operator peak RSS over DESIGN §6's bound")


if __name__ == "__main__":
    unittest.main()
