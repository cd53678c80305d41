"""Seed corpus for the fuzzers from the test fixtures."""
import json
import os
import sys

fixtures, out = sys.argv[1], sys.argv[2]
n = 0


def emit(doc):
    global n
    with open(os.path.join(out, "seed-%04d.json" % n), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    n += 1


def review(pod):
    pod.setdefault("metadata", {}).setdefault("labels", {})["managed-mldiagnostics-gke"] = "true"
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "seed", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "namespace": "ns", "operation": "CREATE", "object": pod}}


# watch streams: a chunk-size byte and a filter byte, then the lines
for root, _, files in os.walk(os.path.join(fixtures, "watch")):
    for name in files:
        with open(os.path.join(root, name), "rb") as f:
            with open(os.path.join(out, "watch-%s" % name), "wb") as o:
                o.write(b"\x07\x01" + f.read())

for root, _, files in os.walk(fixtures):
    for name in sorted(files):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(root, name)) as f:
            try:
                doc = json.load(f)
            except ValueError:
                continue
        emit(doc)
        if isinstance(doc, dict) and doc.get("kind") == "Pod":
            emit(review(doc))
print("%d seeds" % n)
