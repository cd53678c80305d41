"""Pod networks for the end-to-end tier: one network namespace per pod that
runs real processes (ip netns + veth on a bridge of the tier's own), so that
every pod has its own address and a JAX profiler that binds [::]:9999 in each
of them does not collide with the others.

The addresses are the project's own test hosts: 198.18.0.0/16 (RFC 2544's
benchmarking range, never routed) on the bridge `mlde2e0`; the host side is
198.18.0.1, where the tier's stand-ins for cluster services (the OTLP
receiver) listen. `ip netns exec` bind-mounts /etc/netns/NAME/hosts over
/etc/hosts, which gives the pods the cluster DNS names they need.
"""
import ipaddress
import os
import shutil
import subprocess
import threading

BRIDGE = "mlde2e0"
PREFIX = "mlde2e"
NET = ipaddress.ip_network("198.18.0.0/16")
HOST_IP = str(NET.network_address + 1)


def _ip(*args, check=True):
    p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if check and p.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), p.stderr.strip()))
    return p


def available():
    """None when namespaces can be made here, else the reason."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if not shutil.which("ip"):
        return "iproute2's ip command is missing"
    p = _ip("netns", "add", PREFIX + "-probe", check=False)
    if p.returncode != 0:
        return "ip netns add failed: " + p.stderr.strip()
    _ip("netns", "del", PREFIX + "-probe", check=False)
    return None


def cleanup():
    """Remove every namespace, veth and the bridge a previous run left."""
    out = _ip("netns", "list", check=False).stdout
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(PREFIX):
            _ip("netns", "del", name, check=False)
            shutil.rmtree("/etc/netns/" + name, ignore_errors=True)
    _ip("link", "del", BRIDGE, check=False)


class PodNetworks:
    """Allocates pod namespaces with addresses on the tier's bridge."""

    def __init__(self, hosts=None):
        self.lock = threading.Lock()
        self.next = 2
        self.hosts = dict(hosts or {})  # DNS name -> address, written to each pod's /etc/hosts
        cleanup()
        _ip("link", "add", BRIDGE, "type", "bridge")
        _ip("addr", "add", "%s/%d" % (HOST_IP, NET.prefixlen), "dev", BRIDGE)
        _ip("link", "set", BRIDGE, "up")

    def create(self):
        """A new namespace; returns (name, address)."""
        with self.lock:
            n = self.next
            self.next += 1
        addr = str(NET.network_address + n)
        name = "%s-%d" % (PREFIX, n)
        host_if, pod_if = "%sh%d" % (PREFIX, n), "%sp%d" % (PREFIX, n)
        _ip("netns", "add", name)
        _ip("link", "add", host_if, "type", "veth", "peer", "name", pod_if)
        _ip("link", "set", host_if, "master", BRIDGE)
        _ip("link", "set", host_if, "up")
        _ip("link", "set", pod_if, "netns", name)
        _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", name, "link", "set", pod_if, "name", "eth0")
        _ip("-n", name, "addr", "add", "%s/%d" % (addr, NET.prefixlen), "dev", "eth0")
        _ip("-n", name, "link", "set", "eth0", "up")
        etc = "/etc/netns/" + name
        os.makedirs(etc, exist_ok=True)
        with open(os.path.join(etc, "hosts"), "w") as f:
            f.write("127.0.0.1 localhost\n%s %s\n" % (addr, name))
            for host, ip in sorted(self.hosts.items()):
                f.write("%s %s\n" % (ip, host))
        return name, addr

    def delete(self, name):
        _ip("netns", "del", name, check=False)
        shutil.rmtree("/etc/netns/" + name, ignore_errors=True)

    def close(self):
        cleanup()
