"""Network namespaces for the end-to-end tier's own test hosts (ip netns +
veth on a bridge of the tier's own): the real node's namespace (node.py),
and any host a test adds.

The addresses are the project's own test hosts, in 198.18.0.0/15 (RFC 2544's
benchmarking range, never routed): each run of the tier takes a free slot
i (0-15, an flock in /run/lock), its bridge `mlde2e<i>` with 198.18.<16i>.0/20
and namespaces `mlde2e<i>-<n>`, so that `make cluster` and `make e2e` can
run side by side. The host side is 198.18.<16i>.1, where the API server, the
registry and the tier's stand-ins for cluster services (the OTLP receiver,
the GKE metadata server) listen. The slot's real node takes
198.19.<16i>.0/21 for its pods and 198.19.<16i+8>.0/21 for the cluster's
Services, routed to the node's own namespace on the bridge.
"""
import fcntl
import ipaddress
import os
import shutil
import subprocess
import threading

PREFIX = "mlde2e"
SLOTS = 16


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


def cleanup(slot=None):
    """Remove the namespaces and bridge of one slot (default: every slot no
    live run holds) that a previous run left."""
    slots = [slot] if slot is not None else [i for i in range(SLOTS) if _free(i)]
    out = _ip("netns", "list", check=False).stdout.split()
    for i in slots:
        for name in out:
            if name.startswith("%s%d-" % (PREFIX, i)):
                _ip("netns", "del", name, check=False)
                shutil.rmtree("/etc/netns/" + name, ignore_errors=True)
        _ip("link", "del", "%s%d" % (PREFIX, i), check=False)


def _lock_path(i):
    d = "/run/lock" if os.path.isdir("/run/lock") else "/tmp"
    return os.path.join(d, "%s%d.lock" % (PREFIX, i))


def _free(i):
    try:
        fd = os.open(_lock_path(i), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


class PodNetworks:
    """Allocates namespaces with addresses on the tier's bridge."""

    def __init__(self):
        self.lock = threading.Lock()
        self.next = 2
        for i in range(SLOTS):
            fd = os.open(_lock_path(i), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.slot, self.lock_fd = i, fd
            break
        else:
            raise RuntimeError("all %d pod network slots are in use" % SLOTS)
        self.prefix = "%s%d" % (PREFIX, self.slot)
        self.bridge = self.prefix
        self.net = ipaddress.ip_network("198.18.%d.0/20" % (16 * self.slot))
        self.host_ip = str(self.net.network_address + 1)
        self.pod_cidr = "198.19.%d.0/21" % (16 * self.slot)
        self.service_cidr = "198.19.%d.0/21" % (16 * self.slot + 8)
        cleanup(self.slot)
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", "%s/%d" % (self.host_ip, self.net.prefixlen), "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")

    def create(self):
        """A new namespace; returns (name, address)."""
        with self.lock:
            n = self.next
            self.next += 1
        addr = str(self.net.network_address + n)
        name = "%s-%d" % (self.prefix, n)
        host_if, pod_if = "%sh%d" % (self.prefix, n), "%sp%d" % (self.prefix, n)
        _ip("netns", "add", name)
        _ip("link", "add", host_if, "type", "veth", "peer", "name", pod_if)
        _ip("link", "set", host_if, "master", self.bridge)
        _ip("link", "set", host_if, "up")
        _ip("link", "set", pod_if, "netns", name)
        _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", name, "link", "set", pod_if, "name", "eth0")
        _ip("-n", name, "addr", "add", "%s/%d" % (addr, self.net.prefixlen), "dev", "eth0")
        _ip("-n", name, "link", "set", "eth0", "up")
        return name, addr

    def delete(self, name):
        _ip("netns", "del", name, check=False)

    def close(self):
        cleanup(self.slot)
        os.close(self.lock_fd)
