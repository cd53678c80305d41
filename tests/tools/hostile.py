"""Hostile clients of a TLS server on loopback, as a separate process (so its own CPU use
never slows the test's normal client through the GIL). Each mode is bounded in count and
time and prints one JSON line of what it did.

  hostile.py slowloris PORT --idle N --half M --seconds S
      holds N TCP connections that never send a byte and M TLS handshakes left half-open
      (a ClientHello sent, never a second flight) for S seconds; every connection the
      server closes is opened again at once, as a slowloris does, so the server sees N+M
      held the whole time (--no-reopen: only what the server keeps). Reports how many it
      opened and how many the server closed.
  hostile.py drop PORT --count N [--concurrency C]
      N connections, each dropped (RST) at one of five points in turn: after the TCP
      connect, after the ClientHello, after the handshake, halfway through the request
      headers, halfway through the body.
"""
import argparse
import json
import resource
import selectors
import socket
import ssl
import struct
import sys
import threading
import time


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def client_hello():
    """A real first flight: the bytes Python's TLS client sends, without a peer."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def reset(sock):
    """Close with an RST, as a crashed or killed client does."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def slowloris(port, idle, half, seconds, reopen=True):
    hello = client_hello()
    sel = selectors.DefaultSelector()
    opened = closed = refused = 0
    held_max = 0

    def open_one(kind):
        nonlocal opened, refused
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            refused += 1
            return
        s.setblocking(False)
        if kind == "half":
            try:
                s.send(hello)
            except OSError:
                pass
        sel.register(s, selectors.EVENT_READ, kind)
        opened += 1

    for _ in range(idle):
        open_one("idle")
    for _ in range(half):
        open_one("half")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        held_max = max(held_max, len(sel.get_map()))
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            try:
                data = s.recv(65536)  # the server's flight, or its close
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                continue  # a ServerHello and the rest: never answered
            sel.unregister(s)
            s.close()
            closed += 1
            if reopen and time.monotonic() < deadline:
                open_one(key.data)
    held = len(sel.get_map())
    for key in list(sel.get_map().values()):
        reset(key.fileobj)
    return {"mode": "slowloris", "opened": opened, "closed_by_server": closed,
            "refused": refused, "held_max": held_max, "held_at_end": held}


STAGES = ("tcp", "hello", "handshake", "headers", "body")


def drop_one(port, stage, ctx, hello):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        if stage == "tcp":
            return
        if stage == "hello":
            s.sendall(hello)
            return
        t = ctx.wrap_socket(s, server_hostname="localhost")
        s = t
        if stage == "handshake":
            return
        body = b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":' + \
            b'{"uid":"u","object":{"kind":"Pod"}' + b" " * 4000 + b"}}"
        head = (b"POST /mutate?timeout=10s HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
        if stage == "headers":
            t.sendall(head[:len(head) // 2])
        else:
            t.sendall(head + body[:len(body) // 2])
    finally:
        reset(s)


def drop(port, count, concurrency):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    hello = client_hello()
    lock = threading.Lock()
    state = {"next": 0, "done": 0, "errors": 0, "by_stage": dict.fromkeys(STAGES, 0)}

    def worker():
        while True:
            with lock:
                i = state["next"]
                if i >= count:
                    return
                state["next"] += 1
            stage = STAGES[i % len(STAGES)]
            try:
                drop_one(port, stage, ctx, hello)
                ok = True
            except OSError:
                ok = False
            with lock:
                state["done" if ok else "errors"] += 1
                state["by_stage"][stage] += 1

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"mode": "drop", "count": count, "dropped": state["done"], "errors": state["errors"],
            "by_stage": state["by_stage"], "seconds": round(time.monotonic() - t0, 2)}


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    sl = sub.add_parser("slowloris")
    sl.add_argument("port", type=int)
    sl.add_argument("--idle", type=int, default=1000)
    sl.add_argument("--half", type=int, default=200)
    sl.add_argument("--seconds", type=float, default=60)
    sl.add_argument("--no-reopen", action="store_true",
                    help="hold what the server accepts, never open again what it closes")
    dr = sub.add_parser("drop")
    dr.add_argument("port", type=int)
    dr.add_argument("--count", type=int, default=10000)
    dr.add_argument("--concurrency", type=int, default=16)
    a = ap.parse_args()
    raise_nofile()
    if a.mode == "slowloris":
        out = slowloris(a.port, a.idle, a.half, min(a.seconds, 600), not a.no_reopen)
    else:
        out = drop(a.port, min(a.count, 100000), max(1, min(a.concurrency, 64)))
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
