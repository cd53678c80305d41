"""One capture per pod for any interleaving (DESIGN §4.2; issue 12, behaviour 2).

The profiler holds a process-wide lock: a second Profile call while one
runs answers INTERNAL "Another profiling session active." and the capture
fails. The operator must never send two overlapping Profile RPCs to one
pod -- across its worker threads (resources created in the same instant),
across a restart (a capture found Running in status still holds its pods
until it ends or is re-dispatched) and across a leader change (the new
leader derives the holders from the statuses before dispatching anything
new). The capture that finds its pod held waits in Pending with a message
naming the pod and the capture holding it, and runs after that one ends.

Every test reads the fake profilers' call log (tests/fakes/fake_profiler.py:
arrival and end of each call per pod) and asserts that no call on a pod
arrived while another was open. Status writes of the resources take 20 ms
here (the fake API server's latency), about what a real API server's
status write costs; it widens the window between a capture's decision to
run and its Running status, which a scan of cached statuses cannot see.
"""
import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
from harness import Operator  # noqa: E402
from test_operator import NS, OperatorTest, wait_until  # noqa: E402

LEASE = ("coordination.k8s.io", "v1", "leases")
STATUS_LATENCY = {r"/mldiagnosticsconnections/[^/]+/status$": 0.02}
BUSY = re.compile(r"pod (\S+) is busy with capture (\S+)")


class OnePerPodTest(OperatorTest):
    operator_args = None  # each test starts its own

    def setUp(self):
        self.api.latency = STATUS_LATENCY
        self.api.clear_requests()

    def tearDown(self):
        self.api.latency = 0

    # ---------- what every test checks ----------

    def assert_no_overlap(self, pods):
        overlaps = [(pod, a["session_id"], a["outcome"], b["session_id"], b["outcome"])
                    for pod, a, b in self.prof.overlaps() if pod in pods]
        self.assertEqual(overlaps, [], "two Profile calls at once on one pod")
        for pod in pods:
            outcomes = [r["outcome"] for r in self.prof.requests_for(pod)]
            self.assertNotIn("INTERNAL", outcomes, pod)

    def busy_messages(self, name):
        """The Pending messages the operator wrote for name, in order."""
        out = []
        path = "/namespaces/%s/mldiagnosticsconnections/%s/status" % (NS, name)
        for r in self.api.requests:
            if r["method"] == "PUT" and r["path"].endswith(path) and r["body"] and \
                    r["status"] == 200:
                st = json.loads(r["body"]).get("status", {})
                if st.get("phase") == "Pending" and BUSY.search(st.get("message", "")):
                    out.append(st["message"])
        return out

    def assert_waited_for(self, name, pod, holders):
        """name waited in Pending naming pod and one of the captures that held it."""
        msgs = self.busy_messages(name)
        self.assertTrue(msgs, "%s never said what it waits for" % name)
        for m in msgs:
            got_pod, got_holder = BUSY.search(m).groups()
            self.assertEqual(got_pod, pod, m)
            self.assertIn(got_holder, ["%s/%s" % (NS, h) for h in holders], m)

    def all_succeed(self, names, timeout=60, op=None):
        for name in names:
            st = self.wait_phase(name, timeout=timeout)["status"]
            self.assertEqual(st["phase"], "Succeeded",
                             (name, st, op.logs()[-3000:] if op else ""))

    def calls_on(self, pod):
        """(capture, session, outcome) of each call on pod, in order; the capture is
        known by its storage location (two sessions may share an id: it is the second
        they started)."""
        return [(r["repository_root"].split("/")[-3], r["session_id"], r["outcome"])
                for r in self.prof.requests_for(pod)]

    # ---------- the interleavings ----------

    def test_same_instant_creation_with_several_workers(self):
        """Three resources per pod, created back to back, eight workers: each pod sees
        three sessions one after the other; the ones that waited said for whom."""
        pods = self.pods("inst", 3)
        names = {pod: ["%s-c%d" % (pod, k) for k in range(3)] for pod in pods}
        with Operator(self.kubeconfig, "--workers=8", name="op-inst") as op:
            for k in range(3):
                for pod in pods:
                    self.capture(names[pod][k], podName=pod)
            self.all_succeed([n for pod in pods for n in names[pod]], op=op)
        self.assert_no_overlap(pods)
        for pod in pods:
            calls = self.calls_on(pod)
            self.assertEqual(sorted(n for n, _, _ in calls), names[pod], calls)
            self.assertEqual([o for _, _, o in calls], ["OK"] * 3, calls)
            waited = [n for n in names[pod] if self.busy_messages(n)]
            self.assertEqual(len(waited), 2, (pod, waited))
            for n in waited:
                self.assert_waited_for(n, pod, [h for h in names[pod] if h != n])

    def queue_behind(self, first, pod, others):
        """first is Running on pod; others are created and wait behind it."""
        self.assertTrue(wait_until(lambda: self.prof.requests_for(pod), 10))
        for name in others:
            self.capture(name, podName=pod)
        for name in others:
            self.assertTrue(wait_until(lambda: self.busy_messages(name), 10),
                            (name, self.get(name).get("status")))
            self.assertEqual(self.get(name)["status"]["phase"], "Pending")
            self.assert_waited_for(name, pod, [first])

    def check_resumed_first(self, first, pod, others, session):
        """first resumed (same session, attempt 2) before the others ran, one at a time."""
        st = self.get(first)["status"]
        self.assertEqual((st["attempts"], st["sessionId"]), (2, session), st)
        calls = self.calls_on(pod)
        self.assertEqual(calls[:2], [(first, session, "CLIENT_CANCELLED"),
                                     (first, session, "OK")], calls)
        self.assertEqual(sorted(calls[2:]), sorted(
            (n, self.get(n)["status"]["sessionId"], "OK") for n in others), calls)
        self.assert_no_overlap([pod])

    def restart_with_captures_queued(self, prefix, workers):
        (pod,) = self.pods(prefix, 1)
        first, others = prefix + "-z", [prefix + "-b", prefix + "-c"]  # z: queued last
        args = ("--workers=%d" % workers, "--capture-max-retries=2")
        op = Operator(self.kubeconfig, *args, name="op-" + prefix).start()
        try:
            self.capture(first, podName=pod, durationSeconds=4)
            session = self.wait_phase(first, ("Running",), timeout=10)["status"]["sessionId"]
            self.queue_behind(first, pod, others)
            op.kill9()
        finally:
            op.stop()
        self.assertTrue(wait_until(lambda: self.prof.requests_for(pod)[0]["outcome"]
                                   == "CLIENT_CANCELLED", 10))
        self.assertEqual(self.get(first)["status"]["phase"], "Running", "the checkpoint")
        with Operator(self.kubeconfig, *args, name="op-%s2" % prefix) as op2:
            self.all_succeed([first] + others, op=op2)
        self.check_resumed_first(first, pod, others, session)

    def test_restart_mid_capture_with_captures_queued(self):
        """kill -9 during a capture with two more queued on its pod: the restarted
        operator (eight workers) resumes the interrupted one, then runs the two others
        one after the other."""
        self.restart_with_captures_queued("rst", 8)

    def test_restart_resumes_the_interrupted_capture_first(self):
        """The interrupted capture's Running status holds its pod from the start: with
        one worker the queue hands out the two waiting captures before it (by name),
        and they must keep waiting rather than take the pod."""
        self.restart_with_captures_queued("rst1", 1)

    def holder(self, ns):
        try:
            return self.api.get(LEASE, "mldiagnostics-connection-operator",
                                ns=ns)["spec"].get("holderIdentity")
        except Exception:  # noqa: BLE001 - not created yet
            return None

    def test_leader_change_mid_capture_with_captures_queued(self):
        """The leader dies during a capture with two more queued on its pod: the new
        leader resumes the interrupted one before anything new, then the others."""
        (pod,) = self.pods("lead", 1)
        args = ("--leader-elect", "--leader-election-namespace=ops-one", "--workers=8",
                "--capture-max-retries=2")
        a = Operator(self.kubeconfig, *args, name="op-la").start()
        b = Operator(self.kubeconfig, *args, name="op-lb").start()
        try:
            h = wait_until(lambda: self.holder("ops-one") in ("op-la", "op-lb"), 30)
            self.assertTrue(h, "nobody took the Lease")
            leader, follower = (a, b) if self.holder("ops-one") == "op-la" else (b, a)
            self.capture("lead-z", podName=pod, durationSeconds=4)
            first = self.wait_phase("lead-z", ("Running",), timeout=10)["status"]
            self.queue_behind("lead-z", pod, ["lead-b", "lead-c"])
            leader.kill9()
            self.assertTrue(wait_until(lambda: self.holder("ops-one") ==
                                       follower.env["POD_NAME"], 30), "no handover")
            self.all_succeed(["lead-z", "lead-b", "lead-c"], timeout=60, op=follower)
        finally:
            a.stop()
            b.stop()
        self.check_resumed_first("lead-z", pod, ["lead-b", "lead-c"], first["sessionId"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
