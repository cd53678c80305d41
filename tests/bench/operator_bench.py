#!/usr/bin/python3
"""Operator benchmark (DESIGN §6): one capture across 1,536 fake pods (the
largest TPU v5p slice) with 10,000 realistic pods in the cache (bench_pods.py:
~4.9 KiB of JSON each, managedFields, env, volumes, status conditions).

  dispatch  = arrival of the last Profile RPC at the profilers minus the
              moment the MLDiagnosticsConnection was created (target <= 1 s),
              measured at two peers in turn: h2farm (C) and profiler_farm.py
  spread    = last arrival minus first arrival (target <= 100 ms)
  peak RSS  = the operator's VmHWM through the whole run: the list of 10,000
              pods and every capture (target <= 32 MiB at every moment), with
              the peak of each phase and the steady VmRSS beside it; then
              relay_mem: op_relay alone, its RSS per in-flight RPC

The fake API server runs in this process; the 1,536 profiler servers (one
per 127.10.x.y) in other processes, so the measuring side shares no
interpreter lock with the serving side: first h2farm (C, nghttp2, one epoll
thread), then profiler_farm.py (python3-grpcio, one process per core).

    operator_bench.py BIN_DIR [OUT_DIR]   (BENCH_OP_ROUNDS=3, BENCH_OP_PODS=10000,
                                           BENCH_OP_TARGETS=1536, BENCH_OP_PEERS=c,python,
                                           BENCH_OP_WRAP="heaptrack -o FILE": a profiler
                                           in front of the operator, whose figures then
                                           include the profiler's; BENCH_OP_SMAPS=1: the
                                           operator's /proc/PID/smaps once synced, into
                                           OUT_DIR)"""
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
import bench_pods  # noqa: E402

CONN = ("diagon.gke.io", "v1alpha1", "mldiagnosticsconnections")
JOBSETS = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
NS = "train"


def kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class Memory:
    """The operator's memory through the run, phase by phase: VmHWM is the peak since the
    last reset (writing 5 to /proc/PID/clear_refs resets it to the current RSS), so the
    run's peak is the largest of the phases' peaks; where the reset is refused, each
    phase's figure is the peak so far, and the largest is still the run's."""

    def __init__(self, pid):
        self.pid, self.phases = pid, []

    def mark(self, phase):
        self.phases.append((phase, kib(self.pid, "VmHWM"), kib(self.pid, "VmRSS"),
                            kib(self.pid, "RssAnon"), kib(self.pid, "RssFile")))
        try:
            with open("/proc/%d/clear_refs" % self.pid, "w") as f:
                f.write("5")
        except OSError:
            pass

    def peak(self, prefix=""):
        return max((x[1] for x in self.phases if x[0].startswith(prefix)), default=0)


def operator_pid(proc):
    """The operator's own pid: proc's, or under BENCH_OP_WRAP the descendant running the
    binary (heaptrack, valgrind and the like start it as a child)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        pending = [proc.pid]
        while pending:
            pid = pending.pop()
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    argv0 = f.read().split(b"\0")[0]
                with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                    pending += [int(c) for c in f.read().split()]
            except OSError:
                continue
            if argv0.endswith(b"/mldiagnostics-operator"):
                return pid
        time.sleep(0.05)
    sys.exit("bench-operator: the operator did not start")


def farm_ip(i):
    return "127.10.%d.%d" % (i // 250, i % 250 + 1)


def populate(api, total, targets):
    """total realistic pods (bench_pods: ~4.9 KiB each, as the API server serves them), the
    first `targets` of them the JobSet's workers on the profilers' addresses; the mean size
    of a pod's JSON in bytes."""
    api.create(("", "v1", "namespaces"), {"metadata": {"name": NS}})
    api.create(JOBSETS, {"metadata": {"name": "v5p"}, "spec": {}}, ns=NS)
    size = 0
    for i in range(total):
        t = i < targets
        name = ("v5p-workers-0-%d" % i) if t else ("other-%d" % i)
        ip = farm_ip(i) if t else "10.%d.%d.%d" % (i // 65536, i // 256 % 256, i % 256)
        pod = api.restore("pods", bench_pods.pod(i, name, "v5p" if t else "other", ip,
                                                 "%s-%d" % (bench_pods.NODE_POOL, i // 4)), ns=NS)
        if i % 97 == 0:
            size += len(json.dumps(pod, separators=(",", ":")))
    return size / len(range(0, total, 97))


def one_round(api, farm_port, n, label, tmp):
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


def wait_ready(hp):
    import http.client
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", hp, timeout=2)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit("bench-operator: the operator never got ready")


def start_farms(peer, bin_dir, port, targets):
    """The 1,536 profilers: h2farm (C, nghttp2, one epoll thread: a profiler per host
    answers at once, as in a cluster) or profiler_farm.py (python3-grpcio, the test
    peer, one process per core)."""
    if peer == "c":
        cmds = [[os.path.join(bin_dir, "h2farm"), str(port), "0", str(targets), "v5p-workers-0"]]
    else:
        n = int(os.environ.get("BENCH_OP_FARMS", str(os.cpu_count() or 1)))
        cmds = [[sys.executable, os.path.join(HERE, "profiler_farm.py"), str(port),
                 str(targets * k // n), str(targets * (k + 1) // n - targets * k // n),
                 "v5p-workers-0"] for k in range(n)]
    farms = [subprocess.Popen(c, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for c in cmds]
    for farm in farms:
        if farm.stdout.readline().strip() != "ready":
            sys.exit("bench-operator: a %s profiler farm did not start" % peer)
    return farms


def relay_alone(bin_dir, port, targets):
    """relay_mem: op_relay by itself, the same RPCs to the same profilers, its resident
    memory per in-flight RPC (None without the binary)."""
    exe = os.path.join(bin_dir, "relay_mem")
    if not os.access(exe, os.X_OK):
        return None
    out = subprocess.run([exe, str(port), str(targets)], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        sys.exit("bench-operator: relay_mem failed: %s" % out.stderr)
    return json.loads(out.stdout)


def run_peer(peer, bin_dir, api, rounds, targets, mem, tmp):
    port = free_port()
    farms = start_farms(peer, bin_dir, port, targets)
    results, reqs, relay = [], [], None
    try:
        for r in range(rounds):
            t0, st = one_round(api, port, targets, "%s-%d" % (peer, r), tmp)
            results.append({"t0": t0, "status": st.get("phase"), "session": st.get("sessionId"),
                            "peer": peer})
            time.sleep(1.5)  # let every profiler release its lock
            mem.mark("capture %s %d" % (peer, r + 1))
        if peer == "c":
            relay = relay_alone(bin_dir, port, targets)
    finally:
        for farm in farms:
            farm.stdin.write("dump\n")
            farm.stdin.flush()
            reqs += json.loads(farm.stdout.read() or "[]")
            farm.wait(60)
    return results, reqs, relay


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
    pod_bytes = populate(api, total, targets)
    print("bench-operator: %d pods of %.1f KiB created in %.1f s" % (
        total, pod_bytes / 1024, time.time() - t), flush=True)
    hp = free_port()
    log = open(os.path.join(out_dir, "operator.log"), "w")
    wrap = os.environ.get("BENCH_OP_WRAP", "").split()  # e.g. heaptrack -o out/op.heaptrack
    op = subprocess.Popen(wrap + [os.path.join(bin_dir, "mldiagnostics-operator"),
                                  "--kubeconfig", kc,
                                  "--health-probe-bind-address", "127.0.0.1:%d" % hp,
                                  "--metrics-bind-address", "0", "-v", "2"], stdout=log,
                          stderr=subprocess.STDOUT)
    peers = [p for p in os.environ.get("BENCH_OP_PEERS", "c,python").split(",")
             if p != "c" or os.access(os.path.join(bin_dir, "h2farm"), os.X_OK)]
    results, reqs, relay = {p: [] for p in peers}, [], None
    try:
        wait_ready(hp)
        pid = operator_pid(op)
        mem = Memory(pid)
        if os.environ.get("BENCH_OP_SMAPS"):
            import shutil
            shutil.copy("/proc/%d/smaps" % pid, os.path.join(out_dir, "operator-smaps-synced"))
        mem.mark("sync")
        for peer in peers:
            got, rq, rl = run_peer(peer, bin_dir, api, rounds, targets, mem, tmp)
            results[peer] = got
            relay = rl or relay
            reqs += rq
        rss = kib(pid, "VmRSS")
    finally:
        os.kill(operator_pid(op), signal.SIGTERM)
        op.wait(60)
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
    rows = {}
    for peer, res in results.items():
        rows[peer] = []
        for r in res:
            arr = sorted(q["received_ns"] for q in by_session.get(r["session"], []))
            began = sorted(q["started_ns"] for q in by_session.get(r["session"], [])
                           if q.get("started_ns"))
            if len(arr) != targets or r["status"] != "Succeeded":
                sys.exit("bench-operator: %s round ended %s with %d of %d RPCs" %
                         (peer, r["status"], len(arr), targets))
            first, last = sent.get(r["session"], (0, 0))
            rows[peer].append({
                "dispatch_ms": (arr[-1] - r["t0"]) / 1e6, "first_ms": (arr[0] - r["t0"]) / 1e6,
                "spread_ms": (arr[-1] - arr[0]) / 1e6,
                "start_spread_ms": (began[-1] - began[0]) / 1e6 if began else float("nan"),
                "sent_last_ms": (last - r["t0"]) / 1e6 if last else float("nan"),
                "sent_spread_ms": (last - first) / 1e6 if last else float("nan")})
    med = {peer: {k: statistics.median(x[k] for x in rs) for k in rs[0]}
           for peer, rs in rows.items()}
    main_peer = "c" if "c" in med else "python"
    m = med[main_peer]
    name = {"c": "h2farm (C, nghttp2)", "python": "profiler_farm.py (python3-grpcio)"}
    verdict = lambda ok: "PASS" if ok else "MISS"  # noqa: E731
    lines = [
        "# mldiagnostics-operator benchmark",
        "",
        "%s, %d pods cached (%d targets, one JobSet), capture of 1 s, %d round(s) per peer; "
        "medians over rounds." % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), total,
                                  targets, rounds),
        "",
        "Peers: h2farm = the 1,536 profilers as one epoll thread (nghttp2) that records each "
        "request the moment it is complete, as 1,536 hosts each serving their own RPC would; "
        "profiler_farm.py = the integration tests' python3-grpcio profilers, one process per "
        "core, whose arrival times include the interpreter's queueing of 1,536 handlers. "
        "Arrival: request complete at the peer. Sent: libcurl took the request's message "
        "(the operator opens every connection first and holds the messages until all are "
        "connected), from the operator's log. Start: the profiling session's start (the "
        "common start_timestamp_ns).",
        "",
        "| peer | round | first arrival | last arrival | arrival spread | last sent "
        "| sent spread | start spread |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ] + ["| %s | %d | %.0f ms | %.0f ms | %.1f ms | %.0f ms | %.1f ms | %.1f ms |" % (
        name[peer], i + 1, x["first_ms"], x["dispatch_ms"], x["spread_ms"], x["sent_last_ms"],
        x["sent_spread_ms"], x["start_spread_ms"])
        for peer, rs in rows.items() for i, x in enumerate(rs)] + [
        "",
        "| target | figure | goal | verdict |",
        "|---|---:|---:|---|",
        "| creation → last RPC at the profilers (%s) | %.0f ms | ≤ 1000 ms | %s |" % (
            name[main_peer], m["dispatch_ms"], verdict(m["dispatch_ms"] <= 1000)),
        "| spread of the RPCs' arrival (%s) | %.1f ms | ≤ 100 ms | %s |" % (
            name[main_peer], m["spread_ms"], verdict(m["spread_ms"] <= 100)),
        "| spread of the RPCs' sending (operator side) | %.1f ms | ≤ 100 ms | info |" % (
            m["sent_spread_ms"]),
        "| spread of the profiling sessions' start | %.1f ms | ≤ 100 ms | %s |" % (
            m["start_spread_ms"], verdict(m["start_spread_ms"] <= 100)),
    ] + ["| %s: last arrival / arrival spread / start spread | %.0f / %.1f / %.1f ms | - | info |"
         % (name[p], med[p]["dispatch_ms"], med[p]["spread_ms"], med[p]["start_spread_ms"])
         for p in med if p != main_peer] + [
        "| **peak RSS (VmHWM) through the whole run, sync and captures** | %.1f MiB "
        "| ≤ 32 MiB | %s |" % (mem.peak() / 1024, verdict(mem.peak() <= 32 * 1024)),
        "| peak while the caches synced (%d pods of %.1f KiB listed) | %.1f MiB | - | info |" % (
            total, pod_bytes / 1024, mem.peak("sync") / 1024),
        "| peak during a %d-host capture (largest round) | %.1f MiB | - | info |" % (
            targets, mem.peak("capture") / 1024),
        "| steady RSS with %d pods cached, right after the sync | %.1f MiB | - | info |" % (
            total, mem.phases[0][2] / 1024),
        "| steady RSS after the captures | %.1f MiB | - | info |" % (rss / 1024),
    ] + ["| %s: peak / RSS after (anonymous + files) | %.1f / %.1f (%.1f + %.1f) MiB | - | info |"
         % (p, h / 1024, r / 1024, a / 1024, f / 1024) for p, h, r, a, f in mem.phases] + [
        "| op_relay alone (relay_mem): %d RPCs in flight, %d OK | %.2f KiB per RPC "
        "(%.1f MiB) | - | info |" % (relay["rpcs"], relay["ok"], relay["per_rpc_kib"],
                                     (relay["peak_kib"] - relay["base_kib"]) / 1024)
        for relay in [relay] if relay]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "operator-report.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
