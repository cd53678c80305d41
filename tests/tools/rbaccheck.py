"""RBAC as the API server's authorizer sees a request: the attributes of an HTTP request
(verb, API group, resource, namespace, name) and whether rendered Role/ClusterRole rules
allow them. For least-privilege checks of the charts' rules against the requests a
binary really made (the fake API server's request log)."""
import re

_PATH = re.compile(r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
                   r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[^/]+)"
                   r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$")


def attributes(method, path, query=None):
    """(verb, group, resource, namespace, name) of a resource request, as the API server's
    RequestInfoFactory derives them; resource includes "/subresource"."""
    m = _PATH.match(path.split("?")[0])
    if not m:
        raise ValueError("not a resource path: %s" % path)
    group = "" if m.group("core") else m.group("group")
    name, sub = m.group("name"), m.group("sub")
    watch = (query or {}).get("watch") in ("1", "true")
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch",
            "DELETE": "delete" if name else "deletecollection"}.get(method)
    if verb is None:
        verb = "get" if name else ("watch" if watch else "list")
    return verb, group, m.group("resource") + ("/" + sub if sub else ""), m.group("ns"), name


def grants(docs, subject):
    """[(namespace or None, rules)] bound to a ServiceAccount subject (name, namespace) by
    the RoleBindings and ClusterRoleBindings among docs."""
    out = []
    for b in docs:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s.get("kind") == "ServiceAccount" and (s["name"], s.get("namespace")) == subject
                   for s in b.get("subjects", [])):
            continue
        ref = b["roleRef"]
        ns = b["metadata"].get("namespace") if b["kind"] == "RoleBinding" else None
        for r in docs:
            if r["kind"] == ref["kind"] and r["metadata"]["name"] == ref["name"] and (
                    ref["kind"] == "ClusterRole" or r["metadata"].get("namespace") == ns):
                out.append((ns, r["rules"]))
    return out


def allowing_rule(grant_list, verb, group, resource, ns, name):
    """The (namespace, rule) that allows the request, or None."""
    for gns, rules in grant_list:
        if gns is not None and gns != ns:
            continue
        for r in rules:
            if (verb in r["verbs"] and group in r["apiGroups"] and resource in r["resources"]
                    and (not r.get("resourceNames") or name in r["resourceNames"])):
                return gns, r
    return None
