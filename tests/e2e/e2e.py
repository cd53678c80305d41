"""What every end-to-end test shares: the running cluster (set by run.py),
a test case base with fresh namespaces, and helpers to read what was
injected into the pods the real controllers made."""
import json
import os
import time
import unittest
import uuid

import kubeapi
import kubelet

CLUSTER = None  # cluster.Cluster, set by run.py
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
EXAMPLES = os.path.join(ROOT, "manifests", "examples")
LABEL = "managed-mldiagnostics-gke"
INJECTION = "diagon.gke.io/injection"


def cluster():
    if CLUSTER is None:
        raise unittest.SkipTest("run through tests/e2e/run.py (make e2e), which starts the cluster")
    return CLUSTER


def env_list(container):
    return {e["name"]: e for e in container.get("env", [])}


def identity(pod):
    """(GKE_DIAGON_IDENTIFIER string, GKE_DIAGON_METADATA dict) of the first container."""
    env = env_list(pod["spec"]["containers"][0])
    ident = env.get("GKE_DIAGON_IDENTIFIER", {}).get("value")
    meta = env.get("GKE_DIAGON_METADATA", {}).get("value")
    return ident, json.loads(meta) if meta else None


def injected(pod):
    return INJECTION in pod["metadata"].get("annotations", {})


def container_log(c, ns, pod, container):
    """A container's log, through the API server and the kubelet; "" while
    there is none."""
    p = c.kubectl("logs", "-n", ns, pod, "-c", container, check=False)
    return p.stdout if p.returncode == 0 else ""


def host_dir(path, name="data"):
    """A folder of the tier's host mounted at the same path in a container
    (a hostPath volume): where a test reads what the pod wrote, as a user
    reads gs://. Returns (volume, volumeMount)."""
    return ({"name": name, "hostPath": {"path": path, "type": "Directory"}},
            {"name": name, "mountPath": path})


class E2ETest(unittest.TestCase):
    """Fresh namespaces per test (deleted afterwards, not waited for)."""

    def setUp(self):
        self.c = cluster()
        self.c.check_alive()
        self.api = self.c.api
        self.namespaces = []

    def tearDown(self):
        for ns in self.namespaces:
            self.api.delete(kubeapi.path_for("Namespace", name=ns))
        self.c.check_alive()

    def namespace(self, prefix="t", labels=None, name=None):
        ns = name or "%s-%s" % (prefix, uuid.uuid4().hex[:6])
        self.api.create({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": ns, "labels": labels or {}}})
        self.namespaces.append(ns)
        # Pods need the namespace's default ServiceAccount (ServiceAccount admission).
        self.api.wait(kubeapi.path_for("ServiceAccount", ns, "default"), bool, 30)
        return ns

    def kubectl(self, *args, **kw):
        return self.c.kubectl(*args, **kw)

    def python_image(self):
        """The tier's Python image (JAX on CPU, the SDKs), as a pod names it:
        the real node pulls it from the tier's registry."""
        return self.c.registry.python_image()

    def container_log(self, ns, pod, container):
        return container_log(self.c, ns, pod, container)

    def apply_yaml(self, text, namespace):
        return self.kubectl("apply", "-n", namespace, "-f", "-", input=text)

    def pods(self, ns, selector=None):
        return self.api.list(kubeapi.path_for("Pod", ns), **(
            {"labelSelector": selector} if selector else {}))

    def wait_pods(self, ns, n, selector=None, running=True, timeout=60):
        def enough():
            ps = self.pods(ns, selector)
            if running:
                ps = [p for p in ps if p.get("status", {}).get("phase") == "Running"]
            return ps if len(ps) >= n else None
        deadline = time.time() + timeout
        while time.time() < deadline:
            ps = enough()
            if ps:
                return sorted(ps, key=lambda p: p["metadata"]["name"])
            time.sleep(0.3)
        self.fail("%s: fewer than %d%s pods (selector %s) after %ds: %s" % (
            ns, n, " running" if running else "", selector, timeout,
            [(p["metadata"]["name"], p.get("status", {}).get("phase"))
             for p in self.pods(ns, selector)]))

    def get(self, kind, ns, name):
        return self.api.get(kubeapi.path_for(kind, ns, name))

    def expanded_env(self, pod, container=0):
        """The container's environment as the kubelet gives it: fieldRefs
        resolved against the live pod and $(VAR) expanded by kubelet's rules."""
        live = self.get("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])
        c = live["spec"]["containers"][container]
        return kubelet.container_env(self.api, live, c)

    def events(self, ns, kind, name):
        evs = self.api.list(kubeapi.path_for("Event", ns))
        return [e for e in evs if e["involvedObject"].get("kind") == kind
                and e["involvedObject"].get("name") == name]

    def wait_event(self, ns, kind, name, pred, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for e in self.events(ns, kind, name):
                if pred(e):
                    return e
            time.sleep(0.5)
        self.fail("no matching Event on %s %s/%s in %ds; events: %s" % (
            kind, ns, name, timeout, [(e["type"], e["reason"], e["message"])
                                      for e in self.events(ns, kind, name)]))

    def assert_valid_pod(self, pod):
        """What the API server already accepted, checked again: no duplicate
        env name per container, volume name or mountPath."""
        spec = pod["spec"]
        vols = [v["name"] for v in spec.get("volumes", [])]
        self.assertEqual(len(vols), len(set(vols)), "duplicate volume in %s" % vols)
        for c in spec["containers"] + spec.get("initContainers", []):
            names = [e["name"] for e in c.get("env", [])]
            self.assertEqual(len(names), len(set(names)), "duplicate env in %s" % c["name"])
            mounts = [m["mountPath"] for m in c.get("volumeMounts", [])]
            self.assertEqual(len(mounts), len(set(mounts)), "duplicate mountPath in %s" %
                             c["name"])

    def assert_one_identity(self, pods, kind, name, workload):
        """Every pod injected, one byte-identical GKE_DIAGON_IDENTIFIER, the
        workload's creationTimestamp; returns the identifier."""
        idents = set()
        for p in pods:
            self.assertTrue(injected(p), "%s not injected: %s" % (
                p["metadata"]["name"], p["metadata"].get("annotations")))
            self.assert_valid_pod(p)
            for c in p["spec"]["containers"]:
                self.assertIn("GKE_DIAGON_IDENTIFIER", env_list(c),
                              "container %s of %s" % (c["name"], p["metadata"]["name"]))
            ident, meta = identity(p)
            idents.add(ident)
            self.assertEqual(meta["creation-timestamp"],
                             workload["metadata"]["creationTimestamp"], p["metadata"]["name"])
        self.assertEqual(len(idents), 1, "identifiers differ: %s" % idents)
        ident = json.loads(idents.pop())
        self.assertEqual((ident["metadata.kind"], ident["metadata.name"], ident["namespace"]),
                         (kind, name, workload["metadata"]["namespace"]))
        return ident
