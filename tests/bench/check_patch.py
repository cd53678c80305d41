#!/usr/bin/python3
"""Before timing: the arms must do the same work.

Usage: check_patch.py REVIEW EXPECTED_PATCH WEBHOOK_RESPONSE GO_RESPONSE

The webhook's and the Go peer's answers to one review must each carry a patch
JSON-equal to EXPECTED_PATCH, except the 12-hex hash in
diagon.gke.io/injection (each side hashes its own serialization of the
injected config), and the same uid, allowed, patchType and warnings.
Exits 1, saying what differs, otherwise."""
import base64
import json
import re
import sys

HASHED = "/metadata/annotations/diagon.gke.io~1injection"
VALUE = re.compile(r"^(\d+\.\d+\.\d+);[0-9a-f]{12}$")


def load_response(path, who):
    try:
        with open(path, "rb") as f:
            doc = json.load(f)
        resp = doc["response"]
        patch = json.loads(base64.b64decode(resp["patch"]))
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit("check_patch: %s: %s answered no decodable patch: %s" % (path, who, e))
    return resp, patch


def without_hash(patch, who):
    out = []
    for op in patch:
        if op.get("path") == HASHED:
            m = VALUE.match(str(op.get("value")))
            if not m:
                sys.exit("check_patch: %s: injection annotation %r is not "
                         "'<version>;<12 hex>'" % (who, op.get("value")))
            op = dict(op, value=m.group(1) + ";<hash>")
        out.append(op)
    return out


def first_difference(got, want):
    if len(got) != len(want):
        return "%d operations, expected %d" % (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return "operation %d is\n  %s\nexpected\n  %s" % (
                i, json.dumps(g, sort_keys=True), json.dumps(w, sort_keys=True))
    return None


def main():
    review, expected_path, ours_path, go_path = sys.argv[1:5]
    with open(expected_path) as f:
        expected = without_hash(json.load(f), "expected")
    ours, ours_patch = load_response(ours_path, "the webhook")
    go, go_patch = load_response(go_path, "the Go peer")
    bad = False
    for who, patch in (("webhook", ours_patch), ("Go peer", go_patch)):
        diff = first_difference(without_hash(patch, who), expected)
        if diff:
            print("check_patch: %s: %s patch differs from %s: %s"
                  % (review, who, expected_path, diff), file=sys.stderr)
            bad = True
    for key in ("uid", "allowed", "patchType", "warnings"):
        if ours.get(key) != go.get(key):
            print("check_patch: %s: response.%s: webhook %r, Go peer %r"
                  % (review, key, ours.get(key), go.get(key)), file=sys.stderr)
            bad = True
    if bad:
        sys.exit(1)
    print("  %s: webhook and Go peer patches equal (%d operations; hashes %s / %s)"
          % (review, len(expected), ours_patch[-1]["value"].split(";")[-1],
             go_patch[-1]["value"].split(";")[-1]))


main()
