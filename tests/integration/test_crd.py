"""The MLDiagnosticsConnection CRD (manifests/crd/): upstream-compatible
names, fields and enums (DESIGN §4.1), the additive extensions, and the
schema's verdicts on valid and invalid resources (tests/tools/crdcheck.py
stands in for the API server's structural-schema validation)."""
import copy
import os
import sys
import unittest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import crdcheck  # noqa: E402

GOOD = {"apiVersion": "diagon.gke.io/v1alpha1", "kind": "MLDiagnosticsConnection",
        "metadata": {"name": "c", "namespace": "ml"},
        "spec": {"triggerCapture": {"capturePort": 9999, "durationSeconds": 30,
                                    "podName": "a,b", "podNamespace": "ml",
                                    "profiler": "google_cloud_mldiagnostics",
                                    "storageLocation": "gs://bucket/run"}}}


class CrdTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.crd, cls.schema = crdcheck.load_schema()

    def errors(self, obj):
        return crdcheck.validate(obj, self.schema)

    def test_names_and_serving(self):
        spec = self.crd["spec"]
        self.assertEqual(self.crd["metadata"]["name"], "mldiagnosticsconnections.diagon.gke.io")
        self.assertEqual(spec["group"], "diagon.gke.io")
        self.assertEqual(spec["scope"], "Namespaced")
        self.assertEqual(spec["names"]["kind"], "MLDiagnosticsConnection")
        self.assertEqual(spec["names"]["plural"], "mldiagnosticsconnections")
        self.assertEqual(spec["names"]["shortNames"], ["mldc"])
        (v,) = spec["versions"]
        self.assertEqual((v["name"], v["served"], v["storage"]), ("v1alpha1", True, True))
        self.assertEqual(v["subresources"], {"status": {}})
        cols = {c["name"]: c["jsonPath"] for c in v["additionalPrinterColumns"]}
        self.assertEqual(cols, {"Status": ".status.phase", "Age": ".metadata.creationTimestamp"})

    def test_upstream_fields_and_enums(self):
        tc = self.schema["properties"]["spec"]["properties"]["triggerCapture"]
        props = tc["properties"]
        for f in ("capturePort", "durationSeconds", "podName", "podNamespace", "profiler",
                  "storageLocation"):
            self.assertIn(f, props)
        self.assertEqual(props["capturePort"]["format"], "int32")
        self.assertEqual(props["durationSeconds"]["minimum"], 1)
        self.assertEqual(props["profiler"]["enum"], ["google_cloud_mldiagnostics"])
        st = self.schema["properties"]["status"]["properties"]
        self.assertEqual(st["phase"]["enum"], ["Pending", "Running", "Succeeded", "Failed"])
        self.assertEqual(st["captureResult"]["properties"]["status"]["enum"],
                         ["Succeeded", "Failed", "Unknown"])
        for f in ("message", "startTime", "completionTime"):
            self.assertIn(f, st)
        for ext in ("hosts", "attempts", "sessionId", "observedGeneration", "conditions"):
            self.assertIn(ext, st)
            self.assertNotIn(ext, self.schema["properties"]["status"].get("required", []))

    def test_upstream_resources_stay_valid(self):
        self.assertEqual(self.errors(GOOD), [])

    def test_workload_ref_instead_of_pod_names(self):
        o = copy.deepcopy(GOOD)
        del o["spec"]["triggerCapture"]["podName"]
        o["spec"]["triggerCapture"]["workloadRef"] = {"kind": "JobSet", "name": "llama"}
        self.assertEqual(self.errors(o), [])
        o["spec"]["triggerCapture"]["podName"] = "a"
        self.assertIn("set exactly one of podName and workloadRef", str(self.errors(o)))
        o["spec"]["triggerCapture"]["workloadRef"]["kind"] = "Deployment"
        self.assertIn("not in", str(self.errors(o)))

    def test_profiler_options_with_the_ranges_the_profiler_accepts(self):
        o = copy.deepcopy(GOOD)
        o["spec"]["triggerCapture"]["options"] = {"hostTracerLevel": 3, "deviceTracerLevel": 0,
                                                  "pythonTracerLevel": 0, "delayMs": 30000}
        self.assertEqual(self.errors(o), [])
        o["spec"]["triggerCapture"]["options"] = {}
        self.assertEqual(self.errors(o), [], "every option is optional")
        for field, value, why in (("hostTracerLevel", 4, "above"),
                                  ("deviceTracerLevel", 2, "above"),
                                  ("pythonTracerLevel", -1, "below"),
                                  ("delayMs", 3600001, "above"),
                                  ("pythonTracerLevel", "1", "integer")):
            o["spec"]["triggerCapture"]["options"] = {field: value}
            self.assertIn(why, str(self.errors(o)), field)

    def test_hosts_choose_among_a_workloads_pods(self):
        o = copy.deepcopy(GOOD)
        del o["spec"]["triggerCapture"]["podName"]
        o["spec"]["triggerCapture"]["workloadRef"] = {"kind": "JobSet", "name": "llama"}
        o["spec"]["triggerCapture"]["hosts"] = {
            "replicatedJobs": ["workers"], "indices": "0-3, 8", "max": 4,
            "selector": {"matchLabels": {"a": "b"},
                         "matchExpressions": [{"key": "c", "operator": "In", "values": ["d"]}]}}
        self.assertEqual(self.errors(o), [])
        for field, value, why in (("indices", "0-", "does not match"), ("max", 0, "below"),
                                  ("replicatedJobs", [""], "shorter"),
                                  ("replicatedJobs", ["r"] * 33, "more than"),
                                  ("selector", {"matchExpressions": [
                                      {"key": "c", "operator": "Near"}]}, "not in")):
            h = copy.deepcopy(o)
            h["spec"]["triggerCapture"]["hosts"][field] = value
            self.assertIn(why, str(self.errors(h)), field)
        named = copy.deepcopy(GOOD)
        named["spec"]["triggerCapture"]["hosts"] = {"max": 1}
        self.assertIn("hosts chooses among a workloadRef's pods", str(self.errors(named)))

    def test_a_schedule_and_its_status(self):
        o = copy.deepcopy(GOOD)
        o["spec"].update(schedule="*/10 * * * *", suspend=False, concurrencyPolicy="Forbid",
                         successfulHistoryLimit=3, failedHistoryLimit=0)
        o["status"] = {"lastScheduleTime": "2026-12-06T05:10:00Z",
                       "active": [{"name": "x-29942230"}], "message": "next capture at ..."}
        self.assertEqual(self.errors(o), [])
        for field, value, why in (("concurrencyPolicy", "Replace", "not in"),
                                  ("successfulHistoryLimit", -1, "below"),
                                  ("suspend", "yes", "must be boolean"),
                                  ("schedule", 5, "must be string")):
            b = copy.deepcopy(o)
            b["spec"][field] = value
            self.assertIn(why, str(self.errors(b)), field)

    def test_invalid_resources(self):
        for field, value, why in (("capturePort", 0, "below"), ("capturePort", 70000, "above"),
                                  ("durationSeconds", 0, "below"), ("profiler", "x", "not in"),
                                  ("capturePort", "9999", "integer")):
            o = copy.deepcopy(GOOD)
            o["spec"]["triggerCapture"][field] = value
            self.assertIn(why, str(self.errors(o)), (field, value))
        o = copy.deepcopy(GOOD)
        del o["spec"]["triggerCapture"]["storageLocation"]
        self.assertIn("storageLocation: required", str(self.errors(o)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
