"""Admission seen from a real API server (make bench; DESIGN §6): pod
creates through kube-apiserver with no webhook, with ours and with the Go
net/http peer (tests/bench/peers/go-webhook), in one run on one cluster.

Every arm has its own namespace, for which alone its webhook is registered,
so all stay registered and their bursts take turns: each arm's 1,000 pods go
in --rounds bursts (20 of 50; 10 of 100 at 25 at a time, so that a burst
is at least four waves of its load), the arms in a rotating order within
each round. Drift on this shared 2-core machine (the API server's garbage
collection, etcd's compaction, a neighbour) then falls on every arm alike;
run one after the other, the Go peer's patch application alone swung from
0.95 to 1.56 ms between runs.

Per arm and load (one create at a time, and 25 at once: the API server
saturated), pods/s of the bursts from a Go client on one HTTP/2 connection
as client-go sends them (tests/e2e/apiburst), and the
admission latency the API server itself records for the webhook:
`apiserver_admission_webhook_admission_duration_seconds` (count, mean from
_sum/_count, and the bucket bounds of p50/p99 — its first bucket is 5 ms),
and, at microsecond resolution, the API server's own OpenTelemetry span
"Call mutating webhook" (tracing on, every request sampled, exported to a
receiver here), with the webhook's own time per admission from its log.

The arms besides ours and the Go peer:
- "floor" calls our webhook for the pod without its label: nothing is
  injected, so its latency is the API server's own cost of calling any
  webhook (p99 4-6 ms one at a time on a 2-core machine);
- "go-peer-http1" is the Go peer serving HTTP/1.1 only, as kubebuilder's
  scaffold serves webhooks by default since the HTTP/2 Rapid Reset CVEs
  (ours serves HTTP/1.1; the Go peer by default HTTP/2);
- "oracle" and "oracle-spec" are tests/bench/canned_webhook answering at
  no cost our webhook's own patch for this pod, and the same change written
  as the whole spec and the whole annotations: what any webhook making this
  change can reach at best, since the API server's applying it is then
  all that is left (--no-oracles leaves them out).

The bar is the latency a webhook adds over the floor: p50 and p99 of (ours
- floor) <= 1/2 of (Go peer - floor), at each load, PASS/MISS in a target
table (--report writes it as Markdown for tests/bench/summary.py). The
oracles show that no webhook making this change can meet it here: the API
server's own work on the change is more than half of what the Go peer adds.
So the table also judges what a webhook controls: (ours - oracle) <= 1/2 of
(Go peer - oracle), the span's HTTP exchange (up to its "Request completed"
event) as the bar, and the patch's application (ours <= the Go peer's).
The other arms' rows are info.

The pods are the 5 KiB JobSet pod of the webhook benchmark
(tests/fixtures/admission/bench-jobset-5k.json) as a bare pod labelled
managed-mldiagnostics-gke=true, so both webhooks (standalone, deciding from
its labels) inject it; each arm registers one MutatingWebhookConfiguration
(failurePolicy Fail) for its namespace. The cluster is the control plane
alone: nothing else watches pods.

    python bench_apiserver.py [--pods 1000] [--rounds 20] [--clients 1,25] [--json OUT]
                              [--report MD] [--no-tracing] [--no-oracles] [--no-http1-peer]
"""
import argparse
import base64
import copy
import http.client
import json
import os
import re
import socket
import ssl
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
import jsonpatch  # noqa: E402
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
    # nor its tracking finalizer, which the Job controller would then remove
    # from each orphan pod (CPU during the bursts; a deleted pod lingers)
    md.pop("finalizers", None)
    md["generateName"] = "burst-"
    md.pop("namespace", None)  # each arm's burst goes to its own namespace
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


def arm_ns(arm):
    """Each arm's own namespace: its webhook is registered for that one alone,
    so every arm stays registered and the arms' bursts can take turns."""
    return NS + "-" + arm


def make_namespaces(api, namespaces):
    for ns in namespaces:
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for ns in namespaces:
        wait_until(lambda: api.exists(kubeapi.path_for("ServiceAccount", ns, "default")), 30,
                   "default ServiceAccount in " + ns)


def register(api, name, url, ca_pem, ns):
    api.apply({"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingWebhookConfiguration", "metadata": {"name": name},
               "webhooks": [{"name": "pods." + name + ".bench", "sideEffects": "None",
                             "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
                             "timeoutSeconds": 5, "reinvocationPolicy": "Never",
                             "namespaceSelector": {"matchLabels": {
                                 "kubernetes.io/metadata.name": ns}},
                             "clientConfig": {"url": url, "caBundle": base64.b64encode(
                                 ca_pem).decode()},
                             "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                        "operations": ["CREATE"], "resources": ["pods"]}]}]})


def build_burster(work):
    out = os.path.join(work, "apiburst")
    go = "/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else "go"
    subprocess.run([go, "build", "-o", out, "."], cwd=os.path.join(HERE, "apiburst"),
                   check=True, timeout=300, env={**os.environ, "GOFLAGS": "-mod=mod",
                                                 "GOPROXY": "off", "CGO_ENABLED": "0"})
    return out


def burst(cp, burster, pod_file, n, clients, ns):
    """n creates from `clients` concurrent requests on one HTTP/2 connection, as
    client-go sends them (apiburst, Go: the Python client would be the bottleneck)."""
    p = subprocess.run([burster, "-server", cp.server, "-ca", cp.ca[0],
                        "-token", cp.admin_token, "-namespace", ns, "-pod", pod_file,
                        "-n", str(n), "-c", str(clients)], capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        raise RuntimeError("apiburst: " + p.stderr)
    return json.loads(p.stdout)


def clear(api, namespaces):
    for ns in namespaces:
        api.request("DELETE", kubeapi.path_for("Pod", ns), query={"gracePeriodSeconds": "0"})
    for ns in namespaces:
        left = []

        def gone():
            left[:] = api.list(kubeapi.path_for("Pod", ns))
            return not left
        try:
            wait_until(gone, 120, "bench pods deleted in " + ns)
        except TimeoutError:
            raise TimeoutError("%d pods left in %s, e.g. %s" % (
                len(left), ns, json.dumps(left[0]["metadata"])[:600]))


def our_bin(name):
    return os.path.join(os.environ.get("MLD_BIN_DIR", os.path.join(ROOT, "build", "bin")), name)


def serve(name, argv, port, log_dir):
    """Start a webhook server and wait until it listens on port."""
    p = Proc(name, argv, log_dir).start()
    wait_until(lambda: socket.create_connection(("127.0.0.1", port), 1).close() or True,
               30, name + " listening")
    return p


def go_peer(work, log_dir, http1=False):
    """The Go peer; with http1, HTTP/1.1 only, as kubebuilder's scaffold
    serves webhooks by default (HTTP/2 off since the Rapid Reset CVEs)."""
    out = os.path.join(work, "gowebhook")
    if not os.path.exists(out):
        src = os.path.join(ROOT, "tests", "bench", "peers", "go-webhook")
        go = "/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else "go"
        subprocess.run([go, "build", "-o", out, "."], cwd=src, check=True, timeout=600,
                       env={**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off",
                            "CGO_ENABLED": "0"})
    name = "go-peer-http1" if http1 else "go-peer"
    ca = make_ca(work, name + "-ca", name + "-ca")
    crt, key = make_leaf(work, name, ca, name, sans=["IP:127.0.0.1"])
    port = free_port()
    p = serve(name, [out, "-addr", "127.0.0.1:%d" % port, "-cert", crt, "-key", key,
                     "-cluster-name", "e2e-cluster"] + (["-http1"] if http1 else []),
              port, log_dir)
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
    p = serve("webhook", [our_bin("mldiagnostics-webhook"), "--standalone", "--bind-address",
                          "127.0.0.1", "--port", str(port), "--tls-cert-file", crt,
                          "--tls-key-file", key, "--cluster-name", "e2e-cluster"], port, log_dir)
    return p, port, ca[0]


def admission_object(api, pod):
    """The pod as the API server hands it to a mutating webhook on create:
    decoded and defaulted (a dry-run create with no webhook registered),
    without what it sets only after admission (name from generateName, uid,
    creationTimestamp, status)."""
    obj = api.create(pod, namespace=arm_ns("none"), query={"dryRun": "All"})
    md = obj["metadata"]
    for k in ("name", "uid", "creationTimestamp", "resourceVersion"):
        md.pop(k, None)
    obj.pop("status", None)
    return obj


def ask(port, ca_file, obj):
    """Our webhook's answer to the API server's review of obj (a dict)."""
    review = {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
              "request": {"uid": "bench-oracle",
                          "kind": {"group": "", "version": "v1", "kind": "Pod"},
                          "resource": {"group": "", "version": "v1", "resource": "pods"},
                          "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
                          "requestResource": {"group": "", "version": "v1", "resource": "pods"},
                          "namespace": obj["metadata"]["namespace"], "operation": "CREATE",
                          "userInfo": {"username": "bench"}, "object": obj,
                          "oldObject": None, "dryRun": False,
                          "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}}}
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=10,
                                    context=ssl.create_default_context(cafile=ca_file))
    c.request("POST", "/mutate", json.dumps(review), {"Content-Type": "application/json"})
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    if r.status != 200 or not body["response"].get("patch"):
        raise RuntimeError("webhook gave no patch for the oracle: %d %s" % (r.status, body))
    return body


def oracles(work, log_dir, api, pod, our_port, our_ca):
    """Two canned webhooks that cost nothing and make our change to the bench
    pod: "oracle" answers our webhook's own patch, "oracle-spec" the same
    change as two operations (the whole spec, the whole annotations). Their
    latency over the floor is all a webhook making this change can reach:
    the API server's own cost of applying it."""
    obj = admission_object(api, pod)
    answer = ask(our_port, our_ca, obj)
    ops = json.loads(base64.b64decode(answer["response"]["patch"]))
    after = jsonpatch.apply_patch(obj, ops)
    whole = [{"op": "replace", "path": "/spec", "value": after["spec"]},
             {"op": "add", "path": "/metadata/annotations",
              "value": after["metadata"]["annotations"]}]
    ca = make_ca(work, "oracle-ca", "oracle-ca")
    crt, key = make_leaf(work, "oracle", ca, "oracle", sans=["IP:127.0.0.1"])
    out = []
    for name, patch in (("oracle", ops), ("oracle-spec", whole)):
        resp = copy.deepcopy(answer)
        resp["response"]["uid"] = "$UID"
        resp["response"]["patch"] = base64.b64encode(
            json.dumps(patch, separators=(",", ":")).encode()).decode()
        path = os.path.join(work, name + ".json")
        with open(path, "w") as f:
            json.dump(resp, f, separators=(",", ":"))
        port = free_port()
        p = serve(name, [our_bin("canned_webhook"), path, "--bind-address", "127.0.0.1",
                         "--port", str(port), "--tls-cert-file", crt, "--tls-key-file", key],
                  port, log_dir)
        out.append((name, p, "https://127.0.0.1:%d/mutate" % port))
    return out, ca[0]


def run_level(a, cp, api, rx, burster, arms, namespaces, ours, clients):
    """One load level: every arm's pods in --rounds turns, the arms taking
    turns in a rotating order within each, so that drift on this shared
    machine (the API server's garbage collection, etcd's compaction, a
    neighbour) falls on every arm alike rather than on whichever ran then."""
    for arm, _, _, arm_pod in arms:  # each arm's connections to its webhook
        burst(cp, burster, arm_pod, 50, clients, arm_ns(arm))
    clear(api, namespaces)
    time.sleep(6)  # the span batch exporter's interval
    hooks = {arm: "pods.zz-bench-%s.bench" % arm for arm, url, _, _ in arms if url}
    for hook in hooks.values():
        rx.take(hook)
    before = {arm: scrape(api, hook) for arm, hook in hooks.items()}
    acc = {arm: {"seconds": 0.0, "errors": 0, "injected": 0, "lat": [], "own": []}
           for arm, _, _, _ in arms}
    # a burst of at least four waves of the load: at 25 at a time a burst of
    # 50 would be mostly its own ramp-up and ramp-down
    per_round = max(1, a.pods // a.rounds, 4 * clients)
    rounds = max(1, a.pods // per_round)
    for k in range(rounds):
        for i in range(len(arms)):
            arm, _, _, arm_pod = arms[(i + k) % len(arms)]
            mark = os.path.getsize(ours.log_path)
            b = burst(cp, burster, arm_pod, per_round, clients, arm_ns(arm))
            x = acc[arm]
            x["seconds"] += b["seconds"]
            x["errors"] += b["errors"]
            x["injected"] += b["injected"]
            x["lat"] += b["latencies_ms"]
            if b.get("first_error"):
                x.setdefault("first_error", b["first_error"])
            if arm in ("floor", "mldiagnostics-webhook"):
                x["own"] += webhook_own_us(ours.log_path, mark)
    time.sleep(6)  # the span batch exporter's interval
    results = []
    for arm, url, _, _ in arms:
        x = acc[arm]
        n = per_round * rounds
        r = {"arm": arm, "clients": clients, "pods": n, "seconds": round(x["seconds"], 3),
             "pods_per_s": round(n / x["seconds"], 1), "errors": x["errors"],
             "injected": x["injected"], "create_p50_ms": round(percentile(x["lat"], 0.5), 3),
             "create_p99_ms": round(percentile(x["lat"], 0.99), 3)}
        if x.get("first_error"):
            r["first_error"] = x["first_error"]
        if x["own"]:
            r.update(own_p50_ms=round(percentile(x["own"], 0.5) / 1e3, 3),
                     own_p99_ms=round(percentile(x["own"], 0.99) / 1e3, 3))
        if url:
            r.update(span_figures(api, rx, hooks[arm], before[arm]))
        results.append(r)
        print(json.dumps(r), flush=True)
    clear(api, namespaces)
    return results


def span_figures(api, rx, hook, before):
    """The API server's figures for one webhook since `before`: its
    histogram's count, mean and bucket bounds, and its spans' percentiles,
    whole and in two parts."""
    after = scrape(api, hook)
    spans, parts = rx.take(hook)
    n = after[2] - before[2]
    r = {"metric_count": n,
         "metric_mean_ms": round((after[1] - before[1]) / n * 1e3, 3) if n else None,
         "metric_p50_le_s": bucket_quantile(before[0], after[0], 0.5),
         "metric_p99_le_s": bucket_quantile(before[0], after[0], 0.99), "spans": len(spans)}
    if spans:
        r.update(span_p50_ms=round(percentile(spans, 0.5) / 1e3, 3),
                 span_p99_ms=round(percentile(spans, 0.99) / 1e3, 3))
    for q, qq in (("p50", 0.5), ("p99", 0.99)):
        if parts:
            r["call_%s_ms" % q] = round(percentile([c for c, _ in parts], qq) / 1e3, 3)
            r["apply_%s_ms" % q] = round(percentile([p for _, p in parts], qq) / 1e3, 3)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=1000, help="creates per arm and load")
    ap.add_argument("--rounds", type=int, default=20,
                    help="turns the arms take, each creating pods/rounds (at least 4 x clients)")
    ap.add_argument("--clients", default="1,25",
                    help="concurrent creates, comma-separated levels")
    ap.add_argument("--json", default=None)
    ap.add_argument("--report", default=None, help="write the target table here (Markdown)")
    ap.add_argument("--no-http1-peer", action="store_true",
                    help="no arm for the Go peer serving HTTP/1.1 only")
    ap.add_argument("--no-oracles", action="store_true",
                    help="no canned arms making our change at no cost")
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
        if not a.no_http1_peer:
            go1, go1_port, go1_ca = go_peer(work, cp.logs, http1=True)
            procs.append(go1)
            with open(go1_ca, "rb") as f:
                arms.append(("go-peer-http1", "https://127.0.0.1:%d/mutate" % go1_port, f.read(),
                             pod_file))
        make_namespaces(api, [arm_ns(arm) for arm, _, _, _ in arms])
        if not a.no_oracles:
            canned, oracle_ca = oracles(work, cp.logs, api, pod, our_port, our_ca_file)
            with open(oracle_ca, "rb") as f:
                oracle_ca_pem = f.read()
            for name, p, url in canned:
                procs.append(p)
                arms.append((name, url, oracle_ca_pem, pod_file))
            make_namespaces(api, [arm_ns(name) for name, _, _ in canned])
        namespaces = [arm_ns(arm) for arm, _, _, _ in arms]
        for arm, url, ca, _ in arms:
            if url:
                register(api, "zz-bench-" + arm, url, ca, arm_ns(arm))
        time.sleep(2)  # the API server's webhook configuration informer
        levels = [int(x) for x in str(a.clients).split(",")]
        burst(cp, burster, pod_file, 100, max(levels), arm_ns("none"))  # the API server's paths
        clear(api, namespaces)
        for clients in levels:
            results += run_level(a, cp, api, rx, burster, arms, namespaces, ours, clients)
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


def added(label, arm, peer, base, k, target):
    """One row: what `arm` adds to `base` against what `peer` adds, ≤ ½."""
    if not all(r and r.get(k) is not None for r in (arm, peer, base)):
        return ["| %s: no spans for every arm | - | - | %s |" % (label, "MISS" if target else "info")]
    add, gadd = arm[k] - base[k], peer[k] - base[k]
    verdict = ("PASS" if gadd > 0 and add <= gadd / 2 else "MISS") if target else "info"
    return ["| %s (%+.3f vs %+.3f ms; %s %.3f ms) | %s | ≤ 0.5× | %s |"
            % (label, add, gadd, base["arm"], base[k],
               "%.2f×" % (add / gadd) if gadd > 0 else "-", verdict)]


def floor_targets(by, clients):
    """The bar's rows (Markdown), p50 and p99 of the API server's span: what
    each webhook adds to the API server's own cost of calling one (the floor
    arm); what a webhook that costs nothing adds making the same change (the
    oracles: the change's own cost, the same for every webhook making it);
    what ours adds beyond that; and the span's two parts."""
    ours, go, floor = by.get("mldiagnostics-webhook"), by.get("go-peer"), by.get("floor")
    g1, oracle, spec = by.get("go-peer-http1"), by.get("oracle"), by.get("oracle-spec")
    load = "one at a time" if clients == 1 else "%d at a time" % clients
    rows = []
    for q in ("p50", "p99"):
        k = "span_%s_ms" % q
        call = "API server's call %s, %s" % (q, load)
        rows += added(call + ": ours − floor / Go − floor", ours, go, floor, k, True)
        if g1:
            rows += added(call + ", against the Go peer on HTTP/1.1 (kubebuilder's default): "
                          "ours − floor / Go − floor", ours, g1, floor, k, False)
        if oracle:
            rows += added(call + ": a webhook that costs nothing answering our patch (oracle) − "
                          "floor / Go − floor", oracle, go, floor, k, False)
        if spec:
            rows += added(call + ": the same, answering the change as the whole spec and "
                          "annotations (oracle-spec) − floor / Go − floor", spec, go, floor, k,
                          False)
        if oracle:
            rows += added(call + ": what ours adds beyond the change's own cost, ours − oracle "
                          "/ Go − oracle", ours, go, oracle, k, True)
    for q in ("p50", "p99"):
        k, a = "call_%s_ms" % q, "apply_%s_ms" % q
        if not all(r and r.get(k) is not None for r in (ours, go, floor)):
            continue
        rows += added("its HTTP exchange %s, %s: ours − floor / Go − floor" % (q, load),
                      ours, go, floor, k, True)
        if oracle:
            rows += added("its HTTP exchange %s, %s: a webhook that costs nothing (oracle) − "
                          "floor / Go − floor" % (q, load), oracle, go, floor, k, False)
        ratio = ours[a] / go[a] if go[a] else float("inf")
        rows.append("| its patch application %s, %s: ours / Go (%.3f vs %.3f ms; floor, no "
                    "patch: %.3f ms) | %.2f× | ≤ 1× | %s |"
                    % (q, load, ours[a], go[a], floor[a], ratio, "PASS" if ratio <= 1 else "MISS"))
    return rows


if __name__ == "__main__":
    sys.exit(main())
