"""Fake JAX profiler servers for tests: real gRPC (python3-grpcio, HTTP/2)
serving tensorflow.ProfilerService from tests/fakes/profiler.proto, one
server per fake pod, each on its own 127.x.y.z address and the same port,
all in one process on one asyncio loop (a background thread).

Behaves like the TSL/JAX server (see ../../../shared/reference/profiler.md):

* a per-pod profiler lock: a Profile while another one runs on that pod
  answers INTERNAL "Another profiling session active.";
* options are honoured only when opts.version != 0: then it sleeps until
  opts.start_timestamp_ns and waits opts.duration_ms (field 9, not field 1);
* a deadline that passes first answers CANCELLED and saves nothing;
* on success it writes <repository_root>/<session_id>/<host>.xplane.pb,
  host = host_name verbatim with ':' replaced by '_' -- an empty host_name
  gives ".xplane.pb", as JAX 0.10's server does (the end-to-end tier
  showed it; the server never falls back to its own host name);
  gs://bucket/path roots are written under
  ``gcs_dir``/bucket/path (standing in for GCS);
* every request is logged (``requests``: dicts with the decoded fields,
  the pod, the arrival time, the outcome and ``ended_ns``, when the call
  ended, whatever its outcome); ``overlaps()`` lists the calls that arrived
  on a pod while another call on that pod was still open (the operator
  must never send two at once: DESIGN §4.2).

Per-pod modes: "ok", "busy" (another session holds the lock), "down" (not
listening), "slow" (waits ``slow_extra`` seconds more than asked),
"unavailable:N" (the first N calls answer UNAVAILABLE), "empty" (succeeds
with empty_trace).

    prof = FakeProfiler(port, gcs_dir)
    prof.add_pod("train-0", "127.1.0.1")
    prof.start()
    ...
    prof.stop()
"""
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import time

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
_GEN = None


def _generated():
    """profiler_pb2 / profiler_pb2_grpc, generated once per process with
    grpc_tools.protoc from profiler.proto."""
    global _GEN
    if _GEN is None:
        out = tempfile.mkdtemp(prefix="mld-proto-")
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + HERE,
                        "--python_out=" + out, "--grpc_python_out=" + out,
                        os.path.join(HERE, "profiler.proto")], check=True, timeout=60)
        sys.path.insert(0, out)
        import profiler_pb2  # noqa: E402
        import profiler_pb2_grpc  # noqa: E402
        _GEN = (profiler_pb2, profiler_pb2_grpc)
    return _GEN


class Pod:
    def __init__(self, name, ip, hostname=None, mode="ok"):
        self.name = name
        self.ip = ip
        self.hostname = hostname or name
        self.mode = mode
        self.calls = 0
        self.busy = False  # the profiler lock
        self.server = None


class FakeProfiler:
    def __init__(self, port, gcs_dir=None, slow_extra=3.0):
        self.port = port
        self.gcs_dir = gcs_dir or tempfile.mkdtemp(prefix="mld-gcs-")
        self.slow_extra = slow_extra
        self.pods = {}
        self.requests = []
        self.lock = threading.Lock()
        self.loop = None
        self.thread = None

    # ---------- setup ----------

    def add_pod(self, name, ip, hostname=None, mode="ok"):
        self.pods[name] = Pod(name, ip, hostname, mode)
        if self.loop:
            self._call(self._start_pod(self.pods[name]))
        return self.pods[name]

    def set_mode(self, name, mode):
        pod = self.pods[name]
        was = pod.mode
        pod.mode = mode
        if self.loop and (was == "down") != (mode == "down"):
            self._call(self._start_pod(pod) if was == "down" else self._stop_pod(pod))

    def start(self):
        ready = threading.Event()

        def run():
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self._start_all())
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        if not ready.wait(120):
            raise RuntimeError("fake profilers did not start")
        return self

    def stop(self):
        if not self.loop:
            return
        self._call(self._stop_all())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # ---------- queries ----------

    def requests_for(self, pod):
        with self.lock:
            return [r for r in self.requests if r["pod"] == pod]

    def overlaps(self):
        """(pod, earlier, later) for each call that arrived while an earlier
        call on the same pod had not ended yet."""
        out = []
        with self.lock:
            reqs = sorted(self.requests, key=lambda r: r["received_ns"])
        for i, later in enumerate(reqs):
            for earlier in reqs[:i]:
                end = earlier.get("ended_ns")
                if earlier["pod"] == later["pod"] and (end is None or end > later["received_ns"]):
                    out.append((later["pod"], earlier, later))
        return out

    def output_path(self, root, session, host):
        if root.startswith("gs://"):
            root = os.path.join(self.gcs_dir, root[5:])
        return os.path.join(root, session, host.replace(":", "_") + ".xplane.pb")

    def wait_requests(self, n, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if len(self.requests) >= n:
                    return True
            time.sleep(0.02)
        return False

    # ---------- the loop ----------

    def _call(self, coro, timeout=60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start_all(self):
        for pod in self.pods.values():
            await self._start_pod(pod)

    async def _stop_all(self):
        for pod in self.pods.values():
            await self._stop_pod(pod)

    async def _start_pod(self, pod):
        if pod.mode == "down" or pod.server:
            return
        pb2, pb2_grpc = _generated()
        server = grpc.aio.server()
        pb2_grpc.add_ProfilerServiceServicer_to_server(_Servicer(self, pod, pb2), server)
        if server.add_insecure_port(f"{pod.ip}:{self.port}") == 0:
            raise RuntimeError(f"cannot listen on {pod.ip}:{self.port}")
        await server.start()
        pod.server = server

    async def _stop_pod(self, pod):
        if pod.server:
            await pod.server.stop(None)
            pod.server = None


class _Servicer:
    def __init__(self, prof, pod, pb2):
        self.prof = prof
        self.pod = pod
        self.pb2 = pb2

    def _log(self, request, context, received_ns):
        o = request.opts
        entry = {
            "pod": self.pod.name, "ip": self.pod.ip, "received_ns": received_ns,
            "duration_ms": request.duration_ms, "max_events": request.max_events,
            "tools": list(request.tools), "repository_root": request.repository_root,
            "session_id": request.session_id, "host_name": request.host_name,
            "opts": {"include_dataset_ops": o.include_dataset_ops,
                     "host_tracer_level": o.host_tracer_level,
                     "device_tracer_level": o.device_tracer_level,
                     "python_tracer_level": o.python_tracer_level, "version": o.version,
                     "start_timestamp_ns": o.start_timestamp_ns, "duration_ms": o.duration_ms},
            "has_opts": request.HasField("opts"),
            "time_remaining": context.time_remaining(),
            "metadata": {k: v for k, v in context.invocation_metadata()},
            "outcome": None,
        }
        with self.prof.lock:
            self.prof.requests.append(entry)
        return entry

    async def Profile(self, request, context):
        entry = self._log(request, context, time.time_ns())
        try:
            return await self._profile(request, context, entry)
        finally:
            entry["ended_ns"] = time.time_ns()

    async def _profile(self, request, context, entry):
        pod = self.pod
        pod.calls += 1
        mode = pod.mode
        if mode.startswith("unavailable:") and pod.calls <= int(mode.split(":")[1]):
            entry["outcome"] = "UNAVAILABLE"
            await context.abort(grpc.StatusCode.UNAVAILABLE, "profiler starting up")
        if mode == "busy" or pod.busy:
            entry["outcome"] = "INTERNAL"
            await context.abort(grpc.StatusCode.INTERNAL, "Another profiling session active.")
        pod.busy = True
        try:
            return await self._session(request, context, entry)
        except asyncio.CancelledError:  # the client went away: nothing is saved
            entry["outcome"] = "CLIENT_CANCELLED"
            raise
        finally:
            pod.busy = False

    async def _session(self, request, context, entry):
        o = request.opts
        if o.version != 0:  # options honoured only with a version
            if o.start_timestamp_ns:
                delay = (o.start_timestamp_ns - time.time_ns()) / 1e9
                if delay > 0:
                    await asyncio.sleep(delay)
            entry["started_ns"] = time.time_ns()
            wait = o.duration_ms / 1000.0 + (self.prof.slow_extra if self.pod.mode == "slow" else 0)
            end = time.monotonic() + wait
            while time.monotonic() < end:
                remaining = context.time_remaining()
                if remaining is not None and remaining < 0.05:
                    entry["outcome"] = "CANCELLED"
                    await context.abort(grpc.StatusCode.CANCELLED, "profiling session cancelled")
                await asyncio.sleep(min(0.01, max(0.0, end - time.monotonic())))
        empty = self.pod.mode == "empty"
        host = request.host_name
        path = self.prof.output_path(request.repository_root, request.session_id, host)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"xspace:" + self.pod.name.encode())
        entry["outcome"] = "OK"
        entry["file"] = path
        return self.pb2.ProfileResponse(empty_trace=empty)

    async def Terminate(self, request, context):
        return self.pb2.TerminateResponse()
