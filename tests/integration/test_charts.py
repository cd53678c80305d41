"""The Helm charts (DESIGN §5) rendered and linted by the real helm binary
(tests/tools/charts.py: $MLD_HELM, else tests/e2e/build.sh's, else PATH; none is a
failure): default values, seed 003's --set lines, certManager.enabled=false and
webhook.failurePolicy=Fail; the operator Deployment's strategy (Recreate without
--leader-elect, RollingUpdate with it). `helm lint --strict` passes for both charts with the defaults
and with seed 003's values; values.schema.json refuses wrong values naming them. Every
object parses and carries the fields the design names; the operator's rendered args and
the certgen Job's args go through the real binaries' flag parsers (the certgen Job runs
against the fake API server); the `helm test` hooks run `selftest` as rendered against the
fake API server, and their RBAC allows exactly the requests it makes; manifests/install/
is the default rendering (without the test hooks) and manifests/crd/ the chart's CRD."""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "fakes"))
import charts  # noqa: E402
import rbaccheck  # noqa: E402
from charts import NAMESPACE, find, hook_phases, render  # noqa: E402
from fake_apiserver import FakeApiServer  # noqa: E402
from harness import BIN_DIR  # noqa: E402

WH = "mldiagnostics-injection-webhook"
OP = "mldiagnostics-connection-operator"
SEED_SET = ("mldiagnosticsConnectionOperator.controller.args={--metrics-bind-address=:8443,"
            "--health-probe-bind-address=:8081,--sidecar-timeout=65m,"
            "--disable-hostname-override}")
SEED_ARGS = ["--metrics-bind-address=:8443", "--health-probe-bind-address=:8081",
             "--sidecar-timeout=65m", "--disable-hostname-override"]
DEFAULT_ARGS = ["--leader-elect", "--health-probe-bind-address=:8081",
                "--metrics-bind-address=:8080", "--sidecar-timeout=5m"]
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration",
                  "CustomResourceDefinition", "Namespace"}
READ_VERBS = {"get", "list", "watch"}
SELFTEST_NS = "default"  # the webhook chart's selftest.namespace


def kind_table():
    """The workload kinds of libk8s/ml/k8s_kinds.c, printed by tests/tools/kinds_json.c."""
    out = subprocess.run([os.path.join(BIN_DIR, "..", "tests", "kinds_json")], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


class Common:
    def check_objects(self, docs):
        self.assertTrue(docs)
        for d in docs:
            self.assertTrue(d.get("apiVersion") and d.get("kind"), d)
            meta = d["metadata"]
            self.assertRegex(meta["name"], r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
            self.assertLessEqual(len(meta["name"]), 253)
            if d["kind"] in CLUSTER_SCOPED:
                self.assertNotIn("namespace", meta, d["kind"])
            elif hook_phases(d) == {"test"} and d["kind"] in ("Role", "RoleBinding"):
                self.assertIn(meta.get("namespace"), (NAMESPACE, SELFTEST_NS), meta["name"])
            else:
                self.assertEqual(meta.get("namespace"), NAMESPACE, (d["kind"], meta["name"]))
            self.assertEqual(meta["labels"]["app.kubernetes.io/part-of"], "mldiagnostics")
        keys = [(d["kind"], d["metadata"]["name"]) for d in docs]
        self.assertEqual(len(keys), len(set(keys)), "duplicate objects")

    def check_pod_security(self, pod):
        psc = pod["securityContext"]
        self.assertTrue(psc["runAsNonRoot"])
        self.assertEqual(psc["runAsUser"], 65532)
        self.assertEqual(psc["seccompProfile"], {"type": "RuntimeDefault"})
        for c in pod["containers"]:
            sc = c["securityContext"]
            self.assertTrue(sc["readOnlyRootFilesystem"])
            self.assertFalse(sc["allowPrivilegeEscalation"])
            self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
            self.assertIn("memory", c["resources"]["limits"])
            self.assertIn("cpu", c["resources"]["requests"])
            self.assertIn("memory", c["resources"]["requests"])

    def rules(self, docs, kind, name):
        return find(docs, kind, name)["rules"]


class WebhookChartTest(unittest.TestCase, Common):
    @classmethod
    def setUpClass(cls):
        cls.docs = render(WH, tests=False)

    def test_objects_parse(self):
        self.check_objects(self.docs)
        self.assertEqual(sorted({d["kind"] for d in self.docs}),
                         ["Certificate", "ClusterRole", "ClusterRoleBinding", "Deployment",
                          "Issuer", "MutatingWebhookConfiguration", "PodDisruptionBudget",
                          "Service", "ServiceAccount"])

    def test_deployment(self):
        dep = find(self.docs, "Deployment", WH)
        spec = dep["spec"]
        self.assertEqual(spec["replicas"], 2)
        self.assertEqual(spec["strategy"]["rollingUpdate"]["maxUnavailable"], 0)
        pod = spec["template"]["spec"]
        self.check_pod_security(pod)
        anti = pod["affinity"]["podAntiAffinity"]
        self.assertNotIn("requiredDuringSchedulingIgnoredDuringExecution", anti)
        (term,) = anti["preferredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(term["podAffinityTerm"]["topologyKey"], "kubernetes.io/hostname")
        self.assertEqual(term["podAffinityTerm"]["labelSelector"]["matchLabels"],
                         spec["selector"]["matchLabels"])
        (c,) = pod["containers"]
        env = {e["name"]: e.get("value") for e in c["env"]}
        self.assertEqual(env, {"CERT_PATH": "/etc/webhook/certs/tls.crt",
                               "KEY_PATH": "/etc/webhook/certs/tls.key",
                               "KUBERNETES_CLUSTER_DOMAIN": "cluster.local",
                               "CLUSTER_NAME": ""})
        self.assertEqual(c["ports"], [{"name": "https", "containerPort": 8443,
                                       "protocol": "TCP"}])
        for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
            self.assertEqual(c[probe]["httpGet"], {"path": path, "port": "https",
                                                   "scheme": "HTTPS"})
        (mount,) = c["volumeMounts"]
        self.assertEqual(mount["mountPath"], "/etc/webhook/certs")
        (vol,) = pod["volumes"]
        self.assertEqual(vol["secret"]["secretName"], WH + "-tls")
        self.assertEqual(c["image"], "ghcr.io/mldiagnostics/mldiagnostics-webhook:0.1.0")
        self.assertEqual(pod["serviceAccountName"], WH)
        # preStop keeps serving while endpoints update, then SIGTERM drains (10s)
        self.assertEqual(c["lifecycle"]["preStop"]["exec"]["command"], ["/bin/sleep", "5"])
        self.assertGreater(pod["terminationGracePeriodSeconds"], 5 + 10)
        # the non-root server can read its Secret volume (group-readable, its group)
        self.assertEqual(pod["securityContext"]["fsGroup"], 65532)
        self.assertEqual(vol["secret"]["defaultMode"], 0o440)

    def test_args_pass_the_webhook_flag_parser(self):
        c = find(self.docs, "Deployment", WH)["spec"]["template"]["spec"]["containers"][0]
        p = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-webhook"), *c["args"],
                            "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        bad = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-webhook"), *c["args"],
                              "--bogus", "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--bogus", bad.stderr)

    def test_pdb_and_service(self):
        pdb = find(self.docs, "PodDisruptionBudget", WH)
        self.assertEqual(pdb["apiVersion"], "policy/v1")
        self.assertEqual(pdb["spec"]["maxUnavailable"], 1)
        dep = find(self.docs, "Deployment", WH)
        self.assertEqual(pdb["spec"]["selector"]["matchLabels"],
                         dep["spec"]["selector"]["matchLabels"])
        svc = find(self.docs, "Service", WH)
        self.assertEqual(svc["spec"]["ports"], [{"name": "https", "port": 443,
                                                 "targetPort": "https", "protocol": "TCP"}])
        self.assertEqual(svc["spec"]["selector"], dep["spec"]["selector"]["matchLabels"])

    def test_mutating_webhook_configuration(self):
        mwc = find(self.docs, "MutatingWebhookConfiguration")
        name = mwc["metadata"]["name"]
        self.assertGreater(name, "jobset-mutating-webhook-configuration")
        self.assertGreater(name, "lws-mutating-webhook-configuration")
        (hook,) = mwc["webhooks"]
        self.assertEqual(hook["admissionReviewVersions"], ["v1"])
        self.assertEqual(hook["sideEffects"], "None")
        self.assertEqual(hook["reinvocationPolicy"], "IfNeeded")
        self.assertEqual(hook["timeoutSeconds"], 5)
        self.assertEqual(hook["failurePolicy"], "Ignore")
        self.assertEqual(hook["clientConfig"]["service"],
                         {"name": WH, "namespace": NAMESPACE, "path": "/mutate", "port": 443})
        (rule,) = hook["rules"]
        self.assertEqual((rule["operations"], rule["apiGroups"], rule["apiVersions"],
                          rule["resources"]), (["CREATE"], [""], ["v1"], ["pods"]))
        exprs = hook["namespaceSelector"]["matchExpressions"]
        self.assertIn({"key": "diagon-webhook-exempt", "operator": "NotIn", "values": ["true"]},
                      exprs)
        self.assertIn({"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                       "values": ["kube-system", NAMESPACE]}, exprs)

    def test_rbac_is_read_only_for_exactly_the_watched_kinds(self):
        rules = self.rules(self.docs, "ClusterRole", WH)
        got = {}
        for r in rules:
            self.assertLessEqual(set(r["verbs"]), READ_VERBS)
            for g in r["apiGroups"]:
                for res in r["resources"]:
                    self.assertNotIn("*", res)
                    got[(g, res)] = set(r["verbs"])
        # the kind table: the kinds it watches, and the others looked up one at
        # a time (ReplicaSet -> Deployment, StatefulSet)
        want = {("", "namespaces"): READ_VERBS}
        for k in kind_table():
            want[(k["group"], k["plural"])] = READ_VERBS if k["webhookWatch"] else {"get"}
        self.assertIn(("trainer.kubeflow.org", "trainjobs"), want)
        self.assertEqual(got, want)
        binding = find(self.docs, "ClusterRoleBinding", WH)
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": WH,
                                                "namespace": NAMESPACE}])

    def test_cert_manager_mode(self):
        """selfSigned Issuer -> CA Certificate -> CA Issuer -> serving Certificate, so a
        serving-certificate renewal never changes the injected caBundle (the CA)."""
        cert = find(self.docs, "Certificate", WH)
        ca = find(self.docs, "Certificate", WH + "-ca")
        root = find(self.docs, "Issuer", WH + "-selfsigned")
        ca_issuer = find(self.docs, "Issuer", WH + "-ca")
        self.assertEqual(root["spec"], {"selfSigned": {}})
        self.assertTrue(ca["spec"]["isCA"])
        self.assertEqual(ca["spec"]["issuerRef"], {"kind": "Issuer",
                                                    "name": root["metadata"]["name"]})
        self.assertEqual(ca_issuer["spec"], {"ca": {"secretName": ca["spec"]["secretName"]}})
        mwc = find(self.docs, "MutatingWebhookConfiguration")
        self.assertEqual(mwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                         "%s/%s" % (NAMESPACE, cert["metadata"]["name"]))
        self.assertEqual(cert["spec"]["issuerRef"], {"kind": "Issuer",
                                                      "name": ca_issuer["metadata"]["name"]})
        self.assertNotIn("commonName", cert["spec"])  # DNS names only (a CN caps at 64)
        self.assertEqual(cert["spec"]["secretName"], WH + "-tls")
        svc = "%s.%s" % (WH, NAMESPACE)
        self.assertEqual(cert["spec"]["dnsNames"], [WH, svc, svc + ".svc",
                                                    svc + ".svc.cluster.local"])
        self.assertFalse([d for d in self.docs if hook_phases(d)])

    def test_values_named_by_the_design(self):
        docs = render(WH, tests=False, sets=[
            "webhook.failurePolicy=Fail", "webhook.timeoutSeconds=3", "webhook.replicas=3",
            "clusterName=tpu-east", "kubernetesClusterDomain=corp.local",
            "otel.collectorName=col", "otel.collectorNamespace=obs",
            "image.repository=reg.example/wh", "image.tag=v9"])
        self.check_objects(docs)
        (hook,) = find(docs, "MutatingWebhookConfiguration")["webhooks"]
        self.assertEqual((hook["failurePolicy"], hook["timeoutSeconds"]), ("Fail", 3))
        dep = find(docs, "Deployment", WH)
        self.assertEqual(dep["spec"]["replicas"], 3)
        c = dep["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in c["env"]}
        self.assertEqual((env["CLUSTER_NAME"], env["KUBERNETES_CLUSTER_DOMAIN"]),
                         ("tpu-east", "corp.local"))
        self.assertIn("--otel-collector-name=col", c["args"])
        self.assertIn("--otel-collector-namespace=obs", c["args"])
        self.assertEqual(c["image"], "reg.example/wh:v9")
        self.assertIn(WH + ".gke-mldiagnostics.svc.corp.local",
                      find(docs, "Certificate", WH)["spec"]["dnsNames"])

    def test_failure_policy_fail(self):
        docs = render(WH, sets=["webhook.failurePolicy=Fail"])
        (hook,) = find(docs, "MutatingWebhookConfiguration")["webhooks"]
        self.assertEqual(hook["failurePolicy"], "Fail")
        # Fail never blocks the webhook's own namespace or kube-system
        self.assertIn({"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                       "values": ["kube-system", NAMESPACE]},
                      hook["namespaceSelector"]["matchExpressions"])

    def test_configuration_name_must_sort_after_jobset_and_lws(self):
        with self.assertRaises(charts.RenderError) as cm:
            render(WH, sets=["webhook.configurationName=a-webhook"])
        self.assertIn("webhook.configurationName", str(cm.exception))
        self.assertIn("must sort after", str(cm.exception))


class CertgenModeTest(unittest.TestCase, Common):
    @classmethod
    def setUpClass(cls):
        cls.docs = render(WH, tests=False, sets=["certManager.enabled=false"])

    def test_no_cert_manager_objects(self):
        self.check_objects(self.docs)
        kinds = {d["kind"] for d in self.docs}
        self.assertFalse(kinds & {"Certificate", "Issuer"})
        mwc = find(self.docs, "MutatingWebhookConfiguration")
        self.assertNotIn("cert-manager.io/inject-ca-from",
                         mwc["metadata"].get("annotations", {}))

    def test_hook_job_and_its_rbac(self):
        hooks = [d for d in self.docs if hook_phases(d)]
        self.assertEqual(sorted(d["kind"] for d in hooks),
                         ["ClusterRole", "ClusterRoleBinding", "Job", "Role", "RoleBinding",
                          "ServiceAccount"])
        for d in hooks:
            self.assertEqual(hook_phases(d), {"pre-install", "pre-upgrade", "post-install",
                                              "post-upgrade"})
        job = find(self.docs, "Job")
        ann = job["metadata"]["annotations"]
        rbac_weight = int(find(self.docs, "Role", WH + "-certgen")["metadata"]["annotations"]
                          ["helm.sh/hook-weight"])
        self.assertLess(rbac_weight, int(ann["helm.sh/hook-weight"]))
        pod = job["spec"]["template"]["spec"]
        self.check_pod_security(pod)
        role = find(self.docs, "Role", WH + "-certgen")["rules"]
        self.assertEqual(role, [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [WH + "-tls"],
             "verbs": ["get", "update"]}])
        mwc = find(self.docs, "MutatingWebhookConfiguration")["metadata"]["name"]
        # certgen pods are never selected as webhook servers (PDB, Service, anti-affinity)
        labels = job["spec"]["template"]["metadata"]["labels"]
        for sel in (find(self.docs, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
                    find(self.docs, "Service")["spec"]["selector"]):
            self.assertFalse(all(labels.get(k) == v for k, v in sel.items()), sel)
        self.assertEqual(find(self.docs, "ClusterRole", WH + "-certgen")["rules"], [
            {"apiGroups": ["admissionregistration.k8s.io"],
             "resources": ["mutatingwebhookconfigurations"], "resourceNames": [mwc],
             "verbs": ["get", "patch"]}])

    def test_renewal_cronjob(self):
        cron = find(self.docs, "CronJob")
        self.assertFalse(hook_phases(cron))
        spec = cron["spec"]
        self.assertEqual((spec["schedule"], spec["concurrencyPolicy"]), ("17 3 * * *", "Forbid"))
        pod = spec["jobTemplate"]["spec"]["template"]["spec"]
        self.check_pod_security(pod)
        job_pod = find(self.docs, "Job")["spec"]["template"]["spec"]
        self.assertEqual(pod["containers"], job_pod["containers"])
        sa = pod["serviceAccountName"]
        self.assertFalse(hook_phases(find(self.docs, "ServiceAccount", sa)))
        for kind in ("Role", "ClusterRole"):
            self.assertEqual(find(self.docs, kind, sa)["rules"],
                             find(self.docs, kind, WH + "-certgen")["rules"])
        for kind in ("RoleBinding", "ClusterRoleBinding"):
            self.assertEqual(find(self.docs, kind, sa)["subjects"][0]["name"], sa)
        off = render(WH, sets=["certManager.enabled=false", "certgen.renewSchedule="])
        self.assertFalse([d for d in off if d["kind"] == "CronJob"])
        self.assertFalse([d for d in render(WH, tests=False) if d["kind"] in ("CronJob", "Job")])

    def test_the_job_runs_certgen_as_rendered(self):
        job = find(self.docs, "Job")
        (c,) = job["spec"]["template"]["spec"]["containers"]
        dep = find(self.docs, "Deployment", WH)
        self.assertEqual(c["image"], dep["spec"]["template"]["spec"]["containers"][0]["image"])
        self.assertEqual(c["args"][0], "certgen")
        env = {e["name"]: e["value"] for e in c["env"]}
        api = FakeApiServer()
        api.start()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                kc = os.path.join(tmp, "kubeconfig")
                api.kubeconfig(kc)
                api.create(("", "v1", "namespaces"), {"metadata": {"name": NAMESPACE}})
                mwc = copy.deepcopy(find(self.docs, "MutatingWebhookConfiguration"))
                api.create(("admissionregistration.k8s.io", "v1",
                            "mutatingwebhookconfigurations"), mwc)
                p = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-webhook"), *c["args"],
                                    "--kubeconfig", kc], capture_output=True, text=True,
                                   timeout=60, env=dict(os.environ, **env))
                self.assertEqual(p.returncode, 0, p.stderr)
                done = json.loads(p.stderr.strip().splitlines()[-1])
                self.assertEqual((done["secret"], done["caBundle"]), ("created", "patched"))
                secret_name = dep["spec"]["template"]["spec"]["volumes"][0]["secret"][
                    "secretName"]
                secret = api.get(("", "v1", "secrets"), secret_name, ns=NAMESPACE)
                self.assertEqual(secret["type"], "kubernetes.io/tls")
                got = api.get(("admissionregistration.k8s.io", "v1",
                               "mutatingwebhookconfigurations"), mwc["metadata"]["name"])
                self.assertEqual(got["webhooks"][0]["clientConfig"]["caBundle"],
                                 secret["data"]["ca.crt"])
        finally:
            api.stop()


class OperatorChartTest(unittest.TestCase, Common):
    @classmethod
    def setUpClass(cls):
        cls.docs = render(OP, tests=False)
        cls.seed = render(OP, tests=False, sets=[SEED_SET])

    def container(self, docs):
        dep = find(docs, "Deployment", OP)
        (c,) = dep["spec"]["template"]["spec"]["containers"]
        return dep, c

    def test_objects_parse(self):
        for docs in (self.docs, self.seed):
            self.check_objects(docs)
        self.assertEqual(sorted({d["kind"] for d in self.docs}),
                         ["ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                          "Deployment", "Role", "RoleBinding", "Service", "ServiceAccount"])

    def test_deployment(self):
        dep, c = self.container(self.docs)
        pod = dep["spec"]["template"]["spec"]
        self.check_pod_security(pod)
        self.assertEqual(pod["terminationGracePeriodSeconds"], 10)
        self.assertEqual(c["args"], DEFAULT_ARGS)
        self.assertEqual(pod["serviceAccountName"], OP)
        env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"]}
        self.assertEqual(env, {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"})
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(ports, {"metrics": 8080, "health": 8081})
        self.assertEqual(c["readinessProbe"]["httpGet"], {"path": "/readyz", "port": "health"})
        self.assertEqual(c["livenessProbe"]["httpGet"], {"path": "/healthz", "port": "health"})

    def test_seed_set_line(self):
        dep, c = self.container(self.seed)
        self.assertEqual(c["args"], SEED_ARGS)
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(ports, {"metrics": 8443, "health": 8081})
        svc = find(self.seed, "Service")
        self.assertEqual(svc["spec"]["ports"][0]["port"], 8443)
        self.assertEqual(svc["spec"]["ports"][0]["targetPort"], "metrics")

    def test_args_reach_the_flag_parser_unchanged(self):
        for docs, expect in ((self.docs, {"leader-elect": True, "metrics-bind-address": ":8080",
                                          "sidecar-timeout": "5m0s"}),
                             (self.seed, {"leader-elect": False,
                                          "metrics-bind-address": ":8443",
                                          "health-probe-bind-address": ":8081",
                                          "sidecar-timeout": "1h5m0s",
                                          "disable-hostname-override": True})):
            _, c = self.container(docs)
            p = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-operator"), *c["args"],
                                "--dry-run"], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            got = json.loads(p.stdout)
            for k, v in expect.items():
                self.assertEqual(got[k], v, k)
        p = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-operator"), "--dry-run",
                            "--sidecar-timeout=65 minutes"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--sidecar-timeout", p.stderr)

    def test_strategy_follows_leader_election(self):
        """DESIGN §5 (issue 12, behaviour 6): without --leader-elect every pod
        reconciles, so an upgrade must stop the old pod before starting the new one
        (Recreate); with it the new pod waits for the Lease (RollingUpdate). The chart
        reads the args as the operator's flag parser does: the binary's --dry-run
        says the same for every variant."""
        def strategy(docs):
            return find(docs, "Deployment", OP)["spec"]["strategy"]
        self.assertEqual(strategy(self.docs), {"type": "RollingUpdate"})
        self.assertEqual(strategy(self.seed), {"type": "Recreate"}, "seed 003's --set line")
        for args, leads in ((["--leader-elect"], True), (["-leader-elect"], True),
                            (["--leader-elect=true"], True), (["--leader-elect=T"], True),
                            (["--leader-elect=1"], True), (["--leader-elect=false"], False),
                            (["--leader-elect=0"], False), (["-leader-elect=F"], False),
                            (["--leader-elect", "--leader-elect=false"], False),
                            (["--leader-elect=false", "--leader-elect"], True),
                            (["--leader-election-id=x", "--leader-election-namespace=y"], False),
                            (["--sidecar-timeout=65m"], False)):
            with self.subTest(args=args):
                docs = render(OP, tests=False, sets=[
                    "mldiagnosticsConnectionOperator.controller.args={%s}" % ",".join(args)])
                self.assertEqual(strategy(docs), {"type": "RollingUpdate" if leads
                                                  else "Recreate"})
                p = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-operator"), *args,
                                    "--dry-run"], capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(json.loads(p.stdout)["leader-elect"], leads)

    def test_disabled_listeners(self):
        docs = render(OP, sets=["mldiagnosticsConnectionOperator.controller.args="
                                "{--metrics-bind-address=0,--health-probe-bind-address=0}"])
        _, c = self.container(docs)
        self.assertNotIn("ports", c)
        self.assertNotIn("readinessProbe", c)
        self.assertFalse([d for d in docs if d["kind"] == "Service"])

    def test_rbac_least_privilege(self):
        rules = self.rules(self.docs, "ClusterRole", OP)
        got = {}
        for r in rules:
            self.assertNotIn("*", r["verbs"])
            for g in r["apiGroups"]:
                self.assertNotEqual(g, "*")
                for res in r["resources"]:
                    self.assertNotIn("*", res)
                    self.assertNotEqual(res, "secrets")
                    got[(g, res)] = set(r["verbs"])
        self.assertEqual(got, {
            # create, delete: a capture on a schedule's own captures
            ("diagon.gke.io", "mldiagnosticsconnections"): READ_VERBS | {"create", "delete"},
            ("diagon.gke.io", "mldiagnosticsconnections/status"): {"update"},
            ("", "namespaces"): {"list", "watch"},
            ("", "pods"): READ_VERBS,
            ("", "events"): {"create"},
            # the kind table's workloadRef kinds, which the operator watches
            **{(k["group"], k["plural"]): READ_VERBS for k in kind_table() if k["workloadRef"]},
        })
        role = find(self.docs, "Role")
        self.assertEqual(role["rules"], [{"apiGroups": ["coordination.k8s.io"],
                                          "resources": ["leases"],
                                          "verbs": ["get", "create", "update"]}])

    def test_crd_is_the_manifest_and_survives_uninstall(self):
        crd = find(self.docs, "CustomResourceDefinition")
        self.assertEqual(crd["metadata"]["annotations"]["helm.sh/resource-policy"], "keep")
        with open(os.path.join(charts.ROOT, "manifests", "crd",
                               "mldiagnosticsconnections.diagon.gke.io.yaml")) as f:
            manifest = yaml.safe_load(f)
        self.assertEqual(crd["spec"], manifest["spec"])
        self.assertEqual(crd["metadata"]["name"], manifest["metadata"]["name"])
        docs = render(OP, sets=["crds.install=false"])
        self.assertFalse([d for d in docs if d["kind"] == "CustomResourceDefinition"])

    def test_what_repeats_the_kind_table_is_generated_from_it(self):
        """scripts/kinds.py --check: the charts' RBAC rules and descriptions, the
        CRD's workloadRef kinds, the fake API server's CRDs and the README's lists
        are what the table gives (make manifests writes them)."""
        table = subprocess.run([os.path.join(BIN_DIR, "..", "tests", "kinds_json")],
                               check=True, capture_output=True, text=True).stdout
        p = subprocess.run([sys.executable, os.path.join(charts.ROOT, "scripts", "kinds.py"),
                            "-", "--check"], input=table, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_crd_workload_ref_kinds_are_the_kind_tables(self):
        crd = find(self.docs, "CustomResourceDefinition")
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        ref = schema["properties"]["spec"]["properties"]["triggerCapture"]["properties"][
            "workloadRef"]
        self.assertEqual(sorted(ref["properties"]["kind"]["enum"]),
                         sorted({k["kind"] for k in kind_table() if k["workloadRef"]}))
        self.assertEqual(ref["properties"]["apiVersion"]["type"], "string")


class LintTest(unittest.TestCase):
    """`helm lint --strict` (warnings are failures) with the defaults and seed 003's values."""

    def test_both_charts_lint_strict(self):
        for chart, sets in ((WH, []), (WH, ["certManager.enabled=false"]),
                            (WH, ["webhook.failurePolicy=Fail"]), (OP, []), (OP, [SEED_SET])):
            with self.subTest(chart=chart, sets=sets):
                out = charts.lint(chart, sets=sets)
                self.assertIn("1 chart(s) linted, 0 chart(s) failed", out)
                self.assertNotIn("[WARNING]", out)
                self.assertNotIn("[ERROR]", out)


class SchemaTest(unittest.TestCase):
    """values.schema.json: helm refuses a wrong value and names it (its JSON path); every
    default and seed 003's values pass; an unknown key is refused rather than ignored."""

    BAD = (
        (WH, ["webhook.failurePolicy=Maybe"], "/webhook/failurePolicy",
         "value must be one of 'Ignore', 'Fail'"),
        (WH, ["webhook.timeoutSeconds=0"], "/webhook/timeoutSeconds", "minimum"),
        (WH, ["webhook.timeoutSeconds=31"], "/webhook/timeoutSeconds", "maximum"),
        (WH, ["webhook.replicas=-1"], "/webhook/replicas", "minimum"),
        (WH, ["image.tag=2"], "/image/tag", "want string"),
        (WH, ["certManager.enabled=yes"], "/certManager/enabled", "want boolean"),
        (WH, ["selftest.namespace=Not_A_Namespace"], "/selftest/namespace", "does not match"),
        (WH, ["webhok.replicas=2"], "additional properties 'webhok' not allowed", ""),
        (OP, ["mldiagnosticsConnectionOperator.controller.args=--leader-elect"],
         "/mldiagnosticsConnectionOperator/controller/args", "want array"),
        (OP, ["mldiagnosticsConnectionOperator.controller.args={1,2}"],
         "/mldiagnosticsConnectionOperator/controller/args/0", "want string"),
        (OP, ["mldiagnosticsConnectionOperator.replicas=one"],
         "/mldiagnosticsConnectionOperator/replicas", "want integer"),
        (OP, ["crds.install=no"], "/crds/install", "want boolean"),
        (OP, ["image.tag=7"], "/image/tag", "want string"),
    )

    def test_wrong_values_are_refused_by_name(self):
        for chart, sets, name, why in self.BAD:
            with self.subTest(sets=sets):
                with self.assertRaises(charts.RenderError) as cm:
                    render(chart, sets=sets)
                msg = str(cm.exception)
                self.assertIn("values don't meet the specifications of the schema", msg)
                self.assertIn(name, msg)
                self.assertIn(why, msg)
                with self.assertRaises(charts.RenderError) as cm:  # lint refuses it too
                    charts.lint(chart, sets=sets)
                self.assertIn(name, str(cm.exception))

    def test_a_values_file_is_checked_too(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write("image:\n  tag: 1.2\n")
            f.flush()
            with self.assertRaises(charts.RenderError) as cm:
                render(WH, values=[f.name])
        self.assertIn("/image/tag", str(cm.exception))
        render(WH, set_strings=["image.tag=1.2"])  # the way to give a numeric tag

    def test_defaults_and_seed_values_pass(self):
        for chart in (WH, OP):
            with open(os.path.join(charts.CHARTS, chart, "values.schema.json")) as f:
                schema = json.load(f)
            with open(os.path.join(charts.CHARTS, chart, "values.yaml")) as f:
                values = yaml.safe_load(f)
            self.assertFalse(schema["additionalProperties"])
            self.assertEqual(set(values) - set(schema["properties"]), set(), chart)
        render(WH, sets=["certManager.enabled=false"])
        render(OP, sets=[SEED_SET])
        render(WH, sets=["webhook.namespaceSelectorExpressions[0].key=team",
                         "webhook.namespaceSelectorExpressions[0].operator=In",
                         "webhook.namespaceSelectorExpressions[0].values={ml}",
                         "podDisruptionBudget.maxUnavailable=50%"])


def selftest_hooks(docs):
    return [d for d in docs if hook_phases(d) == {"test"}]


class SelftestHookChecks:
    """The `helm test` hooks of a chart: a test Pod after its own ServiceAccount and RBAC,
    delete policies, the server's image, the binary's flag parser, pod security, and least
    privilege: the bound rules allow every request `selftest` makes as rendered against the
    fake API server, and every rule is used."""

    def check_hooks(self, docs, release_name):
        hooks = selftest_hooks(docs)
        self.assertEqual(sorted(d["kind"] for d in hooks), self.KINDS)
        pod = find(hooks, "Pod")
        weight = lambda d: int(d["metadata"]["annotations"].get("helm.sh/hook-weight", "0"))
        for d in hooks:
            ann = d["metadata"]["annotations"]
            if d is pod:
                self.assertEqual(ann["helm.sh/hook-delete-policy"], "before-hook-creation")
            else:
                self.assertLess(weight(d), weight(pod), d["kind"])
                self.assertEqual(ann["helm.sh/hook-delete-policy"],
                                 "before-hook-creation,hook-succeeded")
        spec = pod["spec"]
        self.assertEqual(spec["restartPolicy"], "Never")
        self.check_pod_security(spec)
        sa = find(hooks, "ServiceAccount")["metadata"]["name"]
        self.assertEqual(spec["serviceAccountName"], sa)
        (c,) = spec["containers"]
        server = find(docs, "Deployment", release_name)["spec"]
        self.assertEqual(c["image"], server["template"]["spec"]["containers"][0]["image"])
        self.assertEqual(c["args"][0], "selftest")
        # the test pod is never one of the server's pods (Service, PDB)
        for sel in [server["selector"]["matchLabels"]] + [
                d["spec"]["selector"] for d in docs if d["kind"] == "Service"]:
            labels = pod["metadata"]["labels"]
            self.assertFalse(all(labels.get(k) == v for k, v in sel.items()), sel)
        return hooks, pod, c, (sa, NAMESPACE)

    def check_flags(self, binary, args):
        exe = os.path.join(BIN_DIR, binary)
        p = subprocess.run([exe, *args, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        bad = subprocess.run([exe, *args, "--bogus"], capture_output=True, text=True, timeout=30)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--bogus", bad.stderr)

    def check_least_privilege(self, hooks, subject, requests):
        grant_list = rbaccheck.grants(hooks, subject)
        used = set()
        for r in requests:
            attrs = rbaccheck.attributes(r["method"], r["path"], r["query"])
            hit = rbaccheck.allowing_rule(grant_list, *attrs)
            self.assertIsNotNone(hit, "not allowed by the test's RBAC: %s %s" % (
                r["method"], r["path"]))
            used.add(json.dumps(hit, sort_keys=True))
        every = {json.dumps((ns, rule), sort_keys=True) for ns, rules in grant_list
                 for rule in rules}
        self.assertEqual(every - used, set(), "rules no request needed")
        for ns, rules in grant_list:
            for rule in rules:
                self.assertNotIn("*", rule["verbs"] + rule["resources"] + rule["apiGroups"])


class WebhookSelftestHookTest(unittest.TestCase, Common, SelftestHookChecks):
    KINDS = ["ClusterRole", "ClusterRoleBinding", "Pod", "Role", "RoleBinding",
             "ServiceAccount"]

    @classmethod
    def setUpClass(cls):
        cls.docs = render(WH)

    def test_hooks(self):
        self.check_objects(self.docs)
        hooks, pod, c, subject = self.check_hooks(self.docs, WH)
        mwc = find(self.docs, "MutatingWebhookConfiguration")["metadata"]["name"]
        self.assertEqual(c["args"], ["selftest", "--namespace=" + SELFTEST_NS,
                                     "--webhook-config=" + mwc, "--image=" + c["image"],
                                     "--timeout=60s"])
        self.check_flags("mldiagnostics-webhook", c["args"])
        role = find(hooks, "Role")
        self.assertEqual(role["metadata"]["namespace"], SELFTEST_NS)
        self.assertEqual(role["rules"], [{"apiGroups": [""], "resources": ["pods"],
                                          "verbs": ["create"]}])
        self.assertEqual(find(hooks, "ClusterRole")["rules"], [
            {"apiGroups": [""], "resources": ["namespaces"], "resourceNames": [SELFTEST_NS],
             "verbs": ["get"]},
            {"apiGroups": ["admissionregistration.k8s.io"],
             "resources": ["mutatingwebhookconfigurations"], "resourceNames": [mwc],
             "verbs": ["get"]}])

    def test_selftest_namespace_value(self):
        docs = render(WH, sets=["selftest.namespace=ml", "selftest.timeout=5m"])
        hooks = selftest_hooks(docs)
        self.assertEqual({d["metadata"].get("namespace") for d in hooks
                          if d["kind"] in ("Role", "RoleBinding")}, {"ml"})
        self.assertEqual(find(hooks, "ClusterRole")["rules"][0]["resourceNames"], ["ml"])
        args = find(hooks, "Pod")["spec"]["containers"][0]["args"]
        self.assertIn("--namespace=ml", args)
        self.assertIn("--timeout=5m", args)
        self.assertFalse(selftest_hooks(render(WH, tests=False)))

    def test_runs_as_rendered_with_least_privilege(self):
        """The rendered command against the fake API server holding the chart's objects:
        the webhook's Service name does not resolve here, so it fails as unreachable
        after asking for everything its RBAC grants, and for nothing more."""
        hooks = selftest_hooks(self.docs)
        pod = find(hooks, "Pod")
        api = FakeApiServer()
        api.start()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                kc = os.path.join(tmp, "kubeconfig")
                api.kubeconfig(kc)
                api.create(("admissionregistration.k8s.io", "v1",
                            "mutatingwebhookconfigurations"),
                           copy.deepcopy(find(self.docs, "MutatingWebhookConfiguration")))
                args = pod["spec"]["containers"][0]["args"]
                p = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-webhook"), *args,
                                    "--timeout=0s", "--kubeconfig", kc], capture_output=True,
                                   text=True, timeout=60)
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertIn("webhook unreachable: https://%s.%s.svc:443/mutate" % (
                    WH, NAMESPACE), p.stderr)
                self.check_least_privilege(hooks, (pod["spec"]["serviceAccountName"],
                                                   NAMESPACE), api.requests)
        finally:
            api.stop()


class OperatorSelftestHookTest(unittest.TestCase, Common, SelftestHookChecks):
    KINDS = ["Pod", "Role", "RoleBinding", "ServiceAccount"]

    @classmethod
    def setUpClass(cls):
        cls.docs = render(OP, sets=[SEED_SET])

    def test_hooks(self):
        self.check_objects(self.docs)
        hooks, pod, c, subject = self.check_hooks(self.docs, OP)
        self.assertEqual(c["args"], ["selftest", "--namespace=" + NAMESPACE,
                                     "--deployment=" + OP, "--timeout=60s"])
        self.check_flags("mldiagnostics-operator", c["args"])
        self.assertEqual(find(hooks, "Role")["rules"], [
            {"apiGroups": ["diagon.gke.io"], "resources": ["mldiagnosticsconnections"],
             "verbs": ["list"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": [OP],
             "verbs": ["get"]}])

    def test_runs_as_rendered_with_least_privilege(self):
        hooks = selftest_hooks(self.docs)
        pod = find(hooks, "Pod")
        api = FakeApiServer()
        api.register_ml_crds()
        api.start()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                kc = os.path.join(tmp, "kubeconfig")
                api.kubeconfig(kc)
                dep = copy.deepcopy(find(self.docs, "Deployment", OP))
                api.create(("apps", "v1", "deployments"), dep, ns=NAMESPACE)
                got = api.get(("apps", "v1", "deployments"), OP, ns=NAMESPACE)
                got["status"] = {"replicas": 1, "readyReplicas": 1}
                api.update(("apps", "v1", "deployments"), got, ns=NAMESPACE,
                           subresource="status")
                args = pod["spec"]["containers"][0]["args"]
                p = subprocess.run([os.path.join(BIN_DIR, "mldiagnostics-operator"), *args,
                                    "--kubeconfig", kc], capture_output=True, text=True,
                                   timeout=60)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertIn("selftest passed", p.stdout)
                self.check_least_privilege(hooks, (pod["spec"]["serviceAccountName"],
                                                   NAMESPACE), api.requests)
        finally:
            api.stop()




class InstallManifestsTest(unittest.TestCase):
    """manifests/install/ is the charts rendered with default values (`make manifests`)."""

    def test_no_drift(self):
        for chart in (WH, OP):
            path = os.path.join(charts.ROOT, "manifests", "install", chart + ".yaml")
            with open(path) as f:
                committed = [d for d in yaml.safe_load_all(f) if d]
            self.assertEqual(committed, render(chart, tests=False),
                             "%s is stale: run `make manifests`" % path)
            self.assertFalse([d for d in committed if "test" in hook_phases(d)], path)

    def test_namespace_first(self):
        with open(os.path.join(charts.ROOT, "manifests", "install", "00-namespace.yaml")) as f:
            (ns,) = [d for d in yaml.safe_load_all(f) if d]
        self.assertEqual((ns["kind"], ns["metadata"]["name"]), ("Namespace", NAMESPACE))


if __name__ == "__main__":
    unittest.main()
