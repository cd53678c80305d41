"""The workload controllers of the tier, run as local processes against the
real API server: JobSet, LeaderWorkerSet and KubeRay, each with its CRDs
from its module's own config/ folder, and (JobSet, LWS) its own admission
webhooks registered by URL on 127.0.0.1 exactly as its kustomize overlay
registers them (the pod webhooks keep the objectSelector of the project's
mutating-patch/validating-patch, without which they would see every pod).
cert-manager's CRDs are installed too (its controller is not built).
"""
import copy
import json
import os

import jsonpatch
import yaml

import kubeapi
from procs import Proc, free_port, make_ca, make_leaf, wait_until


def read_modules(bin_dirs):
    """{module path: module cache folder} from build.sh's modules.txt files."""
    out = {}
    for d in bin_dirs.values():
        path = os.path.join(os.path.dirname(d), "modules.txt")
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    if line.strip():
                        mod, folder = line.split()
                        out[mod] = folder
    return out


def yaml_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def cert_manager_crds(folder):
    """cert-manager's deploy/crds are chart templates only in their labels."""
    docs = []
    crd_dir = os.path.join(folder, "deploy", "crds")
    for name in sorted(os.listdir(crd_dir)):
        if name.endswith(".yaml"):
            text = "\n".join(line for line in open(os.path.join(crd_dir, name)).read()
                             .splitlines() if "{{-" not in line)
            for d in yaml.safe_load_all(text):
                if d:
                    d["metadata"]["labels"] = {"app.kubernetes.io/name": "cert-manager"}
                    docs.append(d)
    return docs


class WorkloadControllers:
    def __init__(self, cp, bins, modules, work_dir, log=print):
        self.cp = cp
        self.api = cp.api
        self.bins = bins
        self.mods = modules
        self.dir = work_dir
        self.log = log
        self.procs = []
        self.pki = os.path.join(work_dir, "controller-pki")
        os.makedirs(self.pki, exist_ok=True)
        self.ca = make_ca(self.pki, "webhooks-ca", "mld-e2e-controller-webhooks")

    # ---- CRDs ----
    def crds(self):
        files = []
        js = self.mods["sigs.k8s.io/jobset"]
        files.append(os.path.join(js, "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"))
        lws = self.mods["sigs.k8s.io/lws"]
        for n in ("leaderworkerset.x-k8s.io_leaderworkersets.yaml",
                  "disaggregatedset.x-k8s.io_disaggregatedsets.yaml"):
            # LWS 0.9's manager also runs the DisaggregatedSet controller and
            # exits when its cache cannot sync.
            files.append(os.path.join(lws, "config/crd/bases", n))
        ray = self.mods["github.com/ray-project/kuberay/ray-operator"]
        for n in ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml", "ray.io_rayservices.yaml"):
            files.append(os.path.join(ray, "config/crd/bases", n))
        docs = [d for f in files for d in yaml_docs(f)]
        docs += cert_manager_crds(self.mods["github.com/cert-manager/cert-manager"])
        return docs

    def install_crds(self):
        names = []
        for d in self.crds():
            self.api.apply(d)  # server-side: KubeRay's CRDs exceed 256 KiB
            names.append(d["metadata"]["name"])
        for n in names:
            self.api.wait(kubeapi.path_for("CustomResourceDefinition", name=n), lambda o: any(
                c["type"] == "Established" and c["status"] == "True"
                for c in o.get("status", {}).get("conditions", [])), 60, what="CRD " + n)
        return names

    # ---- controller-runtime managers with their own webhooks ----
    def _serving_cert(self, name):
        d = os.path.join(self.pki, name)
        os.makedirs(d, exist_ok=True)
        crt, key = make_leaf(d, "tls", self.ca, name, sans=["IP:127.0.0.1", "DNS:localhost"])
        return d

    def _register_webhooks(self, manifests, patches, prefix, port):
        """The kustomize overlay's result: namePrefix, the pod-webhook patches,
        and clientConfig.service → url on 127.0.0.1 with our CA."""
        import base64
        with open(self.ca[0], "rb") as f:
            bundle = base64.b64encode(f.read()).decode()
        patch_by_kind = {}
        for kind, path in patches.items():
            with open(path) as f:
                patch_by_kind[kind] = jsonpatch.JsonPatch(yaml.safe_load(f))
        for doc in yaml_docs(manifests):
            doc = copy.deepcopy(doc)
            if doc["kind"] in patch_by_kind:
                doc = patch_by_kind[doc["kind"]].apply(doc)
            doc["metadata"]["name"] = prefix + doc["metadata"]["name"]
            for wh in doc["webhooks"]:
                svc = wh["clientConfig"].pop("service")
                wh["clientConfig"] = {"url": "https://127.0.0.1:%d%s" % (port, svc["path"]),
                                      "caBundle": bundle}
            self.api.apply(doc)

    def _config(self, name, group, webhook_port, health_port):
        cfg = {"apiVersion": "config.%s/v1alpha1" % group, "kind": "Configuration",
               "leaderElection": {"leaderElect": False},
               "internalCertManagement": {"enable": False},
               "webhook": {"port": webhook_port, "host": "127.0.0.1",
                           "certDir": self._serving_cert(name)},
               "health": {"healthProbeBindAddress": "127.0.0.1:%d" % health_port},
               "metrics": {"bindAddress": "0"}}
        path = os.path.join(self.dir, name + "-config.yaml")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def _start(self, name, args, health_port):
        env = {**os.environ, "KUBECONFIG": self.cp.admin_kubeconfig}
        p = Proc(name, args, self.cp.logs, env=env).start()
        self.procs.append(p)

        def ready():
            p.check_alive()
            import urllib.request
            return urllib.request.urlopen("http://127.0.0.1:%d/readyz" % health_port,
                                          timeout=2).status == 200
        wait_until(ready, 90, name + " ready")
        return p

    # controller-runtime managers with webhooks of their own: (binary, module,
    # config group, the kustomize overlay's webhook folder and patches, name prefix)
    MANAGERS = {
        "jobset": ("jobset", "sigs.k8s.io/jobset", "jobset.x-k8s.io",
                   "config/components/webhook", "patches/", "jobset-"),
        "lws": ("lws", "sigs.k8s.io/lws", "lws.x-k8s.io", "config/webhook", "", "lws-"),
    }

    def start_manager(self, name):
        exe, mod, group, folder, patches, prefix = self.MANAGERS[name]
        wport, hport = free_port(), free_port()
        cfg = self._config(name, group, wport, hport)
        wh = os.path.join(self.mods[mod], folder)
        self._register_webhooks(os.path.join(wh, "manifests.yaml"), {
            "MutatingWebhookConfiguration": os.path.join(wh, patches + "mutating-patch.yaml"),
            "ValidatingWebhookConfiguration": os.path.join(wh, patches +
                                                           "validating-patch.yaml")},
            prefix, wport)
        return self._start(name + "-controller", [
            os.path.join(self.bins["controllers"], exe), "--config", cfg,
            "--zap-log-level", "info"], hport)

    def start_kuberay(self):
        hport = free_port()
        # Webhooks stay off (ENABLE_WEBHOOKS unset), as in KubeRay's own chart default.
        return self._start("kuberay-operator", [
            os.path.join(self.bins["kuberay"], "ray-operator"),
            "--enable-leader-election=false", "--metrics-addr", "0",
            "--health-probe-bind-address", "127.0.0.1:%d" % hport,
            "--log-stdout-encoder", "console"], hport)

    def start_all(self):
        self.install_crds()
        for name in self.MANAGERS:
            self.start_manager(name)
        self.start_kuberay()

    def stop(self):
        for p in reversed(self.procs):
            p.stop(timeout=10)
        self.procs = []
