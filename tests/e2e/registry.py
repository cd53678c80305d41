"""The tier's OCI registry: the CNCF Distribution registry (build.sh's
`registry` module) over real TLS with the tier's CA, on the tier's host
address (the node's runtime pulls from it across the pod network), and what
goes into it:

- the project's two images, built by `scripts/images.sh` from the
  Dockerfile and pushed as mldiagnostics/mldiagnostics-{webhook,operator}:
  the path of the charts' default repositories, which the node's containerd
  mirrors here (node.py), so the charts install with their default values;
- the Kubernetes pause image (containerd's sandbox image), built from the
  kubernetes module's own build/pause source, as `pause`;
- the tier's Python image (python.Dockerfile: Debian's python3 with the
  pinned JAX and SDKs) as `mld-e2e/python`, which the workloads' pods name;
- both charts, by `helm package` and `helm push`, under `charts/`.
Thread-compatible: one owner starts it and stops it.
"""
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time

from procs import Proc, make_leaf, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CHARTS = ("mldiagnostics-injection-webhook", "mldiagnostics-connection-operator")
# The registries the node's containerd mirrors here (node.py), and the
# repositories this one serves: the charts' values.yaml defaults.
MIRRORED = ("ghcr.io", "registry.k8s.io")
SERVED = ("ghcr.io/mldiagnostics/mldiagnostics-webhook",
          "ghcr.io/mldiagnostics/mldiagnostics-operator")


def app_version():
    """The tag images.sh gives the images: the charts' appVersion."""
    with open(os.path.join(ROOT, "charts", CHARTS[0], "Chart.yaml")) as f:
        return re.search(r'^appVersion:\s*"?([^"\s]+)', f.read(), re.M).group(1)


def repository(image):
    """An image reference without its tag or digest."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name.rsplit(":", 1)[0] if ":" in last else name
PAUSE_TAG = "3.10.2"  # containerd's default sandbox image (containerd config default)


class Registry:
    def __init__(self, bin_dir, work_dir, ca, host, log=print):
        self.exe = os.path.join(bin_dir, "registry")
        self.dir = os.path.join(work_dir, "registry")
        os.makedirs(self.dir, exist_ok=True)
        self.ca = ca
        self.host_ip = host
        self.log = log
        self.proc = None
        self.tag = app_version()

    def start(self):
        s = socket.socket()
        s.bind((self.host_ip, 0))
        self.port = s.getsockname()[1]
        s.close()
        self.host = "%s:%d" % (self.host_ip, self.port)
        crt, key = make_leaf(self.dir, "tls", self.ca, "mld-e2e-registry",
                             sans=["IP:" + self.host_ip])
        config = os.path.join(self.dir, "config.yml")
        with open(config, "w") as f:
            f.write("version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\n"
                    "storage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n"
                    "    enabled: true\nhttp:\n  addr: %s\n  tls:\n    certificate: %s\n"
                    "    key: %s\n" % (os.path.join(self.dir, "data"), self.host, crt, key))
        self.proc = Proc("registry", [self.exe, "serve", config], self.dir,
                         env={"PATH": os.environ.get("PATH", ""),
                              "OTEL_TRACES_EXPORTER": "none"}).start()

        def up():
            self.proc.check_alive()
            socket.create_connection((self.host_ip, self.port), 1).close()
            return True
        wait_until(up, 30, "the registry on " + self.host)
        return self

    PYTHON_PACKAGES = ("jax", "jaxlib", "google-cloud-mldiagnostics", "opentelemetry-sdk",
                       "opentelemetry-exporter-otlp-proto-grpc")

    def python_context(self):
        """The Python image's build context: its Dockerfile, the lock and the
        wheels of its packages, downloaded once per lock by the tier's venv's
        pip (the host's trust store reaches the index; a build does not)."""
        lock = os.path.join(HERE, "requirements.lock")
        with open(lock, "rb") as f:
            key = hashlib.sha256(f.read() + " ".join(self.PYTHON_PACKAGES).encode()
                                 ).hexdigest()[:16]
        cache = os.environ.get("MLD_E2E_CACHE",
                               os.path.expanduser("~/.cache/mldiagnostics-e2e"))
        wheels = os.path.join(cache, "python-wheels-" + key)
        if not os.path.exists(os.path.join(wheels, ".complete")):
            shutil.rmtree(wheels, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "pip", "download", "-q",
                            "--disable-pip-version-check", "-d", wheels, "-c", lock,
                            *self.PYTHON_PACKAGES],
                           check=True, capture_output=True, timeout=1200)
            open(os.path.join(wheels, ".complete"), "w").close()
            for old in os.listdir(cache):  # one lock's wheels at a time
                if old.startswith(("python-wheels-", "consumer-wheels-")) and \
                        old != os.path.basename(wheels):
                    shutil.rmtree(os.path.join(cache, old), ignore_errors=True)
        ctx = os.path.join(self.dir, "python")
        shutil.rmtree(ctx, ignore_errors=True)
        shutil.copytree(wheels, os.path.join(ctx, "wheels"))
        for f in ("python.Dockerfile", "requirements.lock"):
            shutil.copy(os.path.join(HERE, f), ctx)
        return os.path.join(ctx, "python.Dockerfile")

    def push_images(self, pause_src):
        """Build both images, the pause image and the Python image
        (scripts/images.sh) and push them here; returns what images.sh
        printed (the sizes)."""
        t0 = time.time()
        env = dict(os.environ, SSL_CERT_FILE=self.ca[0])
        p = subprocess.run([os.path.join(ROOT, "scripts", "images.sh"),
                            "--push", self.host + "/mldiagnostics",
                            "--pause", pause_src, "--push-pause", self.host,
                            "--also", "mld-e2e/python=" + self.python_context(),
                            "--cert-dir", self.certs_dir()],
                           capture_output=True, text=True, timeout=60 * 60, env=env)
        if p.returncode != 0:
            raise RuntimeError("scripts/images.sh failed (%d):\n%s%s" % (
                p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
        self.log("images built and pushed to %s in %.0fs:\n%s" % (self.host, time.time() - t0,
                                                                   p.stdout.strip()))
        return p.stdout

    def python_image(self):
        """The Python image's reference, as a pod names it."""
        return "%s/mldiagnostics/mld-e2e/python:%s" % (self.host, self.tag)

    def certs_dir(self):
        """A containers-certs.d style folder that trusts the tier's CA for this registry."""
        d = os.path.join(self.dir, "certs.d", self.host)
        os.makedirs(d, exist_ok=True)
        with open(self.ca[0]) as src, open(os.path.join(d, "ca.crt"), "w") as dst:
            dst.write(src.read())
        return os.path.dirname(d)

    def push_charts(self, helm):
        """helm package + helm push of both charts to oci://HOST/charts."""
        out = os.path.join(self.dir, "charts")
        os.makedirs(out, exist_ok=True)
        for chart in CHARTS:
            p = helm.run("package", os.path.join(ROOT, "charts", chart), "-d", out)
            tgz = p.stdout.strip().rsplit(": ", 1)[-1]
            helm.run("push", tgz, "oci://%s/charts" % self.host)
        return "oci://%s/charts" % self.host

    def stop(self):
        if self.proc:
            self.proc.stop(timeout=10)
