"""Lifecycle of the real webhook binary: SIGTERM drain with requests in
flight, the shutdown deadline, slow clients, probes and metrics."""
import http.client
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import controllers  # noqa: E402
from harness import SLOW, Webhook, free_port  # noqa: E402

REVIEW = json.dumps(controllers.review(
    {"apiVersion": "v1", "kind": "Pod",
     "metadata": {"name": "p", "labels": {"managed-mldiagnostics-gke": "true"}},
     "spec": {"containers": [{"name": "c", "image": "i"}]}}, "ns")).encode()


def start_slow_post(wh, first_part):
    """Open a request and send its headers plus the first part of the body."""
    c = wh.connect(timeout=30)
    c.putrequest("POST", "/mutate?timeout=10s")
    c.putheader("Content-Type", "application/json")
    c.putheader("Content-Length", str(len(REVIEW)))
    c.endheaders()
    c.send(REVIEW[:first_part])
    return c


def wait_in_flight(wh, conn, n):
    """Until the server counts n requests in flight besides the /metrics one
    asking (its in-flight gauge), so a signal finds them arrived; bounded."""
    deadline = time.time() + 10 * SLOW
    while True:
        _, _, body = wh.request("GET", "/metrics", conn=conn)
        for line in body.decode().splitlines():
            if line.startswith("mldiagnostics_webhook_inflight_requests "):
                if float(line.split()[1]) >= n + 1 or time.time() > deadline:
                    return
        time.sleep(0.02)


class DrainTest(unittest.TestCase):
    def test_sigterm_answers_request_in_flight(self):
        with Webhook("--shutdown-timeout", "20s") as wh:
            idle = wh.connect()
            self.assertEqual(wh.request("GET", "/readyz", conn=idle)[0], 200)
            slow = start_slow_post(wh, 100)  # in flight: half a body sent
            wait_in_flight(wh, idle, 1)  # on a busy machine its headers may arrive late
            wh.proc.send_signal(signal.SIGTERM)
            # not ready any more (as soon as the signal is handled: polled, so a
            # busy machine only makes it later), and not accepting connections
            deadline = time.time() + 10 * SLOW
            while True:
                status, headers, body = wh.request("GET", "/readyz", conn=idle)
                if status != 200 or time.time() > deadline:
                    break
                # a 200 read before the drain keeps the connection (one reading
                # of the drain decides both; a 200 that closed it raced)
                self.assertNotEqual(headers.get("Connection"), "close")
                time.sleep(0.05)
            self.assertEqual(status, 503)
            self.assertEqual(headers.get("Connection"), "close")
            while time.time() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", wh.port), timeout=2).close()
                except OSError:
                    break
                time.sleep(0.05)
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", wh.port), timeout=2).close()
            # the request in flight completes and is answered properly
            slow.send(REVIEW[100:])
            r = slow.getresponse()
            self.assertEqual(r.status, 200)
            doc = json.loads(r.read())
            self.assertTrue(doc["response"]["allowed"])
            self.assertIn("patch", doc["response"])
            self.assertEqual(wh.proc.wait(timeout=10 * SLOW), 0)
            self.assertIn('"unanswered":0', wh.logs())

    def test_shutdown_timeout_bounds_the_drain(self):
        with Webhook("--shutdown-timeout", "1s") as wh:
            slow = start_slow_post(wh, 10)  # never finished
            wait_in_flight(wh, None, 1)  # its headers have arrived: it is in flight
            t0 = time.time()
            wh.proc.send_signal(signal.SIGTERM)
            self.assertEqual(wh.proc.wait(timeout=10 * SLOW), 0)
            self.assertLess(time.time() - t0, 1 + 2 * SLOW)
            self.assertIn('"unanswered":1', wh.logs())
            slow.close()

    def test_sigterm_under_load_every_answer_complete(self):
        with Webhook("--shutdown-timeout", "10s") as wh:
            stop = threading.Event()
            broken, answered = [], [0]
            lock = threading.Lock()

            def client():
                c = None
                while not stop.is_set():
                    try:
                        c = c or wh.connect(timeout=10)
                        c.request("POST", "/mutate", body=REVIEW,
                                  headers={"Content-Type": "application/json"})
                    except (ConnectionRefusedError, ConnectionResetError, BrokenPipeError,
                            http.client.RemoteDisconnected, OSError):
                        # not sent (listener closed, idle connection closed): not in flight
                        c = None
                        if wh.proc.poll() is not None:
                            return
                        time.sleep(0.01)
                        continue
                    try:
                        r = c.getresponse()
                        data = r.read()
                        ok = r.status == 200 and json.loads(data)["response"]["allowed"]
                        with lock:
                            answered[0] += 1
                            if not ok:
                                broken.append((r.status, data[:100]))
                        if r.getheader("Connection") == "close":
                            c.close()
                            c = None
                    except http.client.RemoteDisconnected:
                        c = None  # closed while idle, before our request reached it
                    except Exception as e:  # a started response that did not complete
                        with lock:
                            broken.append(repr(e))
                        c = None

            threads = [threading.Thread(target=client) for _ in range(6)]
            for t in threads:
                t.start()
            time.sleep(1.0 * SLOW)
            before = answered[0]
            wh.proc.send_signal(signal.SIGTERM)
            self.assertEqual(wh.proc.wait(timeout=15 * SLOW), 0)
            stop.set()
            for t in threads:
                t.join(timeout=30)
            self.assertGreater(before, 20)
            self.assertEqual(broken, [], "every response that started must be complete")

    def test_drain_keeps_pooled_connections_until_their_next_answer(self):
        """The API server keeps a pool of keep-alive connections and writes its next
        request on any of them; kube-proxy moves only new connections to the new pods.
        So a draining webhook must not close a pooled connection under it: each one
        is closed by its next answer (Connection: close), and the client's new
        connection goes to the other replica. Not one request may fail."""
        with Webhook("--shutdown-timeout", "20s") as old, Webhook() as new:
            pool, lock = [], threading.Lock()  # FIFO: every pooled connection is used
            for _ in range(8):
                c = old.connect(timeout=10)
                self.assertEqual(old.request("GET", "/healthz", conn=c)[0], 200)
                pool.append(c)
            failures, answered, moved = [], [0], [0]
            stop = threading.Event()

            def one(c):
                """One admission on c; returns the connection to pool again."""
                try:
                    c.request("POST", "/mutate?timeout=10s", body=REVIEW,
                              headers={"Content-Type": "application/json"})
                    r = c.getresponse()
                    data = r.read()
                except Exception as e:  # the request was lost: admitted uninjected
                    failures.append(repr(e))
                    c.close()
                    return new.connect(timeout=10)
                answered[0] += 1
                if r.status != 200 or "patch" not in json.loads(data)["response"]:
                    failures.append((r.status, data[:100]))
                if r.getheader("Connection") != "close":
                    return c
                c.close()
                moved[0] += 1
                return new.connect(timeout=10)  # kube-proxy: a new pod

            def client():
                while not stop.is_set():
                    with lock:
                        c = pool.pop(0)
                    c = one(c)
                    with lock:
                        pool.append(c)
                    time.sleep(0.01)

            threads = [threading.Thread(target=client) for _ in range(3)]
            for t in threads:
                t.start()
            try:
                time.sleep(0.5 * SLOW)
                old.proc.send_signal(signal.SIGTERM)
                self.assertEqual(old.proc.wait(timeout=30 * SLOW), 0)
                time.sleep(0.3 * SLOW)  # the pool keeps working on the new replica
            finally:
                stop.set()
                for t in threads:
                    t.join(timeout=30)
            self.assertEqual(failures, [], "a pooled connection was closed under its client")
            self.assertEqual(moved[0], 8, "each pooled connection closed by its next answer")
            self.assertIn('"unanswered":0', old.logs())
            self.assertIn('"connections_closed":0', old.logs())
            self.assertGreater(answered[0], 8)
            for c in pool:
                c.close()

    def test_drain_closes_an_unused_connection_at_the_deadline(self):
        with Webhook("--shutdown-timeout", "1s") as wh:
            idle = wh.connect(timeout=10)
            self.assertEqual(wh.request("GET", "/healthz", conn=idle)[0], 200)
            t0 = time.time()
            wh.proc.send_signal(signal.SIGTERM)
            self.assertEqual(wh.proc.wait(timeout=10 * SLOW), 0)
            self.assertGreaterEqual(time.time() - t0, 0.9)  # kept until the deadline
            self.assertIn('"unanswered":0,"connections_closed":1', wh.logs().replace(" ", ""))
            idle.close()



class FootprintTest(unittest.TestCase):
    def test_serving_maps_neither_libcurl_nor_libcrypto(self):
        """libcurl (cluster mode) and libcrypto (certgen) are loaded on first use, so a
        standalone server, after serving, never maps them (idle RSS, DESIGN §6)."""
        with Webhook() as wh:
            status, _, _ = wh.request("GET", "/healthz")
            self.assertEqual(status, 200)
            with open("/proc/%d/maps" % wh.proc.pid) as f:
                maps = f.read()
        self.assertNotIn("libcurl", maps)
        self.assertNotIn("libcrypto", maps)


class LimitsAndProbesTest(unittest.TestCase):
    def test_slow_client_is_cut_off(self):
        with Webhook("--request-timeout", "1s") as wh:
            c = wh.connect(timeout=10)
            c.connect()
            c.sock.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\n")  # and then nothing
            t0 = time.time()
            data = c.sock.recv(100)  # the server closes the connection
            self.assertEqual(data, b"")
            self.assertLess(time.time() - t0, 4 * SLOW)
            c.close()
            self.assertEqual(wh.request("GET", "/healthz")[0], 200)

    def test_idle_keep_alive_outlives_the_request_timeout(self):
        """Between requests a connection waits --idle-timeout, not --request-timeout:
        the API server's pool keeps one idle for 90 s and must close it first."""
        with Webhook("--request-timeout", "1s", "--idle-timeout", "4s") as wh:
            c = wh.connect(timeout=10)
            self.assertEqual(wh.request("GET", "/healthz", conn=c)[0], 200)
            time.sleep(2.0)  # past the request timeout, inside the idle one
            self.assertEqual(wh.request("GET", "/healthz", conn=c)[0], 200)
            t0 = time.time()
            c.sock.settimeout(20 * SLOW)
            self.assertEqual(c.sock.recv(100), b"")  # then the server closes it
            self.assertGreater(time.time() - t0, 3.0)
            c.close()

    def test_metrics_and_probes(self):
        port = free_port()
        with Webhook("--metrics-bind-address", "127.0.0.1:%d" % port) as wh:
            wh.review(REVIEW)
            self.assertEqual(wh.request("POST", "/mutate", b"junk")[0], 400)
            # a request counts as in flight until the server has completed it, which may
            # be just after its client read the answer: wait for that, within the
            # --request-timeout (10 s) any connection's request is bounded by
            deadline = time.time() + 10 * SLOW
            while True:
                status, headers, text = wh.request("GET", "/metrics")
                text = text.decode()
                if "mldiagnostics_webhook_inflight_requests 1\n" in text or \
                        time.time() > deadline:
                    break
                time.sleep(0.02)
            self.assertEqual(status, 200)
            self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"))
            for needle in ('mldiagnostics_webhook_requests_total{outcome="injected"} 1',
                           'mldiagnostics_webhook_requests_total{outcome="invalid"} 1',
                           'mldiagnostics_webhook_request_duration_seconds_bucket{le="5e-05"}',
                           'mldiagnostics_webhook_request_duration_seconds_bucket{le="0.0005"}',
                           'mldiagnostics_webhook_request_duration_seconds_bucket{le="+Inf"} 2',
                           "mldiagnostics_webhook_request_duration_seconds_count 2",
                           "# TYPE mldiagnostics_webhook_request_duration_seconds histogram",
                           "mldiagnostics_webhook_inflight_requests 1",
                           "mldiagnostics_webhook_ready 1"):
                self.assertIn(needle, text)
            expiry = float(re.search(r"^mldiagnostics_webhook_certificate_expiry_seconds (\S+)$",
                                     text, re.M).group(1))
            self.assertGreater(expiry, 20 * 86400)
            # the plain-HTTP listener serves the same probes and metrics
            plain = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            for path in ("/healthz", "/readyz", "/metrics"):
                plain.request("GET", path)
                r = plain.getresponse()
                r.read()
                self.assertEqual(r.status, 200, path)
            plain.close()


if __name__ == "__main__":
    unittest.main()
