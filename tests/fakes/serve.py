#!/usr/bin/python3
"""The fake API server as a process for C tests: prints its port, then
reads commands on stdin until EOF:
  fail N STATUS [RETRY_AFTER]   the next N requests fail with STATUS
  tokens T1,T2                  accepted bearer tokens ("-" for none)
  drop                          drop every open watch
  compact                       drop the event history (older RVs get 410)
  refuse 1|0                    refuse connections (closing open ones) / accept again
  bookmarks SECONDS             the BOOKMARK interval of watches
  jobset create|delete NAME     a JobSet in namespace ml, written directly
  jobset label NAME VALUE       set its label "v" (a MODIFIED event)
  unregister|register G V PLURAL KIND   a CRD deleted / created (KIND for register)
  object G V PLURAL KIND NS NAME        an object of any registered kind ("-": cluster-scoped)
The ML CRDs are registered; namespaces "default" and "ml" exist."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fake_apiserver import FakeApiServer  # noqa: E402

JOBSETS = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
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
    elif cmd[0] == "compact":
        api.compact()
    elif cmd[0] == "refuse":
        api.refuse(cmd[1] == "1", close_connections=True)
    elif cmd[0] == "bookmarks":
        api.bookmark_interval = float(cmd[1])
    elif cmd[0] == "jobset":
        js = JOBSETS
        if cmd[1] == "create":
            api.create(js, {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                            "metadata": {"name": cmd[2]}, "spec": {}}, ns="ml")
        elif cmd[1] == "delete":
            api.delete(js, cmd[2], ns="ml")
        elif cmd[1] == "label":
            api.patch(js, cmd[2], {"metadata": {"labels": {"v": cmd[3]}}}, ns="ml")
    elif cmd[0] == "unregister":
        api.unregister(cmd[1], cmd[2], cmd[3])
    elif cmd[0] == "object":
        g, v, plural, kind, ns, name = cmd[1:7]
        api.create((g, v, plural), {"apiVersion": "%s/%s" % (g, v) if g else v, "kind": kind,
                                    "metadata": {"name": name}, "spec": {}},
                   ns=None if ns == "-" else ns)
    elif cmd[0] == "register":
        api.register(cmd[1], cmd[2], cmd[3], cmd[4], status=True)
    print("ok", flush=True)
api.stop()
