"""The programs that read what the webhook injects, run where they run: in
the pod's container on the real node (the tier's Python image), with the
environment the kubelet gives it ($(VAR) expanded, fieldRefs resolved).
The collector's cluster DNS name is a Service of the cluster whose
endpoint is the host side of the pod network, where the test's OTLP
receiver listens: CoreDNS resolves it, kube-proxy forwards to it.

- google-cloud-mldiagnostics (PyPI, pinned): its own workload-details and
  run-identifier functions succeed in every pod of a workload, give one run
  id per workload, and `rl.run.id` in OTEL_RESOURCE_ATTRIBUTES equals it.
- OpenTelemetry Python SDK: its resource detector decodes exactly the
  attributes we meant (annotation values with `=` `%` `$(...)` and UTF-8); seed 000's app configured from the environment alone
  exports metrics and traces over plaintext gRPC to the receiver, and the
  seed's own code (insecure=True) still works."""
import json
import threading
import time
import unittest
from concurrent import futures

import grpc
from opentelemetry.proto.collector.metrics.v1 import (metrics_service_pb2,
                                                       metrics_service_pb2_grpc)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

import kubeapi
from e2e import LABEL, E2ETest

REPORT = r"""
import json, os, sys, time
from google_cloud_mldiagnostics.utils import host_utils
from opentelemetry.sdk.resources import OTELResourceDetector
out = {"pod": os.environ.get("HOSTNAME")}
try:
    details = host_utils.get_workload_details()
    out["details"] = details
    out["run_id"] = host_utils.get_identifier(workload_details=details)
except Exception as e:
    out["sdk_error"] = "%s: %s" % (type(e).__name__, e)
out["resource"] = dict(OTELResourceDetector().detect().attributes)
out["env"] = {k: v for k, v in os.environ.items() if k.startswith(("OTEL_", "GKE_DIAGON"))}
print("REPORT " + json.dumps(out), flush=True)
time.sleep(3600)
"""

# Seed 000's sample app, configured from the environment alone: no endpoint,
# no insecure flag, no resource in the code.
ENV_ONLY_APP = r"""
import time
from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
reader = PeriodicExportingMetricReader(OTLPMetricExporter(), export_interval_millis=500)
mp = MeterProvider(metric_readers=[reader])
metrics.set_meter_provider(mp)
tp = TracerProvider()
tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(), schedule_delay_millis=200))
trace.set_tracer_provider(tp)
steps = metrics.get_meter("rl-training-meter").create_counter("rl.train.steps")
tracer = trace.get_tracer("rl-training-tracer")
for i in range(20):
    with tracer.start_as_current_span("rl.loop"):
        steps.add(1, {"rl.algorithm": "PPO"})
    time.sleep(0.2)
mp.shutdown(); tp.shutdown()
print("EXPORTED", flush=True)
time.sleep(3600)
"""

# Seed 000's code as written there (insecure=True, its own resource).
SEED_APP = r"""
import os, time
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
resource = Resource.create({
    "service.name": "rl-training-service",
    "service.namespace": "opentelemetry-demo",
})
reader = PeriodicExportingMetricReader(
    OTLPMetricExporter(
        endpoint=os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "localhost:4317"),
        insecure=True
    ), export_interval_millis=500
)
meter_provider = MeterProvider(metric_readers=[reader], resource=resource)
metrics.set_meter_provider(meter_provider)
meter = metrics.get_meter("rl-training-meter")
trace_provider = TracerProvider(resource=resource)
trace_processor = BatchSpanProcessor(
    OTLPSpanExporter(
        endpoint=os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "localhost:4317"),
        insecure=True
    ), schedule_delay_millis=200
)
trace_provider.add_span_processor(trace_processor)
trace.set_tracer_provider(trace_provider)
tracer = trace.get_tracer("rl-training-tracer")
rl_train_steps = meter.create_counter(name="rl.train.steps", unit="{steps}")
for i in range(10):
    with tracer.start_as_current_span("rl.loop"):
        rl_train_steps.add(1, attributes={"rl.run.id": "run-42"})
    time.sleep(0.2)
meter_provider.shutdown(); trace_provider.shutdown()
print("EXPORTED", flush=True)
time.sleep(3600)
"""


def jobset(name, image, program, labels=None, annotations=None, env=None, replicas=2):
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "labels": {LABEL: "true", **(labels or {})},
                         "annotations": annotations or {}},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": replicas, "template": {
                "spec": {"parallelism": 1, "completions": 1, "template": {"spec": {
                    "restartPolicy": "Never", "containers": [{
                        "name": "app", "image": image,
                        "command": ["python", "-c", program],
                        "env": env or []}]}}}}}]}}


class Receiver:
    """A plaintext OTLP/gRPC receiver (metrics and traces) on the host side
    of the pod network, port 4317: the collector of the injected endpoint."""

    def __init__(self, host):
        self.lock = threading.Lock()
        self.metrics, self.spans = [], []
        rx = self

        class M(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request, context):
                with rx.lock:
                    rx.metrics.append(request)
                return metrics_service_pb2.ExportMetricsServiceResponse()

        class T(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request, context):
                with rx.lock:
                    rx.spans.append(request)
                return trace_service_pb2.ExportTraceServiceResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(M(), self.server)
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(T(), self.server)
        if self.server.add_insecure_port("%s:4317" % host) == 0:
            raise RuntimeError("cannot listen on %s:4317" % host)
        self.server.start()

    @staticmethod
    def _attrs(resource):
        out = {}
        for kv in resource.attributes:
            v = kv.value
            out[kv.key] = v.string_value if v.HasField("string_value") else str(v)
        return out

    def resources(self):
        """[(signal, attributes)] of everything received so far."""
        with self.lock:
            out = [("metrics", self._attrs(rm.resource)) for r in self.metrics
                   for rm in r.resource_metrics]
            out += [("traces", self._attrs(rs.resource)) for r in self.spans
                    for rs in r.resource_spans]
        return out

    def stop(self):
        self.server.stop(0)


class Consumers(E2ETest):
    def jobset(self, name, program, **kw):
        return jobset(name, self.python_image(), program, **kw)

    def collector_service(self, rx):
        """The injected endpoint's Service, opentelemetry-collector in
        gke-managed-otel (the chart's defaults), without a selector: its
        EndpointSlice names the receiver on the host side of the pod network.
        Returns the namespace."""
        ns = self.namespace(name="gke-managed-otel")
        self.namespaces.remove(ns)  # deleted by the test itself, after the receiver
        self.api.create({"apiVersion": "v1", "kind": "Service", "metadata": {
            "name": "opentelemetry-collector"}, "spec": {"ports": [
                {"name": "otlp-grpc", "port": 4317, "protocol": "TCP"}]}}, ns)
        self.api.create({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                         "metadata": {"name": "opentelemetry-collector-host", "labels": {
                             "kubernetes.io/service-name": "opentelemetry-collector",
                             "endpointslice.kubernetes.io/managed-by": "mld-e2e"}},
                         "addressType": "IPv4",
                         "endpoints": [{"addresses": [self.c.networks.host_ip],
                                        "conditions": {"ready": True}}],
                         "ports": [{"name": "otlp-grpc", "port": 4317, "protocol": "TCP"}]}, ns)
        return ns

    def reports(self, ns, name, n, marker="REPORT ", timeout=120):
        pods = self.wait_pods(ns, n, "jobset.sigs.k8s.io/jobset-name=" + name)
        out = {}
        deadline = time.time() + timeout
        while time.time() < deadline and len(out) < len(pods):
            for p in pods:
                log = self.container_log(ns, p["metadata"]["name"], "app")
                for line in log.splitlines():
                    if line.startswith(marker):
                        out[p["metadata"]["name"]] = json.loads(line[len(marker):]) \
                            if marker.endswith(" ") else line
            time.sleep(0.5)
        missing = [p["metadata"]["name"] for p in pods if p["metadata"]["name"] not in out]
        self.assertFalse(missing, "no %r from %s; logs:\n%s" % (marker, missing, "\n".join(
            self.container_log(ns, m, "app")[-1500:] for m in missing)))
        return out, pods

    def test_sdk_run_id_is_rl_run_id_one_per_workload(self):
        ns = self.namespace("sdk")
        self.api.create(self.jobset("rl", REPORT, annotations={
            "diagon.gke.io/otel-resource-attributes": "rl.system=MyPPO,rl.algorithm=PPO"}), ns)
        self.api.create(self.jobset("other", REPORT), ns)
        reports, _ = self.reports(ns, "rl", 2)
        other, _ = self.reports(ns, "other", 2)
        run_ids = set()
        for pod, r in reports.items():
            self.assertNotIn("sdk_error", r, "%s: the SDK refused the injected identity" % pod)
            self.assertEqual(r["details"]["kind"], "JobSet")
            self.assertEqual(r["details"]["cluster"].split("/")[-1], "e2e-cluster")
            self.assertEqual(r["resource"].get("rl.run.id"), r["run_id"],
                             "%s: rl.run.id is not the SDK's run id" % pod)
            run_ids.add(r["run_id"])
        self.assertEqual(len(run_ids), 1, "one run id per workload: %s" % run_ids)
        other_ids = {r.get("run_id") for r in other.values()}
        self.assertEqual(len(other_ids), 1)
        self.assertNotEqual(other_ids, run_ids, "two workloads, two runs")
        for r in other.values():
            self.assertNotIn("rl.run.id", r["resource"], "no rl. key, no rl.run.id")

    def test_resource_detector_decodes_what_was_meant(self):
        # The annotation is written raw (key=value pairs split on ','); the
        # webhook percent-encodes what it writes, the SDK decodes it back.
        # $(OTEL_COLLECTOR_NAME) is a variable of the container: unencoded, the
        # kubelet would expand it; a raw %41 would decode to "A".
        meant = {"team": "a=b", "note": "$(OTEL_COLLECTOR_NAME) 100% ünïcode", "pct": "%41",
                 "path": "/x/y:z"}
        ns = self.namespace("otelres")
        self.api.create(self.jobset("decode", REPORT, annotations={
            "diagon.gke.io/otel-resource-attributes": ",".join(
                "%s=%s" % kv for kv in meant.items())}), ns)
        reports, pods = self.reports(ns, "decode", 2)
        for p in pods:
            res = reports[p["metadata"]["name"]]["resource"]
            for k, v in meant.items():
                self.assertEqual(res.get(k), v, "%s: %s" % (k, json.dumps(res)))
            self.assertEqual(res["k8s.pod.name"], p["metadata"]["name"], "fieldRef resolved")
            self.assertEqual(res["k8s.pod.uid"], p["metadata"]["uid"])
            self.assertEqual(res["k8s.namespace.name"], ns)
            self.assertEqual(res["k8s.jobset.name"], "decode")
            self.assertEqual(res["k8s.cluster.name"], "e2e-cluster")

    def test_env_only_app_and_seed_app_export_to_the_plaintext_collector(self):
        rx = Receiver(self.c.networks.host_ip)
        collector = self.collector_service(rx)
        try:
            ns = self.namespace("otlp")
            self.api.create(self.jobset("env-only", ENV_ONLY_APP, replicas=1, env=[
                {"name": "OTEL_RESOURCE_ATTRIBUTES", "value": "team=ml,service.version=7"}]), ns)
            self.api.create(self.jobset("seed-app", SEED_APP, replicas=1), ns)
            done_a, pods_a = self.reports(ns, "env-only", 1, marker="EXPORTED")
            done_b, pods_b = self.reports(ns, "seed-app", 1, marker="EXPORTED")
            deadline = time.time() + 20
            while time.time() < deadline:
                got = rx.resources()
                names = {a.get("service.name") for _, a in got}
                if {"env-only", "rl-training-service"} <= names:
                    break
                time.sleep(0.3)
            got = rx.resources()
        finally:
            rx.stop()
            self.api.delete(kubeapi.path_for("Namespace", name=collector))
        env_only = [(s, a) for s, a in got if a.get("service.name") == "env-only"]
        self.assertEqual({s for s, _ in env_only}, {"metrics", "traces"},
                         "the env-only app exported nothing over plaintext: %s" % got)
        a = env_only[0][1]
        self.assertEqual(a["k8s.pod.name"], pods_a[0]["metadata"]["name"])
        self.assertEqual((a.get("team"), a.get("service.version")), ("ml", "7"),
                         "the user's own keys are kept")
        seed = [(s, a) for s, a in got if a.get("service.name") == "rl-training-service"]
        self.assertEqual({s for s, _ in seed}, {"metrics", "traces"}, got)
        self.assertEqual(seed[0][1]["k8s.pod.name"], pods_b[0]["metadata"]["name"])


if __name__ == "__main__":
    unittest.main()
