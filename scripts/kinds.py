#!/usr/bin/python3
"""Write what repeats the kind table (libk8s/ml/k8s_kinds.c) from the table
itself, so that a kind is one row there and nothing else is kept by hand.

    scripts/kinds.py KINDS_JSON [--check]

KINDS_JSON is the table as JSON (build/tests/kinds_json's output, a file or
"-" for stdin). Each generated region sits between a line holding
`kinds: generated` and one holding `kinds: end`; the lines between are
replaced. With --check nothing is written: the files whose regions differ
are named and the exit status is 1.

Regions (the file, what it holds):
- both charts' ClusterRole rules for the workload kinds (the webhook reads
  the kinds it watches and gets the others one at a time; the operator
  watches the workloadRef kinds);
- the MLDiagnosticsConnection CRD's workloadRef.kind enum, in
  manifests/crd/ and in the operator chart (a test keeps the two equal);
- the fake API server's ML_CRDS (the kinds a CRD serves) and the end-to-end
  tier's RESOURCES (kubeapi.py);
- the charts' descriptions, the README's lists of kinds.
make manifests runs it, then renders manifests/install/ from the charts.
"""
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BEGIN, END = "kinds: generated", "kinds: end"


def builtin(k):
    """Kubernetes' own API groups (batch, apps) have no dot."""
    return "." not in k["group"]


def rbac_rules(kinds, indent, verbs_of):
    """ClusterRole rules, one per API group in table order; verbs_of(kind)
    gives a kind's verbs (None: not in the rules)."""
    rules = []
    for k in kinds:
        verbs = verbs_of(k)
        if verbs is None:
            continue
        for r in rules:
            if r[0] == k["group"] and r[2] == verbs:
                r[1].append(k["plural"])
                break
        else:
            rules.append((k["group"], [k["plural"]], verbs))
    pad = " " * indent
    out = []
    for group, plurals, verbs in rules:
        out += ["%s- apiGroups: [%s]" % (pad, group or '""'),
                "%s  resources: [%s]" % (pad, ", ".join(plurals)),
                "%s  verbs: [%s]" % (pad, ", ".join(verbs))]
    return out


def webhook_rbac(kinds):
    return rbac_rules(kinds, 2, lambda k: ["get", "list", "watch"] if k["webhookWatch"]
                      else ["get"])


def operator_rbac(kinds):
    return rbac_rules(kinds, 2, lambda k: ["get", "list", "watch"] if k["workloadRef"]
                      else None)


def crd_enum(kinds, indent):
    names = []
    for k in kinds:
        if k["workloadRef"] and k["kind"] not in names:
            names.append(k["kind"])
    return [" " * indent + "- " + n for n in names]


def ml_crds(kinds):
    out = []
    for k in kinds:
        if builtin(k):
            continue
        version = k["apiVersion"].split("/", 1)[1]
        out.append('    Resource("%s", "%s", "%s", "%s", status=True),' % (
            k["group"], version, k["plural"], k["kind"]))
    return out


def e2e_resources(kinds):
    """tests/e2e/kubeapi.py's RESOURCES entries: kind -> (apiVersion, plural,
    namespaced); a shared name of another group is keyed "Kind.group"."""
    out = []
    for k in kinds:
        shared = sum(1 for o in kinds if o["kind"] == k["kind"]) > 1
        key = k["kind"] + "." + k["group"] if shared and not builtin(k) else k["kind"]
        out.append('    "%s": ("%s", "%s", True),' % (key, k["apiVersion"], k["plural"]))
    return out


def kind_list(kinds, pred):
    """"A, B and C", each by the label the table gives it (k8s_kind_label)."""
    names = [k["label"] for k in kinds if pred(k)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def prose(text, indent, width=90):
    """text wrapped at width, each line indented."""
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(indent) + len(line) + 1 + len(w) > width:
            lines.append(indent + line)
            line = w
        else:
            line = line + " " + w if line else w
    return lines + ([indent + line] if line else [])


def webhook_description(kinds):
    return ["description: >-"] + prose("ML Diagnostics injection webhook: gives every pod of a labelled ML workload "
                 "(%s) its ML Diagnostics identity and OpenTelemetry settings."
                 % kind_list(kinds, lambda k: k["namespaceLabel"]), "  ")


def operator_description(kinds):
    return ["description: >-"] + prose("ML Diagnostics connection operator: relays on-demand profile captures "
                 "(MLDiagnosticsConnection resources) to the JAX profiler servers inside the "
                 "pods of a pod list or a workload (%s)."
                 % kind_list(kinds, lambda k: k["workloadRef"]), "  ")


def readme_injected(kinds):
    return prose("Workloads whose pods the namespace label opts in: %s."
                 % kind_list(kinds, lambda k: k["namespaceLabel"]), "")


def readme_refs(kinds):
    return prose("Kinds a `workloadRef` names: %s."
                 % kind_list(kinds, lambda k: k["workloadRef"]), "")


CRD = "manifests/crd/mldiagnosticsconnections.diagon.gke.io.yaml"
# file -> [generator]: the file's regions in order
REGIONS = {
    "charts/mldiagnostics-injection-webhook/templates/rbac.yaml": [webhook_rbac],
    "charts/mldiagnostics-connection-operator/templates/rbac.yaml": [operator_rbac],
    CRD: [lambda kinds: crd_enum(kinds, 28)],
    "charts/mldiagnostics-connection-operator/templates/crd.yaml":
        [lambda kinds: crd_enum(kinds, 28)],
    "tests/fakes/fake_apiserver.py": [ml_crds],
    "tests/e2e/kubeapi.py": [e2e_resources],
    "charts/mldiagnostics-injection-webhook/Chart.yaml": [webhook_description],
    "charts/mldiagnostics-connection-operator/Chart.yaml": [operator_description],
    "README.md": [readme_injected, readme_refs],
}


def regenerate(path, text, gens, kinds):
    """text with each region replaced by its generator's lines, in order."""
    lines = text.split("\n")
    out, i, n = [], 0, 0
    while i < len(lines):
        out.append(lines[i])
        if BEGIN in lines[i]:
            if n >= len(gens):
                raise SystemExit("%s: more generated regions than expected" % path)
            end = next((j for j in range(i + 1, len(lines)) if END in lines[j]), None)
            if end is None:
                raise SystemExit("%s:%d: a region without its end line" % (path, i + 1))
            out += gens[n](kinds)
            out.append(lines[end])
            n, i = n + 1, end
        i += 1
    if n != len(gens):
        raise SystemExit("%s: %d generated regions, want %d" % (path, n, len(gens)))
    return "\n".join(out)


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv[1:]
    if len(args) != 1:
        raise SystemExit(__doc__)
    with (sys.stdin if args[0] == "-" else open(args[0])) as f:
        kinds = json.load(f)
    stale = []
    for rel, gens in REGIONS.items():
        path = os.path.join(ROOT, rel)
        with open(path) as f:
            text = f.read()
        new = regenerate(rel, text, gens, kinds)
        if new != text:
            stale.append(rel)
            if not check:
                with open(path, "w") as f:
                    f.write(new)
    if check and stale:
        print("not generated from the kind table (make manifests): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
