#!/usr/bin/python3
"""Fake JAX profiler servers in one process (tests/fakes/fake_profiler.py),
pods FIRST..FIRST+N-1, pod i listening on its own 127.x.y.z at PORT, for
the operator benchmark (several farms share the pods between cores).
Prints "ready" once all listen; on stdin EOF (or a "dump" line) writes every
request it saw, as JSON, to stdout and exits.

    profiler_farm.py PORT FIRST N PREFIX"""
import json
import os
import resource
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fakes"))
from fake_profiler import FakeProfiler  # noqa: E402


def ip_of(i):
    return "127.10.%d.%d" % (i // 250, i % 250 + 1)


def main():
    port, first, n, prefix = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    prof = FakeProfiler(port)
    for i in range(first, first + n):
        prof.add_pod("%s-%d" % (prefix, i), ip_of(i))
    prof.start()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "dump":
            break
    with prof.lock:
        reqs = [{k: r.get(k) for k in ("pod", "received_ns", "started_ns", "session_id",
                                       "host_name", "outcome")} for r in prof.requests]
    prof.stop()
    json.dump(reqs, sys.stdout)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
