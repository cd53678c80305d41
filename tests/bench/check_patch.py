#!/usr/bin/python3
"""Before timing: the arms must do the same work.

Usage: check_patch.py NAME REVIEW EXPECTED_PATCH WEBHOOK_RESPONSE GO_RESPONSE

The webhook's answer to one review must carry a patch JSON-equal to
EXPECTED_PATCH, and the Go peer's a patch that gives the same pod when
applied to the review's pod (the Go peer writes one operation per element,
as the Go webhooks it stands for do; the webhook writes each list it
changes whole), both except the 12-hex hash in diagon.gke.io/injection
(each side hashes its own serialization of the injected config); and the
two answers the same uid, allowed, patchType and warnings. Exits 1, saying
what differs, otherwise."""
import base64
import copy
import json
import re
import sys

import jsonpatch

ANNOTATIONS = "/metadata/annotations"
KEY = "diagon.gke.io/injection"
HASHED = ANNOTATIONS + "/diagon.gke.io~1injection"
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


def hashless(value, who):
    m = VALUE.match(str(value))
    if not m:
        sys.exit("check_patch: %s: injection annotation %r is not '<version>;<12 hex>'"
                 % (who, value))
    return m.group(1) + ";<hash>"


def without_hash(patch, who):
    """patch with the injection annotation's hash replaced by <hash>, whether
    the annotation is an operation's value or a member of the annotations
    written whole."""
    out = []
    for op in patch:
        if op.get("path") == HASHED:
            op = dict(op, value=hashless(op.get("value"), who))
        elif op.get("path") == ANNOTATIONS and KEY in (op.get("value") or {}):
            op = dict(op, value=dict(op["value"], **{KEY: hashless(op["value"][KEY], who)}))
        out.append(op)
    return out


def hash_of(patch):
    for op in patch:
        if op.get("path") == HASHED:
            return op["value"].split(";")[-1]
        if op.get("path") == ANNOTATIONS and KEY in (op.get("value") or {}):
            return op["value"][KEY].split(";")[-1]
    return "-"


def pod_after(pod, patch, who):
    try:
        return jsonpatch.apply_patch(copy.deepcopy(pod), patch)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
        sys.exit("check_patch: %s's patch does not apply: %s" % (who, e))


def first_difference(got, want):
    if len(got) != len(want):
        return "%d operations, expected %d" % (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return "operation %d is\n  %s\nexpected\n  %s" % (
                i, json.dumps(g, sort_keys=True), json.dumps(w, sort_keys=True))
    return None


def main():
    name, review_path, expected_path, ours_path, go_path = sys.argv[1:6]
    with open(review_path) as f:
        pod = json.load(f)["request"]["object"]
    with open(expected_path) as f:
        expected = without_hash(json.load(f), "expected")
    ours, ours_patch = load_response(ours_path, "the webhook")
    go, go_patch = load_response(go_path, "the Go peer")
    bad = False
    diff = first_difference(without_hash(ours_patch, "webhook"), expected)
    if diff:
        print("check_patch: %s: the webhook's patch differs from %s: %s"
              % (name, expected_path, diff), file=sys.stderr)
        bad = True
    want = pod_after(pod, expected, "the expected")
    if pod_after(pod, without_hash(go_patch, "Go peer"), "the Go peer") != want:
        print("check_patch: %s: the Go peer's patch gives another pod than %s"
              % (name, expected_path), file=sys.stderr)
        bad = True
    for key in ("uid", "allowed", "patchType", "warnings"):
        if ours.get(key) != go.get(key):
            print("check_patch: %s: response.%s: webhook %r, Go peer %r"
                  % (name, key, ours.get(key), go.get(key)), file=sys.stderr)
            bad = True
    if bad:
        sys.exit(1)
    print("  %s: the webhook's and the Go peer's patches give the same pod (%d and %d "
          "operations; hashes %s / %s)"
          % (name, len(ours_patch), len(go_patch), hash_of(ours_patch), hash_of(go_patch)))


main()
