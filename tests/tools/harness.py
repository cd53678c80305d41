"""Run the real webhook binary on loopback over real TLS, for integration tests.

Certificates are made with the openssl command line in a temporary
directory; requests go through Python's ssl + http.client (an independent
TLS 1.2/1.3 client). Everything is bounded in time.
"""
import base64
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time

BIN_DIR = os.environ.get("MLD_BIN_DIR", os.path.join(os.path.dirname(__file__), "../../build/bin"))
FIXTURES = os.environ.get("MLD_FIXTURES", os.path.join(os.path.dirname(__file__), "../fixtures"))
WEBHOOK = os.path.join(BIN_DIR, "mldiagnostics-webhook")
SANITIZED = bool(os.environ.get("MLD_SANITIZE"))
SLOW = 4 if SANITIZED else 1  # sanitizer builds are slower: scale waits


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_cert(directory, name="tls", cn="localhost", days=30, key_type="ec"):
    """Self-signed serving certificate for localhost/127.0.0.1; returns (crt, key)."""
    crt = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    newkey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"] if key_type == "ec" \
        else ["-newkey", "rsa:2048"]
    subprocess.run(["openssl", "req", "-x509", *newkey, "-nodes", "-keyout", key, "-out", crt,
                    "-days", str(days), "-subj", "/CN=" + cn,
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=30)
    return crt, key


def status_kb(pid, field):
    """A /proc/PID/status field in kB (VmRSS, VmHWM); 0 when absent."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), "rb") as f:
        return f.read()


class _Process:
    """A binary under test: its temporary folder, its log file (stdout and stderr),
    signal-then-wait stopping, and its JSON log lines."""

    def _spawn(self, mode="wb"):
        self.log = open(self.log_path, mode)
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=self.env)

    def _terminate(self, sig, timeout):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if hasattr(self, "log") and not self.log.closed:
            self.log.close()
        return self.proc.returncode if self.proc else None

    def check_sanitizers(self):
        """A sanitizer report in the log fails the test that ran it: ASan, LSan,
        UBSan ("runtime error:") and TSan ("WARNING: ThreadSanitizer: ...")."""
        text = self.logs() if os.path.exists(self.log_path) else ""
        at = text.find("Sanitizer")
        if at < 0:
            at = text.find("runtime error:")
        if at >= 0:
            raise AssertionError("sanitizer report from the %s:\n%s" % (
                self.name, text[max(0, at - 200):at + 4000]))

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def log_lines(self):
        out = []
        for line in self.logs().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out


class Webhook(_Process):
    """The webhook process. Use as a context manager."""

    def __init__(self, *args, cert_dir=None, env=None, wait_ready=True, standalone=True):
        self.tmp = tempfile.mkdtemp(prefix="mld-wh-")
        self.cert_dir = cert_dir or self.tmp
        if cert_dir is None:
            self.crt, self.key = make_cert(self.tmp)
        else:
            self.crt = os.path.join(cert_dir, "tls.crt")
            self.key = os.path.join(cert_dir, "tls.key")
        self.port = free_port()
        self.args = [WEBHOOK] + (["--standalone"] if standalone else []) + [
                     "--bind-address", "127.0.0.1",
                     "--port", str(self.port), "--tls-cert-file", self.crt,
                     "--tls-key-file", self.key, *args]
        self.log_path = os.path.join(self.tmp, "webhook.log")
        self.name = "webhook"
        self.env = {**os.environ, **(env or {})}
        self.wait_ready = wait_ready
        self.proc = None

    def __enter__(self):
        self._spawn()
        if self.wait_ready:
            try:
                self.wait_healthy()
            except BaseException:
                self.__exit__()  # never leak the process of a failed start
                raise
        return self

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def stop(self, sig=signal.SIGTERM, timeout=20):
        rc = self._terminate(sig, timeout)
        self.check_sanitizers()
        return rc

    def context(self):
        ctx = ssl.create_default_context(cafile=self.crt)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        return ctx

    def connect(self, timeout=10):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context(),
                                           timeout=timeout * SLOW)

    def wait_healthy(self, timeout=10):
        deadline = time.time() + timeout * SLOW
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("webhook exited: %s\n%s" % (self.proc.returncode, self.logs()))
            try:
                status, _, _ = self.request("GET", "/healthz", timeout=1)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("webhook not healthy in time:\n" + self.logs())

    def request(self, method, path, body=None, headers=None, timeout=10, conn=None):
        own = conn is None
        c = conn or self.connect(timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            return r.status, dict(r.getheaders()), data
        finally:
            if own:
                c.close()

    def review(self, review, conn=None, path="/mutate?timeout=10s"):
        """POST an AdmissionReview; returns (response dict, patch list or None)."""
        body = review if isinstance(review, (bytes, str)) else json.dumps(review)
        status, headers, data = self.request("POST", path, body,
                                             {"Content-Type": "application/json"}, conn=conn)
        if status != 200:
            raise AssertionError("HTTP %d: %s" % (status, data[:300]))
        doc = json.loads(data)
        resp = doc["response"]
        patch = None
        if "patch" in resp:
            patch = json.loads(base64.b64decode(resp["patch"]))
        return doc, patch


OPERATOR = os.path.join(BIN_DIR, "mldiagnostics-operator")


class Operator(_Process):
    """The connection operator process, pointed at a kubeconfig. Use as a
    context manager; probes and metrics on free loopback ports."""

    def __init__(self, kubeconfig, *args, env=None, wait_ready=True, name="operator"):
        self.tmp = tempfile.mkdtemp(prefix="mld-op-")
        self.health_port = free_port()
        self.metrics_port = free_port()
        self.args = [OPERATOR, "--kubeconfig", kubeconfig,
                     "--health-probe-bind-address", "127.0.0.1:%d" % self.health_port,
                     "--metrics-bind-address", "127.0.0.1:%d" % self.metrics_port, *args]
        self.log_path = os.path.join(self.tmp, name + ".log")
        self.name = name
        self.env = {**os.environ, "POD_NAME": name, **(env or {})}
        self.wait_ready = wait_ready
        self.proc = None

    def start(self):
        self._spawn("ab")
        if self.wait_ready:
            try:
                self.wait_for("/readyz")
            except BaseException:
                self._terminate(signal.SIGKILL, 5)  # never leak the process of a failed start
                raise
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Signal and wait; returns (exit status, seconds it took)."""
        t0 = time.time()
        rc = self._terminate(sig, timeout)
        took = time.time() - t0
        self.check_sanitizers()
        return rc, took

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()
        self.check_sanitizers()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def get(self, path, port=None, timeout=5):
        c = http.client.HTTPConnection("127.0.0.1", port or self.health_port, timeout=timeout)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode()
        finally:
            c.close()

    def metrics(self):
        return self.get("/metrics", port=self.metrics_port)[1]

    def wait_for(self, path, status=200, timeout=20):
        deadline = time.time() + timeout * SLOW
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("operator exited: %s\n%s" % (self.proc.returncode, self.logs()))
            try:
                if self.get(path, timeout=1)[0] == status:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("operator: %s never answered %d:\n%s" % (path, status, self.logs()))
