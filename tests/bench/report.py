#!/usr/bin/python3
"""Turn run.sh's measurements into the benchmark report (markdown).

Usage: report.py RESULTS_TSV META_FILE

RESULTS_TSV: one line per wrk run: round review arm rps p50_ms p99_ms
requests non2xx socket_errors server_cpu wrk_cpu other_cpu (cores busy). META_FILE: key=value lines.
Targets are reported as PASS or MISS; a miss never fails the run."""
import statistics
import sys

ARMS = ("webhook", "go", "nginx")
ARM_NAMES = {"webhook": "webhook (C)", "go": "Go net/http peer", "nginx": "nginx canned"}


def load(results_path, meta_path):
    with open(meta_path) as f:
        meta = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    runs = {}
    with open(results_path) as f:
        for line in f:
            c = line.split()
            if len(c) < 12:
                continue
            runs.setdefault((c[1], c[2]), []).append({
                "round": int(c[0]), "rps": float(c[3]), "p50": float(c[4]), "p99": float(c[5]),
                "requests": int(c[6]), "non2xx": int(c[7]), "sockerr": int(c[8]),
                "server_cpu": float(c[9]), "wrk_cpu": float(c[10]), "other_cpu": float(c[11])})
    return meta, runs


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def verdict(ok):
    return "PASS" if ok else "MISS"


def main():
    meta, runs = load(sys.argv[1], sys.argv[2])
    reviews = [r for r in ("5k", "64k") if any((r, a) in runs for a in ARMS)]
    med = {k: {m: median(v, m) for m in ("rps", "p50", "p99", "server_cpu", "wrk_cpu", "other_cpu")}
           for k, v in runs.items()}
    out = []
    p = out.append
    p("# mldiagnostics-webhook benchmark")
    p("")
    p("%s, %s, %s CPUs. wrk %s over TLS keep-alive, %s rounds of %s s per arm and review, "
      "arms alternated in rotating order; figures are medians over rounds."
      % (meta.get("date", "?"), meta.get("cpu", "?"), meta.get("ncpu", "?"),
         meta.get("wrk", "?"), meta.get("rounds", "?"), meta.get("seconds", "?")))
    p("Reviews: 5k = %s B, 64k = %s B. Responses: webhook %s B, Go peer %s B, nginx %s B."
      % (meta.get("size_5k"), meta.get("size_64k"), meta.get("resp_webhook"),
         meta.get("resp_go"), meta.get("resp_nginx")))
    p("")
    p("## Arms")
    p("")
    p("| review | arm | req/s | p50 ms | p99 ms | server CPU | wrk CPU | other CPU | req/s per round |")
    p("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for rv in reviews:
        for arm in ARMS:
            if (rv, arm) not in runs:
                continue
            m = med[(rv, arm)]
            per_round = " / ".join("%.0f" % r["rps"] for r in sorted(runs[(rv, arm)],
                                                                     key=lambda r: r["round"]))
            p("| %s | %s | %.0f | %.3f | %.3f | %.2f | %.2f | %.2f | %s |"
              % (rv, ARM_NAMES[arm], m["rps"], m["p50"], m["p99"], m["server_cpu"],
                 m["wrk_cpu"], m["other_cpu"], per_round))
    p("")
    p("CPU columns are cores busy during the timed runs (%s = the whole machine); other = "
      "the rest of the machine (kernel softirq work not charged to a process, and anything "
      "else running)." % meta.get("ncpu", "?"))
    others = [r["other_cpu"] for v in runs.values() for r in v]
    noisy = [o for o in others if o > 0.25]
    if noisy:
        p("")
        p("**Note: in %d of %d runs more than 0.25 cores (up to %.2f) were busy outside the "
          "arms and wrk: another job shared the machine; those figures are noisier.**"
          % (len(noisy), len(others), max(noisy)))
    p("")
    p("## Targets")
    p("")
    p("| target | figure | goal | verdict |")
    p("|---|---:|---:|---|")

    def ratio(a, b):
        return a / b if b else float("nan")

    def row(name, value, goal, ok, fmt="%.2f×"):
        p("| %s | %s | %s | %s |" % (name, fmt % value, goal, verdict(ok) if ok is not None
                                      else "info"))

    for rv in reviews:
        w, g, n = med.get((rv, "webhook")), med.get((rv, "go")), med.get((rv, "nginx"))
        contract = rv == "5k"  # the contract's ratios are stated for the ~5 KiB review
        if w and g:
            r = ratio(w["rps"], g["rps"])
            row("%s: webhook / Go throughput" % rv, r, "≥ 3×", r >= 3 if contract else None)
            r = ratio(g["p99"], w["p99"])
            row("%s: Go p99 / webhook p99" % rv, r, "≥ 3×", r >= 3 if contract else None)
        if w and n:
            r = ratio(w["rps"], n["rps"])
            row("%s: webhook / nginx throughput" % rv, 100 * r, "≥ 60%",
                r >= 0.6 if contract else None, "%.0f%%")
    w5, w64 = med.get(("5k", "webhook")), med.get(("64k", "webhook"))
    if w5 and w64:
        r = ratio(w64["p50"], w5["p50"])
        row("webhook 64k p50 / 5k p50", r, "≤ 2×", r <= 2)
        r = ratio(w64["p99"], w5["p99"])
        row("webhook 64k p99 / 5k p99", r, "≤ 2×", r <= 2)
    idle = int(meta.get("idle_rss_kb", "0"))
    row("webhook idle RSS (VmRSS before any request)", idle / 1024, "≤ 8 MiB",
        idle <= 8 * 1024, "%.1f MiB")
    hwm = int(meta.get("loaded_hwm_kb", "0"))
    row("webhook loaded RSS (VmHWM after the load)", hwm / 1024, "-", None, "%.1f MiB")
    p("")
    p("Go peer for comparison: idle VmRSS %.1f MiB, VmHWM after the load %.1f MiB."
      % (int(meta.get("go_idle_rss_kb", "0")) / 1024, int(meta.get("go_hwm_kb", "0")) / 1024))
    p("Rows marked info are measured for context; the contract states its throughput "
      "and p99 ratios for the 5 KiB review.")
    errors = sum(r["non2xx"] + r["sockerr"] for v in runs.values() for r in v)
    if errors:
        p("")
        p("**ERRORS: %d non-2xx responses or socket errors; see tests/bench/out/wrk/.**" % errors)
    print("\n".join(out))


main()
