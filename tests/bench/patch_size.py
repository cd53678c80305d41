"""The patch the webhook asks the API server to apply, per mutate fixture
(tests/fixtures/unit/mutate/*/: the pod and the webhook's patch) and for
the bench's two reviews: its operations, its bytes and what applying it
costs the API server, against the per-element form of the same change
(one "add" per variable and per annotation: what the Go peer and the Go
webhooks it stands for write, and what this webhook wrote before).

The fewest operations that give the same pod is one per value touched (a
container's env, its volumeMounts, the volumes, the annotations): that
one operation holds the value the pod ends with, which keeps the user's
settings (they are in that value) and keeps a reinvocation idempotent
(the webhook answers a pod it has injected with no patch). The webhook
writes that form; this checks it does, fixture by fixture.

Bytes and operations pull apart: a list written whole repeats the user's
entries. What decides is the API server's work, so the cost column times
it: `patchcost` (Go, the calls kube-apiserver 1.36's mutating dispatcher
makes after the HTTP exchange, fastest of 9 batches) applies each form to
each pod. Bytes are reported beside it.

    python3 tests/bench/patch_size.py [OUT_DIR]   prints the table; writes OUT_DIR/patch.md
"""
import copy
import glob
import json
import os
import re
import subprocess
import sys

import jsonpatch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "unit", "mutate")
GO = "/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else "go"


def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def root_of(path):
    """The value an operation writes into: /spec/containers/0/env/3 →
    /spec/containers/0/env; /metadata/annotations/a~1b → /metadata/annotations."""
    parts = path.split("/")
    for i, p in enumerate(parts):
        if p in ("env", "volumeMounts", "volumes", "annotations", "labels"):
            return "/".join(parts[:i + 1])
    return path


def value_at(doc, pointer):
    try:
        return jsonpatch.JsonPointer(pointer).resolve(doc)
    except jsonpatch.JsonPointerException:
        return None


def escape(key):
    return key.replace("~", "~0").replace("/", "~1")


def list_adds(root, before, after):
    """One operation per element: "add" at each new element's final index
    (before is a subsequence of after but for rewritten entries, whose
    value is replaced)."""
    ops, i = [], 0
    for at, item in enumerate(after):
        if i < len(before) and before[i] == item:
            i += 1
        elif i < len(before) and isinstance(item, dict) and item.get("name") == \
                before[i].get("name"):
            ops.append({"op": "replace", "path": "%s/%d/value" % (root, at),
                        "value": item.get("value")})
            i += 1
        else:
            ops.append({"op": "add", "path": "%s/%d" % (root, at) if at < len(after) - 1 or
                        i < len(before) else root + "/-", "value": item})
    return ops


def per_element(pod, patch):
    """The per-element form of patch: each whole list or map it writes over
    an existing one becomes one operation per element or key changed."""
    out = []
    for op in patch:
        root, before = op["path"], value_at(pod, op["path"])
        if op["op"] not in ("add", "replace") or root_of(root) != root or \
                not isinstance(before, (list, dict)) or type(before) is not type(op["value"]):
            out.append(op)
        elif isinstance(before, list):
            out += list_adds(root, before, op["value"])
        else:
            out += [{"op": "add", "path": "%s/%s" % (root, escape(k)), "value": v}
                    for k, v in op["value"].items() if before.get(k) != v]
    return out


def measure(pod, patch):
    """(ops, bytes, touched values, per-element ops, per-element bytes)."""
    per = per_element(pod, patch)
    same = jsonpatch.apply_patch(copy.deepcopy(pod), per) == \
        jsonpatch.apply_patch(copy.deepcopy(pod), patch)
    if not same:
        raise ValueError("the per-element form gives another pod")
    touched = len({root_of(op["path"]) for op in patch})
    return len(patch), len(compact(patch)), touched, len(per), len(compact(per))


def cases():
    """(name, pod, patch) of every fixture with a patch and the bench reviews."""
    out = []
    for d in sorted(glob.glob(os.path.join(FIXTURES, "*", ""))):
        with open(os.path.join(d, "expected.json")) as f:
            patch = json.load(f).get("patch")
        if patch:
            with open(os.path.join(d, "pod.json")) as f:
                out.append((os.path.basename(d.rstrip("/")), json.load(f), patch))
    for r in ("5k", "64k"):
        with open(os.path.join(ROOT, "tests", "fixtures", "admission",
                               "bench-jobset-%s.json" % r)) as f:
            pod = json.load(f)["request"]["object"]
        with open(os.path.join(HERE, "expected", "patch-%s.json" % r)) as f:
            out.append(("bench review " + r, pod, json.load(f)))
    return out


def api_cost(cs, out_dir):
    """{name: {"ours": µs, "per-element": µs}} from patchcost, or (None, why)."""
    exe = os.path.join(os.path.abspath(out_dir), "patchcost")
    env = dict(os.environ, GOFLAGS="-mod=mod")
    try:
        subprocess.run([GO, "build", "-p", "2", "-o", exe, "."], cwd=os.path.join(HERE, "patchcost"),
                       env=env, check=True, timeout=900, capture_output=True)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "patchcost did not build: %s" % (getattr(e, "stderr", b"") or str(e))
    data = [{"name": n, "pod": pod, "patches": {"ours": p, "per-element": per_element(pod, p)}}
            for n, pod, p in cs]
    r = subprocess.run([exe], input=json.dumps(data), capture_output=True, text=True, timeout=900)
    if r.returncode:
        return None, "patchcost failed: %s" % r.stderr.strip()
    sys.stderr.write(r.stderr)
    return json.loads(r.stdout), None


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "out")
    os.makedirs(out_dir, exist_ok=True)
    cs = cases()
    cost, why = api_cost(cs, out_dir) if os.environ.get("PATCH_COST", "1") != "0" else (
        None, "not timed (PATCH_COST=0)")
    lines = ["# The patch the API server applies", "",
             "Per mutate fixture and bench review: the webhook's patch against the per-element "
             "form of the same change (the Go peer's), in operations, bytes and the API "
             "server's own cost of applying it (µs, patchcost).", "",
             "| case | ops | values touched | per-element ops | bytes | per-element bytes "
             "| API µs | per-element API µs |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    rows = []
    for name, pod, patch in cs:
        m = measure(pod, patch)
        c = (cost or {}).get(name, {})
        rows.append((name,) + m + (c.get("ours"), c.get("per-element")))
        lines.append("| %s | %d | %d | %d | %d | %d | %s | %s |" % (
            (name, m[0], m[2], m[3], m[1], m[4]) +
            tuple("%.1f" % v if v is not None else "-" for v in rows[-1][6:])))
    fewest = sum(1 for r in rows if r[1] == r[3])
    b, pb = sum(r[2] for r in rows), sum(r[5] for r in rows)
    lines += ["", "| target | figure | goal | verdict |", "|---|---:|---:|---|",
              "| patch operations: cases at one per value touched (%d operations in all; "
              "per-element: %d) | %d of %d | all | %s |"
              % (sum(r[1] for r in rows), sum(r[4] for r in rows), fewest, len(rows),
                 "PASS" if fewest == len(rows) else "MISS"),
              "| patch bytes, all cases: ours / per-element (%d vs %d) | %.2f× | - | info |"
              % (b, pb, b / pb)]
    timed = [r for r in rows if r[6] is not None]
    if cost and timed:
        t, pt = sum(r[6] for r in timed), sum(r[7] for r in timed)
        lines.append("| API server's cost of applying the patch, %d cases: ours / per-element "
                     "(%.0f vs %.0f µs) | %.2f× | ≤ 1× | %s |"
                     % (len(timed), t, pt, t / pt, "PASS" if t <= pt else "MISS"))
        for r in rows:
            if r[0].startswith("bench review") and r[6] is not None:
                lines.append("| API server's cost of applying the patch, %s: ours / per-element "
                             "(%.1f vs %.1f µs) | %.2f× | - | info |"
                             % (r[0], r[6], r[7], r[6] / r[7]))
    else:
        lines.append("| API server's cost of applying the patch: %s | - | ≤ 1× | MISS |"
                     % re.sub(r"\s+", " ", str(why or "no case applies"))[:300])
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "patch.md"), "w") as f:
        f.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
