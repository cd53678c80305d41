"""Run the end-to-end tier: bring the cluster up once (cluster.py), run every
tests/e2e/test_*.py against it, tear it down. Bounded: a watchdog ends the
run after --timeout seconds (default 30 min) with the cluster torn down.

    python run.py [-k PATTERN] [--keep] [--timeout S] [test_module ...]
"""
import argparse
import os
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# The tests' gRPC servers share the process with the tier's node, which
# forks pod processes: gRPC's fork handlers are not needed (and warn).
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
sys.path.insert(0, HERE)

import cluster  # noqa: E402
import e2e  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("modules", nargs="*", help="test modules (default: every test_*.py)")
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="only tests whose name contains this")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("MLD_E2E_TIMEOUT", 1800)))
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()

    t0 = time.time()
    # A folder of this run's own, so that `make cluster` can run beside it.
    c = cluster.Cluster(a.dir or os.path.join(cluster.ROOT, "build", "e2e-run-%d" % os.getpid()))

    def watchdog():
        time.sleep(a.timeout)
        sys.stderr.write("e2e: timed out after %ds; tearing down\n" % a.timeout)
        try:
            c.down()
        finally:
            os._exit(3)
    threading.Thread(target=watchdog, daemon=True).start()

    loader = unittest.TestLoader()
    if a.patterns:
        loader.testNamePatterns = ["*%s*" % p for p in a.patterns]
    if a.modules:
        suite = unittest.TestSuite(loader.loadTestsFromName(m.replace(".py", ""))
                                   for m in a.modules)
    else:
        suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    ok = False
    try:
        c.up()
        e2e.CLUSTER = c
        up = time.time() - t0
        result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
        ok = result.wasSuccessful() and result.testsRun > 0
        if c.node and c.node.errors:
            print("kubelet errors during the run:\n  " + "\n  ".join(c.node.errors[-20:]))
        print("e2e: cluster up in %.0fs, %d tests in %.0fs: %s" % (
            up, result.testsRun, time.time() - t0 - up, "OK" if ok else "FAILED"))
        if not ok:
            print("logs: %s" % c.cp.logs)
    finally:
        c.down()
        if ok:
            import shutil
            shutil.rmtree(c.dir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
