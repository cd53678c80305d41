"""The tier's network rule: every socket the harness and the processes it
started (etcd, the API server, the controllers, the webhook, the pods that
share the machine's network) listen on in the machine's network namespace is
on loopback (127.0.0.0/8, ::1) or on the tier's own pod network (netns.py's
198.18.x.0/20 bridge, where the OTLP stand-in listens); never on every
address, where another machine could reach it. The pods' own network
namespaces are the tests' own and not looked at."""
import ipaddress
import os

from e2e import E2ETest

# /proc/net/{tcp,udp}{,6}: the "st" column of a socket that accepts, per table.
LISTEN_STATE = {"tcp": "0A", "tcp6": "0A", "udp": "07", "udp6": "07"}


def descendants(root):
    """Every live process under root (children of children too)."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        kids.setdefault(ppid, []).append(int(d))
    out, pending = [], [root]
    while pending:
        for c in kids.get(pending.pop(), []):
            out.append(c)
            pending.append(c)
    return out


def socket_inodes(pid):
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return inodes
    for fd in fds:
        try:
            link = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[len("socket:["):-1]))
    return inodes


def proc_net_address(hexaddr):
    """/proc/net's address: 32-bit words in host (little-endian) order."""
    raw = bytes.fromhex(hexaddr)
    return ipaddress.ip_address(b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)))


def listeners():
    """{socket inode: (table, address, port)} of the machine's namespace."""
    out = {}
    for table, state in LISTEN_STATE.items():
        with open("/proc/self/net/" + table) as f:
            next(f)
            for line in f:
                cols = line.split()
                if cols[3] == state:
                    addr, port = cols[1].split(":")
                    out[int(cols[9])] = (table, proc_net_address(addr), int(port, 16))
    return out


def allowed(addr, pod_net):
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped:
        addr = addr.ipv4_mapped
    return addr.is_loopback or (pod_net is not None and addr in pod_net)


class Listeners(E2ETest):
    def test_every_listener_of_the_tier_is_on_loopback_or_its_pod_network(self):
        pod_net = self.c.networks.net if self.c.networks else None
        own_ns = os.readlink("/proc/self/ns/net")
        table = listeners()
        seen, bad = 0, []
        for pid in [os.getpid()] + descendants(os.getpid()):
            try:
                if os.readlink("/proc/%d/ns/net" % pid) != own_ns:
                    continue  # a pod's own namespace
                with open("/proc/%d/comm" % pid) as f:
                    name = f.read().strip()
            except OSError:
                continue
            for inode in socket_inodes(pid) & table.keys():
                proto, addr, port = table[inode]
                seen += 1
                if not allowed(addr, pod_net):
                    bad.append("%s (pid %d) %s %s port %d" % (name, pid, proto, addr, port))
        # etcd, the API server, kube-controller-manager, five controllers, the registry
        self.assertGreaterEqual(seen, 9, "found too few listeners to judge")
        self.assertEqual(bad, [], "listening outside loopback and the pod network")
