"""Check objects against a CRD's structural OpenAPI v3 schema the way the
API server would: types, formats of integers, required fields, enums,
minimum/maximum, patterns, string and list lengths, maps
(additionalProperties), and unknown fields (which the server would silently
prune — for us a bug: whatever we write must survive the round trip).
CEL rules (x-kubernetes-validations) are evaluated for the few shapes our
CRD uses. A small stand-in for kube-apiserver, which cannot run here."""
import os
import re

import yaml

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
CRD = os.path.join(ROOT, "manifests", "crd", "mldiagnosticsconnections.diagon.gke.io.yaml")

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def load_schema(path=CRD):
    with open(path) as f:
        crd = yaml.safe_load(f)
    return crd, crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def _cel(rule, obj):
    # the one rule shape our CRD has: exactly one of podName / workloadRef
    if rule == "(has(self.podName) && self.podName != '') != has(self.workloadRef)":
        return bool(obj.get("podName")) != ("workloadRef" in obj)
    if rule == "!has(self.hosts) || has(self.workloadRef)":
        return "hosts" not in obj or "workloadRef" in obj
    raise AssertionError("crdcheck: unknown CEL rule " + rule)


def validate(obj, schema, path="", errors=None):
    errors = [] if errors is None else errors
    t = schema.get("type")
    if t == "integer":
        if not isinstance(obj, int) or isinstance(obj, bool):
            errors.append("%s: must be an integer" % path)
            return errors
        if schema.get("format") == "int32" and not -2**31 <= obj < 2**31:
            errors.append("%s: out of int32 range" % path)
    elif t in _TYPES and not isinstance(obj, _TYPES[t]):
        errors.append("%s: must be %s" % (path, t))
        return errors
    if "enum" in schema and obj not in schema["enum"]:
        errors.append("%s: %r not in %s" % (path, obj, schema["enum"]))
    if "minimum" in schema and obj < schema["minimum"]:
        errors.append("%s: below %s" % (path, schema["minimum"]))
    if "maximum" in schema and obj > schema["maximum"]:
        errors.append("%s: above %s" % (path, schema["maximum"]))
    if "pattern" in schema and not re.search(schema["pattern"], obj):
        errors.append("%s: does not match %s" % (path, schema["pattern"]))
    if "minLength" in schema and len(obj) < schema["minLength"]:
        errors.append("%s: shorter than %d" % (path, schema["minLength"]))
    if "maxItems" in schema and len(obj) > schema["maxItems"]:
        errors.append("%s: more than %d items" % (path, schema["maxItems"]))
    if t == "object":
        props = schema.get("properties")
        for r in schema.get("required", []):
            if r not in obj:
                errors.append("%s.%s: required" % (path, r))
        if isinstance(schema.get("additionalProperties"), dict):
            for k, v in obj.items():
                validate(v, schema["additionalProperties"], "%s.%s" % (path, k), errors)
        elif props is not None:
            for k, v in obj.items():
                if k not in props:
                    errors.append("%s.%s: unknown field (the API server would prune it)" %
                                  (path, k))
                else:
                    validate(v, props[k], "%s.%s" % (path, k), errors)
        for rule in schema.get("x-kubernetes-validations", []):
            if not _cel(rule["rule"], obj):
                errors.append("%s: %s" % (path, rule["message"]))
    if t == "array":
        for i, item in enumerate(obj):
            validate(item, schema.get("items", {}), "%s[%d]" % (path, i), errors)
    return errors
