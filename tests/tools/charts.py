"""The Helm charts through the real helm binary (DESIGN §7: no home-made renderer):
`helm template` parsed with PyYAML, `helm lint --strict`, and the rendering of
manifests/install/ (`make manifests` runs this file).

helm is $MLD_HELM, else the one tests/e2e/build.sh builds and caches (the
"controllers" module, pinned in its go.sum), else the first on PATH. A missing
helm raises HelmMissing, an AssertionError: the chart tests fail, they never skip.
Every run gets private HELM_CACHE_HOME/HELM_CONFIG_HOME/HELM_DATA_HOME under a
temporary directory, so no user's repositories or plugins take part.

    python3 tests/tools/charts.py which       print the helm path
    python3 tests/tools/charts.py manifests   re-render manifests/install/
"""
import atexit
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHARTS = os.path.join(ROOT, "charts")
NAMESPACE = "gke-mldiagnostics"
WEBHOOK = "mldiagnostics-injection-webhook"
OPERATOR = "mldiagnostics-connection-operator"
BUILD_SH = os.path.join(ROOT, "tests", "e2e", "build.sh")
# Render for the Kubernetes minor of the end-to-end tier. helm's own default
# (from its build's ldflags) is v1.20 for a binary built from the module
# without upstream's Makefile, which the charts' kubeVersion (>=1.27) refuses.
KUBE_MOD = os.path.join(ROOT, "tests", "e2e", "kube", "go.mod")
KUBE_VERSION_FALLBACK = "v1.36.0"


class RenderError(Exception):
    """helm ran and refused (bad values, template failure, lint errors)."""


class HelmMissing(AssertionError):
    pass


_helm = None
_home = None


def kube_version():
    try:
        with open(KUBE_MOD) as f:
            m = re.search(r"^\s*k8s\.io/kubernetes (v\d+\.\d+\.\d+)", f.read(), re.M)
        return m.group(1) if m else KUBE_VERSION_FALLBACK
    except OSError:
        return KUBE_VERSION_FALLBACK


def _built_helm(tried):
    """tests/e2e/build.sh controllers (cached: returns at once once built),
    serialised between concurrent test processes."""
    if not os.access(BUILD_SH, os.X_OK):
        tried.append("%s: not found" % BUILD_SH)
        return None
    lock_path = os.path.join(tempfile.gettempdir(), "mldiagnostics-helm-build.lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            p = subprocess.run([BUILD_SH, "controllers"], capture_output=True, text=True,
                               timeout=3600)
        except (OSError, subprocess.TimeoutExpired) as e:
            tried.append("%s controllers: %s" % (BUILD_SH, e))
            return None
    m = re.search(r"^controllers (\S+)$", p.stdout, re.M)
    if p.returncode != 0 or not m:
        tail = (p.stderr.strip().splitlines() or [""])[-1]
        tried.append("%s controllers: exit %d %s" % (BUILD_SH, p.returncode, tail))
        return None
    path = os.path.join(m.group(1), "helm")
    if os.access(path, os.X_OK):
        return path
    tried.append("%s: not built" % path)
    return None


def helm_path():
    """The helm binary: $MLD_HELM, else tests/e2e/build.sh's, else PATH."""
    global _helm
    if _helm:
        return _helm
    tried = []
    env = os.environ.get("MLD_HELM")
    if env:
        if not os.access(env, os.X_OK):
            raise HelmMissing("MLD_HELM=%s is not an executable helm" % env)
        _helm = env
        return _helm
    _helm = _built_helm(tried) or shutil.which("helm")
    if not _helm:
        raise HelmMissing("no helm binary: set MLD_HELM, or let tests/e2e/build.sh controllers "
                          "build it (Go from the module proxy), or put helm on PATH; tried: "
                          + "; ".join(tried + ["PATH: no helm"]))
    return _helm


def _env():
    global _home
    if _home is None:
        _home = tempfile.mkdtemp(prefix="mld-helm-")
        atexit.register(shutil.rmtree, _home, True)
    env = dict(os.environ)
    for name in ("CACHE", "CONFIG", "DATA"):
        env["HELM_%s_HOME" % name] = os.path.join(_home, name.lower())
    env.pop("KUBECONFIG", None)  # template and lint never talk to a cluster
    return env


def helm(*args, timeout=120):
    """Run helm; its CompletedProcess (text)."""
    return subprocess.run([helm_path(), *args], capture_output=True, text=True, timeout=timeout,
                          env=_env())


def _value_flags(sets, values, set_strings):
    flags = []
    for s in sets:
        flags += ["--set", s]
    for s in set_strings:
        flags += ["--set-string", s]
    for v in values:
        flags += ["-f", v]
    return flags


def render_text(chart, release=None, namespace=NAMESPACE, sets=(), values=(), set_strings=(),
                hooks=True, tests=True, charts_dir=None):
    """`helm template`: hooks (and `helm test` hooks) included unless asked not to."""
    flags = ["--namespace", namespace, "--kube-version", kube_version()]
    flags += _value_flags(sets, values, set_strings)
    if not hooks:
        flags.append("--no-hooks")
    if not tests:
        flags.append("--skip-tests")
    path = os.path.join(charts_dir or CHARTS, chart)
    p = helm("template", release or chart, path, *flags)
    if p.returncode != 0:
        raise RenderError(p.stderr.strip())
    return p.stdout


def render(chart, **kw):
    return [d for d in yaml.safe_load_all(render_text(chart, **kw)) if d]


def lint(chart, sets=(), values=(), set_strings=(), namespace=NAMESPACE):
    """`helm lint --strict`; its output. RenderError when it fails."""
    p = helm("lint", "--strict", os.path.join(CHARTS, chart), "--namespace", namespace,
             "--kube-version", kube_version(), *_value_flags(sets, values, set_strings))
    if p.returncode != 0:
        raise RenderError((p.stdout + p.stderr).strip())
    return p.stdout


def find(docs, kind, name=None):
    out = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    if len(out) != 1:
        raise AssertionError("expected one %s%s, found %d" % (kind, " " + name if name else "",
                                                              len(out)))
    return out[0]


def hook_phases(obj):
    return set(obj["metadata"].get("annotations", {}).get("helm.sh/hook", "").split(",")) - {""}


def install_manifest(chart):
    """manifests/install/<chart>.yaml: the chart as installed with default values, without
    the `helm test` hooks (kubectl apply would run them at once)."""
    return ("# Generated by `make manifests` from charts/%s with default values: do not edit.\n"
            % chart) + render_text(chart, tests=False)


def write_manifests():
    for chart in (WEBHOOK, OPERATOR):
        path = os.path.join(ROOT, "manifests", "install", chart + ".yaml")
        with open(path, "w") as f:
            f.write(install_manifest(chart))
        print("wrote", os.path.relpath(path, ROOT))


def main(argv):
    try:
        if argv[1:] == ["which"]:
            print(helm_path())
        elif argv[1:] == ["manifests"]:
            write_manifests()
        else:
            print("usage: charts.py which|manifests", file=sys.stderr)
            return 2
    except (HelmMissing, RenderError) as e:
        print("charts.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
