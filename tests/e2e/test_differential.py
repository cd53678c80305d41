"""Differential: the project's fake API server (tests/fakes/fake_apiserver.py)
against the real kube-apiserver, so that the integration tests that run our
binaries against the fake stay meaningful (DESIGN §7, issue 10 item 4).

Every test sends the same sequence of raw HTTP requests to both servers, in a
namespace of the same name on each, and compares what our clients
(libk8s/kube/k8s_client.c, k8s_watch.c, webhook/wh_cache.c, operator/op_*.c) and
the integration tests rely on: the HTTP status, the media type, the body's
top-level keys, kind and apiVersion, metadata keys, Status reason, code,
details and (where clients or tests read it) message, list metadata
(resourceVersion, continue, remainingItemCount), item names and keys and
whether items carry apiVersion/kind, watch event types, objects and framing
(chunked, one JSON event per line), bookmarks and the in-stream ERROR 410.
Values that legitimately differ (uids, resourceVersions, timestamps,
managedFields, what admission defaulted into a spec) are not compared, except
for their relations on each side (a list's RV, monotonic event RVs, bookmark
RVs, generation counting). Intentional differences are in ALLOWED, each with
its reason; a comparison only skips a difference through one of them.

The real cluster's controllers are kept out of the way: JobSets carry
spec.managedBy (the JobSet controller leaves them alone), pods carry the
tier's kubelet-ignore label (not bound, not run), and the
MLDiagnosticsConnection is held by a finalizer and marked deleted before its
status is written (the operator does not reconcile a resource being deleted).
An expired continue token needs compacted history: etcd is compacted directly
on the real side (as the API server itself does every 5 minutes) and
FakeApiServer.compact() on the fake, with v1 Events, which the real server
lists from etcd (no watch cache; a cached resource would answer from its
cache's snapshot). A too-old watch resourceVersion is RV 1 on JobSets: the
real server's JobSet watch cache starts when the CRD is created.
"""
import base64
import json
import os
import sys
import threading
import time
import unittest
import urllib.request

import kubeapi
from e2e import ROOT, E2ETest

sys.path.insert(0, os.path.join(ROOT, "tests", "fakes"))
from fake_apiserver import FakeApiServer  # noqa: E402

# The C client's media types (libk8s/kube/k8s_client.h).
JSON = "application/json"
META = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
WATCH_S = 8  # timeoutSeconds of the compared watches: every write lands well inside it
KUBELET_IGNORE = {"e2e.mldiagnostics/kubelet": "ignore"}
MANAGED_BY = "e2e.mldiagnostics/differential"  # JobSet spec.managedBy: no controller acts
FINALIZER = "e2e.mldiagnostics/differential"
FAKE_TOKEN = "differential-token"

# Intentional differences, each with why it does not matter to our clients.
ALLOWED = {
    "managedFields": "the real server records field managers (server-side apply); the fake "
                     "keeps none. No client of ours reads metadata.managedFields.",
    "free-text message": "BadRequest, Expired, NotAcceptable and patch-failure messages are Go "
                         "error strings (decoder, JSON-patch and storage internals); clients "
                         "keep them for logs only. Reason, code and details are compared.",
    "metadata media type": "the real server answers metadata-only requests with Content-Type "
                           "application/json; the fake adds ;as=...;g=meta.k8s.io;v=v1. The "
                           "body (kind PartialObjectMetadata[List]) is what clients read; the "
                           "fake's own self-tests (test_metadata_only) pin its header.",
    "unserved group 404": "for a group/version nothing serves (a CRD not installed) the real "
                          "server's 404 is the mux's text/plain '404 page not found'; the fake "
                          "answers a JSON NotFound Status. k8s_api_error() maps 404 to "
                          "-K8S_ENOTFOUND from the status alone and keeps a plain-text first "
                          "line as the message; the fake's self-tests "
                          "(test_unknown_paths_and_methods, "
                          "test_unregister_ends_watches_and_404s) pin the JSON body.",
    "pod deletion in one write": "the real server deletes a pod gracefully even when it can go at "
                                 "once (unscheduled): a MODIFIED event with deletionTimestamp, "
                                 "then DELETED; the fake writes DELETED only (same object as the "
                                 "real DELETED carries). A watcher ends with the same store; the "
                                 "fake's self-tests pin the single event.",
    "operator status before deletion": "the real cluster's operator reconciles the compared "
                                       "MLDiagnosticsConnection in the moment between its "
                                       "create and its delete (marking it deleted stops it); "
                                       "the create and every answer after the first status "
                                       "PUT are compared whole.",
    "expired continue token": "the real 410 for a compacted continue token carries "
                              "metadata.continue, a token (rv -1) for the rest of the list at "
                              "the latest RV (etcd3's handleCompactedErrorForPaging); the fake's "
                              "Status metadata is {} (pinned by its self-test "
                              "test_expired_and_malformed_continue). k8s_watch.c's list_all() "
                              "restarts the list on 410 and never reads that token.",
}


USED = set()  # the ALLOWED entries this run needed


def allowed(name):
    assert name in ALLOWED, name
    USED.add(name)
    return True


# ---------------------------------------------------------------- shapes

def media(headers):
    return (headers.get("content-type") or "").replace(" ", "").lower()


def meta_keys(meta):
    return sorted(meta or {})


def without_managed_fields(shape):
    """The real side's shape without metadata.managedFields (ALLOWED), wherever it is."""
    if isinstance(shape, dict):
        out = {}
        for k, v in shape.items():
            if k == "meta" and isinstance(v, list) and "managedFields" in v and \
                    allowed("managedFields"):
                v = [m for m in v if m != "managedFields"]
            out[k] = without_managed_fields(v)
        return out
    if isinstance(shape, (list, tuple)):
        return type(shape)(without_managed_fields(v) for v in shape)
    return shape


def object_shape(d):
    """What is compared of one object: top-level keys, kind, apiVersion, metadata keys."""
    if not isinstance(d, dict):
        return {"not an object": repr(d)[:80]}
    return {"keys": sorted(d), "kind": d.get("kind"), "apiVersion": d.get("apiVersion"),
            "meta": meta_keys(d.get("metadata"))}


MESSAGE_REASONS = ("NotFound", "AlreadyExists", "Conflict", "Unauthorized", "Invalid")


def status_shape(d, message=True):
    s = object_shape(d)
    details = d.get("details", "absent")
    if isinstance(details, dict) and "uid" in details:
        details = dict(details, uid="<uid>")
    s.update(status=d.get("status"), reason=d.get("reason"), code=d.get("code"),
             details=details, metadata=sorted(d.get("metadata") or {}))
    if message and d.get("reason") in MESSAGE_REASONS:
        s["message"] = d.get("message")
    return s


def list_shape(d, names=True):
    s = object_shape(d)
    md = d.get("metadata") or {}
    s.update(listmeta=sorted(md), more=bool(md.get("continue")), null_items=d.get("items") is None,
             remaining=md.get("remainingItemCount"), n=len(d.get("items") or []),
             items=[object_shape(i) for i in d.get("items") or []])
    if names:
        s["names"] = [(i.get("metadata") or {}).get("name") for i in d.get("items") or []]
    return s


class Resp:
    def __init__(self, status, headers, data):
        self.status, self.data = status, data
        self.headers = {k.lower(): v for k, v in headers.items()}
        try:
            self.doc = json.loads(data) if data else None
        except ValueError:
            self.doc = None

    def shape(self, message=True, names=True):
        s = {"http": self.status, "type": media(self.headers)}
        d = self.doc
        if not isinstance(d, dict):
            s["text"] = self.data.decode(errors="replace").strip()[:200]
        elif d.get("kind") == "Status":
            s.update(status_shape(d, message))
        elif "items" in d:
            s.update(list_shape(d, names))
        else:
            s.update(object_shape(d))
        return s

    @property
    def rv(self):
        return int(self.doc["metadata"]["resourceVersion"])

    @property
    def meta(self):
        return self.doc["metadata"]


class Watch(threading.Thread):
    """One bounded watch, read to its end (the server's timeoutSeconds)."""

    def __init__(self, api, path, rv, accept=JSON, **query):
        super().__init__(daemon=True)
        self.api, self.path, self.accept = api, path, accept
        self.query = dict({"watch": "1", "allowWatchBookmarks": "true",
                           "timeoutSeconds": str(WATCH_S)}, **query)
        if rv is not None:
            self.query["resourceVersion"] = str(rv)
        self.resp = self.error = None
        self.start()

    def run(self):
        t0 = time.monotonic()
        try:
            self.resp = Resp(*self.api.raw("GET", self.path, accept=self.accept, query=self.query,
                                           timeout=WATCH_S + 30))
        except Exception as e:  # noqa: BLE001 - reported by result()
            self.error = e
        self.elapsed = time.monotonic() - t0

    def result(self):
        self.join(WATCH_S + 40)
        if self.error is not None:
            raise self.error
        return self.resp


def stream_shape(r):
    """(shape, events) of a finished watch; checks the framing and RV order on the way."""
    if r.status != 200:  # refused before streaming: an ordinary answer
        return r.shape(), []
    s = {"http": r.status, "type": media(r.headers),
         "chunked": r.headers.get("transfer-encoding") == "chunked",
         "newline-terminated": r.data.endswith(b"\n") or r.data == b""}
    events = []
    for line in r.data.split(b"\n"):
        try:
            if line.strip():
                events.append(json.loads(line))
        except ValueError:
            s["not one JSON event per line"] = line[:200]
    s["event keys"] = sorted({tuple(sorted(e)) for e in events})
    s["events"], s["bookmarks"] = [], []
    last = 0
    for e in events:
        obj = e.get("object") or {}
        if not isinstance(obj.get("metadata"), dict):
            s["events"].append(("no object metadata", sorted(e)))
            continue
        if e.get("type") == "ERROR":
            s["events"].append(("ERROR", status_shape(obj, message=False)))
            continue
        rv = int(obj["metadata"]["resourceVersion"])
        if rv < last:  # only initial events (sendInitialEvents) come in key order
            s["rv order"] = "not monotonic"
        last = rv
        if e["type"] == "BOOKMARK":
            b = object_shape(obj)
            b["annotations"] = obj["metadata"].get("annotations")
            b["objkeys"] = {k: v for k, v in obj.items() if k not in ("metadata", "kind",
                                                                    "apiVersion")}
            s["bookmarks"].append(b)
        else:
            s["events"].append((e["type"], obj["metadata"].get("name"), object_shape(obj),
                                "deletionTimestamp" in obj["metadata"]))
    # how many bookmarks arrive depends on timing: their shape is compared, and that there is one
    s["bookmarks"] = s["bookmarks"][:1]
    return s, events


# ---------------------------------------------------------------- etcd

def etcd_compact(url):
    """Compact the real cluster's etcd at its current revision (through the v3 JSON
    gateway); returns the revision."""
    def post(path, body):
        req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": JSON})
        with urllib.request.urlopen(req, timeout=10) as f:
            return json.loads(f.read())
    rev = int(post("/v3/kv/range", {"key": base64.b64encode(b"/registry/").decode(),
                                    "limit": "1"})["header"]["revision"])
    post("/v3/kv/compaction", {"revision": str(rev), "physical": True})
    return rev


# ---------------------------------------------------------------- the test case

def pod(name, labels):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": dict(KUBELET_IGNORE, **labels)},
            "spec": {"containers": [{"name": "main", "image": "busybox",
                                     "command": ["sleep", "3600"]}]}}


def jobset(name, labels=None):
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"managedBy": MANAGED_BY, "replicatedJobs": [{
                "name": "workers", "replicas": 1, "template": {"spec": {"template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "jax", "image": "busybox"}]}}}}}]}}


class Differential(E2ETest):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeApiServer(tokens={FAKE_TOKEN})
        cls.fake.register_ml_crds()
        cls.fake.start()
        cls.fake_api = kubeapi.Api(cls.fake.url, token=FAKE_TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.fake.stop()
        sys.stderr.write("differential: ALLOWED differences met: %s\n" % ", ".join(sorted(USED)))

    def setUp(self):
        super().setUp()
        self.sides = {"real": self.api, "fake": self.fake_api}
        self.fake.errors.clear()
        self.open_watches = []

    def tearDown(self):
        for w in self.open_watches:  # a failed test's watches end before the next test's start
            w.join(WATCH_S + 40)
        super().tearDown()
        for ns in self.namespaces:
            self.fake_api.raw("DELETE", "/api/v1/namespaces/" + ns)
        self.assertEqual(self.fake.errors, [], "the fake hit a bug of its own")

    # -- helpers

    def pair_namespace(self, prefix):
        ns = self.namespace(prefix)
        r = self.fake_api.raw("POST", "/api/v1/namespaces",
                              {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        self.assertEqual(r[0], 201, r[2])
        return ns

    def both(self, method, path, body=None, ctype=JSON, accept=JSON, query=None, api=None):
        """The same request to the real server, then to the fake: {side: Resp}."""
        out = {}
        for side, a in (api or self.sides).items():
            b = body(side) if callable(body) else body
            out[side] = Resp(*a.raw(method, path, b, ctype=ctype, accept=accept, query=query))
        return out

    def same(self, what, rs, expect=None, fix=None, **shape_kw):
        """The two answers have the same shape (after `fix`, an ALLOWED rewrite of the
        pair of shapes); expect: the status code both must have. Returns rs."""
        real, fake = rs["real"].shape(**shape_kw), rs["fake"].shape(**shape_kw)
        real = without_managed_fields(real)
        if fix is not None:
            real, fake = fix(real, fake)
        self.assertEqual(real, fake, "%s: the fake answers differently\nreal: %s\nfake: %s" % (
            what, rs["real"].data[:1500], rs["fake"].data[:1500]))
        if expect is not None:
            self.assertEqual(real["http"], expect, "%s: %s" % (what, rs["real"].data[:800]))
        return rs

    def check(self, what, method, path, body=None, expect=None, fix=None, shape_kw=None, **kw):
        return self.same(what, self.both(method, path, body, **kw), expect, fix,
                         **(shape_kw or {}))

    def field(self, rs, getter):
        """getter applied to both answers, which must agree."""
        vals = {side: getter(r.doc) for side, r in rs.items()}
        self.assertEqual(vals["real"], vals["fake"], vals)
        return vals["real"]

    def watches(self, path, rvs, **kw):
        ws = {side: Watch(a, path, rvs[side] if rvs else None, **kw)
              for side, a in self.sides.items()}
        self.open_watches.extend(ws.values())
        return ws

    def same_stream(self, what, ws, fix=None, min_events=1, bookmark=True, lasts=WATCH_S):
        """Both watches' streams have the same shape; each lasted `lasts` seconds (the
        timeoutSeconds asked for, or 0: ended at once)."""
        shapes = {side: stream_shape(w.result())[0] for side, w in ws.items()}
        real, fake = without_managed_fields(shapes["real"]), shapes["fake"]
        if fix is not None:
            real, fake = fix(real, fake)
        self.assertEqual(real, fake, "%s: the watch streams differ" % what)
        for side, w in ws.items():
            self.assertEqual(shapes[side]["http"], 200, (side, what))
            self.assertGreaterEqual(w.elapsed, lasts - 1.5, "%s %s: ended early" % (side, what))
            self.assertLess(w.elapsed, lasts + 5, "%s %s: lasted %.1fs" % (side, what, w.elapsed))
            self.assertGreaterEqual(len(shapes[side]["events"]), min_events,
                                    (side, what, w.resp.data[:2000]))
            if bookmark:
                self.assertTrue(shapes[side]["bookmarks"], "%s %s: no BOOKMARK" % (side, what))
        return shapes

    # -- list + watch of pods (the operator's pods source)

    def test_pods_list_pages_selectors_and_watch(self):
        ns = self.pair_namespace("dpod")
        P = "/api/v1/namespaces/%s/pods" % ns
        first = self.check("empty pod list", "GET", P, expect=200)
        rvs = {s: r.rv for s, r in first.items()}
        full = self.watches(P, rvs)
        meta = self.watches(P, rvs, accept=META, labelSelector="tier=a")
        # (the watches start at the list's RV: they see every write below, whenever they start)
        tiers = ["a", "a", "b", "b", "a"]
        for i, t in enumerate(tiers):
            rs = self.check("create pod", "POST", P, pod("p%d" % i, {"tier": t}), expect=201)
            self.assertEqual(self.field(rs, lambda d: d["metadata"]["generation"]), 1)
        self.check("duplicate pod", "POST", P, pod("p0", {"tier": "a"}), expect=409)
        self.check("label patch: p2 enters tier=a", "PATCH", P + "/p2",
                   {"metadata": {"labels": {"tier": "a"}}}, ctype=MERGE, expect=200)
        self.check("label patch: p0 leaves tier=a", "PATCH", P + "/p0",
                   {"metadata": {"labels": {"tier": "b"}}}, ctype=MERGE, expect=200)
        rs = self.check("delete pod", "DELETE", P + "/p4", expect=200)
        self.assertEqual(self.field(rs, lambda d: (d["kind"], d["metadata"]["generation"],
                                                   d["metadata"]["deletionGracePeriodSeconds"])),
                         ("Pod", 2, 0))
        self.check("GET deleted pod", "GET", P + "/p4", expect=404)
        self.check("GET pod metadata (wh_cache get_meta)", "GET", P + "/p1", accept=META,
                   expect=200, fix=self.meta_type)
        self.check("GET missing pod metadata", "GET", P + "/nope", accept=META, expect=404)
        # pages as k8s_watch.c lists them (limit, continue until empty), full and metadata-only
        for accept, fix in ((JSON, None), (META_LIST, self.meta_type)):
            pages = self.pages(P, 2, accept, fix)
            self.assertEqual([p["real"].shape()["names"] for p in pages],
                             [["p0", "p1"], ["p2", "p3"]])
            self.assertEqual([p["real"].doc["metadata"].get("remainingItemCount") for p in pages],
                             [2, None])
        for sel, names in (("tier=a", ["p1", "p2"]), ("tier!=a", ["p0", "p3"]),
                           ("tier in (a,b)", ["p0", "p1", "p2", "p3"]), ("!tier", []),
                           ("tier,tier notin (b)", ["p1", "p2"])):
            rs = self.check("labelSelector " + sel, "GET", P, query={"labelSelector": sel},
                            expect=200)
            self.assertEqual(rs["real"].shape()["names"], names)
        # limit with a selector: a page, a continue token, no remainingItemCount
        self.pages(P, 1, JSON, None, labelSelector="tier=a")
        self.check("bad labelSelector", "GET", P, query={"labelSelector": "tier in (a"},
                   expect=400, fix=self.free_text)
        # the watches: every event, in order, with the same objects, then a BOOKMARK
        shapes = self.same_stream("pod watch", full, fix=self.pod_deletion, min_events=8)
        self.assertEqual([(e[0], e[1]) for e in shapes["fake"]["events"]],
                         [("ADDED", "p0"), ("ADDED", "p1"), ("ADDED", "p2"), ("ADDED", "p3"),
                          ("ADDED", "p4"), ("MODIFIED", "p2"), ("MODIFIED", "p0"),
                          ("DELETED", "p4")])
        shapes = self.same_stream("metadata-only pod watch with labelSelector tier=a", meta,
                                  fix=self.pod_deletion, min_events=5)
        self.assertEqual([(e[0], e[1]) for e in shapes["fake"]["events"]],
                         [("ADDED", "p0"), ("ADDED", "p1"), ("ADDED", "p4"), ("ADDED", "p2"),
                          ("DELETED", "p0"), ("DELETED", "p4")])
        self.assertEqual(shapes["fake"]["bookmarks"][0]["kind"], "PartialObjectMetadata")
        # the streaming list (no client of ours uses it yet): initial ADDEDs, then the
        # initial-events-end BOOKMARK
        self.check("sendInitialEvents without resourceVersionMatch", "GET", P,
                   query={"watch": "1", "sendInitialEvents": "true",
                          "allowWatchBookmarks": "true"}, expect=422)
        ws = self.watches(P, None, sendInitialEvents="true", resourceVersionMatch="NotOlderThan")
        shapes = self.same_stream("watch with sendInitialEvents", ws, min_events=4)
        self.assertEqual([(e[0], e[1]) for e in shapes["fake"]["events"]],
                         [("ADDED", "p0"), ("ADDED", "p1"), ("ADDED", "p2"), ("ADDED", "p3")])
        self.assertEqual(shapes["fake"]["bookmarks"][0]["annotations"],
                         {"k8s.io/initial-events-end": "true"})

    def pages(self, path, limit, accept, fix, **query):
        """Every page of a paged list on both sides, compared page by page."""
        pages, tokens = [], {"real": None, "fake": None}
        while True:
            out = {}
            for side, a in self.sides.items():
                q = dict(query, limit=str(limit))
                if tokens[side]:
                    q["continue"] = tokens[side]
                out[side] = Resp(*a.raw("GET", path, accept=accept, query=q))
            self.same("page %d of %s (limit %d, %s)" % (len(pages) + 1, path, limit, query), out,
                      200, fix)
            pages.append(out)
            tokens = {s: r.doc["metadata"].get("continue") for s, r in out.items()}
            for s, r in out.items():  # every page of one list is at the first page's RV
                self.assertEqual(r.rv, pages[0][s].rv, s)
            if not tokens["real"]:
                return pages
            self.assertLess(len(pages), 20)

    # -- JobSets: a custom resource, metadata-only as the webhook's cache watches them

    def test_custom_resource_jobsets(self):
        ns = self.pair_namespace("djs")
        J = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/%s/jobsets" % ns
        first = self.check("empty jobset list (metadata-only)", "GET", J, accept=META_LIST,
                           expect=200, fix=self.meta_type)
        rvs = {s: r.rv for s, r in first.items()}
        meta = self.watches(J, rvs, accept=META)
        full = self.watches(J, rvs)
        for i in range(3):
            rs = self.check("create jobset", "POST", J, jobset("j%d" % i, {"n": str(i)}),
                            expect=201)
            self.assertEqual(self.field(rs, lambda d: (d["kind"], d["metadata"]["generation"])),
                             ("JobSet", 1))
        rs = self.check("duplicate jobset", "POST", J, jobset("j0"), expect=409)
        self.assertIn('"j0" already exists', rs["fake"].doc["message"])
        self.check("GET jobset metadata (wh_cache get_meta)", "GET", J + "/j0", accept=META,
                   expect=200, fix=self.meta_type)
        self.check("GET missing jobset", "GET", J + "/nope", expect=404)
        self.check("GET missing jobset metadata", "GET", J + "/nope", accept=META, expect=404)
        # optimistic concurrency, as test_k8s_client_fake.c does it
        cur = self.both("GET", J + "/j0")
        self.same("GET jobset", cur, 200)

        def relabeled(side, **meta):
            d = json.loads(json.dumps(cur[side].doc))
            d["metadata"]["labels"]["stage"] = "1"
            d["metadata"].update(meta)
            for k in [k for k, v in meta.items() if v is None]:
                del d["metadata"][k]
            return d
        rs = self.check("PUT jobset", "PUT", J + "/j0", relabeled, expect=200)
        self.assertEqual(self.field(rs, lambda d: d["metadata"]["generation"]), 1)
        for s in rs:
            self.assertGreater(rs[s].rv, cur[s].rv)
        rs = self.check("PUT jobset with a stale resourceVersion", "PUT", J + "/j0", relabeled,
                        expect=409)
        self.assertIn("the object has been modified", rs["fake"].doc["message"])
        self.check("PUT jobset without resourceVersion", "PUT", J + "/j0",
                   lambda s: relabeled(s, resourceVersion=None), expect=422)
        self.check("PUT jobset under another name", "PUT", J + "/j0",
                   lambda s: relabeled(s, name="j9"), expect=400, fix=self.free_text)
        self.check("merge patch jobset labels", "PATCH", J + "/j0",
                   {"metadata": {"labels": {"stage": "2"}}}, ctype=MERGE, expect=200)
        self.check("JSON patch with a failing test op", "PATCH", J + "/j0",
                   [{"op": "test", "path": "/metadata/name", "value": "other"}], ctype=JSON_PATCH,
                   expect=422, fix=self.free_text)
        self.check("JSON patch that is not an array", "PATCH", J + "/j0", {"op": "add"},
                   ctype=JSON_PATCH, expect=400, fix=self.free_text)
        rs = self.check("JSON patch of labels", "PATCH", J + "/j0",
                        [{"op": "add", "path": "/metadata/labels/stage", "value": "3"}],
                        ctype=JSON_PATCH, expect=200)
        self.assertEqual(self.field(rs, lambda d: d["metadata"]["labels"]),
                         {"n": "0", "stage": "3"})
        # the status subresource: a stale resourceVersion is a conflict, a fresh one works
        stale = {s: dict(r.doc, status={"restarts": 1}) for s, r in cur.items()}
        self.check("status PUT with a stale resourceVersion", "PUT", J + "/j0/status",
                   lambda s: stale[s], expect=409)
        now = self.both("GET", J + "/j0")
        rs = self.check("status PUT", "PUT", J + "/j0/status",
                        lambda s: dict(now[s].doc, status={"restarts": 1}), expect=200)
        self.assertEqual(self.field(rs, lambda d: (d["status"], d["metadata"]["generation"])),
                         ({"restarts": 1}, 1))
        rs = self.check("delete jobset", "DELETE", J + "/j2", expect=200)
        self.assertEqual(self.field(rs, lambda d: d["status"]), "Success")
        for accept, fix in ((JSON, None), (META_LIST, self.meta_type)):
            pages = self.pages(J, 1, accept, fix)
            self.assertEqual(len(pages), 2)
            self.assertEqual([i.get("kind") for p in pages for i in p["real"].doc["items"]],
                             ["JobSet"] * 2 if accept == JSON else ["PartialObjectMetadata"] * 2)
        self.check("unserved version of the jobset group", "GET",
                   "/apis/jobset.x-k8s.io/v1/namespaces/%s/jobsets" % ns, expect=404,
                   fix=self.unserved)
        self.check("group nothing serves (CRD not installed)", "GET",
                   "/apis/notinstalled.example.com/v1/namespaces/%s/widgets" % ns, expect=404,
                   fix=self.unserved)
        self.check("unknown core resource", "GET", "/api/v1/namespaces/%s/widgets" % ns,
                   expect=404)
        expect = [("ADDED", "j0"), ("ADDED", "j1"), ("ADDED", "j2"), ("MODIFIED", "j0"),
                  ("MODIFIED", "j0"), ("MODIFIED", "j0"), ("MODIFIED", "j0"), ("DELETED", "j2")]
        for what, ws in (("metadata-only jobset watch", meta), ("jobset watch", full)):
            shapes = self.same_stream(what, ws, min_events=len(expect))
            self.assertEqual([(e[0], e[1]) for e in shapes["fake"]["events"]], expect)

    # -- MLDiagnosticsConnection status, as op_status.c writes it

    def test_mldiagnosticsconnection_status_subresource(self):
        ns = self.pair_namespace("dmldc")
        M = "/apis/diagon.gke.io/v1alpha1/namespaces/%s/mldiagnosticsconnections" % ns

        def raced(real, fake):
            """The operator may write a status between our create and delete (its write is
            conditional on the resourceVersion it saw, so none lands after the delete); our
            first status PUT replaces it. The fake has no status then: create drops it."""
            if "status" in real["keys"] and "status" not in fake["keys"] and \
                    allowed("operator status before deletion"):
                return dict(real, keys=[k for k in real["keys"] if k != "status"]), fake
            return real, fake
        obj = {"apiVersion": "diagon.gke.io/v1alpha1", "kind": "MLDiagnosticsConnection",
               "metadata": {"name": "cap", "finalizers": [FINALIZER]},
               "spec": {"triggerCapture": {"capturePort": 9999, "durationSeconds": 5,
                                           "podName": "nobody", "podNamespace": ns,
                                           "profiler": "google_cloud_mldiagnostics",
                                           "storageLocation": "/tmp/differential"}},
               "status": {"phase": "Running"}}
        # create, then mark deleted at once: the operator leaves a terminating resource alone
        self.addCleanup(self.api.raw, "PATCH", M + "/cap", {"metadata": {"finalizers": None}},
                        ctype=MERGE)  # else the namespace would wait for it forever
        rs = self.both("POST", M, obj)
        gone = self.check("delete a held MLDiagnosticsConnection", "DELETE", M + "/cap",
                          expect=200, fix=raced)
        self.same("create MLDiagnosticsConnection (status dropped)", rs, 201)
        self.assertEqual(self.field(rs, lambda d: ("status" in d, d["metadata"]["generation"])),
                         (False, 1))
        self.assertEqual(self.field(gone, lambda d: (
            d["kind"], d["metadata"]["finalizers"], d["metadata"]["generation"],
            d["metadata"]["deletionGracePeriodSeconds"])),
            ("MLDiagnosticsConnection", [FINALIZER], 2, 0))
        self.check("duplicate MLDiagnosticsConnection", "POST", M, obj, expect=409)
        cur = self.both("GET", M + "/cap")
        self.same("GET MLDiagnosticsConnection", cur, 200, fix=raced)

        def with_(side, base, status=None, duration=None):
            d = json.loads(json.dumps(base[side].doc))
            if status is not None:
                d["status"] = status
            if duration is not None:
                d["spec"]["triggerCapture"]["durationSeconds"] = duration
            return d
        st = {"phase": "Pending", "message": "resolving the target pods",
              "conditions": [{"type": "Ready", "status": "False", "reason": "Pending",
                              "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        rs = self.check("status PUT (spec change ignored)", "PUT", M + "/cap/status",
                        lambda s: with_(s, cur, st, 60), expect=200)
        self.assertEqual(self.field(rs, lambda d: (
            d["status"], d["spec"]["triggerCapture"]["durationSeconds"],
            d["metadata"]["generation"])), (st, 5, 2))
        self.check("status PUT with a stale resourceVersion", "PUT", M + "/cap/status",
                   lambda s: with_(s, cur, st), expect=409)
        rs = self.check("status merge PATCH (spec change ignored)", "PATCH", M + "/cap/status",
                        {"status": {"message": "dispatched", "attempts": 1},
                         "spec": {"triggerCapture": {"durationSeconds": 61}}}, ctype=MERGE,
                        expect=200)
        self.assertEqual(self.field(rs, lambda d: (
            d["status"]["message"], d["status"]["attempts"], d["status"]["phase"],
            d["spec"]["triggerCapture"]["durationSeconds"])), ("dispatched", 1, "Pending", 5))
        rs = self.check("status JSON PATCH (spec change ignored)", "PATCH", M + "/cap/status",
                        [{"op": "replace", "path": "/status/phase", "value": "Running"},
                         {"op": "replace", "path": "/spec/triggerCapture/durationSeconds",
                          "value": 62}], ctype=JSON_PATCH, expect=200)
        self.assertEqual(self.field(rs, lambda d: (
            d["status"]["phase"], d["spec"]["triggerCapture"]["durationSeconds"],
            d["metadata"]["generation"])), ("Running", 5, 2))
        self.check("status JSON PATCH with a failing test op", "PATCH", M + "/cap/status",
                   [{"op": "test", "path": "/status/phase", "value": "Pending"}],
                   ctype=JSON_PATCH, expect=422, fix=self.free_text)
        now = self.both("GET", M + "/cap")
        rs = self.check("main PUT (status change ignored, spec change counted)", "PUT", M + "/cap",
                        lambda s: with_(s, now, {"phase": "Failed"}, 7), expect=200)
        self.assertEqual(self.field(rs, lambda d: (
            d["status"]["phase"], d["spec"]["triggerCapture"]["durationSeconds"],
            d["metadata"]["generation"])), ("Running", 7, 3))
        rs = self.check("main merge PATCH of status (ignored)", "PATCH", M + "/cap",
                        {"status": {"phase": "Succeeded"}}, ctype=MERGE, expect=200)
        self.assertEqual(self.field(rs, lambda d: d["status"]["phase"]), "Running")
        self.check("GET MLDiagnosticsConnection status", "GET", M + "/cap/status", expect=200)
        self.check("list MLDiagnosticsConnections (op_selftest's limit=1)", "GET", M,
                   query={"limit": "1"}, expect=200)
        rs = self.check("drop the finalizer: deleted", "PATCH", M + "/cap",
                        {"metadata": {"finalizers": None}}, ctype=MERGE, expect=200)
        self.check("GET deleted MLDiagnosticsConnection", "GET", M + "/cap", expect=404)

    # -- the Lease, as op_lease.c takes and renews it

    def test_lease_leader_election(self):
        ns = self.pair_namespace("dlease")
        L = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % ns
        self.check("GET missing Lease", "GET", L + "/op", expect=404)

        def lease(name, **spec):
            s = {"holderIdentity": "op-a", "leaseDurationSeconds": 15,
                 "acquireTime": "2026-01-02T03:04:05.123456Z",
                 "renewTime": "2026-01-02T03:04:05.123456Z", "leaseTransitions": 0}
            s.update(spec)
            return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": ns}, "spec": s}
        rs = self.check("create Lease", "POST", L, lease("op"), expect=201)
        self.assertEqual(self.field(rs, lambda d: d["spec"]), lease("op")["spec"])
        self.check("duplicate Lease", "POST", L, lease("op"), expect=409)
        rs = self.check("create Lease with a UTC offset", "POST", L,
                        lease("offset", renewTime="2026-01-02T05:04:05.000001+02:00"),
                        expect=201)
        self.assertEqual(self.field(rs, lambda d: d["spec"]["renewTime"]),
                         "2026-01-02T03:04:05.000001Z")
        for bad in ("2026-01-02T03:04:05.123Z", "2026-01-02T03:04:05Z"):
            self.check("Lease with MicroTime " + bad, "POST", L, lease("bad", renewTime=bad),
                       expect=400, fix=self.free_text)
        self.check("Lease with leaseDurationSeconds 0", "POST", L,
                   lease("bad", leaseDurationSeconds=0), expect=422)
        cur = self.both("GET", L + "/op")
        self.same("GET Lease", cur, 200)

        def renewed(side, base=cur, **meta):
            d = json.loads(json.dumps(base[side].doc))
            d["spec"]["renewTime"] = "2026-01-02T03:04:07.000000Z"
            d["metadata"].update(meta)
            for k in [k for k, v in meta.items() if v is None]:
                del d["metadata"][k]
            return d
        rs = self.check("renew Lease (PUT)", "PUT", L + "/op", renewed, expect=200)
        self.assertEqual(self.field(rs, lambda d: d["spec"]["renewTime"]),
                         "2026-01-02T03:04:07.000000Z")
        rs = self.check("PUT Lease with a stale resourceVersion (another candidate won)", "PUT",
                        L + "/op", renewed, expect=409)
        self.assertIn("the object has been modified", rs["fake"].doc["message"])
        self.check("PUT Lease without resourceVersion", "PUT", L + "/op",
                   lambda s: renewed(s, resourceVersion=None), expect=422)
        now = self.both("GET", L + "/op")
        release = {s: dict(r.doc, spec=dict(r.doc["spec"], holderIdentity="",
                                            leaseDurationSeconds=1)) for s, r in now.items()}
        self.check("release Lease", "PUT", L + "/op", lambda s: release[s], expect=200)
        self.check("list Leases", "GET", L, expect=200)
        rs = self.check("delete Lease", "DELETE", L + "/offset", expect=200)
        self.assertEqual(self.field(rs, lambda d: (d["kind"], d["status"])), ("Status", "Success"))

    # -- v1 Events as op_event.c posts them; expired continue tokens and watch RVs

    def test_events_pages_and_expired_history(self):
        ns = self.pair_namespace("devt")
        E = "/api/v1/namespaces/%s/events" % ns

        def event(name):
            now = "2026-01-02T03:04:05Z"
            return {"apiVersion": "v1", "kind": "Event",
                    "metadata": {"name": name, "namespace": ns},
                    "involvedObject": {"apiVersion": "diagon.gke.io/v1alpha1",
                                       "kind": "MLDiagnosticsConnection", "namespace": ns,
                                       "name": "cap",
                                       "uid": "0f6a2d0e-8d40-4c8a-9f53-1f2a6b7c8d9e"},
                    "reason": "Pending", "message": "validated; resolving the target pods",
                    "type": "Normal", "source": {"component": "mldiagnostics-operator"},
                    "firstTimestamp": now, "lastTimestamp": now, "count": 1,
                    "reportingComponent": "mldiagnostics-operator",
                    "reportingInstance": "operator-0"}
        for i in range(4):
            rs = self.check("create Event", "POST", E, event("cap.18a%d" % i), expect=201)
            sent = event("cap.18a%d" % i)
            for k in ("involvedObject", "reason", "message", "type", "source", "firstTimestamp",
                      "lastTimestamp", "count", "reportingComponent", "reportingInstance"):
                self.assertEqual(self.field(rs, lambda d: d[k]), sent[k], k)
        self.check("duplicate Event", "POST", E, event("cap.18a0"), expect=409)
        self.check("Events by fieldSelector", "GET", E,
                   query={"fieldSelector": "involvedObject.name=cap,involvedObject.kind="
                                           "MLDiagnosticsConnection"}, expect=200)
        first = self.check("first page of Events", "GET", E, query={"limit": "2"}, expect=200)
        tokens = {s: r.meta["continue"] for s, r in first.items()}
        self.check("one more Event", "POST", E, event("cap.18a9"), expect=201)
        # history compacted past the first page's RV
        etcd_compact(self.c.cp.etcd_url)
        self.fake.compact()
        out = {}
        for side, a in self.sides.items():
            out[side] = Resp(*a.raw("GET", E, query={"limit": "2", "continue": tokens[side]}))
        self.same("continue token older than the compaction", out, 410, self.expired_token)
        self.check("a new list after 410 (k8s_watch.c restarts the list)", "GET", E,
                   query={"limit": "2"}, expect=200)
        self.check("malformed continue token", "GET", E,
                   query={"limit": "2", "continue": "garbage"}, expect=400, fix=self.free_text)
        # A watch from before the history: the real JobSet cache starts at the CRD's creation,
        # long after RV 1; the fake's history was just compacted. As the webhook watches them.
        J = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/%s/jobsets" % ns
        for accept in (META, JSON):
            ws = self.watches(J, {"real": 1, "fake": 1}, accept=accept)
            shapes = self.same_stream("jobset watch from a too old resourceVersion", ws,
                                      bookmark=False, lasts=0)
            self.assertEqual(len(shapes["fake"]["events"]), 1)
            self.assertEqual(shapes["fake"]["events"][0][0], "ERROR")
            self.assertEqual(shapes["fake"]["events"][0][1]["code"], 410)
            self.assertEqual(shapes["fake"]["events"][0][1]["reason"], "Expired")

    # -- namespaces (the operator's metadata-only source; the selftests' GET)

    def test_namespaces(self):
        ns = self.pair_namespace("dns")
        rs = self.check("GET namespace", "GET", "/api/v1/namespaces/" + ns, expect=200)
        self.assertEqual(self.field(rs, lambda d: (d["status"], d["metadata"]["labels"])),
                         ({"phase": "Active"}, {"kubernetes.io/metadata.name": ns}))
        self.check("GET missing namespace", "GET", "/api/v1/namespaces/nope-" + ns, expect=404)
        # cluster-wide: how many namespaces there are differs, the page's shape does not
        rs = self.check("metadata-only namespace page", "GET", "/api/v1/namespaces",
                        query={"limit": "1"}, accept=META_LIST, expect=200,
                        fix=lambda r, f: self.meta_type(dict(r, remaining=None),
                                                        dict(f, remaining=None)),
                        shape_kw={"names": False})
        self.assertTrue(rs["real"].doc["metadata"]["continue"])
        rs = self.check("namespace list by label", "GET", "/api/v1/namespaces",
                        query={"labelSelector": "kubernetes.io/metadata.name=" + ns},
                        accept=META_LIST, expect=200, fix=self.meta_type)
        self.assertEqual(rs["real"].shape()["names"], [ns])
        ws = self.watches("/api/v1/namespaces", {s: r.rv for s, r in rs.items()}, accept=META,
                          labelSelector="kubernetes.io/metadata.name=" + ns)
        self.check("label namespace", "PATCH", "/api/v1/namespaces/" + ns,
                   {"metadata": {"labels": {"managed-mldiagnostics-gke": "true"}}}, ctype=MERGE,
                   expect=200)
        shapes = self.same_stream("metadata-only namespace watch", ws)
        self.assertEqual([(e[0], e[1]) for e in shapes["fake"]["events"]], [("MODIFIED", ns)])

    # -- what the webhook's certgen and selftest write and read (wh_certgen.c, wh_selftest.c)

    def test_webhook_certgen_and_selftest_requests(self):
        ns = self.pair_namespace("dwh")
        S = "/api/v1/namespaces/%s/secrets" % ns
        b64 = lambda text: base64.b64encode(text.encode()).decode()  # noqa: E731
        pem = lambda what: "-----BEGIN %s-----\nAAAA\n-----END %s-----\n" % (what, what)  # noqa
        secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                  "metadata": {"name": "webhook-tls", "namespace": ns,
                               "labels": {
                                   "app.kubernetes.io/managed-by": "mldiagnostics-certgen"}},
                  "data": {"tls.crt": b64(pem("CERTIFICATE")), "tls.key": b64(pem("PRIVATE KEY")),
                           "ca.crt": b64(pem("CERTIFICATE"))}}
        self.check("GET missing Secret", "GET", S + "/webhook-tls", expect=404)
        self.check("create TLS Secret", "POST", S, secret, expect=201)
        self.check("duplicate Secret", "POST", S, secret, expect=409)
        cur = self.both("GET", S + "/webhook-tls")
        self.same("GET Secret", cur, 200)
        renewed = {s: dict(r.doc, data=dict(r.doc["data"], **{"ca.crt": b64(pem("X509 CRL"))}))
                   for s, r in cur.items()}
        self.check("renew Secret (PUT)", "PUT", S + "/webhook-tls", lambda s: renewed[s],
                   expect=200)
        self.check("renew Secret with a stale resourceVersion", "PUT", S + "/webhook-tls",
                   lambda s: renewed[s], expect=409)
        # the MutatingWebhookConfiguration's caBundle, by JSON patch (it selects no namespace)
        name = "differential-" + ns
        W = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
        with open(self.c.cp.ca[0]) as f:
            ca = base64.b64encode(f.read().encode()).decode()
        mwc = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingWebhookConfiguration", "metadata": {"name": name},
               "webhooks": [{"name": "pods.differential.e2e.mldiagnostics",
                             "clientConfig": {"service": {"namespace": ns, "name": "nobody",
                                                          "path": "/mutate"}},
                             "rules": [{"operations": ["CREATE"], "apiGroups": [""],
                                        "apiVersions": ["v1"], "resources": ["configmaps"]}],
                             "namespaceSelector": {"matchLabels": {
                                 "e2e.mldiagnostics/differential": "never"}},
                             "failurePolicy": "Ignore", "sideEffects": "None",
                             "admissionReviewVersions": ["v1"], "timeoutSeconds": 1}]}
        self.addCleanup(self.api.raw, "DELETE", W + "/" + name)
        rs = self.check("create MutatingWebhookConfiguration", "POST", W, mwc, expect=201)
        self.assertEqual(self.field(rs, lambda d: d["metadata"]["generation"]), 1)
        self.check("GET MutatingWebhookConfiguration", "GET", W + "/" + name, expect=200)
        patch = [{"op": "test", "path": "/webhooks/0/name",
                  "value": "pods.differential.e2e.mldiagnostics"},
                 {"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": ca}]
        rs = self.check("caBundle JSON patch", "PATCH", W + "/" + name, patch, ctype=JSON_PATCH,
                        expect=200)
        self.assertEqual(self.field(rs, lambda d: (d["webhooks"][0]["clientConfig"]["caBundle"],
                                                   d["metadata"]["generation"])), (ca, 2))
        self.check("caBundle JSON patch whose test fails (the entry moved)", "PATCH",
                   W + "/" + name, [dict(patch[0], value="other")] + patch[1:],
                   ctype=JSON_PATCH, expect=422, fix=self.free_text)
        rs = self.check("delete MutatingWebhookConfiguration", "DELETE", W + "/" + name,
                        expect=200)
        self.assertEqual(self.field(rs, lambda d: d["status"]), "Success")
        # wh_selftest's dry-run pod and op_selftest's Deployment read
        P = "/api/v1/namespaces/%s/pods" % ns
        rs = self.check("dry-run pod create", "POST", P, pod("dry", {}), query={"dryRun": "All"},
                        expect=201)
        self.check("the dry-run pod was not stored", "GET", P + "/dry", expect=404)
        self.check("bad dryRun value", "POST", P, pod("dry", {}), query={"dryRun": "Yes"},
                   expect=422)
        self.check("GET missing Deployment", "GET",
                   "/apis/apps/v1/namespaces/%s/deployments/mldiagnostics-operator" % ns,
                   expect=404)

    # -- authentication

    def test_bad_token_is_401(self):
        bad = {"real": kubeapi.Api(self.api.server, self.c.cp.ca[0], "bogus-token"),
               "fake": kubeapi.Api(self.fake.url, token="bogus-token")}
        for what, api in (("bogus token", bad),):
            self.check("list with a " + what, "GET", "/api/v1/namespaces", api=api, expect=401)
            self.check("watch with a " + what, "GET", "/api/v1/pods",
                       query={"watch": "1", "timeoutSeconds": "1"}, api=api, expect=401)
            self.check("metadata-only GET with a " + what, "GET", "/api/v1/namespaces/default",
                       accept=META, api=api, expect=401)
            self.check("POST with a " + what, "POST", "/api/v1/namespaces/default/events",
                       {"metadata": {"name": "x"}}, api=api, expect=401)

    # -- ALLOWED rewrites of a pair of shapes (real, fake)

    @staticmethod
    def free_text(real, fake):
        allowed("free-text message")
        return dict(real, message=None), dict(fake, message=None)

    @staticmethod
    def expired_token(real, fake):
        real, fake = Differential.free_text(real, fake)
        if real.get("metadata") == ["continue"] and fake.get("metadata") == [] and \
                real.get("reason") == fake.get("reason") == "Expired" and \
                allowed("expired continue token"):
            return dict(real, metadata=[], meta=[]), fake
        return real, fake

    @staticmethod
    def meta_type(real, fake):
        kind = real.get("kind")
        if kind in ("PartialObjectMetadata", "PartialObjectMetadataList") and \
                real.get("type") == JSON and fake.get("kind") == kind and \
                fake.get("type") == ("%s;as=%s;g=meta.k8s.io;v=v1" % (JSON, kind)).lower() and \
                allowed("metadata media type"):
            return real, dict(fake, type=JSON)
        return real, fake

    @staticmethod
    def unserved(real, fake):
        if real.get("type", "").startswith("text/plain") and \
                real.get("text") == "404 page not found" and \
                fake.get("type") == JSON and fake.get("reason") == "NotFound" and \
                fake.get("http") == 404 and allowed("unserved group 404"):
            return {"http": 404}, {"http": fake["http"]}
        return real, fake

    @staticmethod
    def pod_deletion(real, fake):
        """Drop the real server's MODIFIED-with-deletionTimestamp right before a DELETED
        of the same pod."""
        evs = real["events"]
        keep = [e for i, e in enumerate(evs)
                if not (e[0] == "MODIFIED" and e[3] and i + 1 < len(evs) and
                        evs[i + 1][:2] == ("DELETED", e[1]) and
                        allowed("pod deletion in one write"))]
        return dict(real, events=keep), fake


if __name__ == "__main__":
    unittest.main()
