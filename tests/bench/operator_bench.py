#!/usr/bin/python3
"""Operator benchmark (DESIGN §6): one capture across 1,536 fake pods (the
largest TPU v5p slice) with 10,000 pods in the cache.

  dispatch  = arrival of the last Profile RPC at the profilers minus the
              moment the MLDiagnosticsConnection was created (target <= 1 s)
  spread    = last arrival minus first arrival (target <= 100 ms)
  RSS       = the operator's VmRSS with 10,000 pods cached, after the capture
              (and VmHWM, its peak) (target <= 32 MiB)

The fake API server runs in this process; the 1,536 profiler servers
(python3-grpcio, one per 127.10.x.y) in other processes (profiler_farm.py,
one per core), so the measuring side shares no interpreter lock with the
serving side.

    operator_bench.py BIN_DIR [OUT_DIR]   (BENCH_OP_ROUNDS=3, BENCH_OP_PODS=10000,
                                           BENCH_OP_TARGETS=1536)"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fakes"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from fake_apiserver import FakeApiServer  # noqa: E402
from harness import free_port  # noqa: E402

CONN = ("diagon.gke.io", "v1alpha1", "mldiagnosticsconnections")
JOBSETS = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
NS = "train"


def kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def farm_ip(i):
    return "127.10.%d.%d" % (i // 250, i % 250 + 1)


def populate(api, total, targets):
    api.create(("", "v1", "namespaces"), {"metadata": {"name": NS}})
    api.create(JOBSETS, {"metadata": {"name": "v5p"}, "spec": {}}, ns=NS)
    for i in range(total):
        t = i < targets
        name = ("v5p-workers-0-%d" % i) if t else ("other-%d" % i)
        labels = {"jobset.sigs.k8s.io/jobset-name": "v5p" if t else "other",
                  "app": "train", "batch.kubernetes.io/job-name": "v5p-workers-0",
                  "pod-template-hash": "7d9f8c6b5"}
        pod = {"metadata": {"name": name, "labels": labels,
                            "annotations": {"diagon.gke.io/injection": "0.1.0;abc123def456"}},
               "spec": {"containers": [{"name": "jax", "image": "us-docker.pkg.dev/x/jax:1",
                                        "ports": [{"containerPort": 9999}]}],
                        "nodeName": "gke-node-%d" % (i // 4)}}
        api.create("pods", pod, ns=NS)
        ip = farm_ip(i) if t else "10.%d.%d.%d" % (i // 65536, i // 256 % 256, i % 256)
        api.patch("pods", name, {"status": {"phase": "Running", "podIP": ip}}, ns=NS,
                  subresource="status")


def one_round(api, farm_port, n, label, op_pid, tmp):
    name = "cap-%s" % label
    t0 = time.time_ns()
    api.create(CONN, {"apiVersion": "diagon.gke.io/v1alpha1", "kind": "MLDiagnosticsConnection",
                      "metadata": {"name": name},
                      "spec": {"triggerCapture": {
                          "capturePort": farm_port, "durationSeconds": 1, "podNamespace": NS,
                          "profiler": "google_cloud_mldiagnostics",
                          "workloadRef": {"kind": "JobSet", "name": "v5p"},
                          "storageLocation": os.path.join(tmp, "profiles", name)}}}, ns=NS)
    deadline = time.time() + 120
    st = {}
    while time.time() < deadline:
        st = api.get(CONN, name, ns=NS).get("status", {})
        if st.get("phase") in ("Succeeded", "Failed"):
            break
        time.sleep(0.05)
    return t0, st


def main():
    bin_dir = os.path.abspath(sys.argv[1])
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "out")
    rounds = int(os.environ.get("BENCH_OP_ROUNDS", "3"))
    total = int(os.environ.get("BENCH_OP_PODS", "10000"))
    targets = int(os.environ.get("BENCH_OP_TARGETS", "1536"))
    os.makedirs(out_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="mld-opbench-")
    api = FakeApiServer()
    api.register_ml_crds()
    api.start()
    kc = os.path.join(tmp, "kubeconfig")
    api.kubeconfig(kc)
    t = time.time()
    populate(api, total, targets)
    print("bench-operator: %d pods created in %.1f s" % (total, time.time() - t), flush=True)
    port = free_port()
    nfarms = int(os.environ.get("BENCH_OP_FARMS", str(os.cpu_count() or 1)))
    farms = []
    for k in range(nfarms):  # the profilers, split over processes (one per core)
        lo, hi = targets * k // nfarms, targets * (k + 1) // nfarms
        farms.append(subprocess.Popen([sys.executable, os.path.join(HERE, "profiler_farm.py"),
                                       str(port), str(lo), str(hi - lo), "v5p-workers-0"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    for farm in farms:
        if farm.stdout.readline().strip() != "ready":
            sys.exit("bench-operator: a profiler farm did not start")
    hp = free_port()
    log = open(os.path.join(out_dir, "operator.log"), "w")
    op = subprocess.Popen([os.path.join(bin_dir, "mldiagnostics-operator"), "--kubeconfig", kc,
                           "--health-probe-bind-address", "127.0.0.1:%d" % hp,
                           "--metrics-bind-address", "0", "-v", "2"], stdout=log,
                          stderr=subprocess.STDOUT)
    results = []
    try:
        import http.client
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", hp, timeout=2)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            sys.exit("bench-operator: the operator never got ready")
        synced_rss = kib(op.pid, "VmRSS")
        for r in range(rounds):
            t0, st = one_round(api, port, targets, str(r), op.pid, tmp)
            results.append({"t0": t0, "status": st.get("phase"), "session": st.get("sessionId")})
            time.sleep(1.5)  # let every profiler release its lock
        rss = kib(op.pid, "VmRSS")
        hwm = kib(op.pid, "VmHWM")
    finally:
        op.send_signal(signal.SIGTERM)
        op.wait(30)
        reqs = []
        for farm in farms:
            farm.stdin.write("dump\n")
            farm.stdin.flush()
            reqs += json.loads(farm.stdout.read() or "[]")
            farm.wait(60)
        api.stop()
    sent = {}  # session → (first, last) request sent, from the operator's log
    with open(os.path.join(out_dir, "operator.log")) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("msg") == "capture" and e.get("phase") == "Succeeded":
                m = e.get("message", "")
                sent[m.rsplit("/", 1)[-1]] = (e.get("firstSentNs", 0), e.get("lastSentNs", 0))
    by_session = {}
    for q in reqs:
        by_session.setdefault(q["session_id"], []).append(q)
    rows = []
    for r in results:
        arr = sorted(q["received_ns"] for q in by_session.get(r["session"], []))
        began = sorted(q["started_ns"] for q in by_session.get(r["session"], [])
                       if q.get("started_ns"))
        if len(arr) != targets or r["status"] != "Succeeded":
            sys.exit("bench-operator: round ended %s with %d of %d RPCs" %
                     (r["status"], len(arr), targets))
        first, last = sent.get(r["session"], (0, 0))
        rows.append({"dispatch_ms": (arr[-1] - r["t0"]) / 1e6,
                     "first_ms": (arr[0] - r["t0"]) / 1e6,
                     "spread_ms": (arr[-1] - arr[0]) / 1e6,
                     "start_spread_ms": (began[-1] - began[0]) / 1e6 if began else float("nan"),
                     "sent_last_ms": (last - r["t0"]) / 1e6 if last else float("nan"),
                     "sent_spread_ms": (last - first) / 1e6 if last else float("nan")})
    dispatch = statistics.median(x["dispatch_ms"] for x in rows)
    spread = statistics.median(x["spread_ms"] for x in rows)
    sent_spread = statistics.median(x["sent_spread_ms"] for x in rows)
    sent_last = statistics.median(x["sent_last_ms"] for x in rows)
    start_spread = statistics.median(x["start_spread_ms"] for x in rows)
    verdict = lambda ok: "PASS" if ok else "MISS"  # noqa: E731
    lines = [
        "# mldiagnostics-operator benchmark",
        "",
        "%s, %d pods cached (%d targets, one JobSet), capture of 1 s, %d round(s); "
        "medians over rounds." % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), total,
                                  targets, rounds),
        "",
        "Arrival: when each profiler's handler ran (python3-grpcio, one process for all "
        "1,536 servers, so this includes the peer's own queueing). Sent: when libcurl put each "
        "request on its connection (CURLINFO_PRETRANSFER_TIME), from the operator's log.",
        "",
        "| round | first arrival | last arrival | arrival spread | last sent | sent spread "
        "| start spread |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ] + ["| %d | %.0f ms | %.0f ms | %.1f ms | %.0f ms | %.1f ms | %.1f ms |" % (
        i + 1, x["first_ms"], x["dispatch_ms"], x["spread_ms"], x["sent_last_ms"],
        x["sent_spread_ms"], x["start_spread_ms"]) for i, x in enumerate(rows)] + [
        "",
        "| target | figure | goal | verdict |",
        "|---|---:|---:|---|",
        "| creation → last RPC at the profilers | %.0f ms | ≤ 1000 ms | %s |" % (
            dispatch, verdict(dispatch <= 1000)),
        "| spread of the RPCs' arrival | %.1f ms | ≤ 100 ms | %s |" % (spread, verdict(spread <= 100)),
        "| creation → last RPC sent (operator side) | %.0f ms | ≤ 1000 ms | info |" % sent_last,
        "| spread of the RPCs' sending (operator side) | %.1f ms | ≤ 100 ms | info |" % sent_spread,
        "| spread of the profiling sessions' start (common start_timestamp_ns) | %.1f ms "
        "| ≤ 100 ms | %s |" % (start_spread, verdict(start_spread <= 100)),
        "| RSS with %d pods cached (after the captures) | %.1f MiB | ≤ 32 MiB | %s |" % (
            total, rss / 1024, verdict(rss <= 32 * 1024)),
        "| peak RSS (VmHWM) | %.1f MiB | - | info |" % (hwm / 1024),
        "| RSS right after the caches synced | %.1f MiB | - | info |" % (synced_rss / 1024),
    ]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "operator-report.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
