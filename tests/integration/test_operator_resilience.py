"""The operator's leadership and resilience (DESIGN §4.4, seed 004): two
replicas with --leader-elect (only the leader sends RPCs; killing it hands
over; SIGTERM releases the Lease), kill -9 mid-capture then a restart that
completes the capture on a retry with the same session, SIGTERM
mid-capture recorded as interrupted within 10 s, short captures finishing
during shutdown, and API-server faults (dropped watches, 410, 429, a
restart) during captures with every resource reaching a terminal phase."""
import json
import os
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
from harness import OPERATOR, SLOW, Operator  # noqa: E402
from test_operator import (CONN, LWS, NS, RAYJOBS, OperatorTest, make_pod, next_ip,  # noqa: E402
                           wait_until)

LEASE = ("coordination.k8s.io", "v1", "leases")


class LeaderElectionTest(OperatorTest):
    operator_args = None  # the tests start their own

    def start_pair(self):
        args = ("--leader-elect", "--leader-election-namespace=ops", "--capture-max-retries=1")
        a = Operator(self.kubeconfig, *args, name="op-a").start()
        b = Operator(self.kubeconfig, *args, name="op-b").start()
        return a, b

    def holder(self):
        try:
            return self.api.get(LEASE, "mldiagnostics-connection-operator",
                                ns="ops")["spec"].get("holderIdentity")
        except Exception:  # noqa: BLE001 - not created yet
            return None

    def leader_of(self, ops):
        h = wait_until(lambda: self.holder() in {o.env["POD_NAME"] for o in ops}
                       and self.holder(), 30)
        self.assertTrue(h, "nobody took the Lease")
        return next(o for o in ops if o.env["POD_NAME"] == h)

    def captured_by(self, op):
        return [line for line in op.log_lines() if line.get("msg") == "capture"]

    def test_only_the_leader_sends_rpcs_and_killing_it_hands_over(self):
        a, b = self.start_pair()
        try:
            leader = self.leader_of([a, b])
            follower = b if leader is a else a
            lease = self.api.get(LEASE, "mldiagnostics-connection-operator", ns="ops")["spec"]
            self.assertEqual(lease["leaseDurationSeconds"], 15)
            self.assertRegex(lease["renewTime"], r"\.\d{6}Z$")
            self.assertTrue(wait_until(lambda: "mldiagnostics_operator_leader 1"
                                       in leader.metrics(), 10))
            self.assertIn("mldiagnostics_operator_leader 0", follower.metrics())
            self.assertEqual(follower.get("/readyz")[0], 200, "followers are ready too")
            pods = self.pods("le", 2)
            self.capture("le-1", podName=",".join(pods))
            self.assertEqual(self.wait_phase("le-1")["status"]["phase"], "Succeeded")
            self.assertTrue(self.captured_by(leader))
            self.assertEqual(self.captured_by(follower), [], "a follower never reconciles")
            t0 = time.time()
            leader.kill9()
            new = self.leader_of([follower])
            took = time.time() - t0
            self.assertLess(took, 25 * SLOW, "the follower waits out the 15 s lease, no more")
            self.capture("le-2", podName=",".join(pods))
            self.assertEqual(self.wait_phase("le-2")["status"]["phase"], "Succeeded")
            self.assertTrue(self.captured_by(new))
            lease = self.api.get(LEASE, "mldiagnostics-connection-operator", ns="ops")["spec"]
            self.assertEqual(lease["leaseTransitions"], 1)
        finally:
            a.stop()
            b.stop()

    def test_sigterm_releases_the_lease_for_a_quick_handover(self):
        a, b = self.start_pair()
        try:
            leader = self.leader_of([a, b])
            follower = b if leader is a else a
            code, took = leader.stop()
            self.assertEqual(code, 0)
            self.assertLess(took, 10)
            t0 = time.time()
            self.leader_of([follower])
            self.assertLess(time.time() - t0, 6 * SLOW, "released, not waited out")
        finally:
            a.stop()
            b.stop()


class RestartTest(OperatorTest):
    operator_args = None
    args = ("--capture-max-retries=2",)

    def test_kill9_mid_capture_completes_on_a_retry(self):
        pods = self.pods("k9", 2)
        op = Operator(self.kubeconfig, *self.args, name="op-k9").start()
        try:
            self.capture("k9", podName=",".join(pods), durationSeconds=3)
            first = self.wait_phase("k9", ("Running",), timeout=10)["status"]
            self.assertTrue(wait_until(lambda: all(self.prof.requests_for(p) for p in pods), 5))
            op.kill9()
            self.assertTrue(wait_until(lambda: all(
                self.prof.requests_for(p)[0]["outcome"] == "CLIENT_CANCELLED" for p in pods), 10),
                "the profilers saw the connection go")
            self.assertEqual(self.get("k9")["status"]["phase"], "Running", "the checkpoint")
        finally:
            op.stop()
        with Operator(self.kubeconfig, *self.args, name="op-k9b"):
            st = self.wait_phase("k9", timeout=30)["status"]
        self.assertEqual(st["phase"], "Succeeded", st)
        self.assertEqual(st["attempts"], 2)
        self.assertEqual(st["sessionId"], first["sessionId"], "resumed with the same session")
        self.assertEqual(st["startTime"], first["startTime"])
        for p in pods:
            reqs = self.prof.requests_for(p)
            self.assertEqual([r["session_id"] for r in reqs], [first["sessionId"]] * 2)
            self.assertEqual(reqs[-1]["outcome"], "OK")
        self.assertIn("Resumed", [e["reason"] for e in self.events("k9")])

    def test_sigterm_mid_capture_is_recorded_as_interrupted_and_resumed(self):
        pods = self.pods("term", 2)
        op = Operator(self.kubeconfig, *self.args, name="op-term").start()
        self.capture("term", podName=",".join(pods), durationSeconds=30)
        first = self.wait_phase("term", ("Running",), timeout=10)["status"]
        self.assertTrue(wait_until(lambda: all(self.prof.requests_for(p) for p in pods), 5))
        code, took = op.stop()
        self.assertEqual(code, 0, op.logs()[-2000:])
        self.assertLess(took, 10, "exits within the pod's grace period")
        st = self.get("term")["status"]
        self.assertEqual(st["phase"], "Running")
        self.assertIn("interrupted: the operator shut down during attempt 1 of 3", st["message"])
        self.assertEqual({h["phase"] for h in st["hosts"]}, {"Interrupted"})
        conds = {c["type"]: c for c in st["conditions"]}
        self.assertEqual(conds["Complete"]["reason"], "Interrupted")
        self.assertIn("Interrupted", [e["reason"] for e in self.events("term")])
        self.assertTrue(wait_until(lambda: all(
            self.prof.requests_for(p)[0]["outcome"] == "CLIENT_CANCELLED" for p in pods), 10))
        # shorten the rest: the next leader resumes the same session
        o = self.get("term")
        o["spec"]["triggerCapture"]["durationSeconds"] = 1
        self.api.update(("diagon.gke.io", "v1alpha1", "mldiagnosticsconnections"), o, ns=NS)
        with Operator(self.kubeconfig, *self.args, name="op-term2"):
            st = self.wait_phase("term", timeout=30)["status"]
        self.assertEqual(st["phase"], "Succeeded", st)
        self.assertEqual(st["attempts"], 2)
        self.assertEqual(st["sessionId"], first["sessionId"])

    def test_sigterm_lets_a_short_capture_finish(self):
        pods = self.pods("short", 1)
        op = Operator(self.kubeconfig, *self.args, name="op-short").start()
        self.capture("short", podName=pods[0], durationSeconds=2)
        self.wait_phase("short", ("Running",), timeout=10)
        code, took = op.stop()
        self.assertEqual(code, 0)
        self.assertLess(took, 10)
        st = self.get("short")["status"]
        self.assertEqual(st["phase"], "Succeeded", st)


class ApiFaultsTest(OperatorTest):
    operator_args = ("--capture-max-retries=2",)

    def test_captures_converge_through_api_faults(self):
        names = []

        def launch(i):
            pods = self.pods("fault%d" % i, 2)
            self.capture("fault-%d" % i, podName=",".join(pods), durationSeconds=1)
            names.append("fault-%d" % i)

        launch(0)
        self.api.drop_watches()
        launch(1)
        self.api.compact()
        self.api.drop_watches()  # the next watch finds its resourceVersion expired: 410
        launch(2)
        self.api.fail_next(6, status=429, retry_after=1)
        launch(3)
        time.sleep(0.5)
        self.api.restart()
        launch(4)
        self.api.fail_next(3, status=503)
        launch(5)
        for name in names:
            st = self.wait_phase(name, timeout=60)["status"]
            self.assertEqual(st["phase"], "Succeeded", (name, st, self.op.logs()[-3000:]))
        left = [o["metadata"]["name"] for o in self.api.objects(*(
            "diagon.gke.io", "v1alpha1", "mldiagnosticsconnections"), ns=NS)
            if o.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
        self.assertEqual(left, [], "nothing left Running or Pending")
        self.assertTrue(self.op.alive())
        self.assertIn("mldiagnostics_operator_watch_restarts_total", self.op.metrics())


class Chaos:
    """Drops every open watch each time the API server has written `every`
    more events (anyone's writes: the test's and the operator's), as the
    outside check of issue 12 did."""

    def __init__(self, api, every=5):
        self.api, self.every = api, every
        self.drops = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        last = self.api.resource_version
        while not self._stop.wait(0.01):
            rv = self.api.resource_version
            if rv - last >= self.every:
                self.api.drop_watches()
                self.drops += 1
                last = rv

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


class NoEventLostTest(OperatorTest):
    """Issue 12, behaviour 1 (DESIGN §4.4): resources created, changed and
    deleted while watches drop every few events, expire (410), are
    throttled (429 with Retry-After), fail (503) and cannot connect are all
    reconciled once the API server answers again."""

    operator_args = ("--capture-max-retries=2",)

    def test_every_resource_is_reconciled_through_a_storm_of_faults(self):
        names = []

        def launch(tag, n=1):
            for i in range(n):
                name = "storm-%s-%d" % (tag, i)
                pods = self.pods(name, 2)
                self.capture(name, podName=",".join(pods), durationSeconds=1)
                names.append(name)
                time.sleep(0.1)

        # a long capture, deleted while its watch cannot see it: its RPCs must be cancelled
        doomed = self.pods("storm-doomed", 2)
        self.capture("storm-doomed", podName=",".join(doomed), durationSeconds=90)
        self.wait_phase("storm-doomed", ("Running",), timeout=10)
        self.assertTrue(wait_until(lambda: all(self.prof.requests_for(p) for p in doomed), 5))
        # a capture waiting for its pod, whose pod becomes ready while the watches are down
        self.prof.add_pod("storm-late-0", next_ip())
        make_pod(self.api, "storm-late-0", None, phase="Pending")
        self.capture("storm-late", podName="storm-late-0", durationSeconds=1)
        self.wait_phase("storm-late", ("Pending",), timeout=10)
        with Chaos(self.api, every=5) as chaos:
            launch("drops", 5)
            self.api.compact()  # the next watch finds its resourceVersion expired: 410
            self.api.drop_watches()
            launch("gone")
            self.api.fail_next(8, status=429, retry_after=1)
            launch("throttled")
            self.api.fail_next(5, status=503)
            launch("failing")
            self.api.refuse(True, close_connections=True)
            try:
                launch("refused", 2)
                self.api.delete(CONN, "storm-doomed", ns=NS)
                late = self.api.get("pods", "storm-late-0", ns=NS)
                self.api.patch("pods", "storm-late-0", {"status": {
                    "phase": "Running", "podIP": self.prof.pods["storm-late-0"].ip}},
                    ns=NS, subresource="status")
                self.assertEqual(late["status"]["phase"], "Pending")
                self.api.compact()  # and every resourceVersion the operator holds expires
                time.sleep(5)
            finally:
                self.api.refuse(False)
        self.assertGreater(chaos.drops, 3)
        healthy = time.time()
        for name in names + ["storm-late"]:
            st = self.wait_phase(name, timeout=max(1, 50 - (time.time() - healthy)))["status"]
            self.assertEqual(st["phase"], "Succeeded", (name, st, self.op.logs()[-3000:]))
        cancelled = wait_until(lambda: all(self.prof.requests_for(p)[-1]["outcome"]
                                           == "CLIENT_CANCELLED" for p in doomed),
                               max(1, 50 - (time.time() - healthy)))
        self.assertTrue(cancelled, ("the deleted capture's RPCs go on", self.op.logs()[-6000:],
                                    [self.prof.requests_for(p) for p in doomed]))
        self.assertTrue(self.op.alive())


class ResyncTest(OperatorTest):
    """The periodic resync (--resync-period, default 5m): the leader queues
    every unfinished capture again, whatever the watches said."""

    operator_args = ("--resync-period=1s", "-v", "3")

    def test_unfinished_captures_are_queued_again_every_period(self):
        self.prof.add_pod("idle-0", next_ip())
        make_pod(self.api, "idle-0", None, phase="Pending")
        self.capture("idle", podName="idle-0")
        self.wait_phase("idle", ("Pending",), timeout=10)

        def resyncs():
            return [line for line in self.op.log_lines()
                    if line.get("msg") == "resync: unfinished captures queued again"]
        self.assertTrue(wait_until(lambda: len(resyncs()) >= 3, 10), self.op.logs()[-2000:])
        p = subprocess.run([OPERATOR, "--dry-run"], capture_output=True, text=True, timeout=30)
        self.assertEqual(json.loads(p.stdout)["resync-period"], "5m0s")


class LateCrdTest(OperatorTest):
    """DESIGN §4.4 (issue 12, behaviour 3): a kind whose CRD is not installed
    is empty, logged once, and watched within 30 s of its CRD being created:
    a capture of a workload created after that resolves to its pods."""

    operator_args = None  # started once the CRDs are gone
    LATE = {RAYJOBS: "RayJob", LWS: "LeaderWorkerSet"}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for crd in cls.LATE:
            cls.api.unregister(*crd)
        cls.op = Operator(cls.kubeconfig, "-v", "3").start()

    def install(self, crd):
        self.api.register(*crd, self.LATE[crd], status=True)
        return time.time()

    def resolves_within_30s(self, name, t0, expect):
        st = self.wait_phase(name, timeout=max(1, 30 - (time.time() - t0)))["status"]
        self.assertEqual(st["phase"], "Succeeded", st)
        self.assertEqual(sorted(h["pod"] for h in st["hosts"]), sorted(expect))

    def test_rayjob_crd_created_after_start(self):
        logs = self.op.logs()
        self.assertEqual(logs.count('"resource not served (CRD not installed?); retrying later",'
                                    '"resource":"rayjobs.ray.io"'), 1, "logged once")
        t0 = self.install(RAYJOBS)
        self.api.create(RAYJOBS, {"metadata": {"name": "tune"}, "spec": {}}, ns=NS)
        self.api.patch(RAYJOBS, "tune", {"status": {"rayClusterName": "tune-raycluster-k2"}},
                       ns=NS, subresource="status")
        pods = self.pods("tune-head", 2, labels={"ray.io/cluster": "tune-raycluster-k2"})
        self.capture("late-ray", podName=None, workloadRef={"kind": "RayJob", "name": "tune"})
        self.resolves_within_30s("late-ray", t0, pods)

    def test_lws_crd_created_after_start(self):
        t0 = self.install(LWS)
        self.api.create(LWS, {"metadata": {"name": "serve"}, "spec": {}}, ns=NS)
        pods = self.pods("serve-w", 2, labels={"leaderworkerset.sigs.k8s.io/name": "serve"})
        self.capture("late-lws", podName=None,
                     workloadRef={"kind": "LeaderWorkerSet", "name": "serve"})
        self.resolves_within_30s("late-lws", t0, pods)


if __name__ == "__main__":
    unittest.main(verbosity=2)
