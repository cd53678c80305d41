"""TLS of the real webhook binary: protocol versions, certificate checks at
startup, and rotation of the serving certificate under concurrent load
(Kubernetes Secret-volume symlink swaps) with zero failed requests."""
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import controllers  # noqa: E402
from harness import SLOW, WEBHOOK, Webhook, free_port, make_cert  # noqa: E402


def openssl(*args, **kw):
    return subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30, **kw)


class CA:
    """A test CA issuing localhost serving certificates."""

    def __init__(self, directory):
        self.dir = directory
        self.crt, self.key = make_cert(directory, "ca", cn="test-ca", days=30)
        self.serial = 100

    def issue(self, out_dir, days=30, key_from=None):
        os.makedirs(out_dir, exist_ok=True)
        key = os.path.join(out_dir, "tls.key")
        crt = os.path.join(out_dir, "tls.crt")
        csr = os.path.join(out_dir, "tls.csr")
        ext = os.path.join(out_dir, "ext.cnf")
        with open(ext, "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
        self.serial += 1
        openssl("x509", "-req", "-in", csr, "-CA", self.crt, "-CAkey", self.key, "-set_serial",
                str(self.serial), "-days", str(days), "-extfile", ext, "-out", crt)
        if key_from:  # a deliberately mismatched pair
            shutil.copy(key_from, key)
        return self.serial


class SecretVolume:
    """The layout kubelet gives a Secret volume: tls.crt -> ..data/tls.crt,
    ..data -> ..<timestamp>/, updated by an atomic rename of ..data."""

    def __init__(self, directory):
        self.dir = directory
        self.n = 0

    def publish(self, ca, **kw):
        self.n += 1
        ts = "..2026_11_30_00_00_%02d.%d" % (self.n, os.getpid())
        serial = ca.issue(os.path.join(self.dir, ts), **kw)
        tmp = os.path.join(self.dir, "..data_tmp")
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(ts, tmp)
        os.rename(tmp, os.path.join(self.dir, "..data"))
        for f in ("tls.crt", "tls.key"):
            link = os.path.join(self.dir, f)
            if not os.path.lexists(link):
                os.symlink(os.path.join("..data", f), link)
        return serial


def peer_serial(sock):
    der = sock.getpeercert(binary_form=True)
    out = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-serial"], input=der,
                         capture_output=True, check=True, timeout=10).stdout.decode()
    return int(out.strip().split("=")[1], 16)


class ProtocolTest(unittest.TestCase):
    def test_tls_versions(self):
        with Webhook() as wh:
            def s_client(*flags):
                return subprocess.run(
                    ["openssl", "s_client", "-connect", "127.0.0.1:%d" % wh.port, *flags,
                     "-cipher", "DEFAULT@SECLEVEL=0"],
                    input=b"", capture_output=True, timeout=20)
            # the server ends a TLS 1.1 handshake without answering it (GnuTLS
            # under libmicrohttpd closes instead of sending an alert) ...
            old = s_client("-tls1_1")
            self.assertNotEqual(old.returncode, 0)
            out = old.stdout.decode() + old.stderr.decode()
            self.assertIn("Cipher is (NONE)", out)
            self.assertRegex(out, r"protocol version|unexpected eof")
            # ... while the same client settings succeed with 1.2 and 1.3
            for flag, name in (("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")):
                ok = s_client(flag)
                self.assertIn("New, %s, Cipher is" % name, ok.stdout.decode(), ok.stderr.decode())

    def test_cipher_order(self):
        """The server's order wins: AES-128-GCM although OpenSSL lists
        AES-256 first; ChaCha20 still serves a client without AES; CBC is
        refused."""
        with Webhook() as wh:
            def cipher(*flags):
                r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % wh.port,
                                    *flags], input=b"", capture_output=True, timeout=20)
                m = re.search(r"Cipher is (\S+)", r.stdout.decode())
                return m.group(1) if m else None
            self.assertEqual(cipher("-tls1_3"), "TLS_AES_128_GCM_SHA256")
            self.assertEqual(cipher("-tls1_2"), "ECDHE-ECDSA-AES128-GCM-SHA256")
            self.assertEqual(cipher("-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"),
                             "TLS_CHACHA20_POLY1305_SHA256")
            self.assertEqual(cipher("-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA256"), "(NONE)")


    def test_one_round_trip_for_clients_that_send_an_x25519_share(self):
        """X25519 first in the server's group order: a client that sends its key share for
        X25519 (Go's crypto/tls, the API server's side, and OpenSSL do) is never asked to
        retry its hello with another group, a round trip more per new connection."""
        with Webhook() as wh:
            r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % wh.port,
                                "-tls1_3", "-msg"], input=b"", capture_output=True, timeout=20)
            out = r.stdout.decode()
            hellos = len(re.findall(r">>> .*ClientHello", out))
            self.assertEqual(hellos, 1, "a HelloRetryRequest made the client say hello again")
            self.assertIn("Server Temp Key: X25519", out)


def read_response(f):
    """One HTTP/1.1 response from a file object: (status, body)."""
    status = int(f.readline().split()[1])
    length = 0
    while True:
        line = f.readline().strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    return status, f.read(length)


class ReadAheadTest(unittest.TestCase):
    """The server reads ahead of GnuTLS (many records per recv): bytes it
    holds for later must never be stranded. Requests of mixed sizes are
    pipelined in one write; every one is answered, in order."""

    def test_pipelined_requests_in_one_write(self):
        reviews = [os.path.join(os.environ["MLD_FIXTURES"], "admission", f)
                   for f in ("bench-jobset-64k.json", "bench-jobset-5k.json",
                             "bench-jobset-64k.json", "bench-jobset-5k.json")]
        bodies = []
        for path in reviews:
            with open(path, "rb") as f:
                bodies.append(f.read())
        wire = b"".join(b"POST /mutate?timeout=10s HTTP/1.1\r\nHost: x\r\n"
                        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                        % (len(b), b) for b in bodies)
        wire += b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        with Webhook() as wh:
            raw = socket.create_connection(("127.0.0.1", wh.port), timeout=10 * SLOW)
            with wh.context().wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(wire)
                f = tls.makefile("rb")
                for path in reviews:
                    status, body = read_response(f)
                    self.assertEqual(status, 200, body[:200])
                    resp = json.loads(body)["response"]
                    self.assertTrue(resp["allowed"])
                    self.assertIn("patch", resp, path)
                self.assertEqual(read_response(f), (200, b"ok\n"))


class PromptAnswerTest(unittest.TestCase):
    """Each answer leaves as soon as it is made, whatever the client's
    socket options: an answer held back until the request's completion
    callback ran at the connection's next socket event, and a client with
    Nagle on (Python's http.client here) then waited for a delayed ACK,
    ~208 ms per answer, a regression this caught (sending answers in one
    TLS record by corking the session). 30 answers normally take a few ms;
    the bound is 100x that, and the stall needs over 6 s."""

    def test_answers_come_without_waiting_for_another_event(self):
        # small reviews: a request in one segment is what showed the stall
        reviews = [json.dumps(controllers.review(
            {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "p", "labels": labels},
             "spec": {"containers": [{"name": "c", "image": "i"}]}}, "ns")).encode()
            for labels in ({}, {"managed-mldiagnostics-gke": "true"})]
        with Webhook() as wh:
            c = http.client.HTTPSConnection("127.0.0.1", wh.port, context=wh.context(),
                                            timeout=10 * SLOW)
            t0 = time.monotonic()
            for i in range(30):
                c.request("POST", "/mutate", body=reviews[i % 2],
                          headers={"Content-Type": "application/json"})
                r = c.getresponse()
                answer = r.read()
                self.assertEqual(r.status, 200, answer[:200])
            elapsed = time.monotonic() - t0
            c.close()
        self.assertLess(elapsed, 1.5 * SLOW, "30 answers took %.2f s" % elapsed)


TCPI_DATA_SEGS_IN = 152  # offset of tcpi_data_segs_in in Linux's struct tcp_info


def data_segments_in(sock):
    """Data-carrying TCP segments this socket has received (TCP_INFO)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return struct.unpack_from("I", info, TCPI_DATA_SEGS_IN)[0]


class OneSendPerAnswerTest(unittest.TestCase):
    """An answer to POST /mutate leaves in one send: libmicrohttpd hands
    GnuTLS the headers and the body apart, and the headers' record waits
    for the body's (wh_tlsio). Over loopback (MTU 64 KiB) one send of the
    ~5 KiB answer is one TCP segment, so the client counts the data
    segments each answer brings: one, where two sends brought two."""

    def test_each_answer_arrives_in_one_segment(self):
        with open(os.path.join(os.environ["MLD_FIXTURES"], "admission",
                               "bench-jobset-5k.json"), "rb") as f:
            review = f.read()
        wire = (b"POST /mutate?timeout=10s HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                % (len(review), review))
        with Webhook() as wh:
            raw = socket.create_connection(("127.0.0.1", wh.port), timeout=10 * SLOW)
            with wh.context().wrap_socket(raw, server_hostname="localhost") as tls:
                f = tls.makefile("rb")
                tls.sendall(wire)  # the first answer also follows the session tickets
                self.assertEqual(read_response(f)[0], 200)
                for i in range(10):
                    before = data_segments_in(tls)
                    tls.sendall(wire)
                    status, body = read_response(f)
                    self.assertEqual(status, 200, body[:200])
                    self.assertIn("patch", json.loads(body)["response"])
                    self.assertEqual(data_segments_in(tls) - before, 1, "answer %d" % i)
                tls.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertEqual(read_response(f), (200, b"ok\n"))


class StartupCertificateTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mld-cert-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, crt, key):
        return subprocess.run([WEBHOOK, "--standalone", "--bind-address", "127.0.0.1",
                               "--port", str(free_port()), "--tls-cert-file", crt,
                               "--tls-key-file", key], capture_output=True, timeout=20 * SLOW)

    def expect_refusal(self, crt, key, pattern):
        r = self.start(crt, key)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr.decode(), pattern)

    def test_mismatched_key(self):
        crt, _ = make_cert(self.tmp, "a")
        _, other = make_cert(self.tmp, "b")
        self.expect_refusal(crt, other, re.escape(other) + " does not match the certificate in " +
                            re.escape(crt))

    def test_expired(self):
        key, csr, crt = (os.path.join(self.tmp, n) for n in ("e.key", "e.csr", "e.crt"))
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
        openssl("x509", "-req", "-in", csr, "-signkey", key, "-days", "-1", "-out", crt)
        self.expect_refusal(crt, key, re.escape(crt) + ": certificate expired at 20")

    def test_missing_and_garbage_files(self):
        crt, key = make_cert(self.tmp)
        self.expect_refusal(os.path.join(self.tmp, "nope.crt"), key, "nope.crt: No such file")
        junk = os.path.join(self.tmp, "junk.crt")
        with open(junk, "w") as f:
            f.write("not a certificate\n")
        self.expect_refusal(junk, key, "junk.crt: no usable PEM certificate")
        self.expect_refusal(crt, junk, "junk.crt: cannot parse the private key")

    def test_env_cert_path_and_key_path(self):
        crt, key = make_cert(self.tmp)
        port = free_port()
        env = {**os.environ, "CERT_PATH": crt, "KEY_PATH": key}
        p = subprocess.Popen([WEBHOOK, "--standalone", "--bind-address", "127.0.0.1",
                              "--port", str(port)], env=env, stderr=subprocess.PIPE)
        try:
            ctx = ssl.create_default_context(cafile=crt)
            deadline = time.time() + 10 * SLOW
            while True:
                try:
                    with ctx.wrap_socket(__import__("socket").create_connection(
                            ("127.0.0.1", port), timeout=2), server_hostname="localhost"):
                        break
                except OSError:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.05)
        finally:
            p.terminate()
            p.wait(timeout=20)


class RotationTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mld-rot-")
        self.ca = CA(self.tmp)
        self.vol = SecretVolume(os.path.join(self.tmp, "certs"))
        os.makedirs(self.vol.dir)
        self.first = self.vol.publish(self.ca)
        self.review = controllers.review(
            {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "r", "labels": {"managed-mldiagnostics-gke": "true"}},
             "spec": {"containers": [{"name": "c", "image": "i"}]}}, "ns")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def webhook(self):
        wh = Webhook(cert_dir=self.vol.dir)
        wh.crt_trust = self.ca.crt
        wh.context = lambda: ssl.create_default_context(cafile=self.ca.crt)
        return wh

    def test_rotation_under_load_zero_failures(self):
        with self.webhook() as wh:
            stop = threading.Event()
            failures, seen, count = [], set(), [0]
            lock = threading.Lock()

            def client(keepalive):
                conn = wh.connect() if keepalive else None
                while not stop.is_set():
                    c = conn or wh.connect()
                    try:
                        _, patch = wh.review(self.review, conn=c)
                        if patch is None:
                            raise AssertionError("no patch")
                        with lock:
                            count[0] += 1
                            seen.add(peer_serial(c.sock))
                    except Exception as e:  # any failure counts
                        with lock:
                            failures.append(repr(e))
                    finally:
                        if not keepalive:
                            c.close()
                if conn:
                    conn.close()

            threads = [threading.Thread(target=client, args=(k,)) for k in (False, False, True, True)]
            for t in threads:
                t.start()
            serials = [self.first]
            for _ in range(5):
                time.sleep(0.4 * SLOW)
                serials.append(self.vol.publish(self.ca))
            time.sleep(2.5 * SLOW)  # the last rotation reaches new handshakes
            stop.set()
            for t in threads:
                t.join(timeout=30)
            self.assertEqual(failures, [], "requests failed during rotation")
            # the load ran throughout: requests on at least three certificates
            # (below); how many fit in the time is the machine's, not a check
            self.assertGreater(count[0], 5)
            self.assertIn(serials[-1], seen, "new handshakes must use the newest certificate")
            self.assertGreaterEqual(len(seen & set(serials)), 3)
            c = wh.connect()
            wh.request("GET", "/healthz", conn=c)
            self.assertEqual(peer_serial(c.sock), serials[-1])
            c.close()
            _, _, metrics = wh.request("GET", "/metrics")
            m = re.search(rb'certificate_reloads_total\{result="success"\} (\d+)', metrics)
            self.assertGreaterEqual(int(m.group(1)), 5)

    def test_bad_rotation_keeps_the_old_certificate(self):
        with self.webhook() as wh:
            _, stray = make_cert(self.tmp, "stray")
            self.vol.publish(self.ca, key_from=stray)  # mismatched pair
            time.sleep(1.5 * SLOW)
            c = wh.connect()
            _, patch = wh.review(self.review, conn=c)
            self.assertIsNotNone(patch)
            self.assertEqual(peer_serial(c.sock), self.first, "the old pair stays in use")
            c.close()
            _, _, metrics = wh.request("GET", "/metrics")
            self.assertRegex(metrics, rb'certificate_reloads_total\{result="rejected"\} [1-9]')
            self.assertIn("does not match the certificate", wh.logs())
            good = self.vol.publish(self.ca)
            deadline = time.time() + 10 * SLOW
            while True:
                c = wh.connect()
                wh.request("GET", "/healthz", conn=c)
                serial = peer_serial(c.sock)
                c.close()
                if serial == good or time.time() > deadline:
                    break
                time.sleep(0.1)
            self.assertEqual(serial, good)


if __name__ == "__main__":
    unittest.main()
