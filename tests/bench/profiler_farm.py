#!/usr/bin/python3
"""N fake JAX profiler servers in one process (tests/fakes/fake_profiler.py),
pod i listening on its own 127.x.y.z at PORT, for the operator benchmark.
Prints "ready" once all listen; on stdin EOF (or a "dump" line) writes every
request it saw, as JSON, to stdout and exits.

    profiler_farm.py PORT N PREFIX"""
import json
import os
import resource
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fakes"))
from fake_profiler import FakeProfiler  # noqa: E402


def ip_of(i):
    return "127.10.%d.%d" % (i // 250, i % 250 + 1)


def main():
    port, n, prefix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    prof = FakeProfiler(port)
    for i in range(n):
        prof.add_pod("%s-%d" % (prefix, i), ip_of(i))
    prof.start()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "dump":
            break
    with prof.lock:
        reqs = [{k: r[k] for k in ("pod", "received_ns", "session_id", "host_name", "outcome")}
                for r in prof.requests]
    prof.stop()
    json.dump(reqs, sys.stdout)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
