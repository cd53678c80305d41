"""What the API server would reject in a mutated pod, plus our own invariants.

apply(pod, patch) applies an RFC 6902 patch with python3-jsonpatch (an
independent implementation) and problems(pod) lists every reason the API
server's pod validation (kubernetes pkg/apis/core/validation) would refuse
the result, for the fields a webhook like ours touches.
"""
import copy
import re

import jsonpatch

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
FIELD_PATHS = {"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels",
               "metadata.annotations", "spec.nodeName", "spec.serviceAccountName",
               "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}
REF = re.compile(r"\$\(([^)]*)\)")


def apply(pod, patch):
    return jsonpatch.apply_patch(copy.deepcopy(pod), patch)


def _qualified_key(key):
    if "/" in key:
        prefix, name = key.split("/", 1)
        if not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix):
            return False
    else:
        name = key
    return 0 < len(name) <= 63 and bool(QUALIFIED_NAME.match(name))


def _refs(value):
    out, i = [], 0
    while i < len(value):
        if value.startswith("$$", i):
            i += 2
            continue
        m = REF.match(value, i)
        if m:
            out.append(m.group(1))
            i = m.end()
        else:
            i += 1
    return out


def _container(c, where, volumes, injected):
    errs = []
    names = [e.get("name") for e in c.get("env") or []]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        errs.append("%s: duplicate env %s" % (where, sorted(dup)))
    seen = set()
    for e in c.get("env") or []:
        n = e.get("name")
        if not isinstance(n, str) or not n or "=" in n:
            errs.append("%s: invalid env name %r" % (where, n))
        if "value" in e and "valueFrom" in e:
            errs.append("%s: env %s has value and valueFrom" % (where, n))
        fr = (e.get("valueFrom") or {}).get("fieldRef")
        if fr is not None and fr.get("fieldPath", "").split("[")[0] not in FIELD_PATHS:
            errs.append("%s: env %s: unsupported fieldPath %s" % (where, n, fr.get("fieldPath")))
        if n in injected:  # our values must only reference variables defined before them
            for r in _refs(e.get("value") or ""):
                if r not in seen:
                    errs.append("%s: env %s references $(%s) not defined before it" % (where, n, r))
        seen.add(n)
    paths = [m.get("mountPath") for m in c.get("volumeMounts") or []]
    dup = {p for p in paths if paths.count(p) > 1}
    if dup:
        errs.append("%s: duplicate mountPath %s" % (where, sorted(dup)))
    for m in c.get("volumeMounts") or []:
        if m.get("name") not in volumes:
            errs.append("%s: volumeMount %s has no volume" % (where, m.get("name")))
        if not m.get("mountPath"):
            errs.append("%s: volumeMount %s has no mountPath" % (where, m.get("name")))
    return errs


def problems(pod, injected=()):
    """Reasons the API server would reject pod (empty list: accepted).
    `injected` names env variables whose $(...) references must resolve."""
    errs = []
    meta = pod.get("metadata") or {}
    for field in ("labels", "annotations"):
        m = meta.get(field) or {}
        if not isinstance(m, dict):
            errs.append("metadata.%s is not a map" % field)
            continue
        for k, v in m.items():
            if not _qualified_key(k):
                errs.append("metadata.%s: invalid key %r" % (field, k))
            if not isinstance(v, str):
                errs.append("metadata.%s[%s]: value is not a string" % (field, k))
    if sum(len(k) + len(v) for k, v in (meta.get("annotations") or {}).items()) > 256 * 1024:
        errs.append("metadata.annotations: total size exceeds 256 KiB")
    spec = pod.get("spec") or {}
    vols = [v.get("name") for v in spec.get("volumes") or []]
    dup = {v for v in vols if vols.count(v) > 1}
    if dup:
        errs.append("spec.volumes: duplicate name %s" % sorted(dup))
    for v in spec.get("volumes") or []:
        n = v.get("name") or ""
        if len(n) > 63 or not DNS1123_LABEL.match(n):
            errs.append("spec.volumes: invalid name %r" % n)
        for item in (v.get("downwardAPI") or {}).get("items", []):
            fp = item.get("fieldRef", {}).get("fieldPath", "")
            if fp.split("[")[0] not in FIELD_PATHS:
                errs.append("volume %s: unsupported fieldPath %s" % (n, fp))
    for field in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(field) or []):
            errs += _container(c, "spec.%s[%d](%s)" % (field, i, c.get("name")), set(vols),
                               set(injected))
    return errs
