"""Processes of the end-to-end tier: started in their own session with a log
file each, waited for with a bound, stopped with SIGTERM then SIGKILL; and
the small helpers every part shares (free ports, openssl certificates)."""
import ctypes
import os
import signal
import socket
import subprocess
import time


_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the tier's process dies, so
    that even a SIGKILLed test run leaves no control plane behind."""
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port(host="127.0.0.1"):
    s = socket.socket()
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_until(pred, timeout, what, interval=0.1):
    deadline = time.time() + timeout
    last_err = None
    while time.time() < deadline:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - reported on timeout
            last_err = e
        time.sleep(interval)
    raise TimeoutError("%s not reached in %ss%s" % (what, timeout,
                                                   ": %s" % last_err if last_err else ""))


class Proc:
    """One long-running child. `alive()`, `stop()`, `tail()`."""

    def __init__(self, name, args, log_dir, env=None, cwd=None, netns=None):
        self.name = name
        self.args = list(args)
        if netns:
            self.args = ["ip", "netns", "exec", netns] + self.args
        self.log_path = os.path.join(log_dir, name + ".log")
        self.env = env
        self.cwd = cwd
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "ab")
        self.log.write(("--- start %s: %s\n" % (time.strftime("%H:%M:%S"),
                                               " ".join(self.args))).encode())
        self.log.flush()
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=self.env, cwd=self.cwd,
                                     start_new_session=True, preexec_fn=die_with_parent)
        return self

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        if not self.log.closed:
            self.log.close()
        return self.proc.returncode

    def tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def check_alive(self):
        if not self.alive():
            raise RuntimeError("%s exited (%s):\n%s" % (self.name, self.proc.returncode,
                                                         self.tail()))


def openssl(*args, cwd=None):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60, cwd=cwd)


def make_ca(directory, name, cn, days=30, sans=(), pkcs1_rsa=False):
    """A self-signed CA (crt, key): P-256, or with pkcs1_rsa an RSA key in
    the PKCS#1 form ("RSA PRIVATE KEY") that some controllers insist on."""
    key, crt = os.path.join(directory, name + ".key"), os.path.join(directory, name + ".crt")
    if pkcs1_rsa:
        openssl("genrsa", "-traditional", "-out", key, "2048")
    else:
        openssl("genpkey", "-algorithm", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-out", key)
    openssl("req", "-x509", "-key", key, "-nodes",
            "-out", crt, "-days", str(days), "-subj", "/CN=" + cn,
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
            *(("-addext", "subjectAltName=" + ",".join(sans)) if sans else ()))
    return crt, key


def make_leaf(directory, name, ca, cn, sans=(), client=False, org=None, days=30):
    """A leaf certificate signed by `ca` (crt, key); SANs like 'IP:127.0.0.1'."""
    key, crt = os.path.join(directory, name + ".key"), os.path.join(directory, name + ".crt")
    csr, ext = os.path.join(directory, name + ".csr"), os.path.join(directory, name + ".ext")
    subj = "/CN=" + cn + ("/O=" + org if org else "")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", csr, "-subj", subj)
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n")
        f.write("extendedKeyUsage=%s\n" % ("clientAuth" if client else "serverAuth"))
        if sans:
            f.write("subjectAltName=" + ",".join(sans) + "\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
            "-out", crt, "-days", str(days), "-extfile", ext)
    return crt, key
