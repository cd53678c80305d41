"""The tier's real node: kubelet, containerd (with Debian's runc), the
reference CNI plugins, kube-proxy and CoreDNS, all built from their
upstream modules (build.sh), in a network namespace of the tier's own.

Network (the slot's addresses, netns.py): the node's namespace sits on the
tier's bridge like a host on a LAN, at the node's address (`ip`), with its
default route to the tier's host address. Inside it the bridge plugin's
`cni0` holds the pod CIDR, and kube-proxy (nftables mode) the Services. The
host (and every process-node pod) routes the pod and Service CIDRs to the
node, so the API server, on the host, reaches a webhook's Service as in a
cluster: ClusterIP -> the node -> kube-proxy's DNAT -> the pod. Pods reach
the API server through the `kubernetes` Service (its Endpoints hold the API
server's address on the tier's bridge); their DNS is CoreDNS behind a
kube-dns Service, and the GKE metadata server's address is a DNAT to the
tier's stand-in (route_metadata()).

Processes run with nsenter --net (never `ip netns exec`, whose fresh /sys
mount would hide the cgroup v1 hierarchies). The kubelet runs the tier's
Kubernetes version with failCgroupV1: false: this machine has cgroup v1
only, which kubelet 1.35+ refuses unless told (cgroup v1 is in maintenance).
Everything the node makes lives under its work directory, the slot's
/run/mlde2e<i> (containerd's state: short socket paths) and the cgroup
/mlde2e<i>; stop() and cleanup(slot) remove all of it, pods included.
"""
import json
import os
import shutil
import signal
import subprocess
import time

import kubeapi
import registry
from procs import Proc, make_leaf, wait_until

NODE_NAME = "e2e-kubelet"
KUBELET_PORT = 10250
HEALTHZ_PORT = 10248
RUNC = "/usr/sbin/runc"
METADATA_IP = "169.254.169.254"  # inside the node's namespace only (a DNAT)


# What the node and `make images` run besides build.sh's binaries (scripts/deps.sh).
TOOLS = ("nsenter", RUNC, "nft", "iptables", "buildah", "mmdebstrap", "gcc")


def unavailable():
    """None when a real node can run here, else why not."""
    if os.geteuid() != 0:
        return "a kubelet and containerd need root"
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        return "missing %s (scripts/deps.sh test installs them)" % ", ".join(missing)
    if not os.path.isdir("/sys/fs/cgroup/memory") and \
            not os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return "no cgroup hierarchy with the memory controller"
    return None


def run_dir(slot):
    return "/run/mlde2e%d" % slot


def cgroup_root(slot):
    return "/mlde2e%d" % slot


def _nsenter(netns):
    return ["nsenter", "--net=/run/netns/" + netns, "--"]


def _sh(*args, check=True, timeout=30):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(args), p.stderr.strip()))
    return p


class Node:
    def __init__(self, cp, bins, networks, reg, work_dir, log=print):
        self.cp = cp
        self.api = cp.api
        self.bins = bins
        self.net = networks
        self.registry = reg
        self.dir = os.path.join(work_dir, "node")
        self.run = run_dir(networks.slot)
        self.log = log
        self.procs = []
        for d in ("pki", "cni/net.d", "cni/ipam", "containerd", "certs.d", "kubelet",
                  "pod-logs", "logs"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        self.logs = os.path.join(self.dir, "logs")

    def serves(self, pod):
        """Whether the tier binds `pod` here: it asks for this node by name, or
        the tier's registry serves every image it names (through a mirror, or
        by its own address)."""
        spec = pod["spec"]
        if (spec.get("nodeSelector") or {}).get("kubernetes.io/hostname") == NODE_NAME:
            return True
        images = [c.get("image", "") for c in spec.get("containers", []) +
                  spec.get("initContainers", [])]
        return bool(images) and all(registry.repository(i) in registry.SERVED or
                                    i.startswith(self.registry.host + "/") for i in images)

    # ---- network ----
    def _network(self):
        self.netns, self.ip = self.net.create()
        _sh("ip", "-n", self.netns, "route", "add", "default", "via", self.net.host_ip)
        for key in ("net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1"):
            _sh(*_nsenter(self.netns), "sysctl", "-qw", key)
        for cidr in (self.net.pod_cidr, self.net.service_cidr):
            _sh("ip", "route", "replace", cidr, "via", self.ip)  # the host (the API server)
        with open(os.path.join(self.dir, "cni/net.d/10-mld-e2e.conflist"), "w") as f:
            json.dump({"cniVersion": "1.0.0", "name": "mld-e2e", "plugins": [
                {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False,
                 "hairpinMode": True, "ipam": {
                     "type": "host-local", "dataDir": os.path.join(self.dir, "cni/ipam"),
                     "ranges": [[{"subnet": self.net.pod_cidr}]],
                     "routes": [{"dst": "0.0.0.0/0"}]}},
                {"type": "portmap", "capabilities": {"portMappings": True}}]}, f, indent=1)
        self.resolv = os.path.join(self.dir, "resolv.conf")
        with open(self.resolv, "w") as f:  # the node's own: nothing outside the tier
            f.write("nameserver %s\n" % self.ip)

    # ---- cluster DNS and the GKE metadata server ----
    def _dns(self):
        """CoreDNS (its kubernetes plugin: Services and pods under
        cluster.local; hosts: the GKE metadata server's name) on the node's
        address, behind a kube-dns Service's ClusterIP as in a cluster."""
        import ipaddress
        self.dns_ip = str(ipaddress.ip_network(self.net.service_cidr).network_address + 10)
        corefile = os.path.join(self.dir, "Corefile")
        with open(corefile, "w") as f:
            f.write(""".:53 {
    bind %s
    errors
    hosts {
        %s metadata.google.internal
        fallthrough
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
""" % (self.ip, METADATA_IP, self.cp.admin_kubeconfig))
        self.coredns = self._start("coredns", [
            os.path.join(self.bins["coredns"], "coredns"), "-conf", corefile])
        svc = {"apiVersion": "v1", "kind": "Service", "metadata": {
            "name": "kube-dns", "namespace": "kube-system",
            "labels": {"k8s-app": "kube-dns"}}, "spec": {
            "clusterIP": self.dns_ip, "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP"},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}}
        self.api.apply(svc)
        self.api.apply({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                        "metadata": {"name": "kube-dns-node", "namespace": "kube-system",
                                     "labels": {"kubernetes.io/service-name": "kube-dns",
                                                "endpointslice.kubernetes.io/managed-by":
                                                    "mld-e2e"}},
                        "addressType": "IPv4",
                        "endpoints": [{"addresses": [self.ip], "nodeName": NODE_NAME,
                                       "conditions": {"ready": True}}],
                        "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                                  {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]})

    def route_metadata(self, host, port):
        """The pods' GKE metadata server (METADATA_IP:80) is host:port: a DNAT
        in the node's namespace, as GKE intercepts it on its nodes."""
        rules = ("table ip mld-e2e {\n chain prerouting {\n"
                 "  type nat hook prerouting priority dstnat; policy accept;\n"
                 "  ip daddr %s tcp dport 80 dnat to %s:%d\n }\n}\n" % (METADATA_IP, host, port))
        _sh(*_nsenter(self.netns), "nft", "delete", "table", "ip", "mld-e2e", check=False)
        p = subprocess.run(_nsenter(self.netns) + ["nft", "-f", "-"], input=rules, text=True,
                           capture_output=True, timeout=20)
        if p.returncode != 0:
            raise RuntimeError("nft (metadata DNAT): " + p.stderr.strip())

    # ---- containerd ----
    def _mirrors(self):
        """Every registry the pods name is this tier's registry (an air-gapped
        cluster's mirror configuration)."""
        ca = self.cp.ca[0]
        for host in registry.MIRRORED + (self.registry.host,):
            d = os.path.join(self.dir, "certs.d", host)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "hosts.toml"), "w") as f:
                f.write('server = "https://%s"\n\n[host."https://%s"]\n'
                        '  capabilities = ["pull", "resolve"]\n  ca = "%s"\n'
                        % (host, self.registry.host, ca))

    def _containerd(self):
        self._mirrors()
        os.makedirs(self.run, exist_ok=True)
        self.sock = os.path.join(self.run, "containerd.sock")
        cni_bin = self.bins["cni"]
        conf = os.path.join(self.dir, "containerd.toml")
        with open(conf, "w") as f:
            f.write("""version = 3
root = "%(root)s"
state = "%(state)s"
[grpc]
  address = "%(sock)s"
[ttrpc]
  address = "%(sock)s.ttrpc"
[debug]
  level = "warn"
[metrics]
  address = ""
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "registry.k8s.io/pause:3.10.2"
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = "%(certs)s"
  [plugins.'io.containerd.cri.v1.runtime']
    netns_mounts_under_state_dir = true
    # This machine withholds CAP_SYS_RESOURCE (its bounding set), so no
    # process may lower an oom_score_adj: clamp the kubelet's negative ones
    # (-998 for a sandbox, -997 for Guaranteed pods) to containerd's own.
    restrict_oom_score_adj = true
    enable_unprivileged_ports = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "%(runc)s"
          Root = "%(runc_root)s"
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["%(cni_bin)s"]
      conf_dir = "%(cni_conf)s"
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
""" % {"root": os.path.join(self.dir, "containerd"), "state": os.path.join(self.run, "state"),
                "sock": self.sock, "runc_root": os.path.join(self.run, "runc"),
                "certs": os.path.join(self.dir, "certs.d"), "runc": RUNC, "cni_bin": cni_bin,
                "cni_conf": os.path.join(self.dir, "cni/net.d")})
        env = {"PATH": "%s:%s" % (self.bins["containerd"], os.environ.get("PATH", ""))}
        self.containerd = self._start("containerd", [
            os.path.join(self.bins["containerd"], "containerd"), "--config", conf], env)
        wait_until(lambda: self.containerd.check_alive() or os.path.exists(self.sock), 30,
                   "containerd's socket")

    # ---- credentials ----
    def _kubeconfig(self, name, cn, org=None):
        crt, key = make_leaf(os.path.join(self.dir, "pki"), name, self.cp.ca, cn, client=True,
                             org=org)
        path = os.path.join(self.dir, name + ".kubeconfig")
        with open(path, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "e2e",
                       "clusters": [{"name": "e2e", "cluster": {
                           "server": self.cp.server, "certificate-authority": self.cp.ca[0]}}],
                       "users": [{"name": "u", "user": {"client-certificate": crt,
                                                        "client-key": key}}],
                       "contexts": [{"name": "e2e", "context": {"cluster": "e2e",
                                                               "user": "u"}}]}, f)
        return path

    # ---- kubelet ----
    def _cgroups(self):
        """The pods' cgroup root in every v1 hierarchy (the kubelet requires
        it to exist); cpuset's starts with its parent's CPUs and memory nodes."""
        base = "/sys/fs/cgroup"
        for sub in sorted(os.listdir(base)):
            top = os.path.join(base, sub)
            if not os.path.isdir(top) or not os.path.exists(os.path.join(top, "cgroup.procs")):
                continue
            d = top + cgroup_root(self.net.slot)
            os.makedirs(d, exist_ok=True)
            for knob in ("cpuset.cpus", "cpuset.mems"):
                if os.path.exists(os.path.join(top, knob)):
                    with open(os.path.join(top, knob)) as src, \
                            open(os.path.join(d, knob), "w") as dst:
                        dst.write(src.read())

    def _kubelet(self):
        self._cgroups()
        crt, key = make_leaf(os.path.join(self.dir, "pki"), "kubelet-serving", self.cp.ca,
                             "system:node:" + NODE_NAME, sans=["IP:" + self.ip])
        conf = os.path.join(self.dir, "kubelet.yaml")
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "failCgroupV1": False, "cgroupDriver": "cgroupfs",
            "cgroupRoot": cgroup_root(self.net.slot),
            "containerRuntimeEndpoint": "unix://" + self.sock,
            "address": self.ip, "port": KUBELET_PORT, "readOnlyPort": 0,
            "healthzBindAddress": self.ip, "healthzPort": HEALTHZ_PORT,
            "tlsCertFile": crt, "tlsPrivateKeyFile": key,
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                               "x509": {"clientCAFile": self.cp.ca[0]}},
            "authorization": {"mode": "Webhook"},
            "clusterDomain": "cluster.local", "clusterDNS": [self.dns_ip],
            "resolvConf": self.resolv,
            "failSwapOn": False, "serializeImagePulls": False,
            "staticPodPath": "", "podLogsDir": os.path.join(self.dir, "pod-logs"),
            "volumePluginDir": os.path.join(self.dir, "kubelet", "volume-plugins"),
            # A Secret volume's refresh follows the sync period (certificate renewal).
            "syncFrequency": "10s",
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                             "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "maxPods": 250,
        }
        with open(conf, "w") as f:
            json.dump(config, f, indent=1)
        kc = self._kubeconfig("kubelet", "system:node:" + NODE_NAME, "system:nodes")
        env = {"PATH": "%s:%s" % (self.bins["containerd"], os.environ.get("PATH", ""))}
        self.kubelet = self._start("kubelet", [
            os.path.join(self.bins["kube"], "kubelet"), "--config", conf, "--kubeconfig", kc,
            "--root-dir", os.path.join(self.dir, "kubelet"), "--hostname-override", NODE_NAME,
            "--node-ip", self.ip, "--v", "1"], env)

    def _kube_proxy(self):
        kc = self._kubeconfig("kube-proxy", "system:kube-proxy")
        conf = os.path.join(self.dir, "kube-proxy.yaml")
        with open(conf, "w") as f:
            json.dump({"apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
                       "kind": "KubeProxyConfiguration", "mode": "nftables",
                       "clientConnection": {"kubeconfig": kc},
                       "hostnameOverride": NODE_NAME, "clusterCIDR": self.net.pod_cidr,
                       "bindAddress": self.ip,
                       "healthzBindAddress": "%s:10256" % self.ip,
                       "metricsBindAddress": "%s:10249" % self.ip,
                       "nodePortAddresses": [self.ip + "/32"],
                       # a network namespace's conntrack table is not ours to size
                       "conntrack": {"maxPerCore": 0, "min": 0,
                                     "tcpEstablishedTimeout": "0s",
                                     "tcpCloseWaitTimeout": "0s"}}, f, indent=1)
        self.proxy = self._start("kube-proxy", [
            os.path.join(self.bins["kube"], "kube-proxy"), "--config", conf, "--v", "1"])

    def _start(self, name, args, env=None):
        env = env or {"PATH": os.environ.get("PATH", "")}
        p = Proc(name, _nsenter(self.netns) + args, self.logs, env=env).start()
        self.procs.append(p)
        return p

    # ---- lifecycle ----
    def start(self):
        t0 = time.time()
        cleanup(self.net.slot)
        self._network()
        self._containerd()
        self._dns()
        self._kubelet()
        self._kube_proxy()

        def ready():
            for p in self.procs:
                p.check_alive()
            n = self.api.get(kubeapi.path_for("Node", name=NODE_NAME))
            conds = {c["type"]: c["status"] for c in
                     (n or {}).get("status", {}).get("conditions", [])}
            return n if conds.get("Ready") == "True" else None
        node = wait_until(ready, 120, "Node %s Ready" % NODE_NAME, interval=0.5)
        self.runtime = node["status"]["nodeInfo"]["containerRuntimeVersion"]
        self.log("node %s Ready in %.1fs at %s (%s, kubelet %s)" % (
            NODE_NAME, time.time() - t0, self.ip, self.runtime,
            node["status"]["nodeInfo"]["kubeletVersion"]))
        return self

    def stop(self):
        if self.procs:
            self.kubelet.stop(timeout=15)
            self.proxy.stop(timeout=10)
        cleanup(self.net.slot, self.dir)
        for p in self.procs:
            p.stop(timeout=10)
        self.procs = []
        cleanup(self.net.slot, self.dir)


def _kill_cgroup(root):
    """SIGKILL every process in the cgroup tree `root` (every v1 hierarchy),
    then remove its directories bottom-up."""
    base = "/sys/fs/cgroup"
    for sub in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        top = os.path.join(base, sub) + root
        if not os.path.isdir(top):
            continue
        for d, _, _ in os.walk(top):
            try:
                with open(os.path.join(d, "cgroup.procs")) as f:
                    for pid in f.read().split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except OSError:
                            pass
            except OSError:
                pass
    time.sleep(0.2)
    for sub in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        top = os.path.join(base, sub) + root
        for d, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
            for _ in range(20):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


def _unmount_under(prefixes):
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for m in sorted(points, key=len, reverse=True):
        if any(m == p or m.startswith(p.rstrip("/") + "/") for p in prefixes):
            subprocess.run(["umount", "-l", m], capture_output=True, timeout=10)


def _shims(state):
    """The containerd shims (and their children) of one node: their command
    line names the node's containerd socket."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().decode(errors="replace")
        except OSError:
            continue
        if "containerd-shim" in cmd and state in cmd:
            out.append(int(pid))
    return out


def cleanup(slot, work_dir=None):
    """Remove what a node of `slot` left: its pods' processes and cgroups, its
    shims, its mounts (overlay snapshots, volumes, pod network namespaces) and
    its run directory. Safe to call when nothing is left."""
    _kill_cgroup(cgroup_root(slot))
    for pid in _shims(run_dir(slot)):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    prefixes = [run_dir(slot)] + ([os.path.join(work_dir)] if work_dir else [])
    _unmount_under(prefixes)
    shutil.rmtree(run_dir(slot), ignore_errors=True)
