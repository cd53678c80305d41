"""The charts' RBAC against the real authorizer, from the API server's audit
log of every request the charts' ServiceAccounts made during the run
(controlplane.py audits the release namespace's ServiceAccounts; this module
runs last, after every other scenario has used the webhook, the operator,
certgen and the helm test hooks):

- enough: none of their requests was refused (403) by RBAC;
- no wider than needed: every (verb, API group, resource) the chart grants
  a ServiceAccount was used by it at least once, except the grants listed in
  UNUSED_OK with the reason they cannot be seen here.
It first drives every path itself (the webhook's cache-miss and owner
lookups, the operator's absence checks and Lease, both `helm test`s, the
renewal CronJob's certgen), so that it holds when run alone."""
import json
import time
import unittest

import yaml

import install
import kubeapi
from e2e import LABEL, E2ETest

NS = install.NAMESPACE
# (service account, verb, group, resource) that a run may leave unused: why.
UNUSED_OK = {
    ("mldiagnostics-injection-webhook-selftest", "get", "", "namespaces"):
        "diagnosis only, when the dry run comes back uninjected (test_charts_e2e.py "
        "drives it with the webhook down)",
    ("mldiagnostics-injection-webhook-selftest", "get", "admissionregistration.k8s.io",
     "mutatingwebhookconfigurations"): "diagnosis only, as above",
    ("mldiagnostics-injection-webhook", "get", "", "namespaces"):
        "the cache-miss GET of a namespace its watch has not delivered yet: a race no "
        "scenario can hold open here (tests/integration/test_webhook_cluster.py drives it "
        "against the fake API server)",
    ("mldiagnostics-injection-webhook", "get", "ray.io", "rayjobs"):
        "a cached RayCluster whose RayJob the watch has not delivered: the same race",
    ("mldiagnostics-injection-webhook", "get", "trainer.kubeflow.org", "trainjobs"):
        "a cached JobSet whose TrainJob the watch has not delivered: the same race",
    ("mldiagnostics-connection-operator", "get", "diagon.gke.io", "mldiagnosticsconnections"):
        "re-read after a 409 Conflict on the status PUT (test_operator_resilience.py)",
    ("mldiagnostics-injection-webhook-certgen", "update", "", "secrets"):
        "renewal only: the install's certificate is valid for a year",
    ("mldiagnostics-injection-webhook-certgen-renew", "create", "", "secrets"):
        "the daily CronJob creates the Secret only when it is missing",
    ("mldiagnostics-injection-webhook-certgen-renew", "update", "", "secrets"):
        "renewal only",
}


def grants(docs):
    """{service account: {(verb, group, resource)}} from Roles/ClusterRoles
    and their bindings in rendered chart documents."""
    roles = {(d["kind"], d["metadata"]["name"]): d.get("rules", []) for d in docs
             if d["kind"] in ("Role", "ClusterRole")}
    out = {}
    for b in docs:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        rules = roles.get((b["roleRef"]["kind"], b["roleRef"]["name"]), [])
        for s in b.get("subjects", []):
            if s["kind"] != "ServiceAccount":
                continue
            acc = out.setdefault(s["name"], set())
            for r in rules:
                for g in r.get("apiGroups", []):
                    for res in r.get("resources", []):
                        for v in r.get("verbs", []):
                            acc.add((v, g, res))
    return out


def audit_events(path):
    with open(path) as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


class ChartRBAC(E2ETest):
    def drive_cache_misses(self):
        """Each cached kind's single-flight GET, deterministically: a pod
        (dry run) naming a workload the cache cannot have."""
        ns = self.namespace("rbac")
        owners = [
            ({"batch.kubernetes.io/job-name": "ghost-job"},
             [{"apiVersion": "batch/v1", "kind": "Job", "name": "ghost-job",
               "uid": "00000000-0000-0000-0000-000000000001", "controller": True}]),
            ({"jobset.sigs.k8s.io/jobset-name": "ghost-js"}, []),
            # LWS's own pod webhook (fails closed) wants its size annotation and
            # a StatefulSet-style name.
            ({"leaderworkerset.sigs.k8s.io/name": "ghost-lws",
              "leaderworkerset.sigs.k8s.io/group-index": "0",
              "leaderworkerset.sigs.k8s.io/worker-index": "0"}, [], "ghost-lws-0",
             {"leaderworkerset.sigs.k8s.io/size": "1"}),
            ({"training.kubeflow.org/job-name": "ghost-pt",
              "training.kubeflow.org/operator-name": "pytorchjob-controller"}, []),
            ({"training.kubeflow.org/job-name": "ghost-mpi",
              "training.kubeflow.org/operator-name": "mpi-operator"}, []),
            ({"volcano.sh/job-name": "ghost-vc"},
             [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "ghost-vc",
               "uid": "00000000-0000-0000-0000-000000000005", "controller": True}]),
            ({"ray.io/cluster": "ghost-rc"},
             [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "ghost-rc",
               "uid": "00000000-0000-0000-0000-000000000004", "controller": True}]),
            ({}, [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ghost-rs",
                   "uid": "00000000-0000-0000-0000-000000000002", "controller": True}]),
            ({}, [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "ghost-sts",
                   "uid": "00000000-0000-0000-0000-000000000003", "controller": True}]),
        ]
        for labels, refs, *named in owners:
            md = {"labels": {LABEL: "true", **labels}, "ownerReferences": refs}
            if named:
                md.update(name=named[0], annotations=named[1])
            else:
                md["generateName"] = "ghost-"
            self.api.create({"apiVersion": "v1", "kind": "Pod", "metadata": md,
                             "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, ns,
                            query={"dryRun": "All"})

    def drive_owner_lookups(self):
        """Pod-label opt-ins of kinds the webhook does not cache: its GETs of
        the ReplicaSet → Deployment and StatefulSet chains."""
        ns = self.namespace("rbac-owners")
        tpl = {"metadata": {"labels": {"app": "x", LABEL: "true"}},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        self.api.create({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "web"},
                         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}},
                                  "template": tpl}}, ns)
        self.api.create({"apiVersion": "apps/v1", "kind": "StatefulSet",
                         "metadata": {"name": "db"},
                         "spec": {"replicas": 1, "serviceName": "db",
                                  "selector": {"matchLabels": {"app": "x"}},
                                  "template": tpl}}, ns)
        pods = self.wait_pods(ns, 2)
        kinds = {json.loads(p["metadata"]["annotations"]["diagon.gke.io/identifier"])[
            "metadata.kind"] for p in pods}
        self.assertEqual(kinds, {"Deployment", "StatefulSet"})

    def drive_operator_lookups(self):
        """Captures of targets the operator's caches do not hold: it confirms
        each absence with a GET before failing the capture."""
        ns = self.namespace("rbac-op")
        triggers = [{"podName": "no-such-pod"}] + [
            {"workloadRef": {"kind": k, "name": "no-such-" + k.lower()}}
            for k in ("JobSet", "LeaderWorkerSet", "RayJob", "TrainJob", "PyTorchJob", "MPIJob")
        ] + [{"workloadRef": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                              "name": "no-such-vcjob"}}]
        for i, t in enumerate(triggers):
            self.api.create({"apiVersion": "diagon.gke.io/v1alpha1",
                             "kind": "MLDiagnosticsConnection", "metadata": {"name": "m%d" % i},
                             "spec": {"triggerCapture": {
                                 "profiler": "google_cloud_mldiagnostics", "podNamespace": ns,
                                 "capturePort": 9999, "durationSeconds": 1,
                                 "storageLocation": "/tmp/rbac", **t}}}, ns)
        for i in range(len(triggers)):
            self.api.wait("/apis/diagon.gke.io/v1alpha1/namespaces/%s/"
                          "mldiagnosticsconnections/m%d" % (ns, i),
                          lambda o: o.get("status", {}).get("phase") == "Failed", 90)

    def drive_schedule(self):
        """A capture on a schedule creates a capture and, with no history kept,
        deletes it once it is over (test_profiler.Schedules does the same against
        real profilers; this runs only when nothing did yet)."""
        if any(ev["verb"] == "create" and ev.get("objectRef", {}).get("resource") ==
               "mldiagnosticsconnections" and ev["user"]["username"].endswith(
                   ":mldiagnostics-connection-operator")
               for ev in audit_events(self.c.cp.audit_log)):
            return
        ns = self.namespace("rbac-sched")
        self.api.create({"apiVersion": "diagon.gke.io/v1alpha1",
                         "kind": "MLDiagnosticsConnection", "metadata": {"name": "sched"},
                         "spec": {"schedule": "* * * * *", "failedHistoryLimit": 0,
                                  "triggerCapture": {
                                      "profiler": "google_cloud_mldiagnostics", "podNamespace": ns,
                                      "capturePort": 9999, "durationSeconds": 1,
                                      "podName": "no-such-pod", "storageLocation": "/tmp/rbac"}}},
                        ns)
        path = kubeapi.path_for("MLDiagnosticsConnection", ns, "sched")
        self.api.wait(path, lambda o: o.get("status", {}).get("lastScheduleTime") and
                      not o["status"].get("active"), 150, what="a tick's capture, made and gone")
        self.api.delete(path)

    def drive_hooks_and_leases(self):
        """helm test of both charts, the renewal CronJob's certgen (a Job made
        from it, as `kubectl create job --from=cronjob/...` does), and a Lease
        taken with the operator's own credentials."""
        inst = self.c.install
        for rel in (install.WEBHOOK_RELEASE, install.OPERATOR_RELEASE):
            r = inst.helm.run("test", rel, "-n", NS, "--timeout", "120s", check=False,
                              timeout=180)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        cron = next(c for c in self.api.list("/apis/batch/v1/namespaces/%s/cronjobs" % NS)
                    if c["metadata"]["name"].endswith("certgen-renew"))
        self.kubectl("create", "job", "rbac-renew", "-n", NS,
                     "--from=cronjob/" + cron["metadata"]["name"])
        self.api.wait("/apis/batch/v1/namespaces/%s/jobs/rbac-renew" % NS,
                      lambda j: j.get("status", {}).get("succeeded"), 90,
                      what="certgen from the renewal CronJob")
        self.api.delete("/apis/batch/v1/namespaces/%s/jobs/rbac-renew" % NS)
        # the chart's default arguments take the Lease (--leader-elect); then the seed's again
        inst.reinstall_operator(False)
        try:
            lease = self.api.wait(kubeapi.path_for("Lease", NS, install.OPERATOR_RELEASE),
                                  lambda l: l["spec"].get("holderIdentity"), 60)
            self.api.wait(kubeapi.path_for("Lease", NS, install.OPERATOR_RELEASE),
                          lambda l: l["spec"].get("renewTime") != lease["spec"].get(
                              "renewTime"), 30, what="a renewal (update) after the create")
        finally:
            inst.reinstall_operator(True)

    def test_enough_and_no_wider_than_needed(self):
        self.drive_cache_misses()
        self.drive_owner_lookups()
        self.drive_operator_lookups()
        self.drive_schedule()
        self.drive_hooks_and_leases()
        time.sleep(2.5)  # the audit backend's batch
        helm = self.c.install.helm
        docs = []
        for rel in (install.WEBHOOK_RELEASE, install.OPERATOR_RELEASE):
            docs += helm.manifest(rel)
            hooks = helm.run("get", "hooks", rel, "-n", NS).stdout
            docs += [d for d in yaml.safe_load_all(hooks) if d]
        granted = grants(docs)
        used, refused = {}, []
        for ev in audit_events(self.c.cp.audit_log):
            user = ev["user"]["username"]
            prefix = "system:serviceaccount:%s:" % NS
            if not user.startswith(prefix) or "objectRef" not in ev:
                continue
            sa = user[len(prefix):]
            ref = ev["objectRef"]
            res = ref.get("resource", "") + ("/" + ref["subresource"]
                                            if ref.get("subresource") else "")
            key = (ev["verb"], ref.get("apiGroup", ""), res)
            used.setdefault(sa, set()).add(key)
            if ev.get("responseStatus", {}).get("code") == 403:
                refused.append((sa, key, ev["requestURI"]))
        self.assertFalse(refused, "requests the chart's RBAC refused:\n  " + "\n  ".join(
            map(str, refused)))
        self.assertIn("mldiagnostics-injection-webhook", used, "the webhook made no request")
        self.assertIn("mldiagnostics-connection-operator", used, "the operator made none")
        unused = []
        for sa, keys in sorted(granted.items()):
            for k in sorted(keys - used.get(sa, set())):
                if (sa,) + k not in UNUSED_OK:
                    unused.append((sa,) + k)
        self.assertFalse(unused, "granted but never used in this run (wider than needed, or "
                                 "a path no scenario drives):\n  " +
                         "\n  ".join(map(str, unused)))


if __name__ == "__main__":
    unittest.main()
