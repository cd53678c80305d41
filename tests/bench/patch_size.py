"""The patch the webhook asks the API server to apply, per mutate fixture
(tests/fixtures/unit/mutate/*/: the pod and the webhook's patch): its
operations and bytes against the fewest that give the same pod.

The API server decodes the answer and applies every operation to the pod;
what the webhook adds to the API server's own cost of calling it
(bench_apiserver.py) is mostly that. The same pod can come from fewer
operations: each value the patch touches (a container's env, its
volumeMounts, the volumes, the annotations) can be written by one
operation holding the value it ends with, which keeps the user's settings
(they are in that value) and keeps a reinvocation idempotent (the webhook
answers a pod it has injected with no patch). Per touched value the
cheaper of the two, in bytes, is the fewest bytes; one operation per
touched value is the fewest operations.

    python3 tests/bench/patch_size.py [OUT_DIR]   prints the table; writes OUT_DIR/patch.md
"""
import copy
import glob
import json
import os
import sys

import jsonpatch

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "unit", "mutate")
SLACK = 1.02  # bytes within 2% of the fewest pass: key order and number forms


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
    return jsonpatch.JsonPointer(pointer).resolve(doc)


def measure(pod, patch):
    """(ops, bytes, fewest ops, fewest bytes) of patch on pod."""
    after = jsonpatch.apply_patch(copy.deepcopy(pod), patch)
    by_root = {}
    for op in patch:
        by_root.setdefault(root_of(op["path"]), []).append(op)
    fewest = 2  # the brackets
    for root, ops in by_root.items():
        ours = sum(len(compact(o)) for o in ops) + len(ops) - 1
        try:
            existed = value_at(pod, root) is not None
        except jsonpatch.JsonPointerException:
            existed = False
        one = len(compact({"op": "replace" if existed else "add", "path": root,
                           "value": value_at(after, root)}))
        fewest += min(ours, one) + 1
    return len(patch), len(compact(patch)), len(by_root), fewest - 1


def rows():
    out = []
    for d in sorted(glob.glob(os.path.join(FIXTURES, "*", ""))):
        with open(os.path.join(d, "expected.json")) as f:
            patch = json.load(f).get("patch")
        if not patch:
            continue
        with open(os.path.join(d, "pod.json")) as f:
            pod = json.load(f)
        out.append((os.path.basename(d.rstrip("/")),) + measure(pod, patch))
    return out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "out")
    lines = ["# The patch the API server applies", "",
             "Per mutate fixture: the webhook's patch against the fewest operations and bytes "
             "that give the same pod (one operation per value touched, or the webhook's own "
             "operations where they are smaller).", "",
             "| fixture | ops | fewest ops | bytes | fewest bytes |",
             "|---|---:|---:|---:|---:|"]
    rs = rows()
    for name, ops, nb, fops, fnb in rs:
        lines.append("| %s | %d | %d | %d | %d |" % (name, ops, fops, nb, fnb))
    ops_ok = sum(1 for r in rs if r[1] == r[3])
    bytes_ok = sum(1 for r in rs if r[2] <= r[4] * SLACK)
    total_ops, total_fops = sum(r[1] for r in rs), sum(r[3] for r in rs)
    total_b, total_fb = sum(r[2] for r in rs), sum(r[4] for r in rs)
    lines += ["", "| target | figure | goal | verdict |", "|---|---:|---:|---|",
              "| patch operations: fixtures at the fewest (%d vs %d in all) | %d of %d | all | %s |"
              % (total_ops, total_fops, ops_ok, len(rs), "PASS" if ops_ok == len(rs) else "MISS"),
              "| patch bytes: fixtures within 2%% of the fewest (%d vs %d in all) | %d of %d | all "
              "| %s |" % (total_b, total_fb, bytes_ok, len(rs),
                          "PASS" if bytes_ok == len(rs) else "MISS")]
    text = "\n".join(lines) + "\n"
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "patch.md"), "w") as f:
        f.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
