"""The end-to-end tier's cluster, assembled: components (build.sh), the
control plane, the tier's OCI registry with the project's images in it
(registry.py), two nodes, the workload controllers, and seed 003's install.

Nodes: `e2e-kubelet` is a real kubelet with containerd, runc, CNI and
kube-proxy (node.py), which runs the project's images and the tier's
Python image (the workloads' JAX and SDK programs); `e2e-node` is the
tier's process node (kubelet.py), which holds the pods whose images nobody
could pull (the upstream fixtures' placeholders, the bursts' pods) and
runs nothing. A pod is bound to the real node when every image it names
comes from the tier's registry (place()).

    python cluster.py up   [--dir D]   start, install, run the webhook (the
                                       operator is `make run`'s), serve until
                                       SIGTERM; prints the KUBECONFIG line
    python cluster.py down [--dir D]   stop what `up` started
`make cluster` / `make cluster-down` call these; the tests import Cluster.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import controlplane  # noqa: E402
import install  # noqa: E402
import kubelet  # noqa: E402
import netns  # noqa: E402
import node  # noqa: E402
import registry  # noqa: E402
import workloads  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DEFAULT_DIR = os.path.join(ROOT, "build", "e2e-cluster")


def components():
    """Build (or find cached) the upstream binaries: {module: bin dir}."""
    p = subprocess.run([os.path.join(HERE, "build.sh")], capture_output=True, text=True,
                       timeout=80 * 60)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        raise RuntimeError("tests/e2e/build.sh failed:\n" + p.stderr[-4000:])
    return dict(line.split(" ", 1) for line in p.stdout.splitlines() if " " in line)


class Cluster:
    def __init__(self, work_dir=None, project_bin=None, log=None, tracing_endpoint=None):
        self.dir = work_dir or DEFAULT_DIR
        self.project_bin = project_bin or os.environ.get("MLD_BIN_DIR",
                                                         os.path.join(ROOT, "build", "bin"))
        self.logfile = None
        self.tracing_endpoint = tracing_endpoint
        self.log = log or self._log
        self.cp = self.node = self.controllers = self.install = self.networks = None
        self.registry = self.real_node = None
        self.no_real_node = None  # why there is no real node, when there is none

    def _log(self, msg):
        line = "[e2e %s] %s" % (time.strftime("%H:%M:%S"), msg)
        print(line, file=sys.stderr, flush=True)

    def up(self, install_charts=True, start_processes=True, start_operator=True):
        t0 = time.time()
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.bins = components()
        self.modules = workloads.read_modules(self.bins)
        why = netns.available()
        if why is None:
            self.networks = netns.PodNetworks()
        self.no_real_node = why or node.unavailable()
        real = self.no_real_node is None
        self.cp = controlplane.ControlPlane(
            self.bins["kube"], self.dir, self.log, self.tracing_endpoint,
            bind_ip=self.networks.host_ip if real else None,
            service_cidr=self.networks.service_cidr if real else None).start()
        self.api = self.cp.api
        if real:
            self.registry = registry.Registry(self.bins["registry"], self.dir, self.cp.ca,
                                              self.networks.host_ip, self.log).start()
            self.registry.push_images(os.path.join(self.modules["k8s.io/kubernetes"], "build",
                                                   "pause", "linux", "pause.c"))
            self.real_node = node.Node(self.cp, self.bins, self.networks, self.registry,
                                       self.dir, self.log).start()
        else:
            self.log("no real node: %s" % self.no_real_node)
        node_log = open(os.path.join(self.cp.logs, "kubelet.log"), "a", buffering=1)
        self.node = kubelet.Kubelet(
            self.api, "e2e-node",
            lambda m: node_log.write("%s %s\n" % (time.strftime("%H:%M:%S"), m)),
            place=self.place)
        self.node.start()
        self.controllers = workloads.WorkloadControllers(
            self.cp, self.bins, self.modules, self.dir, self.log,
            init_image=self.registry.python_image() if self.registry else None)
        self.controllers.start_all()
        self.log("workload controllers up (JobSet, LeaderWorkerSet, KubeRay, Trainer, "
                 "training-operator)")
        if self.real_node is None:
            raise RuntimeError("the tier needs its real node: %s" % self.no_real_node)
        self.install = install.Installation(self.cp, self.registry, self.real_node,
                                            os.path.join(self.bins["controllers"], "helm"),
                                            os.path.join(self.dir, "install"), self.log)
        if install_charts:
            t1 = time.time()
            self.install.install_webhook()
            # `make cluster`: the operator is `make run`'s (one reconciler), its chart's
            # Deployment at zero replicas
            self.install.install_operator(*([] if start_operator else [
                "--set", "mldiagnosticsConnectionOperator.replicas=0"]))
            self.log("charts installed with helm from %s in %.1fs" % (self.install.repo,
                                                                      time.time() - t1))
            if start_processes:
                self.webhook = self.install.start_webhook()
                if start_operator:
                    self.operator = self.install.start_operator()
        self.log("cluster up in %.1fs; KUBECONFIG=%s" % (time.time() - t0,
                                                         self.cp.admin_kubeconfig))
        return self

    def place(self, pod):
        """The node a pod is bound to: the real one when it can pull every
        image the pod names (the tier's registry serves them), else the
        process node."""
        if self.real_node and self.real_node.serves(pod):
            return node.NODE_NAME
        return "e2e-node"

    def down(self):
        for part in (self.install, self.controllers, self.node, self.real_node, self.registry,
                     self.cp):
            if part is not None:
                try:
                    part.stop()
                except Exception as e:  # noqa: BLE001 - tear down the rest regardless
                    self.log("teardown: %s" % e)
        if self.networks:
            self.networks.close()

    def check_alive(self):
        """Every long-running part still runs (a test fails at once if one died)."""
        for p in (self.cp.procs if self.cp else []) + (self.controllers.procs if
                                                        self.controllers else []) + \
                (self.real_node.procs if self.real_node else []) + \
                ([self.registry.proc] if self.registry else []):
            p.check_alive()

    def kubectl(self, *args, check=True, input=None, timeout=60):
        p = subprocess.run([os.path.join(self.bins["kube"], "kubectl"),
                            "--kubeconfig", self.cp.admin_kubeconfig, *args],
                           capture_output=True, text=True, input=input, timeout=timeout)
        if check and p.returncode != 0:
            raise RuntimeError("kubectl %s: %s%s" % (" ".join(args), p.stdout, p.stderr))
        return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["up", "down"])
    ap.add_argument("--dir", default=DEFAULT_DIR)
    a = ap.parse_args()
    state = os.path.join(a.dir + ".state.json")
    if a.command == "down":
        try:
            with open(state) as f:
                pid = json.load(f)["pid"]
            os.kill(pid, signal.SIGTERM)
            for _ in range(300):
                os.kill(pid, 0)
                time.sleep(0.1)
        except (OSError, ValueError, KeyError):
            pass
        netns.cleanup()
        try:
            os.unlink(state)
        except OSError:
            pass
        print("cluster stopped")
        return
    try:
        with open(state) as f:
            pid = json.load(f)["pid"]
        os.kill(pid, 0)
        sys.exit("a cluster is already up (pid %d); make cluster-down first" % pid)
    except (OSError, ValueError, KeyError):
        pass
    c = Cluster(a.dir)
    stop = threading.Event()
    serving = threading.Event()

    def on_signal(*_):
        stop.set()
        if not serving.is_set():
            raise SystemExit(143)  # abort a start in progress (helm may be waiting)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        with open(state, "w") as f:
            json.dump({"pid": os.getpid(), "dir": a.dir}, f)
        # The operator is `make run`'s to start (DESIGN §2): one reconciler.
        c.up(start_operator=False)
        with open(state, "w") as f:
            json.dump({"pid": os.getpid(), "kubeconfig": c.cp.admin_kubeconfig,
                       "dir": a.dir}, f)
        serving.set()
        print("export KUBECONFIG=%s" % c.cp.admin_kubeconfig, flush=True)
        print("# the webhook serves the cluster; `make run` with this KUBECONFIG adds the "
              "operator", flush=True)
        stop.wait()
    finally:
        c.down()
        try:
            os.unlink(state)
        except OSError:
            pass


if __name__ == "__main__":
    main()
