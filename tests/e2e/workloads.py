"""The workload controllers of the tier, run as local processes against the
real API server: JobSet, LeaderWorkerSet, KubeRay, Kubeflow Trainer v2 and
the Kubeflow training-operator v1, each with its CRDs from its module's own
config/ or manifests/ folder, and (JobSet, LWS, Trainer, training-operator)
its own admission webhooks registered by URL on 127.0.0.1 exactly as its
kustomize overlay registers them (the pod webhooks keep the objectSelector
of the project's mutating-patch/validating-patch, without which they would
see every pod). cert-manager's CRDs are installed too (its controller is not
built).
"""
import copy
import json
import os
import shutil

import jsonpatch
import yaml

import kubeapi
from procs import Proc, free_port, make_ca, make_leaf, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))

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
    def __init__(self, cp, bins, modules, work_dir, log=print, init_image=None):
        """init_image: the image of the PyTorchJob workers' init container
        (upstream's default, alpine:3.10, is pulled from nowhere here): one
        with sh, seq and nslookup, which its template runs."""
        self.init_image = init_image
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
        trainer = self.mods["github.com/kubeflow/trainer/v2"]
        for n in ("trainjobs", "trainingruntimes", "clustertrainingruntimes"):
            files.append(os.path.join(trainer, "manifests/base/crds",
                                      "trainer.kubeflow.org_%s.yaml" % n))
        to = self.mods["github.com/kubeflow/training-operator"]
        files.append(os.path.join(to, "manifests/base/crds/kubeflow.org_pytorchjobs.yaml"))
        # the kind table's MPIJob (no controller here) and Volcano Job (a stand-in CRD)
        mpi = self.mods["github.com/kubeflow/mpi-operator"]
        files.append(os.path.join(mpi, "manifests/base/kubeflow.org_mpijobs.yaml"))
        files.append(os.path.join(HERE, "crds", "batch.volcano.sh_jobs.yaml"))
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

    def _register_webhooks(self, manifests, patches, prefix, port, ca=None):
        """The kustomize overlay's result: namePrefix, the pod-webhook patches,
        and clientConfig.service → url on 127.0.0.1 with our CA."""
        import base64
        with open(ca or self.ca[0], "rb") as f:
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
        """JobSet's and LWS's Configuration: their webhook on 127.0.0.1 with
        our serving certificate, the internal cert management off."""
        cfg = {"apiVersion": "config.%s/v1alpha1" % group, "kind": "Configuration",
               "leaderElection": {"leaderElect": False},
               "internalCertManagement": {"enable": False},
               "webhook": {"port": webhook_port, "host": "127.0.0.1",
                           "certDir": self._serving_cert(name)},
               "health": {"healthProbeBindAddress": "127.0.0.1:%d" % health_port},
               "metrics": {"bindAddress": "0"}}
        return self._write_config(name, cfg), {}

    def _trainer_config(self, name, group, webhook_port, health_port):
        """Kubeflow Trainer's Configuration has no certDir: its webhook
        server reads controller-runtime's default, under $TMPDIR, where our
        serving certificate goes (certManagement off, as with cert-manager)."""
        tmp = os.path.join(self.dir, name + "-tmp")
        certs = os.path.join(tmp, "k8s-webhook-server", "serving-certs")
        os.makedirs(certs, exist_ok=True)
        make_leaf(certs, "tls", self.ca, name, sans=["IP:127.0.0.1", "DNS:localhost"])
        cfg = {"apiVersion": "config.%s/v1alpha1" % group, "kind": "Configuration",
               "leaderElection": {"leaderElect": False},
               "certManagement": {"enable": False},
               "webhook": {"port": webhook_port, "host": "127.0.0.1"},
               "health": {"healthProbeBindAddress": "127.0.0.1:%d" % health_port},
               "metrics": {"bindAddress": "0"}}
        return self._write_config(name, cfg), {"TMPDIR": tmp}

    def _write_config(self, name, cfg):
        path = os.path.join(self.dir, name + "-config.yaml")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def _start(self, name, args, health_port, env=None):
        env = {**os.environ, "KUBECONFIG": self.cp.admin_kubeconfig, **(env or {})}
        p = Proc(name, args, self.cp.logs, env=env).start()
        self.procs.append(p)

        def ready():
            p.check_alive()
            import urllib.request
            return urllib.request.urlopen("http://127.0.0.1:%d/readyz" % health_port,
                                          timeout=2).status == 200
        wait_until(ready, 90, name + " ready")
        return p

    # controller-runtime managers with a Configuration file and webhooks of
    # their own: (build module, binary, Go module, config group, the kustomize
    # overlay's webhook folder, its Mutating/Validating patches in it, the
    # name prefix, how the Configuration is written)
    MANAGERS = {
        "jobset": ("controllers", "jobset", "sigs.k8s.io/jobset", "jobset.x-k8s.io",
                   "config/components/webhook", ("patches/mutating-patch.yaml",
                                                 "patches/validating-patch.yaml"),
                   "jobset-", _config),
        "lws": ("controllers", "lws", "sigs.k8s.io/lws", "lws.x-k8s.io", "config/webhook",
                ("mutating-patch.yaml", "validating-patch.yaml"), "lws-", _config),
        # Kubeflow Trainer v2: TrainJob → JobSet (the JobSet controller above
        # makes its Jobs); its patches set the configurations' own names.
        "trainer": ("kubeflow", "trainer-controller-manager", "github.com/kubeflow/trainer/v2",
                    "trainer.kubeflow.org", "manifests/base/webhook",
                    ("patch_mutating.yaml", "patch_validating.yaml"), "", _trainer_config),
    }

    def start_manager(self, name):
        build, exe, mod, group, folder, (mpatch, vpatch), prefix, config = self.MANAGERS[name]
        wport, hport = free_port(), free_port()
        cfg, env = config(self, name, group, wport, hport)
        wh = os.path.join(self.mods[mod], folder)
        self._register_webhooks(os.path.join(wh, "manifests.yaml"), {
            "MutatingWebhookConfiguration": os.path.join(wh, mpatch),
            "ValidatingWebhookConfiguration": os.path.join(wh, vpatch)}, prefix, wport)
        return self._start(name + "-controller", [
            os.path.join(self.bins[build], exe), "--config", cfg,
            "--zap-log-level", "info"], hport, env)

    def start_kuberay(self):
        hport = free_port()
        # Webhooks stay off (ENABLE_WEBHOOKS unset), as in KubeRay's own chart default.
        return self._start("kuberay-operator", [
            os.path.join(self.bins["kuberay"], "ray-operator"),
            "--enable-leader-election=false", "--metrics-addr", "0",
            "--health-probe-bind-address", "127.0.0.1:%d" % hport,
            "--log-stdout-encoder", "console"], hport)

    # The training-operator's cert-controller (no extra SANs) takes a Secret
    # it finds valid for its CA name and Service DNS name and injects the
    # Secret's CA into its ValidatingWebhookConfiguration; in a cluster the
    # kubelet mounts that Secret into the certDir. Ours adds the IP SAN the
    # URL registration needs.
    TRAINING_OPERATOR_NS = "kubeflow"

    def _training_operator_certs(self, tmp):
        import base64
        ns = self.TRAINING_OPERATOR_NS
        d = os.path.join(self.pki, "training-operator")
        os.makedirs(d, exist_ok=True)
        ca = make_ca(d, "ca", "training-operator-ca", days=3650,
                     sans=["DNS:training-operator-ca"], pkcs1_rsa=True)
        crt, key = make_leaf(d, "tls", ca, "training-operator.%s.svc" % ns, days=365, sans=[
            "DNS:training-operator.%s.svc" % ns, "IP:127.0.0.1"])
        data = {}
        for name, path in (("ca.crt", ca[0]), ("ca.key", ca[1]), ("tls.crt", crt),
                           ("tls.key", key)):
            with open(path, "rb") as f:
                data[name] = base64.b64encode(f.read()).decode()
        self.api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        self.api.apply({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {
            "name": "training-operator-webhook-cert", "namespace": ns}, "data": data})
        # Our main (tests/e2e/trainingoperator) gives the webhook server and
        # the rotator one certDir under $TMPDIR: the "mount".
        own = os.path.join(tmp, "k8s-webhook-server", "serving-certs")
        os.makedirs(own, exist_ok=True)
        for src, name in ((crt, "tls.crt"), (key, "tls.key")):
            shutil.copyfile(src, os.path.join(own, name))
        return ca

    def start_training_operator(self):
        """Kubeflow training-operator v1, the PyTorchJob controller only;
        its validating webhook registered by URL as its kustomize base does,
        its server on 127.0.0.1 (our main's one difference in wiring)."""
        mod = self.mods["github.com/kubeflow/training-operator"]
        wport, hport = free_port(), free_port()
        tmp = os.path.join(self.dir, "training-operator-tmp")
        ca = self._training_operator_certs(tmp)
        wh = os.path.join(mod, "manifests/base/webhook")
        self._register_webhooks(os.path.join(wh, "manifests.yaml"), {
            "ValidatingWebhookConfiguration": os.path.join(wh, "patch.yaml")}, "", wport,
            ca=ca[0])
        return self._start("training-operator", [
            os.path.join(self.bins["trainingoperator"], "training-operator.v1"),
            "--enable-scheme", "pytorchjob", "--metrics-bind-address", "0",
            "--health-probe-bind-address", "127.0.0.1:%d" % hport,
            "--webhook-server-port", str(wport), "--zap-log-level", "info",
            *(["--pytorch-init-container-image", self.init_image] if self.init_image else [])],
            hport,
            {"TMPDIR": tmp, "MY_POD_NAMESPACE": self.TRAINING_OPERATOR_NS})

    def start_all(self):
        self.install_crds()
        for name in self.MANAGERS:
            self.start_manager(name)
        self.start_kuberay()
        self.start_training_operator()
        # A TrainJob names its runtime: Trainer's own JAX one, as its
        # manifests install it (the examples' runtimeRef).
        trainer = self.mods["github.com/kubeflow/trainer/v2"]
        for d in yaml_docs(os.path.join(trainer, "manifests/base/runtimes/jax_distributed.yaml")):
            self.api.apply(d)

    def stop(self):
        for p in reversed(self.procs):
            p.stop(timeout=10)
        self.procs = []
