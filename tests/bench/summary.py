"""The current table of `make bench`: every target row of the three
benchmarks' reports, in one Markdown table headed by what was measured
where, printed last and written to tests/bench/out/summary.md (the table
tests/bench/README.md shows under "Current results").

Each report holds its targets in a table whose header is
"| target | figure | goal | verdict |" (report.py: the webhook;
operator_bench.py: the operator; tests/e2e/bench_apiserver.py --report:
the API server's view; patch_size.py: the patch it applies); a row's verdict is PASS, MISS or info. A report
that is missing, or has no target table, is a row that says so, and the
script exits non-zero: a current table never silently drops a benchmark.

    python3 tests/bench/summary.py OUT_DIR
"""
import os
import platform
import subprocess
import sys
import time

HEADER = "| target | figure | goal | verdict |"

# (report file in OUT_DIR, the benchmark it comes from)
REPORTS = (
    ("report.md", "webhook"),
    ("operator-report.md", "operator"),
    ("apiserver.md", "kube-apiserver"),
    ("patch.md", "patch"),
)


def target_rows(text):
    """The rows of the first target table in a Markdown text, as lists of
    cells; None when there is no such table."""
    lines = text.splitlines()
    try:
        start = lines.index(HEADER)
    except ValueError:
        return None
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4:
            rows.append(cells)
    return rows


def where():
    """What was measured where: commit, date, CPU, cores."""
    try:
        rev = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                             text=True, cwd=os.path.dirname(os.path.abspath(__file__)),
                             check=False).stdout.strip() or "?"
    except OSError:
        rev = "?"
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "`make bench` at %s on %s, %s, %d cores." % (
        rev, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), cpu, os.cpu_count() or 0)


def summary(out_dir):
    """(Markdown text, number of reports missing or without targets)."""
    lines = [where(), "", "| bench | target | figure | goal | verdict |",
             "|---|---|---:|---:|---|"]
    missing = 0
    count = {"PASS": 0, "MISS": 0}
    for name, bench in REPORTS:
        path = os.path.join(out_dir, name)
        try:
            with open(path) as f:
                rows = target_rows(f.read())
        except OSError:
            rows = None
        if not rows:
            missing += 1
            lines.append("| %s | no target table in %s | - | - | MISSING |" % (bench, name))
            continue
        for target, figure, goal, verdict in rows:
            count[verdict] = count.get(verdict, 0) + 1
            lines.append("| %s | %s | %s | %s | %s |" % (bench, target, figure, goal, verdict))
    lines += ["", "%d PASS, %d MISS%s." % (count["PASS"], count["MISS"],
                                           ", %d report(s) missing" % missing if missing else "")]
    return "\n".join(lines) + "\n", missing


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: summary.py OUT_DIR")
    text, missing = summary(sys.argv[1])
    with open(os.path.join(sys.argv[1], "summary.md"), "w") as f:
        f.write(text)
    print("\n# make bench: the current table\n\n" + text, end="")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
