"""A fake Kubernetes API server for tests: real HTTP/1.1 on loopback, state in-process.

Tests start it in their own process (background threads), manipulate its
objects and faults directly, and point real clients (our C binaries, through
libcurl) at ``api.url`` or at a kubeconfig written by ``api.kubeconfig()``.
Only the Python standard library is used (PyYAML optionally, for the
kubeconfig).

    api = FakeApiServer()                 # or tls=dict(cert=, key=, client_ca=), tokens={"t"}
    api.register_ml_crds()
    api.start()                           # 127.0.0.1:<free port>
    api.create("pods", {"metadata": {"name": "p"}, "spec": {}}, ns="default")
    ...
    api.stop()

Public API (FakeApiServer): start(port=None), stop(), restart(), refuse(on,
close_connections=False), url/port, kubeconfig(path, token=, token_file=,
ca_file=, client_cert=, client_key=), register(group, version, plural, kind,
namespaced=True, status=False, builtin=False), register_ml_crds(),
unregister(group, version, plural), create/get/update/patch/delete (first
argument: a plural such as "pods", a (group, version, plural) tuple or an
API path), objects(group, version, plural, ns=None), compact(),
drop_watches(), open_watches(), fail_next(n, status, retry_after, paths,
methods, close), clear_faults(), requests, clear_requests(),
count(method, path_regex, watch, status), wait_until(pred, timeout), errors,
resource_version; tunables: clock, tokens, latency, bookmark_interval,
bookmark_pretimeout, history_limit, http_410_on_watch,
default_watch_timeout, too_large_rv_wait, paginate_rv0, admission. tls=dict(cert=,
key=, client_ca=None, require_client_cert=False).

What is faithful to kube-apiserver (see /work/shared/reference/k8s-facts.md;
tests/e2e/test_differential.py compares it with the real one, request by
request, and lists the differences it allows):

* URL layout (core /api/v1, groups /apis/<g>/<v>, namespaced and cluster
  scope, the /status subresource), discovery documents, metav1.Status error
  bodies with the server's reasons, messages and details. The namespaces
  default, kube-system, kube-public and kube-node-lease exist from the
  start (labelled kubernetes.io/metadata.name). The five ML CRDs have the
  status subresource, as their upstream CRDs do.
* One global resourceVersion counter (strings on the wire), bumped on every
  write; no-op updates write nothing (same RV, no event), as etcd3's
  GuaranteedUpdate does. uid, creationTimestamp, generation (1 on create,
  +1 when anything outside metadata/status changes, +1 when deletion is
  marked; only on the kinds that keep one: CRs, pods, workloads, webhook
  configurations, not namespaces, services, configmaps, secrets, events or
  leases), finalizers with deletionTimestamp, generateName. What create
  sets on built-ins: a pod's status (phase Pending, qosClass), a
  namespace's spec.finalizers, the fields a v1 Event always encodes
  (eventTime null, ...). A deleted pod carries deletionTimestamp and a zero
  grace period, as an unscheduled pod's graceful deletion leaves it.
* Optimistic concurrency: PUT needs the stored resourceVersion (409
  Conflict otherwise); a PUT without one is 422 for CRDs and Leases (the
  storage layer's error, naming the resource) and an unconditional update
  for other built-ins. dryRun other than All is 422 (CreateOptions...).
  AlreadyExists says "object is being deleted: " when the existing object
  has a deletionTimestamp; a Success Status has no code. A resourceVersion or uid in a
  patch is a precondition. Create with a resourceVersion is 500, as the
  storage layer answers.
* Merge patch (RFC 7386) and JSON patch (RFC 6902, all six operations;
  malformed patch 400, failed application 422); other patch types 415.
* Status subresource: PUT/PATCH on /status take only .status, the main
  endpoint keeps the stored .status, create drops .status.
* LIST: label selectors (=, ==, !=, in, notin, exists, !exists, >, <),
  field selectors (metadata.name/namespace plus the well-known pod and event
  fields), limit/continue paging over a consistent snapshot at the list RV
  (served from the event history, so it expires exactly when the history
  is compacted: 410 Expired; a malformed token is 400 as in etcd3),
  resourceVersion/resourceVersionMatch (Exact reads an older state from the
  history; too new an RV waits briefly, then 504 ResourceVersionTooLarge),
  remainingItemCount, RV "0" ignoring limit like the watch cache. Built-in
  list items carry no apiVersion/kind; custom-resource list items do (the
  real server serves CRs as unstructured objects, whose items keep them,
  and whose list metadata always has continue, "" on the last page).
* Metadata-only responses (as=PartialObjectMetadata[List];g=meta.k8s.io;
  v=v1; an empty list's items are null), content negotiation over a
  comma-separated Accept (406 if none fits).
* WATCH: chunked HTTP/1.1, one compact JSON event per line and per chunk,
  events strictly after the RV, synthetic ADDED for RV ""/"0",
  sendInitialEvents with the initial-events-end bookmark, selector
  transitions (an object leaving the selector is DELETED with its previous
  content and the event's RV, entering is ADDED), periodic BOOKMARKs plus
  one 2 s before the deadline (as the cacher does), timeoutSeconds ending
  the stream with the final chunk, 410 Expired as an ERROR event (or as
  plain HTTP 410 when ``http_410_on_watch``). A pod BOOKMARK's object is an
  empty typed Pod (spec.containers null, status {}), as the cacher encodes it.
* 429 from API Priority and Fairness: Retry-After and a plain-text body.
  Bearer tokens and x509 client certificates (verified if given, like
  VerifyClientCertIfGiven); 401 Status when neither authenticates.
* Lease: MicroTime fields must have exactly six fractional digits (400 as
  the decoder answers) and come back in UTC; leaseDurationSeconds > 0 and
  leaseTransitions >= 0 (422).

What is not (on purpose; a fake for client tests, not a cluster):

* No admission, RBAC, defaulting or schema validation of CR bodies; only
  names, label syntax and the Lease fields above are validated. Tests that
  need a mutating webhook in the create path set ``admission``: a callable
  (resource, object, dry_run) -> object, called on every create before the
  name is generated (as mutating admission runs), that may raise ApiError.
* No garbage collection of ownerReferences, no graceful pod deletion (pods
  go at once unless they have finalizers, in one DELETED event where the
  real server writes MODIFIED with the deletionTimestamp first), namespaces are deleted at once
  without deleting their contents, and objects can be created in a
  namespace that does not exist.
* No server-side apply, no strategic merge patch (both 415), JSON only (no
  YAML or protobuf bodies), no Table output, no /watch/ legacy paths.
* The status subresource of built-ins behaves like the CRD one (only
  .status is taken), which is stricter than e.g. pods/status.
* The event history is a count of events per resource (``history_limit``),
  not a time window; ``compact()`` drops it at once. compact() also expires
  every continue token issued before it (etcd would keep a token at the
  compacted revision itself valid), so tests can produce a 410 at will;
  such tokens carry an extra "e" field, opaque to clients anyway.
* Periodic BOOKMARKs go on after the pre-deadline one (the cacher stops
  them), so short test watches with a small ``bookmark_interval`` get them.
* Metadata-only watches accept as=PartialObjectMetadata and
  as=PartialObjectMetadataList alike.
* DELETE returns the object for pods and a Status "Success" for every other
  resource (the real server varies per resource).
* Where the real server answers otherwise but this fake's self-tests pin
  its answer: metadata-only responses say Content-Type
  application/json;as=...;g=meta.k8s.io;v=v1 (real: application/json); a
  group/version nothing serves (a CRD not installed) is a JSON NotFound
  Status (real: text/plain "404 page not found"); the 410 for an expired
  continue token has empty metadata (real: a continue token for the rest).
* Faults, latency and the request log apply to HTTP only; the direct helpers
  (api.create/update/patch/delete/get) skip authentication and faults but
  otherwise run the same code as HTTP requests (events, RVs, validation).
"""

import base64
import bisect
import collections
import datetime
import http.server
import json
import random
import re
import select
import socket
import socketserver
import ssl
import threading
import time
import traceback
import urllib.parse
import uuid
from dataclasses import dataclass

__all__ = ["FakeApiServer", "ApiError", "Resource", "BUILTIN_RESOURCES", "ML_CRDS"]

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"
MAX_BODY = 3 * 1024 * 1024  # kube-apiserver MaxRequestBodyBytes
OPTIMISTIC_LOCK_MSG = ("the object has been modified; please apply your changes to the latest "
                       "version and try again")
TOO_MANY_REQUESTS_BODY = b"Too many requests, please try again later.\n"
META_GROUP = "meta.k8s.io"
JSON_TYPE = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, "application/apply-patch+yaml")
UTC = datetime.timezone.utc


# ---------------------------------------------------------------- errors

def status_object(code, reason, message, details=None, status="Failure"):
    """A metav1.Status as the API server writes it."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": status}
    if message:
        body["message"] = message
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    if status != "Success":  # the handlers' Success Status leaves code unset (omitted)
        body["code"] = code
    return body


class ApiError(Exception):
    """An API error; ``status()`` is the metav1.Status that goes on the wire."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details = details
        self.headers = headers or {}

    def status(self):
        return status_object(self.code, self.reason, self.message, self.details)


def _details(res, name, kind=None):
    d = {"name": name}
    if res.group:
        d["group"] = res.group
    d["kind"] = kind or res.plural
    return d


def not_found(res, name):
    return ApiError(404, "NotFound", f'{res.group_resource} "{name}" not found', _details(res, name))


def already_exists(res, name, deleting=False):
    prefix = "object is being deleted: " if deleting else ""
    return ApiError(409, "AlreadyExists", f'{prefix}{res.group_resource} "{name}" already exists',
                    _details(res, name))


def conflict(res, name, why=OPTIMISTIC_LOCK_MSG):
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res.group_resource} '
                    f'"{name}": {why}', _details(res, name))


def invalid(res, name, field, cause, text, by_resource=False):
    """422 Invalid with one field cause, e.g. cause FieldValueInvalid, text 'Invalid value: ...'.
    Validation names the kind (Lease.coordination.k8s.io); the storage layer (by_resource)
    names the resource (leases.coordination.k8s.io)."""
    details = _details(res, name, kind=None if by_resource else res.kind)
    details["causes"] = [{"reason": cause, "message": text, "field": field}]
    what = res.group_resource if by_resource else res.qualified_kind
    return ApiError(422, "Invalid", f'{what} "{name}" is invalid: {field}: {text}', details)


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def expired(message):
    return ApiError(410, "Expired", message)


def too_old_rv(rv, oldest):
    return expired(f"too old resource version: {rv} ({oldest})")


def unknown_path():
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def method_not_allowed():
    return ApiError(405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource", {})


def internal_error(message):
    return ApiError(500, "InternalError", f"Internal error occurred: {message}",
                    {"causes": [{"message": message}]})


def too_large_rv(rv, current):
    return ApiError(504, "Timeout", f"Too large resource version: {rv}, current: {current}",
                    {"causes": [{"reason": "ResourceVersionTooLarge",
                                 "message": "Too large resource version"}],
                     "retryAfterSeconds": 1})


# ---------------------------------------------------------------- resources

@dataclass(frozen=True)
class Resource:
    """A served resource. builtin=False means CRD semantics."""
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    status: bool = False          # has the /status subresource
    builtin: bool = False
    unconditional_update: bool = None  # PUT without resourceVersion allowed (None: builtin)
    return_deleted: bool = False  # DELETE answers the object instead of a Status
    generation: bool = True       # metadata.generation kept (CRs and most workload kinds)

    @property
    def key(self):
        return (self.group, self.version, self.plural)

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self):
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self):
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def allows_unconditional_update(self):
        return self.builtin if self.unconditional_update is None else self.unconditional_update

    def path(self, ns=None, name=None):
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        base = f"{root}/namespaces/{ns}/{self.plural}" if ns and self.namespaced \
            else f"{root}/{self.plural}"
        return f"{base}/{name}" if name else base


def _builtin(group, version, plural, kind, **kw):
    return Resource(group, version, plural, kind, builtin=True, **kw)


BUILTIN_RESOURCES = (
    _builtin("", "v1", "namespaces", "Namespace", namespaced=False, status=True,
             generation=False),
    _builtin("", "v1", "pods", "Pod", status=True, return_deleted=True),
    _builtin("", "v1", "services", "Service", status=True, generation=False),
    _builtin("", "v1", "events", "Event", generation=False),
    _builtin("", "v1", "configmaps", "ConfigMap", generation=False),
    _builtin("", "v1", "secrets", "Secret", generation=False),
    _builtin("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
             "MutatingWebhookConfiguration", namespaced=False),
    _builtin("events.k8s.io", "v1", "events", "Event", generation=False),
    _builtin("batch", "v1", "jobs", "Job", status=True),
    _builtin("apps", "v1", "deployments", "Deployment", status=True),
    _builtin("apps", "v1", "statefulsets", "StatefulSet", status=True),
    _builtin("apps", "v1", "replicasets", "ReplicaSet", status=True),
    _builtin("coordination.k8s.io", "v1", "leases", "Lease", unconditional_update=False,
             generation=False),
)

ML_CRDS = (
    # kinds: generated from libk8s/ml/k8s_kinds.c (make manifests)
    Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", status=True),
    Resource("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", status=True),
    Resource("ray.io", "v1", "rayjobs", "RayJob", status=True),
    Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", status=True),
    Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", status=True),
    Resource("batch.volcano.sh", "v1alpha1", "jobs", "Job", status=True),
    Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", status=True),
    Resource("ray.io", "v1", "rayclusters", "RayCluster", status=True),
    # kinds: end
    Resource("diagon.gke.io", "v1alpha1", "mldiagnosticsconnections", "MLDiagnosticsConnection",
             status=True),
)

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Registry:
    """The served resources, by (group, version, plural)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._by_key = {}

    def add(self, res):
        with self._lock:
            self._by_key[res.key] = res

    def remove(self, key):
        with self._lock:
            return self._by_key.pop(key, None)

    def get(self, group, version, plural):
        return self._by_key.get((group, version, plural))

    def all(self):
        with self._lock:
            return list(self._by_key.values())

    def by_plural(self, plural):
        found = [r for r in self.all() if r.plural == plural]
        if len(found) > 1:  # e.g. events: core v1 wins over events.k8s.io
            found = [r for r in found if r.group == ""]
        if len(found) != 1:
            raise KeyError(f"{len(found)} resources named {plural!r}; give (group, version, plural)")
        return found[0]


@dataclass
class Route:
    """What a URL path addresses: a collection (name None) or an object."""
    res: Resource
    namespace: str = None
    name: str = None
    subresource: str = None


def route_path(path, registry):
    """Route an API path (no query) or raise 404 unknown_path()."""
    segs = [urllib.parse.unquote(s) for s in path.strip("/").split("/")]
    if len(segs) >= 2 and segs[0] == "api":
        group, version, rest = "", segs[1], segs[2:]
    elif len(segs) >= 3 and segs[0] == "apis":
        group, version, rest = segs[1], segs[2], segs[3:]
    else:
        raise unknown_path()
    if not rest or any(not s for s in rest):
        raise unknown_path()
    if rest[0] == "namespaces" and len(rest) >= 3:
        res = registry.get(group, version, rest[2])
        if res is not None and res.namespaced:
            return _item_route(res, rest[1], rest[3:])
    res = registry.get(group, version, rest[0])
    if res is None or (res.namespaced and len(rest) > 1):
        raise unknown_path()
    return _item_route(res, None, rest[1:])


def _item_route(res, ns, tail):
    if len(tail) > 2 or (len(tail) == 2 and not (tail[1] == "status" and res.status)):
        raise unknown_path()
    return Route(res, ns, tail[0] if tail else None, tail[1] if len(tail) == 2 else None)


# ---------------------------------------------------------------- selectors

_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_KEY = r"[^\s=!<>(),]+"
_SET_TERM = re.compile(rf"^({_KEY})\s+(in|notin)\s*\(([^()]*)\)$")
_OP_TERM = re.compile(rf"^({_KEY})\s*(==|=|!=|>|<)\s*([^\s=!<>(),]*)$")
_EXISTS_TERM = re.compile(rf"^(!?)\s*({_KEY})$")


def valid_label_key(key):
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return bool(_LABEL_NAME.match(name))


def valid_label_value(value):
    return value == "" or bool(_LABEL_NAME.match(value))


def _split_top_level(text):
    """Split on commas outside parentheses."""
    terms, depth, cur = [], 0, []
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            terms.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    terms.append("".join(cur))
    return [t.strip() for t in terms]


class LabelSelector:
    """A parsed labelSelector: a conjunction of (key, op, values) requirements."""

    def __init__(self, reqs=()):
        self.reqs = list(reqs)

    @classmethod
    def parse(cls, text):
        text = (text or "").strip()
        if not text:
            return cls()
        return cls(_parse_label_term(t) for t in _split_top_level(text))

    def matches(self, labels):
        labels = labels or {}
        return all(_label_requirement_matches(labels, *r) for r in self.reqs)


def _parse_label_term(term):
    def fail(why):
        raise bad_request(f"unable to parse requirement: {why}: {term!r}")

    m = _SET_TERM.match(term)
    if m:
        key, op, values = m.group(1), m.group(2), [v.strip() for v in m.group(3).split(",")]
        if values == [""]:
            fail("for 'in', 'notin' operators, values set can't be empty")
    elif _OP_TERM.match(term):
        key, op, value = _OP_TERM.match(term).groups()
        op, values = {"==": "=", "=": "="}.get(op, op), [value]
        if op in "<>" and not re.match(r"^-?\d+$", value):
            fail("for 'Gt', 'Lt' operators, the value must be an integer")
    elif _EXISTS_TERM.match(term):
        neg, key = _EXISTS_TERM.match(term).groups()
        op, values = ("!" if neg else "exists"), []
    else:
        fail("invalid syntax")
    if not valid_label_key(key):
        fail(f"invalid label key {key!r}")
    for v in values:
        if not valid_label_value(v):
            fail(f"invalid label value {v!r}")
    return key, op, values


def _label_requirement_matches(labels, key, op, values):
    present, value = key in labels, labels.get(key)
    if op == "exists":
        return present
    if op == "!":
        return not present
    if op == "=":
        return present and value == values[0]
    if op == "!=":
        return not present or value != values[0]
    if op == "in":
        return present and value in values
    if op == "notin":
        return not present or value not in values
    try:  # > and <
        n = int(value)
    except (TypeError, ValueError):
        return False
    return n > int(values[0]) if op == ">" else n < int(values[0])


_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
_EXTRA_FIELDS = {
    ("", "pods"): ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                   "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                   "status.nominatedNodeName"),
    ("", "events"): ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                     "involvedObject.uid", "involvedObject.apiVersion",
                     "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                     "reportingComponent", "source", "type"),
    ("", "namespaces"): ("status.phase",),
    ("batch", "jobs"): ("status.successful",),
}


def _split_unescaped(text, sep):
    parts, cur, i = [], [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 2
            continue
        if text.startswith(sep, i):
            parts.append("".join(cur))
            cur, i = [], i + len(sep)
            continue
        cur.append(text[i])
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape(text):
    return re.sub(r"\\(.)", r"\1", text)


class FieldSelector:
    """A parsed fieldSelector: (field, '='|'!=', value) terms over the fields the resource allows."""

    def __init__(self, terms=()):
        self.terms = list(terms)

    @classmethod
    def parse(cls, text, res):
        text = (text or "").strip()
        if not text:
            return cls()
        allowed = _COMMON_FIELDS + _EXTRA_FIELDS.get((res.group, res.plural), ())
        return cls(_parse_field_term(t.strip(), allowed) for t in _split_unescaped(text, ","))

    def matches(self, obj):
        for field, op, value in self.terms:
            if (_field_value(obj, field) == value) != (op == "="):
                return False
        return True

    def value_of(self, field):
        """The value an equality term pins field to, or None."""
        for f, op, v in self.terms:
            if f == field and op == "=":
                return v
        return None


def _parse_field_term(term, allowed):
    for op in ("!=", "==", "="):
        parts = _split_unescaped(term, op)
        if len(parts) == 2:
            field, value = parts[0].strip(), _unescape(parts[1].strip())
            if field not in allowed:
                raise bad_request(f'field label not supported: {field}')
            return field, ("!=" if op == "!=" else "="), value
    raise bad_request(f"invalid selector: '{term}'; can't understand '{term}'")


def _field_value(obj, field):
    cur = obj
    for part in field.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


# ---------------------------------------------------------------- patches

class PatchError(Exception):
    """A JSON patch that decodes but does not apply (422)."""


def fast_copy(value):
    """Deep copy of a JSON value (dicts, lists, scalars)."""
    if isinstance(value, dict):
        return {k: fast_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [fast_copy(v) for v in value]
    return value


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch; returns a new value."""
    if not isinstance(patch, dict):
        return fast_copy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_equal(a, b):
    """JSON equality: 1 == 1.0, but true != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return a == b


def _pointer(path):
    if path == "":
        return []
    if not isinstance(path, str) or not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    tokens = path[1:].split("/")
    for t in tokens:
        if re.search(r"~[^01]|~$", t):
            raise PatchError(f"invalid escape in JSON pointer {path!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in tokens]


def _index(container, token, path, allow_end=False):
    if token == "-" and allow_end:
        return len(container)
    if not re.match(r"^(0|[1-9][0-9]*)$", token):
        raise PatchError(f"invalid array index {token!r} in {path!r}")
    i = int(token)
    if i > len(container) or (i == len(container) and not allow_end):
        raise PatchError(f"array index {i} out of bounds in {path!r}")
    return i


def _parent(doc, path):
    """(container, last token) for path; the container must exist."""
    tokens = _pointer(path)
    cur = doc
    for t in tokens[:-1]:
        if isinstance(cur, dict) and t in cur:
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t, path)]
        else:
            raise PatchError(f"missing value at {path!r}")
    return cur, tokens[-1]


def _get(doc, path):
    cur = doc
    for t in _pointer(path):
        if isinstance(cur, dict) and t in cur:
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t, path)]
        else:
            raise PatchError(f"missing value at {path!r}")
    return cur


def _add(doc, path, value):
    if path == "":
        return value
    parent, token = _parent(doc, path)
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, token, path, allow_end=True), value)
    else:
        raise PatchError(f"cannot add to a scalar at {path!r}")
    return doc


def _remove(doc, path):
    if path == "":
        raise PatchError("cannot remove the whole document")
    parent, token = _parent(doc, path)
    if isinstance(parent, dict) and token in parent:
        return parent.pop(token)
    if isinstance(parent, list):
        return parent.pop(_index(parent, token, path))
    raise PatchError(f"missing value at {path!r}")


def _apply_op(doc, op):
    kind, path = op.get("op"), op.get("path")
    if not isinstance(path, str):
        raise PatchError(f"operation {kind!r} has no path")
    if kind in ("add", "replace", "test") and "value" not in op:
        raise PatchError(f"operation {kind!r} has no value")
    if kind == "add":
        return _add(doc, path, fast_copy(op["value"]))
    if kind == "remove":
        _remove(doc, path)
        return doc
    if kind == "replace":
        if path == "":
            return fast_copy(op["value"])
        _remove(doc, path)
        return _add(doc, path, fast_copy(op["value"]))
    if kind == "test":
        if not json_equal(_get(doc, path), op["value"]):
            raise PatchError(f"testing value {path} failed")
        return doc
    if kind in ("move", "copy"):
        src = op.get("from")
        if not isinstance(src, str):
            raise PatchError(f"operation {kind!r} has no from")
        if kind == "move" and path.startswith(src + "/"):
            raise PatchError(f"cannot move {src!r} into its own child {path!r}")
        value = _remove(doc, src) if kind == "move" else fast_copy(_get(doc, src))
        return _add(doc, path, value)
    raise PatchError(f"Unexpected kind: {kind}")


def json_patch(doc, ops):
    """RFC 6902 on a copy of doc. Raises ValueError (malformed, 400) or PatchError (422)."""
    if not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
        raise ValueError("a JSON patch must be an array of operation objects")
    doc = fast_copy(doc)
    for op in ops:
        doc = _apply_op(doc, op)
    return doc


# ---------------------------------------------------------------- objects

def rfc3339(dt, micro=False):
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def object_key(res, ns, name):
    return f"{ns}/{name}" if res.namespaced else name


def meta_of(obj):
    return obj.get("metadata") or {}


def mark_deleted(meta, now):
    """deletionTimestamp and a zero grace period; generation counts the deletion where kept."""
    meta.update(deletionTimestamp=rfc3339(now), deletionGracePeriodSeconds=0)
    if meta.get("generation"):
        meta["generation"] += 1


def pod_qos_class(spec):
    """The pod's QoS class as the API server computes it at create (simplified to cpu and
    memory of the regular containers)."""
    containers = (spec or {}).get("containers") or []
    requests = limits = 0
    guaranteed = bool(containers)
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        requests += len(req)
        limits += len(lim)
        for r in ("cpu", "memory"):
            if r not in lim or req.get(r, lim[r]) != lim[r]:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


# Fields of a v1 Event that Go's encoder writes even when unset (no omitempty, or a struct).
EVENT_ZERO_FIELDS = (("involvedObject", {}), ("source", {}), ("firstTimestamp", None),
                     ("lastTimestamp", None), ("eventTime", None), ("reportingComponent", ""),
                     ("reportingInstance", ""))


def partial_metadata(obj):
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {})}


def spec_part(obj):
    """What generation tracks: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery utilrand alphabet
_MICRO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$")


# ---------------------------------------------------------------- store

class Event:
    """One committed write: rv, type, the object after it, the object before it."""
    __slots__ = ("rv", "type", "obj", "old")

    def __init__(self, rv, etype, obj, old):
        self.rv, self.type, self.obj, self.old = rv, etype, obj, old


class Snapshot:
    """A resource's objects at one RV, sorted by storage key."""

    def __init__(self, rv, state):
        self.rv = rv
        self.keys = sorted(state)
        self.objs = [state[k] for k in self.keys]


class Store:
    """Objects, the global RV, per-resource event history and open watchers.

    One re-entrant lock guards all of it; stored objects are never mutated in
    place (a write stores a new dict), so readers may use them after unlocking.
    """

    SNAPSHOT_CACHE = 64

    def __init__(self):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.rv = 0
        self.history_limit = 1000
        self.objects = collections.defaultdict(dict)      # res.key -> {storage key: obj}
        self.history = collections.defaultdict(collections.deque)
        self.compacted = collections.defaultdict(int)     # events with rv <= this are gone
        self.watchers = collections.defaultdict(set)
        self.snapshots = collections.OrderedDict()
        self.epoch = 0  # bumped by compact(): continue tokens issued before it expire

    def get(self, res, ns, name):
        return self.objects[res.key].get(object_key(res, ns, name))

    def commit(self, res, etype, obj, old):
        """Store obj (or remove it for DELETED) at a new RV and tell the watchers."""
        with self.lock:
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            key = object_key(res, obj["metadata"].get("namespace"), obj["metadata"]["name"])
            if etype == DELETED:
                self.objects[res.key].pop(key, None)
            else:
                self.objects[res.key][key] = obj
            ev = Event(self.rv, etype, obj, old)
            self._remember(res.key, ev)
            for w in self.watchers[res.key]:
                w.push(ev)
            self.changed.notify_all()
            return obj

    def _remember(self, rkey, ev):
        hist = self.history[rkey]
        hist.append(ev)
        while hist and len(hist) > max(self.history_limit, 0):
            self.compacted[rkey] = hist.popleft().rv

    def compact(self, rkeys=(), expire_watches=False):
        """Drop the history of every resource seen (and of rkeys, e.g. every one served).

        expire_watches: first a write no watcher sees (the global revision moves on, as a
        Lease or Event write would), then the compaction at it, then every open watch ends
        abruptly, all under the lock: no bookmark can carry a watcher past the compacted
        revision in between, so each watcher's return is answered 410."""
        with self.lock:
            if expire_watches:
                self.rv += 1
            for rkey in list(self.history) + list(self.objects) + list(rkeys):
                self.history[rkey].clear()
                self.compacted[rkey] = self.rv
            self.snapshots.clear()
            self.epoch += 1
            if expire_watches:
                for w in [w for ws in self.watchers.values() for w in ws]:
                    w.close("abrupt")

    def drop_resource(self, res):
        with self.lock:
            for w in list(self.watchers.pop(res.key, ())):
                w.close("clean")
            self.objects.pop(res.key, None)
            self.history.pop(res.key, None)
            self.compacted[res.key] = self.rv
            for k in [k for k in self.snapshots if k[0] == res.key]:
                del self.snapshots[k]

    def snapshot(self, res, rv):
        """The resource at rv (<= current), rebuilt from the history; None if compacted."""
        with self.lock:
            if rv < self.compacted[res.key]:
                return None
            cache_key = (res.key, rv)
            snap = self.snapshots.get(cache_key)
            if snap is None:
                snap = Snapshot(rv, self._state_at(res, rv))
                self.snapshots[cache_key] = snap
                while len(self.snapshots) > self.SNAPSHOT_CACHE:
                    self.snapshots.popitem(last=False)
            self.snapshots.move_to_end(cache_key)
            return snap

    def _state_at(self, res, rv):
        state = dict(self.objects[res.key])
        for ev in reversed(self.history[res.key]):
            if ev.rv <= rv:
                break
            m = ev.obj["metadata"]
            key = object_key(res, m.get("namespace"), m["name"])
            if ev.type == ADDED:
                state.pop(key, None)
            else:
                state[key] = ev.old
        return state

    def add_watcher(self, res, watcher, since):
        """Register watcher; queue what it must see first (state, or history after since)."""
        with self.lock:
            if since is None:
                objs = self.objects[res.key]
                initial = [Event(self.rv, ADDED, objs[k], None) for k in sorted(objs)]
            else:
                if since < self.compacted[res.key]:
                    raise too_old_rv(since, self.compacted[res.key])
                initial = []
                for ev in reversed(self.history[res.key]):
                    if ev.rv <= since:
                        break
                    initial.append(ev)
                initial.reverse()
            watcher.start_rv = self.rv if since is None else max(since, 0)
            watcher.initial = len(initial)
            watcher.push_many(initial)
            self.watchers[res.key].add(watcher)

    def remove_watcher(self, res, watcher):
        with self.lock:
            self.watchers[res.key].discard(watcher)

    def all_watchers(self):
        with self.lock:
            return [w for ws in self.watchers.values() for w in ws]

    def bookmark_rv(self, watcher):
        """The RV a bookmark may carry now: the current one if watcher has nothing pending."""
        with self.lock:
            return max(self.rv, watcher.start_rv) if watcher.idle() else None

    def wait_for_rv(self, rv, timeout):
        with self.lock:
            return self.changed.wait_for(lambda: self.rv >= rv, timeout)


# ---------------------------------------------------------------- watchers

def shutdown_socket(sock):
    """TCP shutdown without touching TLS state (safe while another thread writes)."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, TypeError, ValueError):
        pass


class Watcher:
    """One open watch: a queue of raw store events plus its filters."""

    def __init__(self, route, labels, fields, meta_only, sock):
        self.route, self.labels, self.fields = route, labels, fields
        self.meta_only, self.sock = meta_only, sock
        self.cond = threading.Condition(threading.Lock())
        self.queue = collections.deque()
        self.closed = None          # None, "clean" or "abrupt"
        self.start_rv = 0
        self.initial = 0            # events queued at registration (sendInitialEvents)

    def push(self, ev):
        with self.cond:
            self.queue.append(ev)
            self.cond.notify()

    def push_many(self, evs):
        with self.cond:
            self.queue.extend(evs)
            self.cond.notify()

    def idle(self):
        with self.cond:
            return not self.queue

    def pop(self, timeout):
        """The next raw event, or None after timeout or once closed."""
        with self.cond:
            if not self.queue and self.closed is None:
                self.cond.wait(max(timeout, 0))
            if self.closed is None and self.queue:
                return self.queue.popleft()
            return None

    def close(self, mode):
        with self.cond:
            if self.closed is None:
                self.closed = mode
            self.cond.notify_all()
        if mode == "abrupt" and self.sock is not None:
            shutdown_socket(self.sock)

    def matches(self, obj):
        if obj is None:
            return False
        ns = self.route.namespace
        if ns is not None and meta_of(obj).get("namespace") != ns:
            return False
        return self.labels.matches(meta_of(obj).get("labels")) and self.fields.matches(obj)

    def translate(self, ev):
        """(type, object) this watcher sends for ev, or None (selector transitions included)."""
        now = self.matches(ev.obj)
        if ev.type != MODIFIED:
            return (ev.type, ev.obj) if now else None
        before = self.matches(ev.old)
        if now:
            return (MODIFIED if before else ADDED), ev.obj
        if before:
            gone = dict(ev.old)
            gone["metadata"] = dict(gone["metadata"], resourceVersion=str(ev.rv))
            return DELETED, gone
        return None

    def render(self, obj):
        return partial_metadata(obj) if self.meta_only else obj

    def bookmark(self, rv, annotations=None):
        res = self.route.res
        meta = {"resourceVersion": str(rv)}
        if annotations:
            meta["annotations"] = annotations
        if self.meta_only:
            return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
        out = {"kind": res.kind, "apiVersion": res.api_version, "metadata": meta}
        if res.key == ("", "v1", "pods"):  # an empty typed Pod, as the cacher encodes it
            out.update(spec={"containers": None}, status={})
        return out


def next_bookmark_time(now, interval, deadline, pretimeout=2.0):
    """When the next BOOKMARK is due: every interval, and once pretimeout seconds before
    the deadline, as the cacher does (which, unlike this, stops the periodic ones then)."""
    t = now + interval
    if now < deadline - pretimeout < t:
        t = deadline - pretimeout
    return t


# ---------------------------------------------------------------- operations

class Operations:
    """REST semantics shared by HTTP handlers and the direct test helpers."""

    def __init__(self, api):
        self.api = api
        self.store = api._store

    # -- reads

    def get(self, route):
        obj = self.store.get(route.res, route.namespace, route.name)
        if obj is None:
            raise not_found(route.res, route.name)
        return obj

    def list(self, route, query, meta_only=False):
        res = route.res
        labels = LabelSelector.parse(query.get("labelSelector"))
        fields = FieldSelector.parse(query.get("fieldSelector"), res)
        limit = _int_param(query, "limit", 0)
        snap, start, paged = self._list_snapshot(res, query, limit)
        if not paged:
            limit = 0
        items, next_key, remaining = self._scan(res, route, snap, start, limit, labels, fields)
        meta = {"resourceVersion": str(snap.rv)}
        if next_key is not None:
            meta["continue"] = encode_continue(snap.rv, next_key, self.store.epoch)
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        return self._list_body(res, meta, items, meta_only)

    def _list_body(self, res, meta, items, meta_only):
        if meta_only:  # an empty typed list encodes its nil items slice as null
            return {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                    "metadata": meta, "items": [partial_metadata(o) for o in items] or None}
        if res.builtin:
            items = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in items]
        else:  # an unstructured list always has metadata.continue, "" on the last page
            meta = dict(meta, **{"continue": meta.get("continue", "")})
        return {"kind": res.kind + "List", "apiVersion": res.api_version, "metadata": meta,
                "items": items}

    def _list_snapshot(self, res, query, limit):
        """(snapshot, start key, paging honoured) for a list request."""
        token, rv = query.get("continue", ""), query.get("resourceVersion", "")
        match = query.get("resourceVersionMatch", "")
        if token:
            if rv not in ("", "0"):
                raise bad_request("specifying resource version is not allowed when using continue")
            snap_rv, start, epoch = decode_continue(token)
            snap = None
            if snap_rv <= self.store.rv and epoch == self.store.epoch:
                snap = self.store.snapshot(res, snap_rv)
            if snap is None:
                raise expired_continue()
            return snap, start, True
        if match and match not in ("Exact", "NotOlderThan"):
            raise bad_request(f"unsupported resourceVersionMatch {match!r}")
        if match and rv == "":
            raise invalid_query("resourceVersionMatch",
                                "resourceVersionMatch is forbidden unless resourceVersion is provided")
        if rv in ("", "0"):
            if match == "Exact":
                raise invalid_query("resourceVersionMatch",
                                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"")
            with self.store.lock:
                snap = self.store.snapshot(res, self.store.rv)
            return snap, "", rv == "" or self.api.paginate_rv0 or limit <= 0
        want = _parse_rv(rv)
        self._wait_for_rv(want)
        exact = match == "Exact" or (not match and limit > 0)
        with self.store.lock:
            snap = self.store.snapshot(res, want if exact else self.store.rv)
        if snap is None:
            raise too_old_rv(want, self.store.compacted[res.key])
        return snap, "", True

    def _wait_for_rv(self, want):
        if want > self.store.rv and not self.store.wait_for_rv(want, self.api.too_large_rv_wait):
            raise too_large_rv(want, self.store.rv)

    def _scan(self, res, route, snap, start, limit, labels, fields):
        """(items, continue start key or None, remainingItemCount or None)."""
        keys, objs = snap.keys, snap.objs
        ns = route.namespace if res.namespaced else None
        pinned_ns = ns or (fields.value_of("metadata.namespace") if res.namespaced else None)
        lo, hi = 0, len(keys)
        if pinned_ns is not None:
            lo, hi = bisect.bisect_left(keys, pinned_ns + "/"), bisect.bisect_left(keys, pinned_ns + "0")
        i = max(lo, bisect.bisect_left(keys, start)) if start else lo
        filtered = bool(labels.reqs or fields.terms)
        items = []
        while i < hi:
            obj = objs[i]
            i += 1
            if (ns is None or meta_of(obj).get("namespace") == ns) and \
                    labels.matches(meta_of(obj).get("labels")) and fields.matches(obj):
                items.append(obj)
                if limit and len(items) == limit:
                    break
        if not limit or i >= hi:
            return items, None, None
        return items, keys[i - 1] + "\x00", (None if filtered else hi - i)

    # -- writes

    def create(self, route, body, dry_run=False):
        res = route.res
        if route.name is not None or (res.namespaced and route.namespace is None):
            raise method_not_allowed()
        obj = self._decode(res, body)
        self._set_namespace(res, route, obj["metadata"])
        if self.api.admission is not None:
            obj = self.api.admission(res, obj, dry_run)
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise internal_error("resourceVersion should not be set on objects to be created")
        with self.store.lock:
            self._set_name(res, meta)
            existing = self.store.get(res, meta.get("namespace"), meta["name"])
            if existing is not None:
                raise already_exists(res, meta["name"], deleting=bool(
                    meta_of(existing).get("deletionTimestamp")))
            self._prepare_create(res, obj)
            return obj if dry_run else self.store.commit(res, ADDED, obj, None)

    def update(self, route, body, dry_run=False):
        res = route.res
        if route.name is None:
            raise method_not_allowed()
        incoming = self._decode(res, body)
        meta = incoming["metadata"]
        if meta.get("name") and meta["name"] != route.name:
            raise bad_request(f"the name of the object ({meta['name']}) does not match the name "
                              f"on the URL ({route.name})")
        meta["name"] = route.name
        self._set_namespace(res, route, meta)
        with self.store.lock:
            cur = self.get(route)
            rv = meta.get("resourceVersion") or ""
            if not rv and not res.allows_unconditional_update:
                raise invalid(res, route.name, "metadata.resourceVersion", "FieldValueInvalid",
                              "Invalid value: 0: must be specified for an update",
                              by_resource=True)
            self._check_preconditions(res, cur, rv, meta.get("uid"))
            return self._commit_update(res, cur, incoming, route.subresource, dry_run)

    def patch(self, route, content_type, body, dry_run=False):
        res = route.res
        if route.name is None:
            raise method_not_allowed()
        ctype = (content_type or "").split(";")[0].strip().lower()
        if ctype not in (MERGE_PATCH, JSON_PATCH):
            raise ApiError(415, "UnsupportedMediaType",
                           f"the body of the request was in an unknown format - accepted media "
                           f"types include: {', '.join(PATCH_TYPES)}", {})
        patch = _parse_json(body)
        with self.store.lock:
            cur = self.get(route)
            patched = self._apply_patch(ctype, cur, patch)
            pmeta = patched["metadata"]
            self._check_preconditions(res, cur, pmeta.get("resourceVersion") or "", pmeta.get("uid"))
            if pmeta.get("name") != route.name or (res.namespaced and
                                                   pmeta.get("namespace") != route.namespace):
                raise invalid(res, route.name, "metadata.name", "FieldValueInvalid",
                              "Invalid value: the name and namespace of an object are immutable")
            return self._commit_update(res, cur, patched, route.subresource, dry_run)

    def delete(self, route, options=None, dry_run=False):
        res = route.res
        with self.store.lock:
            cur = self.get(route)
            pre = (options or {}).get("preconditions") or {}
            if not isinstance(pre, dict):
                raise bad_request("preconditions must be an object")
            if pre.get("uid") and pre["uid"] != meta_of(cur).get("uid"):
                raise conflict(res, route.name, f"Precondition failed: UID in precondition: "
                               f"{pre['uid']}, UID in object meta: {meta_of(cur).get('uid')}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta_of(cur)["resourceVersion"]:
                raise conflict(res, route.name, f"Precondition failed: ResourceVersion in "
                               f"precondition: {pre['resourceVersion']}, ResourceVersion in object "
                               f"meta: {meta_of(cur)['resourceVersion']}")
            return self._delete_object(res, cur, dry_run)

    def _delete_object(self, res, cur, dry_run):
        """(object or Status to answer, whether the object is gone)."""
        meta = cur["metadata"]
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return cur, False
            new = fast_copy(cur)
            mark_deleted(new["metadata"], self.api.clock())
            return (new if dry_run else self.store.commit(res, MODIFIED, new, cur)), False
        gone = fast_copy(cur)
        if res.key == ("", "v1", "pods"):  # graceful deletion with a zero grace period
            mark_deleted(gone["metadata"], self.api.clock())
        if not dry_run:
            self.store.commit(res, DELETED, gone, cur)
        if res.return_deleted:
            return gone, True
        return status_object(200, None, None, dict(_details(res, meta["name"]), uid=meta.get("uid")),
                             status="Success"), True

    def delete_collection(self, route, query, options=None, dry_run=False):
        res = route.res
        with self.store.lock:
            listed = self.list(route, {k: v for k, v in query.items()
                                       if k in ("labelSelector", "fieldSelector")})
            deleted = []
            for item in listed["items"]:
                cur = self.store.get(res, meta_of(item).get("namespace"), meta_of(item)["name"])
                if cur is not None:
                    out, _ = self._delete_object(res, cur, dry_run)
                    deleted.append(out if out.get("kind") != "Status" else cur)
            return self._list_body(res, {"resourceVersion": str(self.store.rv)}, deleted, False)

    # -- write helpers

    def _decode(self, res, body):
        obj = _parse_json(body) if isinstance(body, (bytes, str)) else fast_copy(body)
        if not isinstance(obj, dict):
            raise bad_request(f"the object provided is not a {res.kind}: expected a JSON object")
        if obj.get("apiVersion") not in (None, "", res.api_version):
            raise bad_request(f"the API version in the data ({obj['apiVersion']}) does not match "
                              f"the expected API version ({res.api_version})")
        if obj.get("kind") not in (None, "", res.kind):
            raise bad_request(f"the kind in the data ({obj['kind']}) does not match the expected "
                              f"kind ({res.kind})")
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise bad_request(f"{res.kind} in version \"{res.version}\" cannot be handled as a "
                              f"{res.kind}: metadata must be an object")
        meta.pop("managedFields", None)
        meta.pop("selfLink", None)
        rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        return dict({"apiVersion": res.api_version, "kind": res.kind}, **rest)

    def _set_namespace(self, res, route, meta):
        if not res.namespaced:
            meta.pop("namespace", None)
            return
        if meta.get("namespace") and meta["namespace"] != route.namespace:
            raise bad_request("the namespace of the provided object does not match the namespace "
                              "sent on the request")
        meta["namespace"] = route.namespace

    def _set_name(self, res, meta):
        if not meta.get("name"):
            if not isinstance(meta.get("generateName") or "", str):
                raise bad_request(f"{res.kind}: metadata.generateName must be a string")
            if not meta.get("generateName"):
                raise invalid(res, "", "metadata.name", "FieldValueRequired",
                              "Required value: name or generateName is required")
            meta["name"] = meta["generateName"] + "".join(random.choice(_NAME_CHARS)
                                                          for _ in range(5))
        name = meta["name"]
        ok = isinstance(name, str) and (_DNS_LABEL.match(name) if res.plural == "namespaces"
                                        else len(name) <= 253 and _DNS_SUBDOMAIN.match(name))
        if not ok:
            raise invalid(res, name, "metadata.name", "FieldValueInvalid",
                          f'Invalid value: "{name}": a lowercase RFC 1123 '
                          f'{"label" if res.plural == "namespaces" else "subdomain"} must consist '
                          f"of lower case alphanumeric characters, '-' or '.', and must start and "
                          f"end with an alphanumeric character")

    def _prepare_create(self, res, obj):
        meta = obj["metadata"]
        for system in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(system, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = rfc3339(self.api.clock())
        meta.pop("generation", None)
        if res.generation:
            meta["generation"] = 1
        if res.status:
            obj.pop("status", None)
        if res.key == ("", "v1", "namespaces"):
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
        elif res.key == ("", "v1", "pods"):
            obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(obj.get("spec"))}
        elif res.key == ("", "v1", "events"):
            for field, zero in EVENT_ZERO_FIELDS:  # what Go's encoder writes for unset fields
                obj.setdefault(field, zero)
        self._validate(res, obj)

    def _check_preconditions(self, res, cur, rv, uid):
        name = cur["metadata"]["name"]
        if uid and uid != cur["metadata"].get("uid"):
            raise conflict(res, name, f"Precondition failed: UID in precondition: {uid}, UID in "
                           f"object meta: {cur['metadata'].get('uid')}")
        if rv and rv != cur["metadata"]["resourceVersion"]:
            raise conflict(res, name)

    def _merge_update(self, res, cur, incoming, subresource):
        """The object to store for an update of cur with incoming (main or status endpoint)."""
        if subresource == "status":
            new = fast_copy(cur)
            if "status" in incoming:
                new["status"] = incoming["status"]
            else:
                new.pop("status", None)
            return new
        new = incoming
        if res.status:
            if "status" in cur:
                new["status"] = fast_copy(cur["status"])
            else:
                new.pop("status", None)
        meta, old_meta = new["metadata"], cur["metadata"]
        for system in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                       "generation", "namespace"):
            if system in old_meta:
                meta[system] = old_meta[system]
            else:
                meta.pop(system, None)
        if res.key == ("", "v1", "namespaces") and "spec" not in new:
            new["spec"] = fast_copy(cur.get("spec", {}))  # spec.finalizers: not via update
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise invalid(res, old_meta["name"], "metadata.finalizers", "FieldValueForbidden",
                              "Forbidden: no new finalizers can be added if the object is being "
                              "deleted, found new finalizers " + json.dumps(sorted(added)))
        if res.generation and spec_part(new) != spec_part(cur):
            meta["generation"] = old_meta.get("generation", 1) + 1
        return new

    def _commit_update(self, res, cur, incoming, subresource, dry_run):
        self._validate(res, incoming)
        new = self._merge_update(res, cur, incoming, subresource)
        new["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
        self._validate(res, new)
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return new if dry_run else self.store.commit(res, DELETED, new, cur)
        if new == cur or dry_run:
            return cur if new == cur else new
        return self.store.commit(res, MODIFIED, new, cur)

    def _apply_patch(self, ctype, cur, patch):
        if ctype == MERGE_PATCH:
            if not isinstance(patch, dict):
                raise bad_request("a merge patch must be a JSON object")
            out = merge_patch(fast_copy(cur), patch)
        else:
            try:
                out = json_patch(cur, patch)
            except ValueError as e:
                raise bad_request(str(e))
            except PatchError as e:
                raise ApiError(422, "Invalid", str(e), {})
        if not isinstance(out, dict) or not isinstance(out.get("metadata"), dict):
            raise ApiError(422, "Invalid", "the patched object is not a valid object", {})
        if out.get("apiVersion") != cur.get("apiVersion") or out.get("kind") != cur.get("kind"):
            raise bad_request("the patch may not change apiVersion or kind")
        return out

    def _validate(self, res, obj):
        meta = obj["metadata"]
        name = meta.get("name", "")
        for field in ("labels", "annotations"):
            value = meta.get(field)
            if value is not None and (not isinstance(value, dict) or
                                      not all(isinstance(v, str) for v in value.values())):
                raise bad_request(f'{res.kind} in version "{res.version}" cannot be handled as a '
                                  f"{res.kind}: metadata.{field} must be a map of strings")
        finalizers = meta.get("finalizers")
        if finalizers is not None and (not isinstance(finalizers, list) or
                                       not all(isinstance(f, str) for f in finalizers)):
            raise bad_request(f'{res.kind} in version "{res.version}" cannot be handled as a '
                              f"{res.kind}: metadata.finalizers must be a list of strings")
        for k, v in (meta.get("labels") or {}).items():
            if not valid_label_key(k) or not valid_label_value(v):
                raise invalid(res, name, "metadata.labels", "FieldValueInvalid",
                              f'Invalid value: "{k if not valid_label_key(k) else v}": invalid '
                              f"label key or value")
        if res.key == ("coordination.k8s.io", "v1", "leases"):
            validate_lease(res, obj)


def validate_lease(res, obj):
    """The Lease fields' decoding and validation; MicroTimes normalized to UTC."""
    spec = obj.get("spec") or {}
    name = meta_of(obj).get("name", "")
    if not isinstance(spec, dict):
        raise bad_request('Lease in version "v1" cannot be handled as a Lease: spec must be an object')
    for field in ("acquireTime", "renewTime"):
        value = spec.get(field)
        if value is None:
            continue
        if not isinstance(value, str) or not _MICRO_TIME.match(value):
            raise bad_request(f'Lease in version "v1" cannot be handled as a Lease: parsing time '
                              f'{json.dumps(value)} as "2006-01-02T15:04:05.000000Z07:00": cannot '
                              f"parse as RFC3339Micro")
        spec[field] = rfc3339(datetime.datetime.fromisoformat(value.replace("Z", "+00:00")),
                              micro=True)
    for field, low, text in (("leaseDurationSeconds", 1, "must be greater than 0"),
                             ("leaseTransitions", 0, "must be greater than or equal to 0")):
        value = spec.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad_request(f'Lease in version "v1" cannot be handled as a Lease: cannot '
                              f"unmarshal {json.dumps(value)} into spec.{field} of type int32")
        if value < low:
            raise invalid(res, name, f"spec.{field}", "FieldValueInvalid",
                          f"Invalid value: {value}: {text}")


def _parse_json(body):
    try:
        return json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError) as e:
        raise bad_request(f"invalid JSON in the request body: {e}")


def _parse_rv(text):
    if not re.match(r"^[0-9]+$", text or ""):
        raise bad_request(f'invalid resource version "{text}"')
    return int(text)


def _int_param(query, name, default):
    text = query.get(name, "")
    if text == "":
        return default
    if not re.match(r"^-?[0-9]+$", text):
        raise bad_request(f"{name}: invalid value {text!r}: not an integer")
    return max(int(text), 0)


def invalid_query(field, text, options="ListOptions", reason="FieldValueForbidden"):
    """422 for a query parameter, as the options' validation answers (field.Forbidden's
    message starts with "Forbidden: ", field.NotSupported's with "Unsupported value: ")."""
    if reason == "FieldValueForbidden":
        text = "Forbidden: " + text
    return ApiError(422, "Invalid", f"{options}.meta.k8s.io \"\" is invalid: {field}: {text}",
                    {"group": META_GROUP, "kind": options,
                     "causes": [{"reason": reason, "message": text, "field": field}]})


def encode_continue(rv, start, epoch=0):
    """etcd3's token (base64url JSON of v, rv, start), plus the compaction epoch when not 0."""
    doc = {"v": "meta.k8s.io/v1", "rv": rv, "start": start}
    if epoch:
        doc["e"] = epoch
    raw = json.dumps(doc, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token):
    """(rv, start key, epoch) of a continue token; 400 BadRequest if malformed, as etcd3 answers."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        doc = json.loads(raw)
        if doc.get("v") != "meta.k8s.io/v1":
            raise ValueError("unknown version")
        rv, start, epoch = doc["rv"], doc["start"], doc.get("e", 0)
        if not isinstance(rv, int) or rv <= 0 or not isinstance(start, str) or not start:
            raise ValueError("bad fields")
        return rv, start, epoch
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise bad_request(f"invalid continue token: {e}")


def expired_continue():
    return expired("The provided continue parameter is too old to display a consistent list "
                   "result. You can start a new list without the continue parameter, or use the "
                   "continue token in this response to retrieve the remainder of the results. "
                   "Continuing with the provided token results in an inconsistent list - objects "
                   "that were created, modified, or deleted between the time the first chunk was "
                   "returned and now may show up in the list.")


# ---------------------------------------------------------------- content negotiation

def negotiate(accept, want):
    """'json' or 'meta' for an Accept header; want is 'object', 'list' or 'watch'. 406 if none fits."""
    if not accept or not accept.strip():
        return "json"
    ranges = []
    for pos, part in enumerate(accept.split(",")):
        fields = [f.strip() for f in part.split(";")]
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        ranges.append((-q, pos, fields[0].lower(), params))
    for _, _, mtype, params in sorted(ranges):
        if mtype not in (JSON_TYPE, "*/*", "application/*") or not _acceptable(params, want):
            continue
        return "meta" if "as" in params else "json"
    raise ApiError(406, "NotAcceptable", "only the following media types are accepted: "
                   "application/json (this fake serves JSON only)", {})


def _acceptable(params, want):
    as_ = params.get("as")
    if as_ is None:
        return True
    if params.get("g") != META_GROUP or params.get("v") != "v1":
        return False
    ok = {"object": ("PartialObjectMetadata",), "list": ("PartialObjectMetadataList",),
          "watch": ("PartialObjectMetadata", "PartialObjectMetadataList")}[want]
    return as_ in ok


def content_type_for(kind, doc):
    if kind == "meta":
        return f"application/json;as={doc['kind']};g=meta.k8s.io;v=v1"
    return JSON_TYPE


# ---------------------------------------------------------------- faults and the request log

class Faults:
    """Injected failures: fail_next rules, consumed in order, matched against method + target."""

    def __init__(self):
        self._lock = threading.Lock()
        self._rules = []

    def fail_next(self, n, status, retry_after, paths, methods, close):
        with self._lock:
            self._rules.append({"n": n, "status": status, "retry_after": retry_after,
                                "paths": re.compile(paths) if paths else None,
                                "methods": {m.upper() for m in methods} if methods else None,
                                "close": close})

    def take(self, method, target):
        """The first rule with requests left that matches method and target (path?query)."""
        with self._lock:
            for rule in self._rules:
                if rule["n"] > 0 and (rule["paths"] is None or rule["paths"].search(target)) \
                        and (rule["methods"] is None or method in rule["methods"]):
                    rule["n"] -= 1
                    return rule
            self._rules = [r for r in self._rules if r["n"] > 0]
            return None

    def clear(self):
        with self._lock:
            self._rules.clear()


def latency_for(latency, path):
    if isinstance(latency, dict):
        return sum(float(s) for rx, s in latency.items() if re.search(rx, path))
    return float(latency or 0)


def fault_response(rule):
    """(status, headers, body bytes) for an injected fault."""
    code, retry = rule["status"], rule["retry_after"]
    headers = {"Connection": "close"} if rule["close"] else {}
    if code == 429:
        headers.update({"Retry-After": str(int(retry if retry is not None else 1)),
                        "Content-Type": "text/plain; charset=utf-8",
                        "X-Content-Type-Options": "nosniff"})
        return code, headers, TOO_MANY_REQUESTS_BODY
    reason, message = {
        500: ("InternalError", "Internal error occurred: injected fault"),
        503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
        504: ("Timeout", "the server was unable to return a response in the time allotted, but "
                         "may still be processing the request"),
    }.get(code, ("", "injected fault"))
    details = {}
    if retry is not None:
        headers["Retry-After"] = str(int(retry))
        details["retryAfterSeconds"] = int(retry)
    headers["Content-Type"] = JSON_TYPE
    return code, headers, _dump(status_object(code, reason, message, details))


def _dump(doc):
    return json.dumps(doc, separators=(",", ":")).encode()


def _truthy(text):
    return (text or "") in ("1", "t", "T", "true", "TRUE", "True")


# ---------------------------------------------------------------- HTTP

class _HttpServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, api, address):
        self.api = api
        super().__init__(address, Handler)

    def server_bind(self):
        """As HTTPServer's, without the reverse DNS lookup of getfqdn()."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def finish_request(self, request, client_address):
        """In the connection's thread: TLS handshake, then the handler; tracked for stop()."""
        sock = request
        try:
            if self.api._ssl_context is not None:
                request.settimeout(10)
                sock = self.api._ssl_context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            self.api._note("tls handshake failed", log_only=True)
            return
        self.api._track(sock, True)
        try:
            self.RequestHandlerClass(sock, client_address, self)
        except (OSError, ssl.SSLError, ValueError):
            pass  # peer went away or stop() shut the socket
        finally:
            self.api._track(sock, False)
            if sock is not request:
                try:
                    sock.close()
                except OSError:
                    pass

    def handle_error(self, request, client_address):
        self.api._note(traceback.format_exc())


class Handler(http.server.BaseHTTPRequestHandler):
    """One connection; every method goes through _serve()."""
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"
    disable_nagle_algorithm = True
    timeout = 120  # idle keep-alive connections are closed after this

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._serve("GET")

    def do_POST(self):
        self._serve("POST")

    def do_PUT(self):
        self._serve("PUT")

    def do_PATCH(self):
        self._serve("PATCH")

    def do_DELETE(self):
        self._serve("DELETE")

    # -- the pipeline

    def _serve(self, method):
        api = self.server.api
        path, _, raw_query = self.path.partition("?")
        query = {k: v[0] for k, v in urllib.parse.parse_qs(raw_query, keep_blank_values=True).items()}
        self._entry = {"time": time.time(), "method": method, "path": path, "query": query,
                       "headers": {"Accept": self.headers.get("Accept"),
                                   "Content-Type": self.headers.get("Content-Type"),
                                   "Authorization": "Authorization" in self.headers},
                       "token": None, "user": None, "body": None, "status": None,
                       "watch": method == "GET" and _truthy(query.get("watch"))}
        try:
            body = self._read_body()
            self._entry["body"] = body.decode("utf-8", "replace") if body else None
            delay = latency_for(api.latency, path)
            if delay > 0 and api._stopping.wait(delay):
                self.close_connection = True
                return
            self._authenticate()
            rule = api._faults.take(method, self.path)
            if rule is not None:
                return self._send(*fault_response(rule))
            self._dispatch(method, path, query, body)
        except ApiError as e:
            self._send_status(e)
        except Exception as e:
            if isinstance(e, OSError) or (self._entry["status"] is not None and
                                          isinstance(e, ValueError)):
                self.close_connection = True  # the peer left, or stop() shut the socket
                return
            api._note(traceback.format_exc())  # a bug in the fake: answer 500, keep serving
            self._send_status(internal_error("fake apiserver bug (see api.errors)"))

    def _read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length = self.headers.get("Content-Length")
        if not length:
            return b""
        if not length.isdigit():
            self.close_connection = True
            raise bad_request("invalid Content-Length")
        if int(length) > MAX_BODY:
            self.close_connection = True
            raise ApiError(413, "RequestEntityTooLarge",
                           f"Request entity too large: limit is {MAX_BODY}", {})
        return self.rfile.read(int(length))

    def _read_chunked(self):
        out = bytearray()
        while True:
            line = self.rfile.readline(1024).split(b";")[0].strip()
            try:
                size = int(line, 16)
            except ValueError:
                self.close_connection = True
                raise bad_request("invalid chunked request body")
            if len(out) + size > MAX_BODY:
                self.close_connection = True
                raise ApiError(413, "RequestEntityTooLarge",
                               f"Request entity too large: limit is {MAX_BODY}", {})
            out += self.rfile.read(size)
            self.rfile.readline(1024)
            if size == 0:
                return bytes(out)

    def _authenticate(self):
        api = self.server.api
        auth = self.headers.get("Authorization", "")
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else None
        self._entry["token"] = token
        cert_user = self._client_cert_user()
        tokens = api.tokens
        if cert_user:
            self._entry["user"] = cert_user
        elif tokens is not None and token is not None and token in tokens:
            self._entry["user"] = "token"
        elif tokens is not None or (api.tls or {}).get("client_ca"):
            raise ApiError(401, "Unauthorized", "Unauthorized")

    def _client_cert_user(self):
        if not isinstance(self.connection, ssl.SSLSocket):
            return None
        cert = self.connection.getpeercert()
        if not cert:
            return None
        for rdn in cert.get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    return value
        return "x509"

    def _dispatch(self, method, path, query, body):
        api = self.server.api
        discovery = api._discovery(path)
        if discovery is not None:
            if method != "GET":
                raise method_not_allowed()
            return self._send_discovery(discovery)
        route = route_path(path, api._registry)
        if method == "GET":
            return self._read(route, query)
        return self._write(method, route, query, body)

    def _read(self, route, query):
        ops, accept = self.server.api._ops, self.headers.get("Accept")
        if route.name is not None:
            return self._send_doc(200, ops.get(route), negotiate(accept, "object"))
        if _truthy(query.get("watch")):
            return self._watch(route, query)
        kind = negotiate(accept, "list")
        return self._send_doc(200, ops.list(route, query, kind == "meta"), kind)

    def _write(self, method, route, query, body):
        ops, dry = self.server.api._ops, _dry_run(query, method)
        kind = negotiate(self.headers.get("Accept"), "object")
        if method in ("POST", "PUT"):
            self._require_json_body()
        if method == "POST":
            return self._send_doc(201, ops.create(route, body, dry), kind)
        if method == "PUT":
            return self._send_doc(200, ops.update(route, body, dry), kind)
        if method == "PATCH":
            ctype = self.headers.get("Content-Type")
            return self._send_doc(200, ops.patch(route, ctype, body, dry), kind)
        if method != "DELETE":
            raise method_not_allowed()
        options = _parse_json(body) if body else None
        options = options if isinstance(options, dict) else None
        if route.name is None:
            return self._send_doc(200, ops.delete_collection(route, query, options, dry), "json")
        out, _ = ops.delete(route, options, dry)
        return self._send_doc(200, out, kind if out.get("kind") != "Status" else "json")

    def _require_json_body(self):
        ctype = (self.headers.get("Content-Type") or JSON_TYPE).split(";")[0].strip().lower()
        if ctype != JSON_TYPE:
            raise ApiError(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media "
                           "types include: application/json (this fake serves JSON only)", {})

    # -- responses

    def _send(self, code, headers, body):
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if headers.get("Connection") == "close":
            self.close_connection = True
        self._logged(code)
        self.wfile.write(body)

    def _send_doc(self, code, doc, kind):
        if kind == "meta" and doc.get("kind") not in ("PartialObjectMetadataList", "Status"):
            doc = partial_metadata(doc)
        self._send(code, {"Content-Type": content_type_for(kind, doc) if doc["kind"] != "Status"
                          else JSON_TYPE}, _dump(doc))

    def _send_status(self, err):
        headers = dict(err.headers)
        headers["Content-Type"] = JSON_TYPE
        self._send(err.code, headers, _dump(err.status()))

    def _send_discovery(self, doc):
        if isinstance(doc, str):
            return self._send(200, {"Content-Type": "text/plain; charset=utf-8"}, doc.encode())
        self._send(200, {"Content-Type": JSON_TYPE}, _dump(doc))

    def _logged(self, code):
        self._entry["status"] = code
        self.server.api._log(self._entry)

    # -- watch

    def _watch(self, route, query):
        api = self.server.api
        kind = negotiate(self.headers.get("Accept"), "watch")
        labels = LabelSelector.parse(query.get("labelSelector"))
        fields = FieldSelector.parse(query.get("fieldSelector"), route.res)
        rv, timeout = query.get("resourceVersion", ""), _int_param(query, "timeoutSeconds", 0)
        bookmarks = _truthy(query.get("allowWatchBookmarks"))
        initial_events = _watch_initial_events(query, bookmarks)
        since = None if rv in ("", "0") or initial_events else _parse_rv(rv)
        watcher = Watcher(route, labels, fields, kind == "meta", self.connection)
        try:
            api._store.add_watcher(route.res, watcher, since)
        except ApiError as e:
            if api.http_410_on_watch:
                raise
            return self._watch_error(e)
        try:
            self._start_stream()
            WatchStream(self, watcher, timeout or api.default_watch_timeout, bookmarks,
                        initial_events).run()
        finally:
            api._store.remove_watcher(route.res, watcher)

    def _start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", JSON_TYPE)
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._logged(200)

    def _watch_error(self, err):
        self._start_stream()
        self._chunk({"type": ERROR, "object": err.status()})
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, event):
        data = _dump(event) + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


class WatchStream:
    """Serves one open watch on a handler's connection: events, bookmarks, deadline, end."""

    PEER_PROBE = 1.0  # seconds between checks that an idle watch's client is still there

    def __init__(self, handler, watcher, timeout, bookmarks, initial_events):
        self.handler, self.watcher = handler, watcher
        self.api = handler.server.api
        now = time.monotonic()
        self.deadline = now + timeout
        self.interval = max(float(self.api.bookmark_interval), 0.01)
        self.next_bookmark = self._after(now) if bookmarks else None
        self.initial_left = watcher.initial if initial_events else None

    def run(self):
        last_probe = time.monotonic()
        while not self.watcher.closed:
            self._end_of_initial_events()
            now = time.monotonic()
            if now >= self.deadline:
                break
            self._bookmark_if_due(now)
            ev = self.watcher.pop(self._wake(now) - now)
            if ev is not None:
                self._deliver(ev)
            elif now - last_probe > self.PEER_PROBE:
                last_probe = now
                if _peer_closed(self.handler.connection):
                    self.watcher.closed = "abrupt"
        self._finish()

    def _after(self, now):
        return next_bookmark_time(now, self.interval, self.deadline, self.api.bookmark_pretimeout)

    def _wake(self, now):
        due = self.next_bookmark if self.next_bookmark is not None else self.deadline
        return min(self.deadline, due, now + 0.5)

    def _bookmark_if_due(self, now):
        if self.next_bookmark is None or now < self.next_bookmark:
            return
        rv = self.api._store.bookmark_rv(self.watcher)
        if rv is not None:  # only once every queued event has been sent
            self.handler._chunk({"type": BOOKMARK, "object": self.watcher.bookmark(rv)})
            self.next_bookmark = self._after(now)

    def _end_of_initial_events(self):
        if self.initial_left == 0:
            self.handler._chunk({"type": BOOKMARK, "object": self.watcher.bookmark(
                self.watcher.start_rv, {"k8s.io/initial-events-end": "true"})})
            self.initial_left = None

    def _deliver(self, ev):
        if self.initial_left:
            self.initial_left -= 1
        out = self.watcher.translate(ev)
        if out is not None:
            self.handler._chunk({"type": out[0], "object": self.watcher.render(out[1])})

    def _finish(self):
        # unregister before the last bytes go out, so a client that saw the end sees no watch
        self.api._store.remove_watcher(self.watcher.route.res, self.watcher)
        if self.watcher.closed == "abrupt":
            self.handler.close_connection = True
            shutdown_socket(self.handler.connection)
        else:
            self.handler.wfile.write(b"0\r\n\r\n")


def _watch_initial_events(query, bookmarks):
    if not _truthy(query.get("sendInitialEvents")):
        return False
    if query.get("resourceVersionMatch") != "NotOlderThan":
        raise invalid_query("resourceVersionMatch", "sendInitialEvents requires setting "
                            "resourceVersionMatch to NotOlderThan")
    if not bookmarks:
        raise invalid_query("allowWatchBookmarks", "sendInitialEvents requires setting "
                            "allowWatchBookmarks to true")
    return True


def _dry_run(query, method):
    value = query.get("dryRun")
    if value in (None, ""):
        return False
    if value != "All":
        options = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions"}.get(
            method, "DeleteOptions")
        raise invalid_query("dryRun", f'Unsupported value: [{json.dumps(value)}]: supported '
                            f'values: "All"', options, "FieldValueNotSupported")
    return True


def _peer_closed(sock):
    """True if the client has closed its side (readable with EOF)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return socket.socket.recv(sock, 1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except (OSError, ValueError):
        return True


# ---------------------------------------------------------------- the server

class FakeApiServer:
    """The fake API server. See the module docstring; public attributes:

    clock               callable returning a datetime (creationTimestamp, deletionTimestamp)
    tokens              None, or the set of accepted bearer tokens (changeable at runtime)
    bookmark_interval   seconds between BOOKMARKs on watches that asked for them (60)
    bookmark_pretimeout  one more BOOKMARK this many seconds before a watch's deadline (2)
    history_limit       events kept per resource for watches and paging (1000)
    http_410_on_watch   answer an expired watch RV with HTTP 410 instead of an ERROR event
    latency             seconds added to every request, or {path regex: seconds}
    default_watch_timeout  seconds a watch without timeoutSeconds lasts (1800)
    too_large_rv_wait   seconds a list waits for a future RV before 504 (0.5; real: 3)
    paginate_rv0        honour limit on lists with resourceVersion=0 (False, like the watch cache)
    admission           None, or a mutating-admission stand-in for creates (module docstring)
    requests            the request log (list of dicts); errors: tracebacks of bugs in the fake
    """

    def __init__(self, tls=None, tokens=None, host="127.0.0.1"):
        self.host = host
        self.tls = dict(tls) if tls else None
        self.tokens = set(tokens) if tokens is not None else None
        self.clock = lambda: datetime.datetime.now(UTC)
        self.bookmark_interval = 60.0
        self.bookmark_pretimeout = 2.0
        self.http_410_on_watch = False
        self.latency = 0
        self.default_watch_timeout = 1800
        self.too_large_rv_wait = 0.5
        self.paginate_rv0 = False
        self.admission = None
        self.requests, self.errors = [], []
        self.port = None
        self._log_lock = threading.Lock()
        self._registry = Registry()
        self._store = Store()
        self._faults = Faults()
        self._ops = Operations(self)
        self._conns, self._conns_lock = set(), threading.Lock()
        self._server = self._thread = None
        self._stopping = threading.Event()
        self._ssl_context = self._make_ssl_context()
        for res in BUILTIN_RESOURCES:
            self._registry.add(res)
        for ns in DEFAULT_NAMESPACES:
            self.create("namespaces", {"metadata": {"name": ns}})

    # -- lifecycle

    @property
    def url(self):
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def start(self, port=None):
        """Listen on host:port (a free port the first time, the same one afterwards)."""
        if self._server is not None:
            return self
        self._stopping.clear()
        self._listen(port if port is not None else (self.port or 0))
        return self

    def stop(self):
        """Close the listener and every connection; open watches end without the final chunk."""
        self._stopping.set()
        self._close_listener()
        for w in self._store.all_watchers():
            w.close("abrupt")
        with self._conns_lock:
            conns = list(self._conns)
        for sock in conns:
            shutdown_socket(sock)

    def restart(self):
        """stop() then start() on the same port; objects, RVs and history are kept."""
        self.stop()
        self.start(self.port)

    def refuse(self, on=True, close_connections=False):
        """Close the listening socket (new connections are refused) or reopen it on the same port."""
        if on:
            self._close_listener()
            if close_connections:
                with self._conns_lock:
                    for sock in list(self._conns):
                        shutdown_socket(sock)
        elif self._server is None:
            self._listen(self.port)

    def __enter__(self):
        return self.start() if self._server is None else self

    def __exit__(self, *exc):
        self.stop()

    def _listen(self, port):
        deadline = time.monotonic() + 5
        while True:
            try:
                server = _HttpServer(self, (self.host, port))
                break
            except OSError:
                if not port or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self._server, self.port = server, server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-apiserver-{self.port}", daemon=True)
        self._thread.start()

    def _close_listener(self):
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            self._thread.join(5)

    def _make_ssl_context(self):
        if not self.tls:
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.tls["cert"], self.tls["key"])
        ctx.set_alpn_protocols(["http/1.1"])
        if self.tls.get("client_ca"):
            ctx.load_verify_locations(self.tls["client_ca"])
            ctx.verify_mode = ssl.CERT_REQUIRED if self.tls.get("require_client_cert") \
                else ssl.CERT_OPTIONAL
        return ctx

    def _track(self, sock, add):
        with self._conns_lock:
            (self._conns.add if add else self._conns.discard)(sock)

    # -- resources

    def register(self, group, version, plural, kind, namespaced=True, status=False, builtin=False):
        res = Resource(group, version, plural, kind, namespaced=namespaced, status=status,
                       builtin=builtin)
        self._registry.add(res)
        return res

    def register_ml_crds(self):
        for res in ML_CRDS:
            self._registry.add(res)

    def unregister(self, group, version, plural):
        """The CRD is deleted: paths answer 404, open watches end, objects are gone."""
        res = self._registry.remove((group, version, plural))
        if res is not None:
            self._store.drop_resource(res)

    def resource(self, what):
        """A Resource from a plural, (group, version, plural) or a path."""
        return self._route(what).res

    # -- state helpers (same code paths as HTTP, minus auth, faults and latency)

    @property
    def resource_version(self):
        return self._store.rv

    @property
    def history_limit(self):
        return self._store.history_limit

    @history_limit.setter
    def history_limit(self, n):
        self._store.history_limit = n

    def create(self, what, obj, ns=None):
        route = self._route(what, ns or meta_of(obj).get("namespace"))
        route.name = None
        return fast_copy(self._ops.create(route, obj))

    def restore(self, what, obj, ns=None):
        """Store obj as it is, as a cluster's etcd holds it after its writers' updates: status
        and managedFields kept (writes through the API drop managedFields, which this fake
        does not track). One ADDED event; the namespace, uid and creationTimestamp are set
        when missing. For benchmarks and fixtures taken from real clusters."""
        route = self._route(what, ns or meta_of(obj).get("namespace"))
        obj = fast_copy(obj)
        meta = obj.setdefault("metadata", {})
        if route.res.namespaced:
            meta["namespace"] = route.namespace
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", rfc3339(self.clock()))
        with self._store.lock:
            if self._store.get(route.res, meta.get("namespace"), meta["name"]) is not None:
                raise already_exists(route.res, meta["name"])
            return fast_copy(self._store.commit(route.res, ADDED, obj, None))

    def get(self, what, name=None, ns=None):
        return fast_copy(self._ops.get(self._route(what, ns, name)))

    def update(self, what, obj, ns=None, subresource=None):
        m = meta_of(obj)
        route = self._route(what, ns or m.get("namespace"), m.get("name"), subresource)
        return fast_copy(self._ops.update(route, obj))

    def patch(self, what, name, patch, ns=None, patch_type="merge", subresource=None):
        ctype = {"merge": MERGE_PATCH, "json": JSON_PATCH}.get(patch_type, patch_type)
        route = self._route(what, ns, name, subresource)
        return fast_copy(self._ops.patch(route, ctype, json.dumps(patch)))

    def delete(self, what, name=None, ns=None):
        out, _ = self._ops.delete(self._route(what, ns, name))
        return fast_copy(out)

    def objects(self, group, version=None, plural=None, ns=None):
        """Stored objects of a resource (optionally one namespace), sorted by namespace/name."""
        what = (group, version, plural) if plural else group
        res = self._route(what).res
        with self._store.lock:
            items = [o for _, o in sorted(self._store.objects[res.key].items())]
        return [fast_copy(o) for o in items if ns is None or meta_of(o).get("namespace") == ns]

    def compact(self):
        """Drop the whole event history: older watch RVs and continue tokens get 410 (also for
        resources never written to)."""
        self._store.compact([r.key for r in self._registry.all()])

    def expire_watches(self):
        """Every open watch ends and the resourceVersion it had reached is compacted away, in
        one step: each watcher's return gets ERROR 410 (Expired) for certain."""
        self._store.compact([r.key for r in self._registry.all()], expire_watches=True)

    def _route(self, what, ns=None, name=None, subresource=None):
        if isinstance(what, str) and what.startswith("/"):
            route = route_path(what.partition("?")[0], self._registry)
            if route.name is None and name is not None:
                route.name = name
            if route.namespace is None and route.res.namespaced:
                route.namespace = ns or "default"
            route.subresource = route.subresource or subresource
            return route
        if isinstance(what, Resource):
            res = what
        elif isinstance(what, (tuple, list)):
            res = self._registry.get(*what)
            if res is None:
                raise unknown_path()
        else:
            res = self._registry.by_plural(what)
        return Route(res, (ns or "default") if res.namespaced else None, name, subresource)

    # -- faults

    def drop_watches(self):
        """Abruptly close every open watch connection (no final chunk)."""
        for w in self._store.all_watchers():
            w.close("abrupt")

    def open_watches(self, path_regex=None):
        """How many watches are open (optionally on paths matching path_regex)."""
        return sum(1 for w in self._store.all_watchers() if w.closed is None and
                   (path_regex is None or re.search(path_regex, w.route.res.path(w.route.namespace))))

    def fail_next(self, n=1, status=429, retry_after=None, paths=None, methods=None, close=False):
        """The next n requests whose "/path?query" matches the regex paths (and whose
        method is in methods, if given) get status.

        429: Retry-After (default 1) and the plain-text APF body; 5xx: a Status
        JSON (Retry-After only if retry_after is given). close adds Connection: close.
        """
        self._faults.fail_next(n, status, retry_after, paths, methods, close)

    def clear_faults(self):
        self._faults.clear()

    # -- request log

    def _log(self, entry):
        with self._log_lock:
            self.requests.append(entry)

    def _note(self, text, log_only=False):
        if not log_only:
            with self._log_lock:
                self.errors.append(text)

    def clear_requests(self):
        with self._log_lock:
            del self.requests[:]

    def count(self, method=None, path_regex=None, watch=None, status=None):
        with self._log_lock:
            entries = list(self.requests)
        return sum(1 for e in entries
                   if (method is None or e["method"] == method)
                   and (path_regex is None or re.search(path_regex, e["path"]))
                   and (watch is None or e["watch"] == watch)
                   and (status is None or e["status"] == status))

    def wait_until(self, predicate, timeout=5.0, interval=0.02):
        """Poll predicate until true (returns True) or timeout (returns False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(interval)
        return bool(predicate())

    # -- kubeconfig

    def kubeconfig(self, path, token=None, token_file=None, ca_file=None, client_cert=None,
                   client_key=None, namespace="default"):
        """Write a kubeconfig for this server (YAML; JSON if PyYAML is missing)."""
        cluster = {"server": self.url}
        if self.tls:
            cluster["certificate-authority"] = ca_file or self.tls["cert"]
        user = {}
        for key, value in (("token", token), ("tokenFile", token_file),
                           ("client-certificate", client_cert), ("client-key", client_key)):
            if value:
                user[key] = value
        doc = {"apiVersion": "v1", "kind": "Config",
               "clusters": [{"name": "fake", "cluster": cluster}],
               "users": [{"name": "fake", "user": user}],
               "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake",
                                                         "namespace": namespace}}],
               "current-context": "fake", "preferences": {}}
        try:
            import yaml
            text = yaml.safe_dump(doc, default_flow_style=False, sort_keys=False)
        except ImportError:
            text = json.dumps(doc, indent=2) + "\n"
        with open(path, "w") as f:
            f.write(text)
        return path

    # -- discovery

    def _discovery(self, path):
        """A discovery document or health text for path, or None if path is not one."""
        p = path.rstrip("/") or "/"
        if p in ("/healthz", "/livez", "/readyz"):
            return "ok"
        if p == "/version":
            return {"major": "1", "minor": "33", "gitVersion": "v1.33.0-fake", "platform": "linux/amd64"}
        segs = p.strip("/").split("/")
        if not ((segs[0] == "api" and len(segs) <= 2) or (segs[0] == "apis" and len(segs) <= 3)):
            return None
        resources = self._registry.all()
        groups = collections.OrderedDict()
        for r in sorted(resources, key=lambda r: (r.group, r.version)):
            versions = groups.setdefault(r.group, [])
            if r.version not in versions:
                versions.append(r.version)
        if p == "/api":
            return {"kind": "APIVersions", "versions": groups.get("", ["v1"]),
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                    "serverAddress": f"{self.host}:{self.port}"}]}
        if p == "/apis":
            return {"kind": "APIGroupList", "apiVersion": "v1",
                    "groups": [_api_group(g, vs) for g, vs in groups.items() if g]}
        if segs[0] == "apis" and len(segs) == 2 and segs[1] in groups:
            return dict(_api_group(segs[1], groups[segs[1]]), kind="APIGroup", apiVersion="v1")
        gv = ("", segs[1]) if segs[0] == "api" else (segs[1], segs[2]) if len(segs) == 3 else None
        listed = [r for r in resources if gv and (r.group, r.version) == gv]
        if not listed:
            raise unknown_path()
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{gv[0]}/{gv[1]}" if gv[0] else gv[1],
                "resources": [x for r in listed for x in _api_resources(r)]}


def _api_group(group, versions):
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def _api_resources(res):
    verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    out = [{"name": res.plural, "singularName": res.kind.lower(), "namespaced": res.namespaced,
            "kind": res.kind, "verbs": verbs}]
    if res.status:
        out.append({"name": res.plural + "/status", "singularName": "", "namespaced": res.namespaced,
                    "kind": res.kind, "verbs": ["get", "patch", "update"]})
    return out
