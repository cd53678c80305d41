"""Render the Helm charts as `helm template` would: with helm when it is on PATH,
else with tests/tools/helmrender (Go text/template + sprig, built by CMake into
$MLD_BIN_DIR). Returns the rendered documents parsed with PyYAML."""
import os
import shutil
import subprocess

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHARTS = os.path.join(ROOT, "charts")
NAMESPACE = "gke-mldiagnostics"
BIN_DIR = os.environ.get("MLD_BIN_DIR", os.path.join(ROOT, "build", "bin"))


class RenderError(Exception):
    pass


def renderer():
    helm = shutil.which("helm")
    if helm:
        return "helm", helm
    path = os.path.join(BIN_DIR, "helmrender")
    if not os.access(path, os.X_OK):
        raise RenderError("neither helm nor %s (build it: cmake --build build)" % path)
    return "helmrender", path


def render_text(chart, release=None, namespace=NAMESPACE, sets=(), values=(), hooks=True):
    kind, exe = renderer()
    release = release or chart
    flags = ["--namespace", namespace]
    for s in sets:
        flags += ["--set", s]
    for v in values:
        flags += ["-f", v]
    if not hooks:
        flags.append("--no-hooks")
    path = os.path.join(CHARTS, chart)
    cmd = [exe, "template", release, path] + flags if kind == "helm" else [exe] + flags + [
        release, path]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RenderError(p.stderr.strip())
    return p.stdout


def render(chart, **kw):
    return [d for d in yaml.safe_load_all(render_text(chart, **kw)) if d]


def find(docs, kind, name=None):
    out = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    if len(out) != 1:
        raise AssertionError("expected one %s%s, found %d" % (kind, " " + name if name else "",
                                                              len(out)))
    return out[0]
