#!/usr/bin/python3
"""The fake API server as a process for C tests: prints its port, then
reads commands on stdin until EOF:
  fail N STATUS [RETRY_AFTER]   the next N requests fail with STATUS
  tokens T1,T2                  accepted bearer tokens ("-" for none)
  drop                          drop every open watch
  create JSON-PATH-ARGS...      (not needed yet)
The ML CRDs are registered; namespaces "default" and "ml" exist."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fake_apiserver import FakeApiServer  # noqa: E402

api = FakeApiServer()
api.register_ml_crds()
api.start()
api.create(("", "v1", "namespaces"), {"metadata": {"name": "ml"}})
print(api.port, flush=True)
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "fail":
        api.fail_next(int(cmd[1]), status=int(cmd[2]),
                      retry_after=int(cmd[3]) if len(cmd) > 3 else None)
    elif cmd[0] == "tokens":
        api.tokens = None if cmd[1] == "-" else set(cmd[1].split(","))
    elif cmd[0] == "drop":
        api.drop_watches()
    print("ok", flush=True)
api.stop()
