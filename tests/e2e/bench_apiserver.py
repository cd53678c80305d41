"""Admission seen from a real API server (make bench; DESIGN §6): a burst of
500 pod creates through kube-apiserver with no webhook, with ours and with
the Go net/http peer (tests/bench/peers/go-webhook), one after the other in
one run on one cluster.

Per arm and load (one create at a time, and 25 at once: the API server
saturated), pods/s of the burst from a Go client on one HTTP/2 connection
as client-go sends them (tests/e2e/apiburst), and the
admission latency the API server itself records for the webhook:
`apiserver_admission_webhook_admission_duration_seconds` (count, mean from
_sum/_count, and the bucket bounds of p50/p99 — its first bucket is 5 ms),
and, at microsecond resolution, the API server's own OpenTelemetry span
"Call mutating webhook" (tracing on, every request sampled, exported to a
receiver here), with the webhook's own time per admission from its log.
A fourth arm, "floor", calls the same webhook for the pod without its
label: nothing is injected, so its latency is the API server's own cost of
calling any webhook (p99 5-6 ms one at a time on a 2-core machine). The
bar is the latency a webhook adds over that floor: p50 and p99 of (ours -
floor) <= 1/2 of (Go peer - floor), at each load, PASS/MISS in a target
table (--report writes it as Markdown for tests/bench/summary.py). The span
is also split at its "Request completed" event into the HTTP exchange,
judged the same way, and the patch's application (ours <= the Go peer's):
one at a time the application of the fewest operations alone is more than
half of what the Go peer adds, so the parts say what a webhook controls.

The pods are the 5 KiB JobSet pod of the webhook benchmark
(tests/fixtures/admission/bench-jobset-5k.json) as a bare pod labelled
managed-mldiagnostics-gke=true, so both webhooks (standalone, deciding from
its labels) inject it; each arm registers one MutatingWebhookConfiguration
(failurePolicy Fail) for the bench namespace. The cluster is the control
plane alone: nothing else watches pods.

    python bench_apiserver.py [--pods 500] [--clients 1,25] [--json OUT] [--report MD]
                              [--no-tracing]
"""
import argparse
import base64
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

import grpc  # noqa: E402
from opentelemetry.proto.collector.trace.v1 import (trace_service_pb2,  # noqa: E402
                                                     trace_service_pb2_grpc)

import cluster  # noqa: E402
import controlplane  # noqa: E402
import kubeapi  # noqa: E402
import kubelet  # noqa: E402
from procs import Proc, free_port, make_ca, make_leaf, wait_until  # noqa: E402

ROOT = cluster.ROOT
NS = "bench-admission"
SPAN = "Call mutating webhook"
METRIC = "apiserver_admission_webhook_admission_duration_seconds"


class SpanReceiver:
    """OTLP/gRPC trace receiver keeping, by webhook name, the durations of
    the API server's webhook-call spans and of their two parts: the call
    (start to the span's "Request completed" event: the HTTP exchange and the
    answer's decoding) and what follows it (decoding and applying the patch,
    decoding the patched pod, comparing and defaulting it)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.durations = {}
        self.parts = {}
        rx = self

        class T(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request, context):
                for rs in request.resource_spans:
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            if s.name != SPAN:
                                continue
                            hook = next((a.value.string_value for a in s.attributes
                                         if a.key == "webhook"), "")
                            done = next((e.time_unix_nano for e in s.events
                                         if e.name == "Request completed"), None)
                            with rx.lock:
                                rx.durations.setdefault(hook, []).append(
                                    (s.end_time_unix_nano - s.start_time_unix_nano) / 1e3)
                                if done:
                                    rx.parts.setdefault(hook, []).append(
                                        ((done - s.start_time_unix_nano) / 1e3,
                                         (s.end_time_unix_nano - done) / 1e3))
                return trace_service_pb2.ExportTraceServiceResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                                  options=[("grpc.max_receive_message_length", 64 << 20)])
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(T(), self.server)
        self.port = free_port()
        self.server.add_insecure_port("127.0.0.1:%d" % self.port)
        self.server.start()

    def take(self, hook):
        """(span durations, [(call, after the call)]) in µs, forgotten here."""
        with self.lock:
            return self.durations.pop(hook, []), self.parts.pop(hook, [])

    def stop(self):
        self.server.stop(0)


def bench_pod():
    with open(os.path.join(ROOT, "tests", "fixtures", "admission", "bench-jobset-5k.json")) as f:
        pod = json.load(f)["request"]["object"]
    pod = copy.deepcopy(pod)
    md = pod["metadata"]
    md.pop("ownerReferences", None)  # no Job here: the garbage collector would delete them
    md["generateName"] = "burst-"
    md["namespace"] = NS
    md.pop("name", None)
    md["labels"] = {**md.get("labels", {}), "managed-mldiagnostics-gke": "true",
                    kubelet.IGNORE_LABEL: "ignore"}
    spec = pod["spec"]
    keep = [v for v in spec.get("volumes", []) if not v["name"].startswith("kube-api-access")]
    spec["volumes"] = keep
    for c in spec["containers"]:
        c["volumeMounts"] = [m for m in c.get("volumeMounts", [])
                             if not m["name"].startswith("kube-api-access")]
    spec.pop("nodeName", None)
    pod.pop("status", None)
    return pod


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))
    return xs[k]


def scrape(api, hook):
    """The API server's webhook histogram for `hook`: {le: count}, sum, count."""
    st, _, body = api.raw("GET", "/metrics", accept="text/plain")
    text = body.decode()
    buckets, total, count = {}, 0.0, 0
    for line in text.splitlines():
        if not line.startswith(METRIC) or 'name="%s"' % hook not in line or \
           'type="admit"' not in line or 'rejected="false"' not in line:
            continue
        v = float(line.rsplit(" ", 1)[1])
        if line.startswith(METRIC + "_bucket"):
            le = re.search(r'le="([^"]+)"', line).group(1)
            buckets[le] = buckets.get(le, 0) + v
        elif line.startswith(METRIC + "_sum"):
            total += v
        elif line.startswith(METRIC + "_count"):
            count += int(v)
    return buckets, total, count


def bucket_quantile(before, after, q):
    """The upper bound of the bucket holding quantile q of the increments."""
    les = sorted((float("inf") if k == "+Inf" else float(k), k) for k in after)
    n = after.get("+Inf", 0) - before.get("+Inf", 0)
    for le, key in les:
        if after[key] - before.get(key, 0) >= q * n:
            return le
    return float("inf")


def register(api, name, url, ca_pem):
    api.apply({"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingWebhookConfiguration", "metadata": {"name": name},
               "webhooks": [{"name": "pods." + name + ".bench", "sideEffects": "None",
                             "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
                             "timeoutSeconds": 5, "reinvocationPolicy": "Never",
                             "namespaceSelector": {"matchLabels": {
                                 "kubernetes.io/metadata.name": NS}},
                             "clientConfig": {"url": url, "caBundle": base64.b64encode(
                                 ca_pem).decode()},
                             "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                        "operations": ["CREATE"], "resources": ["pods"]}]}]})
    time.sleep(2)  # the API server's webhook configuration informer


def build_burster(work):
    out = os.path.join(work, "apiburst")
    go = "/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else "go"
    subprocess.run([go, "build", "-o", out, "."], cwd=os.path.join(HERE, "apiburst"),
                   check=True, timeout=300, env={**os.environ, "GOFLAGS": "-mod=mod",
                                                 "GOPROXY": "off", "CGO_ENABLED": "0"})
    return out


def burst(cp, burster, pod_file, n, clients):
    """n creates from `clients` concurrent requests on one HTTP/2 connection, as
    client-go sends them (apiburst, Go: the Python client would be the bottleneck)."""
    p = subprocess.run([burster, "-server", cp.server, "-ca", cp.ca[0],
                        "-token", cp.admin_token, "-namespace", NS, "-pod", pod_file,
                        "-n", str(n), "-c", str(clients)], capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        raise RuntimeError("apiburst: " + p.stderr)
    return json.loads(p.stdout)


def clear(api):
    api.request("DELETE", kubeapi.path_for("Pod", NS), query={"gracePeriodSeconds": "0"})
    wait_until(lambda: not api.list(kubeapi.path_for("Pod", NS)), 120, "bench pods deleted")


def go_peer(work, log_dir):
    out = os.path.join(work, "gowebhook")
    src = os.path.join(ROOT, "tests", "bench", "peers", "go-webhook")
    go = "/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else "go"
    subprocess.run([go, "build", "-o", out, "."], cwd=src, check=True, timeout=600,
                   env={**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off",
                        "CGO_ENABLED": "0"})
    ca = make_ca(work, "go-ca", "go-peer-ca")
    crt, key = make_leaf(work, "go", ca, "go-peer", sans=["IP:127.0.0.1"])
    port = free_port()
    p = Proc("go-peer", [out, "-addr", "127.0.0.1:%d" % port, "-cert", crt, "-key", key,
                         "-cluster-name", "e2e-cluster"], log_dir).start()
    import socket
    wait_until(lambda: socket.create_connection(("127.0.0.1", port), 1).close() or True,
               30, "Go peer listening")
    return p, port, ca[0]


def webhook_own_us(log_path, offset):
    """The webhook's own microseconds per admission, from its decision log
    lines written after `offset`."""
    out = []
    with open(log_path, "rb") as f:
        f.seek(offset)
        for line in f:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if "us" in d and "uid" in d:
                out.append(d["us"])
    return out


def our_webhook(work, log_dir):
    """The webhook as the Go peer runs: standalone (decisions from the pod's
    labels), its own certificate for 127.0.0.1."""
    ca = make_ca(work, "wh-ca", "webhook-ca")
    crt, key = make_leaf(work, "wh", ca, "webhook", sans=["IP:127.0.0.1"])
    port = free_port()
    exe = os.path.join(os.environ.get("MLD_BIN_DIR", os.path.join(ROOT, "build", "bin")),
                       "mldiagnostics-webhook")
    p = Proc("webhook", [exe, "--standalone", "--bind-address", "127.0.0.1", "--port",
                         str(port), "--tls-cert-file", crt, "--tls-key-file", key,
                         "--cluster-name", "e2e-cluster"], log_dir).start()
    import socket
    wait_until(lambda: socket.create_connection(("127.0.0.1", port), 1).close() or True,
               30, "webhook listening")
    return p, port, ca[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=500)
    ap.add_argument("--clients", default="1,25",
                    help="concurrent creates, comma-separated levels (one round of arms each)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--report", default=None, help="write the target table here (Markdown)")
    ap.add_argument("--no-tracing", action="store_true",
                    help="no OpenTelemetry spans (the histogram's 5 ms buckets and mean only)")
    a = ap.parse_args()
    rx = SpanReceiver()
    # The control plane alone (etcd, kube-apiserver, kube-controller-manager for
    # the default ServiceAccount): no workload controllers, node or operator
    # watching pods, whose decoding of 500 pod events would cost more CPU than
    # the admission under test (JobSet's manager alone: ~3 ms per pod event).
    bins = cluster.components()
    cp = controlplane.ControlPlane(
        bins["kube"], os.path.join(ROOT, "build", "e2e-bench-%d" % os.getpid()),
        tracing_endpoint=None if a.no_tracing else "127.0.0.1:%d" % rx.port)
    results = []
    procs = []
    try:
        cp.start()
        api = cp.api
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        wait_until(lambda: api.exists(kubeapi.path_for("ServiceAccount", NS, "default")), 30,
                   "default ServiceAccount")
        pod = bench_pod()
        work = tempfile.mkdtemp(prefix="mld-bench-api-")
        pod_file = os.path.join(work, "pod.json")
        with open(pod_file, "w") as f:
            json.dump(pod, f)
        # The floor: the same webhook called for the same pod without the label
        # decides "not opted in" and answers without a patch, so what remains
        # is the API server's own cost of calling a webhook.
        unlabelled = copy.deepcopy(pod)
        del unlabelled["metadata"]["labels"]["managed-mldiagnostics-gke"]
        floor_file = os.path.join(work, "pod-unlabelled.json")
        with open(floor_file, "w") as f:
            json.dump(unlabelled, f)
        burster = build_burster(work)
        go, go_port, go_ca = go_peer(work, cp.logs)
        ours, our_port, our_ca_file = our_webhook(work, cp.logs)
        procs += [go, ours]
        with open(our_ca_file, "rb") as f:
            our_ca = f.read()
        with open(go_ca, "rb") as f:
            go_ca_pem = f.read()
        our_url = "https://127.0.0.1:%d/mutate" % our_port
        arms = [("none", None, None, pod_file),
                ("floor", our_url, our_ca, floor_file),
                ("mldiagnostics-webhook", our_url, our_ca, pod_file),
                ("go-peer", "https://127.0.0.1:%d/mutate" % go_port, go_ca_pem, pod_file)]
        levels = [int(x) for x in str(a.clients).split(",")]
        burst(cp, burster, pod_file, 100, max(levels))  # warm the API server's paths
        clear(api)
        for clients in levels:
            for arm, url, ca, arm_pod in arms:
                hook = "pods.zz-bench-%s.bench" % arm
                if url:
                    register(api, "zz-bench-" + arm, url, ca)
                    burst(cp, burster, arm_pod, 50, clients)  # its connections to the webhook
                    clear(api)
                    time.sleep(6)
                    rx.take(hook)
                before = scrape(api, hook)
                log_mark = os.path.getsize(ours.log_path)
                b = burst(cp, burster, arm_pod, a.pods, clients)
                time.sleep(6)  # the span batch exporter's interval
                after = scrape(api, hook)
                spans, parts = rx.take(hook)
                r = {"arm": arm, "clients": clients, "pods": a.pods, "seconds": round(b["seconds"], 3),
                     "pods_per_s": round(a.pods / b["seconds"], 1), "errors": b["errors"],
                     "injected": b["injected"], "create_p50_ms": b["p50_ms"],
                     "create_p99_ms": b["p99_ms"]}
                if b.get("first_error"):
                    r["first_error"] = b["first_error"]
                if url and arm != "go-peer":
                    own = webhook_own_us(ours.log_path, log_mark)
                    if own:
                        r.update(own_p50_ms=round(percentile(own, 0.5) / 1e3, 3),
                                 own_p99_ms=round(percentile(own, 0.99) / 1e3, 3))
                if url:
                    n = after[2] - before[2]
                    r.update(metric_count=n,
                             metric_mean_ms=round((after[1] - before[1]) / n * 1e3, 3) if n else None,
                             metric_p50_le_s=bucket_quantile(before[0], after[0], 0.5),
                             metric_p99_le_s=bucket_quantile(before[0], after[0], 0.99),
                             spans=len(spans))
                    if spans:
                        r.update(span_p50_ms=round(percentile(spans, 0.5) / 1e3, 3),
                                 span_p99_ms=round(percentile(spans, 0.99) / 1e3, 3))
                    for q, qq in (("p50", 0.5), ("p99", 0.99)):
                        if parts:
                            r["call_%s_ms" % q] = round(
                                percentile([c for c, _ in parts], qq) / 1e3, 3)
                            r["apply_%s_ms" % q] = round(
                                percentile([a for _, a in parts], qq) / 1e3, 3)
                    api.delete(kubeapi.path_for("MutatingWebhookConfiguration",
                                                name="zz-bench-" + arm))
                results.append(r)
                print(json.dumps(r), flush=True)
                clear(api)
    finally:
        for p in procs:
            p.stop()
        cp.stop()
        rx.stop()
        if all(r["errors"] == 0 for r in results) and results:
            cp.remove()
    targets = []
    for clients in sorted({r["clients"] for r in results}):
        targets += report([r for r in results if r["clients"] == clients])
    table = ["| target | figure | goal | verdict |", "|---|---:|---:|---|"] + targets
    print("\n" + "\n".join(table))
    if a.report:
        with open(a.report, "w") as f:
            f.write("# Admission seen from kube-apiserver\n\n" + "\n".join(table) + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all(r["errors"] == 0 and (r["arm"] in ("none", "floor") or
                                          r["injected"] == r["pods"]) for r in results) else 1


def report(results):
    by = {r["arm"]: r for r in results}
    print("\nAdmission seen from kube-apiserver: %d pod creates, %d at a time" % (
          results[0]["pods"], results[0]["clients"]))
    print("%-22s %7s %10s %10s %10s %10s %9s %10s %10s %10s %10s" % (
        "arm", "pods/s", "create p50", "create p99", "call p50", "call p99", "mean",
        "own p50", "own p99", "http p50", "patch p50"))

    def f(r, k):
        return "%.3f" % r[k] if r.get(k) is not None else "-"
    for r in results:
        print("%-22s %7.1f %10.2f %10.2f %10s %10s %9s %10s %10s %10s %10s" % (
            r["arm"], r["pods_per_s"], r["create_p50_ms"], r["create_p99_ms"],
            f(r, "span_p50_ms"), f(r, "span_p99_ms"), f(r, "metric_mean_ms"),
            f(r, "own_p50_ms"), f(r, "own_p99_ms"), f(r, "call_p50_ms"), f(r, "apply_p50_ms")))
    print("(ms; call = the API server's span \"Call mutating webhook\"; mean = its "
          "histogram's sum/count, whose first bucket is 5 ms; own = the webhook's own log;\n"
          " http = the call's span up to its \"Request completed\" event; patch = the rest: "
          "decoding and applying the patch, decoding the patched pod)")
    return floor_targets(by, results[0]["clients"])


def floor_targets(by, clients):
    """The bar's rows (Markdown): what each webhook adds to the API server's
    own cost of calling one (the floor arm), p50 and p99 of the span."""
    ours, go, floor = by.get("mldiagnostics-webhook"), by.get("go-peer"), by.get("floor")
    load = "one at a time" if clients == 1 else "%d at a time" % clients
    rows = []
    for q in ("p50", "p99"):
        k = "span_%s_ms" % q
        if not all(r and r.get(k) is not None for r in (ours, go, floor)):
            rows.append("| API server's call %s, %s: no spans for every arm | - | - | MISS |"
                        % (q, load))
            continue
        add, gadd = ours[k] - floor[k], go[k] - floor[k]
        ok = gadd > 0 and add <= gadd / 2
        rows.append("| API server's call %s, %s: ours − floor / Go − floor (%+.3f vs %+.3f ms; "
                    "floor %.3f ms) | %s | ≤ 0.5× | %s |"
                    % (q, load, add, gadd, floor[k],
                       "%.2f×" % (add / gadd) if gadd > 0 else "-", "PASS" if ok else "MISS"))
    for q in ("p50", "p99"):
        k, a = "call_%s_ms" % q, "apply_%s_ms" % q
        if not all(r and r.get(k) is not None for r in (ours, go, floor)):
            continue
        add, gadd = ours[k] - floor[k], go[k] - floor[k]
        ok = gadd > 0 and add <= gadd / 2
        rows.append("| its HTTP exchange %s, %s: ours − floor / Go − floor (%+.3f vs %+.3f ms) "
                    "| %s | ≤ 0.5× | %s |"
                    % (q, load, add, gadd, "%.2f×" % (add / gadd) if gadd > 0 else "-",
                       "PASS" if ok else "MISS"))
        ratio = ours[a] / go[a] if go[a] else float("inf")
        rows.append("| its patch application %s, %s: ours / Go (%.3f vs %.3f ms; floor, no "
                    "patch: %.3f ms) | %.2f× | ≤ 1× | %s |"
                    % (q, load, ours[a], go[a], floor[a], ratio, "PASS" if ratio <= 1 else "MISS"))
    return rows


if __name__ == "__main__":
    sys.exit(main())
