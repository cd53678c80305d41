"""Tests of the fake Kubernetes API server, through real HTTP on loopback.

Clients are the standard library only (http.client, socket, ssl), reading
watches at the wire level where framing matters (chunks, the final 0-length
chunk, abrupt closes). Every wait is bounded.

    /usr/bin/python3 -m unittest -v tests/fakes/test_fake_apiserver.py
"""
import base64
import datetime
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_apiserver import ApiError, FakeApiServer  # noqa: E402

CLOCK = datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
META_OBJ = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
PODS = "/api/v1/namespaces/default/pods"
CMS = "/api/v1/namespaces/default/configmaps"
MLDC = "/apis/diagon.gke.io/v1alpha1/namespaces/default/mldiagnosticsconnections"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"
WAIT = 5  # seconds: upper bound of any single wait


def pod(name, labels=None, **spec):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": dict({"containers": [{"name": "c", "image": "i"}]}, **spec)}


def cm(name, labels=None, data=None):
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data or {}}


class Response:
    def __init__(self, status, headers, data):
        self.status, self.headers, self.data = status, headers, data

    @property
    def doc(self):
        return json.loads(self.data)


def request(api, method, path, body=None, headers=None, content_type="application/json",
            conn=None, ssl_context=None, timeout=WAIT):
    """One HTTP request; body dicts/lists are sent as JSON. Reuses conn if given."""
    own = conn is None
    if own:
        conn = connect(api, ssl_context, timeout)
    hdrs = dict(headers or {})
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        hdrs.setdefault("Content-Type", content_type)
    try:
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    finally:
        if own:
            conn.close()


def connect(api, ssl_context=None, timeout=WAIT):
    if api.tls:
        return http.client.HTTPSConnection("127.0.0.1", api.port, timeout=timeout,
                                           context=ssl_context)
    return http.client.HTTPConnection("127.0.0.1", api.port, timeout=timeout)


class RawWatch:
    """A streamed GET read at the wire level: status, headers, then chunk by chunk."""

    def __init__(self, api, path, headers=None, ssl_context=None, timeout=WAIT):
        sock = socket.create_connection(("127.0.0.1", api.port), timeout=timeout)
        if ssl_context is not None:
            sock = ssl_context.wrap_socket(sock, server_hostname="127.0.0.1")
        self.sock, self.buf = sock, b""
        lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{api.port}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = self._until(b"\r\n\r\n").decode()
        status_line, *header_lines = head.split("\r\n")
        self.status = int(status_line.split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, v in
                        (h.split(":", 1) for h in header_lines if h)}
        self.body = None
        if "content-length" in self.headers:
            self.body = self._exactly(int(self.headers["content-length"]))

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("connection closed")
        self.buf += data

    def _until(self, marker):
        while marker not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(marker, 1)
        return head

    def _exactly(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def chunk(self):
        """The next chunk's payload; None at the final 0-length chunk; EOFError if cut."""
        size = int(self._until(b"\r\n").split(b";")[0], 16)
        if size == 0:
            self._until(b"\r\n")
            return None
        data = self._exactly(size)
        assert self._exactly(2) == b"\r\n"
        return data

    def event(self):
        """The next event (each chunk must be exactly one JSON line), or None at the end."""
        data = self.chunk()
        if data is None:
            return None
        assert data.endswith(b"\n") and data.count(b"\n") == 1, data
        return json.loads(data)

    def events(self, n):
        return [self.event() for _ in range(n)]

    def until_end(self):
        """(events, 'clean' | 'abrupt') reading to the end of the stream."""
        events = []
        try:
            while True:
                ev = self.event()
                if ev is None:
                    return events, "clean"
                events.append(ev)
        except (EOFError, ConnectionResetError):
            return events, "abrupt"

    def close(self):
        self.sock.close()


class ApiTestCase(unittest.TestCase):
    tls = None
    tokens = None

    def setUp(self):
        self.api = FakeApiServer(tls=self.tls, tokens=self.tokens)
        self.api.register_ml_crds()
        self.api.clock = lambda: CLOCK
        self.api.start()
        self.addCleanup(self.api.stop)
        self.streams = []

    def tearDown(self):
        for s in self.streams:
            s.close()
        self.assertEqual(self.api.errors, [])

    def req(self, method, path, body=None, **kw):
        return request(self.api, method, path, body, **kw)

    def watch(self, path, **kw):
        w = RawWatch(self.api, path, **kw)
        self.streams.append(w)
        return w

    def assertStatus(self, resp, code, reason):
        self.assertEqual(resp.status, code, resp.data)
        doc = resp.doc
        self.assertEqual((doc["kind"], doc["apiVersion"], doc["status"], doc["code"], doc["reason"]),
                         ("Status", "v1", "Failure", code, reason))
        self.assertEqual(doc["metadata"], {})
        self.assertIsInstance(doc["message"], str)
        return doc


# ---------------------------------------------------------------- CRUD

class CrudTest(ApiTestCase):
    def test_create_get_update_delete(self):
        r = self.req("POST", PODS, pod("p1", {"app": "x"}))
        self.assertEqual(r.status, 201)
        self.assertEqual(r.headers["content-type"], "application/json")
        created = r.doc
        m = created["metadata"]
        self.assertEqual((created["apiVersion"], created["kind"]), ("v1", "Pod"))
        self.assertEqual((m["name"], m["namespace"], m["generation"]), ("p1", "default", 1))
        self.assertEqual(m["creationTimestamp"], "2025-01-02T03:04:05Z")
        self.assertRegex(m["uid"], r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$")
        self.assertIsInstance(m["resourceVersion"], str)
        self.assertEqual(self.req("GET", PODS + "/p1").doc, created)

        created["spec"]["nodeName"] = "n1"
        updated = self.req("PUT", PODS + "/p1", created).doc
        self.assertEqual(updated["metadata"]["generation"], 2)
        self.assertGreater(int(updated["metadata"]["resourceVersion"]), int(m["resourceVersion"]))
        self.assertEqual(updated["metadata"]["uid"], m["uid"])
        # a no-op update writes nothing: same RV
        same = self.req("PUT", PODS + "/p1", updated).doc
        self.assertEqual(same["metadata"]["resourceVersion"], updated["metadata"]["resourceVersion"])
        # labels only: no generation bump
        updated["metadata"]["labels"]["more"] = "y"
        relabeled = self.req("PUT", PODS + "/p1", updated).doc
        self.assertEqual(relabeled["metadata"]["generation"], 2)

        r = self.req("DELETE", PODS + "/p1")
        self.assertEqual((r.status, r.doc["kind"]), (200, "Pod"))  # pods answer the object
        doc = self.assertStatus(self.req("GET", PODS + "/p1"), 404, "NotFound")
        self.assertEqual(doc["message"], 'pods "p1" not found')
        self.assertEqual(doc["details"], {"name": "p1", "kind": "pods"})

    def test_delete_custom_resource_answers_status_success(self):
        self.req("POST", JOBSETS, {"metadata": {"name": "js"}, "spec": {}})
        doc = self.req("DELETE", JOBSETS + "/js").doc
        self.assertEqual((doc["kind"], doc["status"]), ("Status", "Success"))
        self.assertEqual(doc["details"]["group"], "jobset.x-k8s.io")
        doc = self.assertStatus(self.req("GET", JOBSETS + "/js"), 404, "NotFound")
        self.assertEqual(doc["message"], 'jobsets.jobset.x-k8s.io "js" not found')

    def test_already_exists_and_conflict(self):
        first = self.req("POST", PODS, pod("p")).doc
        doc = self.assertStatus(self.req("POST", PODS, pod("p")), 409, "AlreadyExists")
        self.assertEqual(doc["message"], 'pods "p" already exists')
        self.req("PATCH", PODS + "/p", {"metadata": {"labels": {"a": "b"}}},
                 content_type="application/merge-patch+json")
        doc = self.assertStatus(self.req("PUT", PODS + "/p", first), 409, "Conflict")
        self.assertEqual(doc["message"], 'Operation cannot be fulfilled on pods "p": the object has '
                         'been modified; please apply your changes to the latest version and try '
                         'again')

    def test_put_without_resource_version(self):
        self.req("POST", JOBSETS, {"metadata": {"name": "js"}, "spec": {"a": 1}})
        doc = self.assertStatus(self.req("PUT", JOBSETS + "/js", {"metadata": {"name": "js"},
                                                                  "spec": {"a": 2}}),
                                422, "Invalid")
        self.assertIn("metadata.resourceVersion", doc["message"])
        self.assertEqual(doc["details"]["causes"][0]["field"], "metadata.resourceVersion")
        # built-ins allow unconditional updates (except Lease)
        self.req("POST", CMS, cm("c"))
        r = self.req("PUT", CMS + "/c", cm("c", data={"k": "v"}))
        self.assertEqual((r.status, r.doc["data"]), (200, {"k": "v"}))
        leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
        self.req("POST", leases, {"metadata": {"name": "l"}, "spec": {}})
        self.assertStatus(self.req("PUT", leases + "/l", {"metadata": {"name": "l"}, "spec": {}}),
                          422, "Invalid")

    def test_unknown_paths_and_methods(self):
        for path in ("/api/v1/namespaces/default/widgets", "/apis/foo.io/v1/bars", "/nothing",
                     PODS + "/p/exec", "/api/v1/pods/p", "/api/v1/namespaces/default/pods/p/scale"):
            doc = self.assertStatus(self.req("GET", path), 404, "NotFound")
            self.assertEqual(doc["message"], "the server could not find the requested resource")
        self.assertStatus(self.req("POST", PODS + "/p", pod("p")), 405, "MethodNotAllowed")
        self.assertStatus(self.req("PUT", PODS, pod("p")), 405, "MethodNotAllowed")

    def test_unsupported_patch_and_body_types(self):
        self.req("POST", PODS, pod("p"))
        for ctype in ("application/strategic-merge-patch+json", "application/apply-patch+yaml",
                      "text/plain"):
            doc = self.assertStatus(self.req("PATCH", PODS + "/p", {"a": 1}, content_type=ctype),
                                    415, "UnsupportedMediaType")
            self.assertIn("application/merge-patch+json", doc["message"])
        self.assertStatus(self.req("POST", PODS, b"a: b", content_type="application/yaml"),
                          415, "UnsupportedMediaType")

    def test_generate_name(self):
        obj = {"metadata": {"generateName": "job-"}, "spec": {}}
        names = {self.req("POST", PODS, obj).doc["metadata"]["name"] for _ in range(5)}
        self.assertEqual(len(names), 5)
        for n in names:
            self.assertRegex(n, r"^job-[bcdfghjklmnpqrstvwxz2456789]{5}$")
        doc = self.assertStatus(self.req("POST", PODS, {"metadata": {}}), 422, "Invalid")
        self.assertIn("name or generateName is required", doc["message"])

    def test_bad_requests_keep_the_server_alive(self):
        self.assertStatus(self.req("POST", PODS, b"{not json"), 400, "BadRequest")
        self.assertStatus(self.req("POST", PODS, b"[1,2]"), 400, "BadRequest")
        self.assertStatus(self.req("POST", PODS, {"apiVersion": "v2", "metadata": {"name": "x"}}),
                          400, "BadRequest")
        doc = self.assertStatus(self.req("POST", PODS, pod("x") | {"metadata": {
            "name": "x", "namespace": "other"}}), 400, "BadRequest")
        self.assertIn("does not match the namespace", doc["message"])
        self.assertStatus(self.req("POST", PODS, pod("Bad_Name")), 422, "Invalid")
        self.assertStatus(self.req("POST", PODS, pod("x", {"bad key!": "v"})), 422, "Invalid")
        rv_set = pod("x")
        rv_set["metadata"]["resourceVersion"] = "5"
        doc = self.assertStatus(self.req("POST", PODS, rv_set), 500, "InternalError")
        self.assertIn("resourceVersion should not be set on objects to be created", doc["message"])
        self.req("POST", PODS, pod("y"))
        self.assertStatus(self.req("PUT", PODS + "/y", pod("z")), 400, "BadRequest")
        self.assertStatus(self.req("GET", PODS + "?limit=abc"), 400, "BadRequest")
        self.assertStatus(self.req("GET", PODS + "?watch=1&resourceVersion=xyz"), 400, "BadRequest")
        self.assertStatus(self.req("GET", PODS, headers={"Accept": "application/yaml"}),
                          406, "NotAcceptable")
        # a malformed request line gets a 400 from the HTTP layer, and the server lives on
        s = socket.create_connection(("127.0.0.1", self.api.port), timeout=WAIT)
        s.sendall(b"BLAH\r\n\r\n")
        self.assertIn(b" 400 ", s.recv(1000))
        s.close()
        self.assertEqual(self.req("GET", PODS).status, 200)

    def test_finalizers_delay_deletion(self):
        obj = pod("f")
        obj["metadata"]["finalizers"] = ["example.com/cleanup"]
        self.req("POST", PODS, obj)
        marked = self.req("DELETE", PODS + "/f").doc
        self.assertEqual(marked["metadata"]["deletionTimestamp"], "2025-01-02T03:04:05Z")
        self.assertEqual(marked["metadata"]["generation"], 2)
        self.assertEqual(self.req("GET", PODS + "/f").status, 200)
        doc = self.assertStatus(self.req("PATCH", PODS + "/f", [
            {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/more"}],
            content_type="application/json-patch+json"), 422, "Invalid")
        self.assertIn("no new finalizers", doc["message"])
        r = self.req("PATCH", PODS + "/f", {"metadata": {"finalizers": None}},
                     content_type="application/merge-patch+json")
        self.assertEqual(r.status, 200)
        self.assertEqual(self.req("GET", PODS + "/f").status, 404)

    def test_delete_preconditions_and_dry_run(self):
        created = self.req("POST", PODS, pod("d")).doc
        doc = self.assertStatus(self.req("DELETE", PODS + "/d", {"preconditions": {
            "resourceVersion": "1"}}), 409, "Conflict")
        self.assertIn("Precondition failed", doc["message"])
        self.assertEqual(self.req("POST", PODS + "?dryRun=All", pod("e")).status, 201)
        self.assertEqual(self.req("GET", PODS + "/e").status, 404)
        self.assertEqual(self.req("DELETE", PODS + "/d?dryRun=All").status, 200)
        self.assertEqual(self.req("GET", PODS + "/d").doc, created)

    def test_delete_collection(self):
        for i in range(4):
            self.req("POST", CMS, cm(f"c{i}", {"del": "yes" if i % 2 else "no"}))
        r = self.req("DELETE", CMS + "?labelSelector=del%3Dyes")
        self.assertEqual(r.doc["kind"], "ConfigMapList")
        self.assertEqual(sorted(i["metadata"]["name"] for i in r.doc["items"]), ["c1", "c3"])
        left = self.req("GET", CMS).doc["items"]
        self.assertEqual([i["metadata"]["name"] for i in left], ["c0", "c2"])

    def test_lease_micro_time(self):
        leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
        spec = {"holderIdentity": "a", "leaseDurationSeconds": 15,
                "renewTime": "2026-01-01T02:00:00.123456+02:00", "leaseTransitions": 0}
        r = self.req("POST", leases, {"metadata": {"name": "op"}, "spec": spec})
        self.assertEqual(r.status, 201)
        self.assertEqual(r.doc["spec"]["renewTime"], "2026-01-01T00:00:00.123456Z")
        bad = dict(spec, renewTime="2026-01-01T00:00:00Z")
        self.assertStatus(self.req("POST", leases, {"metadata": {"name": "x"}, "spec": bad}),
                          400, "BadRequest")
        bad = dict(spec, leaseDurationSeconds=0)
        self.assertStatus(self.req("POST", leases, {"metadata": {"name": "x"}, "spec": bad}),
                          422, "Invalid")

    def test_namespaces_are_cluster_scoped(self):
        r = self.req("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
        self.assertEqual(r.status, 201)
        self.assertNotIn("namespace", r.doc["metadata"])
        self.assertEqual(r.doc["metadata"]["labels"], {"kubernetes.io/metadata.name": "team"})
        self.assertEqual(self.req("GET", "/api/v1/namespaces/team").doc["status"]["phase"], "Active")
        names = [i["metadata"]["name"] for i in self.req("GET", "/api/v1/namespaces").doc["items"]]
        self.assertIn("default", names)
        self.assertIn("team", names)

    def test_direct_helpers_share_the_http_code_paths(self):
        api = self.api
        created = api.create("pods", pod("h"), ns="default")
        self.assertEqual(self.req("GET", PODS + "/h").doc, created)
        api.patch("pods", "h", {"metadata": {"labels": {"x": "1"}}})
        self.assertEqual(api.get(PODS + "/h")["metadata"]["labels"], {"x": "1"})
        with self.assertRaises(ApiError) as cm_:
            api.update("pods", created)
        self.assertEqual(cm_.exception.code, 409)
        api.create(("diagon.gke.io", "v1alpha1", "mldiagnosticsconnections"),
                   {"metadata": {"name": "m", "namespace": "ns1"}, "spec": {}})
        self.assertEqual([o["metadata"]["name"] for o in
                          api.objects("diagon.gke.io", "v1alpha1", "mldiagnosticsconnections",
                                      ns="ns1")], ["m"])
        api.delete("pods", "h")
        self.assertEqual(api.objects("", "v1", "pods"), [])
        with self.assertRaises(ApiError):
            api.get("pods", "h")

    def test_restore_keeps_status_and_managed_fields(self):
        """restore() stores an object as a real cluster serves it (the operator bench's pods):
        managedFields and status kept, where create drops them; one ADDED event."""
        w = self.watch(PODS + "?watch=1&resourceVersion=%s" % self.api.resource_version)
        managed = [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}},
                    "subresource": "status"}]
        obj = dict(pod("r"), status={"phase": "Running", "podIP": "10.0.0.7"})
        obj["metadata"]["managedFields"] = managed
        stored = self.api.restore("pods", obj, ns="default")
        self.assertEqual(stored["metadata"]["managedFields"], managed)
        self.assertEqual(stored["metadata"]["namespace"], "default")
        self.assertEqual(stored["metadata"]["creationTimestamp"], "2025-01-02T03:04:05Z")
        got = self.req("GET", PODS + "/r").doc
        self.assertEqual(got, stored)
        self.assertEqual(got["status"]["podIP"], "10.0.0.7")
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in w.events(1)],
                         [("ADDED", "r")])
        with self.assertRaises(ApiError) as cm_:
            self.api.restore("pods", obj, ns="default")
        self.assertEqual(cm_.exception.code, 409)
        self.assertEqual(self.api.create("pods", pod("c"), ns="default")["metadata"].get(
            "managedFields"), None, "create still drops them")

    def test_discovery(self):
        doc = self.req("GET", "/apis/jobset.x-k8s.io/v1alpha2").doc
        self.assertEqual(doc["kind"], "APIResourceList")
        names = {r["name"] for r in doc["resources"]}
        self.assertEqual(names, {"jobsets", "jobsets/status"})
        groups = {g["name"] for g in self.req("GET", "/apis").doc["groups"]}
        self.assertIn("diagon.gke.io", groups)
        self.assertEqual(self.req("GET", "/healthz").data, b"ok")
        self.api.unregister("jobset.x-k8s.io", "v1alpha2", "jobsets")
        self.assertEqual(self.req("GET", "/apis/jobset.x-k8s.io/v1alpha2").status, 404)


# ---------------------------------------------------------------- patches and status

class PatchTest(ApiTestCase):
    def merge(self, path, patch):
        return self.req("PATCH", path, patch, content_type="application/merge-patch+json")

    def jpatch(self, path, ops):
        return self.req("PATCH", path, ops, content_type="application/json-patch+json")

    def test_merge_patch(self):
        self.req("POST", PODS, pod("p", {"a": "1", "b": "2"}, tolerations=[{"key": "x"}]))
        doc = self.merge(PODS + "/p", {"metadata": {"labels": {"a": None, "c": "3"}},
                                       "spec": {"tolerations": [{"key": "y"}]}}).doc
        self.assertEqual(doc["metadata"]["labels"], {"b": "2", "c": "3"})
        self.assertEqual(doc["spec"]["tolerations"], [{"key": "y"}])  # lists are replaced
        self.assertEqual(doc["spec"]["containers"], [{"name": "c", "image": "i"}])

    def test_merge_patch_resource_version_is_a_precondition(self):
        created = self.req("POST", JOBSETS, {"metadata": {"name": "js"}, "spec": {}}).doc
        rv = created["metadata"]["resourceVersion"]
        ok = self.merge(JOBSETS + "/js", {"metadata": {"resourceVersion": rv,
                                                        "finalizers": ["a.io/x"]}})
        self.assertEqual(ok.status, 200)
        self.assertStatus(self.merge(JOBSETS + "/js", {"metadata": {"resourceVersion": rv,
                                                                     "finalizers": []}}),
                          409, "Conflict")
        self.assertEqual(self.req("GET", JOBSETS + "/js").doc["metadata"]["finalizers"], ["a.io/x"])
        self.assertStatus(self.merge(JOBSETS + "/js", {"metadata": {"uid": "other"}}),
                          409, "Conflict")
        self.assertStatus(self.merge(JOBSETS + "/nope", {}), 404, "NotFound")
        self.assertStatus(self.merge(JOBSETS + "/js", [1]), 400, "BadRequest")

    def test_json_patch(self):
        self.req("POST", PODS, pod("p", {"a": "1"}))
        doc = self.jpatch(PODS + "/p", [
            {"op": "test", "path": "/metadata/labels/a", "value": "1"},
            {"op": "add", "path": "/metadata/labels/k8s.io~1role", "value": "w"},
            {"op": "replace", "path": "/spec/containers/0/image", "value": "j"},
            {"op": "add", "path": "/spec/containers/-", "value": {"name": "d", "image": "i"}},
            {"op": "copy", "from": "/metadata/labels/a", "path": "/metadata/labels/b"},
            {"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/m"},
            {"op": "remove", "path": "/spec/containers/1"},
        ]).doc
        self.assertEqual(doc["metadata"]["labels"], {"k8s.io/role": "w", "b": "1", "m": "1"})
        self.assertEqual(doc["spec"]["containers"], [{"name": "c", "image": "j"}])
        before = self.req("GET", PODS + "/p").doc
        for ops in ([{"op": "test", "path": "/metadata/labels/b", "value": "2"},
                     {"op": "remove", "path": "/metadata/labels"}],
                    [{"op": "add", "path": "/metadata/annotations/x", "value": "v"}],
                    [{"op": "remove", "path": "/spec/nothing"}],
                    [{"op": "replace", "path": "/spec/containers/5", "value": {}}],
                    [{"op": "test", "path": "/metadata/generation", "value": True}],
                    [{"op": "frobnicate", "path": "/spec"}]):
            self.assertStatus(self.jpatch(PODS + "/p", ops), 422, "Invalid")
        self.assertEqual(self.req("GET", PODS + "/p").doc, before)  # failed patches change nothing
        self.assertStatus(self.jpatch(PODS + "/p", {"op": "add"}), 400, "BadRequest")
        # a test op on the resourceVersion is a compare-and-swap
        stale = [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
                 {"op": "add", "path": "/metadata/labels/z", "value": "z"}]
        self.assertStatus(self.jpatch(PODS + "/p", stale), 422, "Invalid")
        changed_rv = [{"op": "replace", "path": "/metadata/resourceVersion", "value": "1"}]
        self.assertStatus(self.jpatch(PODS + "/p", changed_rv), 409, "Conflict")

    def test_status_subresource_isolation(self):
        obj = {"metadata": {"name": "m", "labels": {"a": "1"}},
               "spec": {"triggerCapture": {"durationSeconds": 5}}, "status": {"phase": "Bogus"}}
        created = self.req("POST", MLDC, obj).doc
        self.assertNotIn("status", created)  # create cannot set status

        created["status"] = {"phase": "Running"}
        created["spec"]["triggerCapture"]["durationSeconds"] = 6
        main = self.req("PUT", MLDC + "/m", created).doc
        self.assertNotIn("status", main)  # the main endpoint ignores status
        self.assertEqual(main["metadata"]["generation"], 2)

        main["status"] = {"phase": "Pending"}
        main["metadata"]["labels"] = {"changed": "yes"}
        main["spec"] = {"other": True}
        st = self.req("PUT", MLDC + "/m/status", main).doc
        self.assertEqual(st["status"], {"phase": "Pending"})
        self.assertEqual(st["metadata"]["labels"], {"a": "1"})  # metadata changes dropped
        self.assertEqual(st["spec"], {"triggerCapture": {"durationSeconds": 6}})
        self.assertEqual(st["metadata"]["generation"], 2)
        self.assertNotEqual(st["metadata"]["resourceVersion"], main["metadata"]["resourceVersion"])

        self.assertStatus(self.req("PUT", MLDC + "/m/status", main), 409, "Conflict")  # stale RV
        st2 = self.merge(MLDC + "/m/status", {"status": {"message": "hi"}, "spec": {"x": 1}}).doc
        self.assertEqual(st2["status"], {"phase": "Pending", "message": "hi"})
        self.assertEqual(st2["spec"], {"triggerCapture": {"durationSeconds": 6}})
        main2 = self.merge(MLDC + "/m", {"status": {"phase": "Failed"}}).doc
        self.assertEqual(main2["status"]["phase"], "Pending")
        self.assertEqual(self.req("GET", MLDC + "/m/status").doc["status"]["phase"], "Pending")
        # configmaps have no status subresource
        self.assertEqual(self.req("GET", CMS + "/x/status").status, 404)


# ---------------------------------------------------------------- lists

class ListTest(ApiTestCase):
    def names(self, doc):
        return [i["metadata"]["name"] for i in doc["items"]]

    def test_list_shape(self):
        self.req("POST", PODS, pod("a"))
        self.req("POST", JOBSETS, {"metadata": {"name": "j"}, "spec": {}})
        doc = self.req("GET", PODS).doc
        self.assertEqual((doc["kind"], doc["apiVersion"]), ("PodList", "v1"))
        self.assertEqual(doc["metadata"], {"resourceVersion": str(self.api.resource_version)})
        self.assertNotIn("kind", doc["items"][0])  # built-in list items carry no kind
        doc = self.req("GET", "/apis/jobset.x-k8s.io/v1alpha2/jobsets").doc
        self.assertEqual((doc["kind"], doc["apiVersion"]), ("JobSetList", "jobset.x-k8s.io/v1alpha2"))
        self.assertEqual(doc["items"][0]["kind"], "JobSet")  # unstructured CR items keep it

    def test_paging_is_a_consistent_snapshot(self):
        for i in range(25):
            self.req("POST", CMS, cm(f"c{i:02d}"))
        first = self.req("GET", CMS + "?limit=10").doc
        rv = first["metadata"]["resourceVersion"]
        self.assertEqual(len(first["items"]), 10)
        self.assertEqual(first["metadata"]["remainingItemCount"], 15)
        # writes between pages are not seen by the rest of the list
        self.req("DELETE", CMS + "/c15")
        self.req("POST", CMS, cm("c99"))
        self.req("PATCH", CMS + "/c20", {"data": {"k": "v"}},
                 content_type="application/merge-patch+json")
        names, token = self.names(first), first["metadata"]["continue"]
        while token:
            page = self.req("GET", CMS + "?limit=10&continue=" + token).doc
            self.assertEqual(page["metadata"]["resourceVersion"], rv)
            names += self.names(page)
            token = page["metadata"].get("continue")
        self.assertEqual(names, [f"c{i:02d}" for i in range(25)])
        self.assertEqual(self.req("GET", CMS + "/c20").doc["data"], {"k": "v"})

    def test_expired_and_malformed_continue(self):
        for i in range(5):
            self.req("POST", CMS, cm(f"c{i}"))
        token = self.req("GET", CMS + "?limit=2").doc["metadata"]["continue"]
        self.assertEqual(self.req("GET", CMS + "?limit=2&continue=" + token).status, 200)
        self.api.compact()
        doc = self.assertStatus(self.req("GET", CMS + "?limit=2&continue=" + token), 410, "Expired")
        self.assertIn("continue parameter is too old", doc["message"])
        self.assertStatus(self.req("GET", CMS + "?limit=2&continue=garbage"), 400, "BadRequest")
        forged = base64.urlsafe_b64encode(json.dumps(
            {"v": "meta.k8s.io/v1", "rv": 1, "start": "default/c\u0000"}).encode()).decode()
        self.assertStatus(self.req("GET", CMS + "?limit=2&continue=" + forged), 410, "Expired")

    def test_resource_version_semantics(self):
        for i in range(3):
            self.req("POST", CMS, cm(f"c{i}"))
        full = self.req("GET", CMS + "?limit=1&resourceVersion=0").doc  # RV 0: limit ignored
        self.assertEqual(len(full["items"]), 3)
        self.assertNotIn("continue", full["metadata"])
        old_rv = full["metadata"]["resourceVersion"]
        self.req("DELETE", CMS + "/c0")
        self.req("POST", CMS, cm("c9"))
        exact = self.req("GET", CMS + f"?resourceVersion={old_rv}&resourceVersionMatch=Exact").doc
        self.assertEqual(self.names(exact), ["c0", "c1", "c2"])
        self.assertEqual(exact["metadata"]["resourceVersion"], old_rv)
        newer = self.req("GET", CMS + f"?resourceVersion={old_rv}").doc  # NotOlderThan
        self.assertEqual(self.names(newer), ["c1", "c2", "c9"])
        self.api.too_large_rv_wait = 0.1
        doc = self.assertStatus(self.req("GET", CMS + "?resourceVersion=999999"), 504, "Timeout")
        self.assertEqual(doc["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")
        self.api.compact()
        self.assertStatus(self.req("GET", CMS + f"?resourceVersion={old_rv}"
                                   "&resourceVersionMatch=Exact"), 410, "Expired")

    def test_label_selectors(self):
        specs = {"a": {"env": "prod", "tier": "web"}, "b": {"env": "dev", "tier": "web"},
                 "c": {"env": "prod"}, "d": {}, "e": {"n": "5"}}
        for name, labels in specs.items():
            self.req("POST", CMS, cm(name, labels))
        cases = {"env=prod": "ac", "env==prod": "ac", "env!=prod": "bde", "tier": "ab",
                 "!tier": "cde", "env in (prod, dev)": "abc", "env notin (prod)": "bde",
                 "env=prod,tier=web": "a", "env,!tier": "c", "n>4": "e", "n<5": "", "": "abcde"}
        for sel, want in cases.items():
            got = self.req("GET", CMS + "?labelSelector=" + urllib_quote(sel)).doc
            self.assertEqual("".join(self.names(got)), want, sel)
        for bad in ("env in", "a b", "env=(x)", "!", "x in ()"):
            self.assertStatus(self.req("GET", CMS + "?labelSelector=" + urllib_quote(bad)),
                              400, "BadRequest")

    def test_field_selectors(self):
        self.req("POST", CMS, cm("x"))
        self.req("POST", "/api/v1/namespaces/other/configmaps", cm("x"))
        self.req("POST", "/api/v1/namespaces/other/configmaps", cm("y"))
        all_ns = "/api/v1/configmaps?fieldSelector="
        doc = self.req("GET", all_ns + urllib_quote("metadata.name=x")).doc
        self.assertEqual([i["metadata"]["namespace"] for i in doc["items"]], ["default", "other"])
        doc = self.req("GET", all_ns + urllib_quote("metadata.namespace=other,metadata.name!=x")).doc
        self.assertEqual(self.names(doc), ["y"])
        self.req("POST", PODS, pod("p", nodeName="n1"))
        doc = self.req("GET", PODS + "?fieldSelector=spec.nodeName%3Dn1").doc
        self.assertEqual(self.names(doc), ["p"])
        self.assertStatus(self.req("GET", all_ns + "data.k%3Dv"), 400, "BadRequest")

    def test_metadata_only(self):
        self.req("POST", JOBSETS, {"metadata": {"name": "j", "labels": {"a": "b"}},
                                   "spec": {"big": "x" * 100}})
        r = self.req("GET", JOBSETS, headers={"Accept": META_LIST})
        self.assertEqual(r.headers["content-type"],
                         "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
        doc = r.doc
        self.assertEqual((doc["kind"], doc["apiVersion"]), ("PartialObjectMetadataList",
                                                            "meta.k8s.io/v1"))
        self.assertIn("resourceVersion", doc["metadata"])
        item = doc["items"][0]
        self.assertEqual(set(item), {"kind", "apiVersion", "metadata"})
        self.assertEqual((item["kind"], item["apiVersion"]), ("PartialObjectMetadata",
                                                              "meta.k8s.io/v1"))
        self.assertEqual(item["metadata"]["labels"], {"a": "b"})
        r = self.req("GET", JOBSETS + "/j", headers={"Accept": META_OBJ})
        self.assertEqual(r.headers["content-type"],
                         "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
        self.assertEqual(set(r.doc), {"kind", "apiVersion", "metadata"})
        # the list media type on a GET of one object is skipped: plain JSON is next
        r = self.req("GET", JOBSETS + "/j", headers={"Accept": META_LIST})
        self.assertEqual((r.headers["content-type"], r.doc["kind"]), ("application/json", "JobSet"))
        r = self.req("GET", JOBSETS, headers={
            "Accept": "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;"
                      "g=meta.k8s.io;v=v1," + META_LIST})
        self.assertEqual(r.doc["kind"], "PartialObjectMetadataList")
        self.assertStatus(self.req("GET", JOBSETS, headers={
            "Accept": "application/json;as=Table;g=meta.k8s.io;v=v1"}), 406, "NotAcceptable")


def urllib_quote(text):
    import urllib.parse
    return urllib.parse.quote(text, safe="")


# ---------------------------------------------------------------- watches

class WatchTest(ApiTestCase):
    def test_watch_from_empty_rv_starts_with_synthetic_added(self):
        self.req("POST", PODS, pod("a"))
        self.req("POST", PODS, pod("b"))
        w = self.watch(PODS + "?watch=1&resourceVersion=")
        self.assertEqual(w.status, 200)
        self.assertEqual(w.headers["transfer-encoding"], "chunked")
        self.assertEqual(w.headers["content-type"], "application/json")
        evs = w.events(2)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in evs],
                         [("ADDED", "a"), ("ADDED", "b")])
        self.assertEqual(evs[0]["object"]["kind"], "Pod")  # event objects carry kind
        self.req("POST", PODS, pod("c"))
        self.req("DELETE", PODS + "/a")
        evs = w.events(2)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in evs],
                         [("ADDED", "c"), ("DELETED", "a")])
        self.assertEqual(evs[1]["object"]["metadata"]["resourceVersion"],
                         str(self.api.resource_version))

    def test_watch_from_rv_sends_only_later_events(self):
        self.req("POST", PODS, pod("a"))
        rv = self.req("GET", PODS).doc["metadata"]["resourceVersion"]
        self.req("POST", PODS, pod("b"))
        self.req("POST", CMS, cm("unrelated"))
        w = self.watch(PODS + f"?watch=true&resourceVersion={rv}")
        ev = w.event()
        self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "b"))
        self.api.patch("pods", "b", {"metadata": {"labels": {"x": "y"}}})
        ev = w.event()
        self.assertEqual((ev["type"], ev["object"]["metadata"]["labels"]), ("MODIFIED", {"x": "y"}))
        self.assertGreater(int(ev["object"]["metadata"]["resourceVersion"]), int(rv))

    def test_bookmarks(self):
        self.api.bookmark_interval = 0.2
        self.req("POST", JOBSETS, {"metadata": {"name": "j"}, "spec": {}})
        rv = self.api.resource_version
        w = self.watch(JOBSETS + f"?watch=1&resourceVersion={rv}&allowWatchBookmarks=true")
        t0 = time.monotonic()
        ev = w.event()
        self.assertLess(time.monotonic() - t0, 2)
        self.assertEqual(ev, {"type": "BOOKMARK", "object": {
            "kind": "JobSet", "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "metadata": {"resourceVersion": str(rv)}}})
        # no bookmarks unless asked for
        self.api.bookmark_interval = 0.1
        quiet = self.watch(JOBSETS + f"?watch=1&resourceVersion={rv}&timeoutSeconds=1")
        self.assertEqual(quiet.until_end(), ([], "clean"))

    def test_timeout_seconds_ends_the_stream_cleanly(self):
        t0 = time.monotonic()
        w = self.watch(PODS + "?watch=1&resourceVersion=&timeoutSeconds=1")
        events, end = w.until_end()
        self.assertEqual((events, end), ([], "clean"))
        self.assertTrue(0.9 < time.monotonic() - t0 < 3)
        self.assertEqual(self.api.open_watches(), 0)

    def test_watch_after_compaction_gets_410_error_event(self):
        rv = self.req("POST", PODS, pod("a")).doc["metadata"]["resourceVersion"]
        self.req("POST", PODS, pod("b"))
        self.api.compact()
        w = self.watch(PODS + f"?watch=1&resourceVersion={rv}")
        self.assertEqual(w.status, 200)
        events, end = w.until_end()
        self.assertEqual(end, "clean")
        self.assertEqual(len(events), 1)
        self.assertEqual(events[0]["type"], "ERROR")
        st = events[0]["object"]
        self.assertEqual((st["kind"], st["code"], st["reason"]), ("Status", 410, "Expired"))
        self.assertEqual(st["message"], f"too old resource version: {rv} "
                                        f"({self.api.resource_version})")
        # the current RV is still fine
        ok = self.watch(PODS + f"?watch=1&resourceVersion={self.api.resource_version}"
                               "&timeoutSeconds=1")
        self.assertEqual(ok.until_end(), ([], "clean"))
        self.api.http_410_on_watch = True
        r = self.req("GET", PODS + f"?watch=1&resourceVersion={rv}")
        self.assertStatus(r, 410, "Expired")

    def test_history_limit_window(self):
        self.api.history_limit = 3
        rv = self.api.resource_version
        for i in range(5):
            self.req("POST", CMS, cm(f"c{i}"))
        events, _ = self.watch(CMS + f"?watch=1&resourceVersion={rv}").until_end()
        self.assertEqual(events[0]["object"]["code"], 410)
        w = self.watch(CMS + f"?watch=1&resourceVersion={rv + 2}&timeoutSeconds=1")
        events, _ = w.until_end()
        self.assertEqual([e["object"]["metadata"]["name"] for e in events], ["c2", "c3", "c4"])

    def test_drop_watches_cuts_streams(self):
        ws = [self.watch(PODS + "?watch=1&resourceVersion=") for _ in range(3)]
        self.assertTrue(self.api.wait_until(lambda: self.api.open_watches() == 3))
        self.api.drop_watches()
        for w in ws:
            self.assertEqual(w.until_end(), ([], "abrupt"))
        self.assertTrue(self.api.wait_until(lambda: self.api.open_watches() == 0))
        self.assertEqual(self.req("GET", PODS).status, 200)  # the server lives on

    def test_selector_transitions(self):
        self.req("POST", PODS, pod("p", {"role": "worker"}))
        rv = self.api.resource_version
        w = self.watch(PODS + f"?watch=1&resourceVersion={rv}&labelSelector=role%3Dworker")
        self.api.patch("pods", "p", {"metadata": {"labels": {"role": "leader"}}})
        ev = w.event()
        self.assertEqual(ev["type"], "DELETED")
        self.assertEqual(ev["object"]["metadata"]["labels"], {"role": "worker"})  # previous content
        self.assertEqual(ev["object"]["metadata"]["resourceVersion"], str(rv + 1))
        self.api.patch("pods", "p", {"metadata": {"labels": {"other": "x"}}})  # still not matching
        self.api.patch("pods", "p", {"metadata": {"labels": {"role": "worker"}}})
        ev = w.event()
        self.assertEqual((ev["type"], ev["object"]["metadata"]["resourceVersion"]),
                         ("ADDED", str(rv + 3)))
        self.api.patch("pods", "p", {"spec": {"nodeName": "n"}})
        self.assertEqual(w.event()["type"], "MODIFIED")

    def test_field_selector_and_namespace_watch(self):
        w = self.watch("/api/v1/pods?watch=1&fieldSelector=metadata.name%3Dwanted")
        ns_w = self.watch("/api/v1/namespaces/other/pods?watch=1")
        self.api.create("pods", pod("unwanted"))
        self.api.create("pods", pod("wanted"), ns="default")
        self.api.create("pods", pod("x"), ns="other")
        ev = w.event()
        self.assertEqual(ev["object"]["metadata"]["name"], "wanted")
        ev = ns_w.event()
        self.assertEqual(ev["object"]["metadata"]["name"], "x")

    def test_metadata_only_watch(self):
        self.api.bookmark_interval = 0.2
        w = self.watch(JOBSETS + "?watch=1&allowWatchBookmarks=true",
                       headers={"Accept": META_OBJ})
        self.api.create("jobsets", {"metadata": {"name": "j"}, "spec": {"x": 1}})
        ev = w.event()
        self.assertEqual(ev["type"], "ADDED")
        self.assertEqual(set(ev["object"]), {"kind", "apiVersion", "metadata"})
        self.assertEqual(ev["object"]["kind"], "PartialObjectMetadata")
        ev = w.event()
        self.assertEqual((ev["type"], ev["object"]["kind"]), ("BOOKMARK", "PartialObjectMetadata"))

    def test_send_initial_events(self):
        self.api.create("pods", pod("a"))
        rv = self.api.resource_version
        w = self.watch(PODS + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                              "&allowWatchBookmarks=true&resourceVersion=")
        ev = w.event()
        self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "a"))
        ev = w.event()
        self.assertEqual(ev["type"], "BOOKMARK")
        self.assertEqual(ev["object"]["metadata"], {
            "resourceVersion": str(rv), "annotations": {"k8s.io/initial-events-end": "true"}})
        self.assertStatus(self.req("GET", PODS + "?watch=1&sendInitialEvents=true"), 422, "Invalid")

    def test_unregister_ends_watches_and_404s(self):
        w = self.watch(JOBSETS + "?watch=1")
        self.assertTrue(self.api.wait_until(lambda: self.api.open_watches() == 1))
        self.api.unregister("jobset.x-k8s.io", "v1alpha2", "jobsets")
        self.assertEqual(w.until_end()[1], "clean")
        self.assertStatus(self.req("GET", JOBSETS), 404, "NotFound")
        self.api.register_ml_crds()
        self.assertEqual(self.req("GET", JOBSETS).doc["items"], [])

    def test_many_concurrent_watches(self):
        ws = [self.watch(CMS + "?watch=1") for _ in range(60)]
        self.assertTrue(self.api.wait_until(lambda: self.api.open_watches() == 60))
        self.api.create("configmaps", cm("hello"))
        for w in ws:
            self.assertEqual(w.event()["object"]["metadata"]["name"], "hello")

    def test_stop_ends_watches_abruptly(self):
        w = self.watch(PODS + "?watch=1")
        self.assertTrue(self.api.wait_until(lambda: self.api.open_watches() == 1))
        t0 = time.monotonic()
        self.api.stop()
        self.assertLess(time.monotonic() - t0, 2)
        self.assertEqual(w.until_end(), ([], "abrupt"))


# ---------------------------------------------------------------- faults

class FaultTest(ApiTestCase):
    def test_429_with_retry_after_and_plain_text(self):
        self.api.fail_next(2, status=429, retry_after=3, paths=r"/pods")
        r = self.req("GET", CMS)
        self.assertEqual(r.status, 200)  # not matching the regex
        for _ in range(2):
            r = self.req("GET", PODS)
            self.assertEqual(r.status, 429)
            self.assertEqual(r.headers["retry-after"], "3")
            self.assertEqual(r.headers["content-type"], "text/plain; charset=utf-8")
            self.assertEqual(r.data, b"Too many requests, please try again later.\n")
        self.assertEqual(self.req("GET", PODS).status, 200)
        self.assertEqual(self.api.count(status=429), 2)

    def test_5xx_and_method_filter(self):
        self.api.fail_next(1, status=503, paths=r"/pods", methods=["POST"])
        self.api.fail_next(1, status=500, retry_after=2)
        self.assertEqual(self.req("GET", PODS).status, 500)  # the 503 rule wants a POST
        r = self.req("POST", PODS, pod("p"))
        self.assertStatus(r, 503, "ServiceUnavailable")
        self.assertNotIn("retry-after", r.headers)
        self.assertEqual(self.req("POST", PODS, pod("p")).status, 201)

    def test_fault_on_watch_and_5xx_details(self):
        self.api.fail_next(1, status=500, retry_after=2, paths=r"watch=")
        r = self.req("GET", PODS + "?watch=1")
        doc = self.assertStatus(r, 500, "InternalError")
        self.assertEqual(r.headers["retry-after"], "2")
        self.assertEqual(doc["details"]["retryAfterSeconds"], 2)

    def test_latency(self):
        self.api.latency = {r"/configmaps": 0.3}
        t0 = time.monotonic()
        self.req("GET", PODS)
        fast = time.monotonic() - t0
        t0 = time.monotonic()
        self.req("GET", CMS)
        self.assertGreater(time.monotonic() - t0, 0.3)
        self.assertLess(fast, 0.3)

    def test_refuse(self):
        port = self.api.port
        idle = connect(self.api)
        self.assertEqual(request(self.api, "GET", PODS, conn=idle).status, 200)
        self.api.refuse(True)
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        # an established keep-alive connection still works until told otherwise
        self.assertEqual(request(self.api, "GET", PODS, conn=idle).status, 200)
        self.api.refuse(False)
        self.assertEqual(self.api.port, port)
        self.assertEqual(self.req("GET", PODS).status, 200)
        idle.close()

    def test_restart_keeps_state_and_port(self):
        port = self.api.port
        created = self.req("POST", PODS, pod("kept")).doc
        rv = self.api.resource_version
        w = self.watch(PODS + f"?watch=1&resourceVersion={rv}")
        self.assertTrue(self.api.wait_until(lambda: self.api.open_watches() == 1))
        self.api.restart()
        self.assertEqual(w.until_end(), ([], "abrupt"))
        self.assertEqual(self.api.port, port)
        self.assertEqual(self.req("GET", PODS + "/kept").doc, created)
        self.assertEqual(self.api.resource_version, rv)
        nxt = self.req("POST", PODS, pod("after")).doc
        self.assertEqual(int(nxt["metadata"]["resourceVersion"]), rv + 1)
        # a watch resumed from the old RV sees what happened since
        w2 = self.watch(PODS + f"?watch=1&resourceVersion={rv}")
        self.assertEqual(w2.event()["object"]["metadata"]["name"], "after")


class RequestLogTest(ApiTestCase):
    def test_request_log_and_count(self):
        self.api.clear_requests()
        self.req("GET", PODS + "?limit=5", headers={"Accept": META_LIST})
        self.req("POST", PODS, pod("p"))
        self.watch(PODS + "?watch=1&timeoutSeconds=1").until_end()
        self.req("GET", "/api/v1/nothing")
        self.assertEqual(self.api.count(), 4)
        self.assertEqual(self.api.count(method="GET"), 3)
        self.assertEqual(self.api.count(watch=True), 1)
        self.assertEqual(self.api.count(path_regex=r"/pods$", watch=False), 2)
        self.assertEqual(self.api.count(status=404), 1)
        first = self.api.requests[0]
        self.assertEqual((first["method"], first["path"], first["query"], first["status"]),
                         ("GET", PODS, {"limit": "5"}, 200))
        self.assertEqual(first["headers"], {"Accept": META_LIST, "Content-Type": None,
                                            "Authorization": False})
        self.assertIsInstance(first["time"], float)
        self.api.clear_requests()
        self.assertEqual(self.api.count(), 0)

    def test_keep_alive_and_request_rate(self):
        self.req("POST", PODS, pod("p"))
        conn = connect(self.api)
        t0 = time.monotonic()
        for _ in range(1000):
            r = request(self.api, "GET", PODS + "/p", conn=conn)
            self.assertEqual(r.status, 200)
        elapsed = time.monotonic() - t0
        conn.close()
        self.assertLess(elapsed, 2.0, f"1000 GETs took {elapsed:.2f}s")  # >= 500/s

    def test_kubeconfig(self):
        import yaml
        d = tempfile.mkdtemp(prefix="fake-apiserver-")
        self.addCleanup(shutil.rmtree, d)
        path = self.api.kubeconfig(os.path.join(d, "kubeconfig"), token="t0k")
        with open(path) as f:
            doc = yaml.safe_load(f)
        self.assertEqual((doc["apiVersion"], doc["kind"]), ("v1", "Config"))
        self.assertEqual(doc["current-context"], "fake")
        ctx = doc["contexts"][0]
        self.assertEqual(ctx["name"], "fake")
        cluster = next(c for c in doc["clusters"] if c["name"] == ctx["context"]["cluster"])
        user = next(u for u in doc["users"] if u["name"] == ctx["context"]["user"])
        self.assertEqual(cluster["cluster"]["server"], self.api.url)
        self.assertEqual(user["user"], {"token": "t0k"})


class LoadTest(ApiTestCase):
    def test_ten_thousand_pods_paged(self):
        for i in range(10000):
            self.api.create("pods", {"metadata": {"name": f"p{i:05d}", "labels": {"i": str(i)}},
                                     "spec": {"containers": [{"name": "c", "image": "i"}]}})
        conn = connect(self.api, timeout=30)
        t0, names, token, pages = time.monotonic(), [], "", 0
        while True:
            r = request(self.api, "GET", PODS + "?limit=500" + (f"&continue={token}" if token else ""),
                        conn=conn)
            doc = r.doc
            names += [i["metadata"]["name"] for i in doc["items"]]
            pages += 1
            token = doc["metadata"].get("continue")
            if not token:
                break
        elapsed = time.monotonic() - t0
        conn.close()
        self.assertEqual(pages, 20)
        self.assertEqual(len(names), 10000)
        self.assertEqual(names, sorted(names))
        self.assertLess(elapsed, 5.0, f"20 pages took {elapsed:.2f}s")


# ---------------------------------------------------------------- authentication and TLS

class TokenAuthTest(ApiTestCase):
    tokens = {"good"}

    def test_bearer_tokens_and_rotation(self):
        doc = self.assertStatus(self.req("GET", PODS), 401, "Unauthorized")
        self.assertEqual(doc["message"], "Unauthorized")
        self.assertEqual(self.req("GET", PODS, headers={"Authorization": "Bearer bad"}).status, 401)
        good = {"Authorization": "Bearer good"}
        self.assertEqual(self.req("GET", PODS, headers=good).status, 200)
        self.api.tokens = {"rotated"}
        self.assertEqual(self.req("GET", PODS, headers=good).status, 401)
        self.assertEqual(self.req("GET", PODS, headers={"Authorization": "Bearer rotated"}).status,
                         200)
        self.assertEqual(self.api.requests[-1]["token"], "rotated")
        self.assertTrue(self.api.requests[-1]["headers"]["Authorization"])
        w = self.watch(PODS + "?watch=1")
        self.assertEqual(w.status, 401)


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def make_pki(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all from the CA."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
            "-subj", "/CN=fake-ca", cwd=d)
    for name, cn, ext in (("server", "127.0.0.1", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                                  "extendedKeyUsage=serverAuth\n"),
                          ("client", "test-client", "extendedKeyUsage=clientAuth\n")):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext)
        openssl("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + cn,
                cwd=d)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", name + ".crt", "-days", "1", "-extfile", name + ".ext",
                cwd=d)
    return {n: os.path.join(d, n) for n in ("ca.crt", "server.crt", "server.key", "client.crt",
                                            "client.key")}


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="fake-apiserver-pki-")
        cls.pki = make_pki(cls.dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def start(self, **tls_extra):
        api = FakeApiServer(tls=dict(cert=self.pki["server.crt"], key=self.pki["server.key"],
                                     **tls_extra))
        api.start()
        self.addCleanup(api.stop)
        self.assertTrue(api.url.startswith("https://127.0.0.1:"))
        return api

    def context(self, with_cert):
        ctx = ssl.create_default_context(cafile=self.pki["ca.crt"])
        if with_cert:
            ctx.load_cert_chain(self.pki["client.crt"], self.pki["client.key"])
        return ctx

    def test_client_certificate_verification(self):
        api = self.start(client_ca=self.pki["ca.crt"])
        r = request(api, "GET", PODS, ssl_context=self.context(False))
        self.assertEqual(r.status, 401)
        r = request(api, "GET", PODS, ssl_context=self.context(True))
        self.assertEqual(r.status, 200)
        self.assertEqual(api.requests[-1]["user"], "test-client")
        # a bearer token authenticates too when tokens are configured
        api.tokens = {"tok"}
        r = request(api, "GET", PODS, ssl_context=self.context(False),
                    headers={"Authorization": "Bearer tok"})
        self.assertEqual(r.status, 200)
        # watches over TLS, cut by drop_watches
        w = RawWatch(api, PODS + "?watch=1", ssl_context=self.context(True))
        self.addCleanup(w.close)
        api.create("pods", pod("p"))
        self.assertEqual(w.event()["object"]["metadata"]["name"], "p")
        api.drop_watches()
        self.assertEqual(w.until_end()[1], "abrupt")
        self.assertEqual(api.errors, [])

    def test_required_client_certificate(self):
        api = self.start(client_ca=self.pki["ca.crt"], require_client_cert=True)
        with self.assertRaises((OSError, http.client.HTTPException)):
            request(api, "GET", PODS, ssl_context=self.context(False))
        self.assertEqual(request(api, "GET", PODS, ssl_context=self.context(True)).status, 200)

    def test_server_only_tls_and_kubeconfig(self):
        api = self.start()
        r = request(api, "GET", PODS, ssl_context=self.context(False))
        self.assertEqual(r.status, 200)
        import yaml
        path = api.kubeconfig(os.path.join(self.dir, "kc"), ca_file=self.pki["ca.crt"],
                              client_cert=self.pki["client.crt"], client_key=self.pki["client.key"])
        with open(path) as f:
            doc = yaml.safe_load(f)
        self.assertEqual(doc["clusters"][0]["cluster"]["certificate-authority"], self.pki["ca.crt"])
        self.assertEqual(doc["users"][0]["user"]["client-key"], self.pki["client.key"])


class StopTest(unittest.TestCase):
    def test_stop_with_open_connections_is_quick(self):
        api = FakeApiServer().start()
        conns = []
        for _ in range(5):
            c = connect(api)
            request(api, "GET", PODS, conn=c)
            conns.append(c)
        w = RawWatch(api, PODS + "?watch=1")
        t0 = time.monotonic()
        api.stop()
        self.assertLess(time.monotonic() - t0, 2)
        self.assertEqual(w.until_end()[1], "abrupt")
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", api.port), timeout=WAIT)
        for c in conns:
            c.close()
        w.close()


if __name__ == "__main__":
    unittest.main()
