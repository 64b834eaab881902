"""A two-cluster bed for global services through the real forwarder (docs/services.md, "Tests").

Nodes, each its own namespace with the real vxfed-dataplane, vxfedd and FRR's bgpd: cluster-a
(10.244.0.0/16) has nodes a, a2, a3..., cluster-b (10.245.0.0/16) b, b2, b3...; `nodes=(na, nb)`
says how many of each (default one each). Every node in BGP with every other: eBGP across the
clusters (the peer's node blocks), iBGP inside one (same AS, no `cluster`: each accepts the
other's block). etcd in a's namespace on the underlay, network `fed` on all, `services: {range:
10.96.0.0/24, network: fed}`. Two nodes share a veth; more (or `bfd=True`) a switch namespace
`sw` with a port p<node> each (`bed.switch.run("ip link set pa2 down")` cuts a2 off). With
`bfd=True` every session has BFD (FRR's bfdd, 300 ms x 3), so that a lost node's block is
withdrawn in about a second; the bed waits for every node's sessions up.

Pods are namespaces behind a veth on their node, attached in vxfedd as the CNI plugin would;
services are written as Kubernetes users write them (Service, one EndpointSlice per cluster,
ServiceExport) and applied with `vxfedctl service apply -f` on the first node of the slice's
cluster. Where pods go: clients on a cluster's first node (a, b), backends on
`bed.backend_node(cluster, k)`: round-robin over the cluster's other nodes (the first node itself
when it is alone), so that on a bed of several nodes per cluster no backend shares the client's
node and a cluster's backends are spread over its nodes.

`bed_size(default, least)` is the size a test asks for: its default (what CI runs), or
VXFED_SERVICE_NODES_PER_CLUSTER=n nodes in each cluster (3: the 2 x 3 bed issue 36 sets its
goals on), never fewer than the test's least.

The UDP programs below (ECHO, BURST, STREAM) are what the service tests run in the pods.
"""
from __future__ import annotations

import ipaddress
import os
import time
from pathlib import Path
from typing import Optional

from . import log, require_binary, wait_until
from .etcd_cluster import EtcdCluster
from .frr import require_frr
from .node import Node, check_all, connect_underlay
from .topology import Namespace, Topology

PREFIX = "/vxfed"
POD_MTU = 1500
SIZE_ENV = "VXFED_SERVICE_NODES_PER_CLUSTER"
MAX_NODES_PER_CLUSTER = 5   # node addresses 198.18.0.1..10 and pod MAC bytes 0x0a..0x13
CLUSTERS = {"a": ("cluster-a", "10.244.0.0/16", 65001), "b": ("cluster-b", "10.245.0.0/16", 65002)}


def bed_size(default: tuple[int, int] = (1, 1), least: tuple[int, int] = (1, 1)) -> tuple[int, int]:
    """(cluster-a's nodes, cluster-b's nodes): `default` (the test's CI size), or n and n with
    VXFED_SERVICE_NODES_PER_CLUSTER=n, but never fewer than `least` in a cluster (what the test
    needs: a node to lose beside the client's)."""
    text = os.environ.get(SIZE_ENV, "").strip()
    if not text:
        return default
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"{SIZE_ENV}={text!r}: not a whole number") from None
    if not 1 <= n <= MAX_NODES_PER_CLUSTER:
        raise ValueError(f"{SIZE_ENV}={n}: must be 1..{MAX_NODES_PER_CLUSTER}")
    return max(n, least[0]), max(n, least[1])


def service_yaml(name: str, cluster: str, endpoints: list[tuple[str, bool]], ports: list[tuple[str, int, int]],
                 annotations: Optional[dict[str, str]] = None, created: str = "2026-12-06T10:00:00Z") -> str:
    """One cluster's export of default/<name>: the Service (ports: (protocol, port, targetPort)),
    the cluster's EndpointSlice (endpoints: (address, ready); empty: no backend there) and
    the ServiceExport."""
    notes = "".join(f"\n    {k}: {v}" for k, v in (annotations or {}).items())
    svc_ports = "".join(f"\n  - {{name: p{i}, protocol: {p}, port: {port}, targetPort: {target}}}"
                        for i, (p, port, target) in enumerate(ports))
    slice_ports = "".join(f"\n- {{name: p{i}, protocol: {p}, port: {target}}}" for i, (p, _, target) in enumerate(ports))
    eps = "".join(f'\n- addresses: ["{a}"]\n  conditions: {{ready: {"true" if r else "false"}}}' for a, r in endpoints)
    return f"""\
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: default
  annotations:{notes if notes else " {}"}
spec:
  ports:{svc_ports}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: {name}-{cluster}
  namespace: default
  labels:
    kubernetes.io/service-name: {name}
addressType: IPv4
ports:{slice_ports}
endpoints:{eps if eps else " []"}
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata:
  name: {name}
  namespace: default
  creationTimestamp: "{created}"
"""


class ServiceBed:
    """nodes[0] nodes of cluster-a and nodes[1] of cluster-b up, BGP established, each node's
    block learned by every other (BFD up too with bfd=True). Use inside `with Topology(...)`."""

    def __init__(self, topo: Topology, dataplane_extra: tuple[str, ...] = (), nodes: tuple[int, int] = (1, 1),
                 bfd: bool = False):
        for count in nodes:
            if not 1 <= count <= MAX_NODES_PER_CLUSTER:
                raise ValueError(f"nodes {nodes}: each cluster 1..{MAX_NODES_PER_CLUSTER} nodes")
        require_frr()
        if bfd and not Path("/usr/lib/frr/bfdd").exists():
            raise RuntimeError("/usr/lib/frr/bfdd missing (apt-get install frr): a bed with bfd needs it")
        for b in ("dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl", "control/vxfedd", "control/vxfedctl"):
            require_binary(b)
        self.topo = topo
        self.size = nodes
        # a, b, a2, b2, a3, b3...: the order the addresses and pod MAC bytes are handed out in,
        # so that the one-node-per-cluster bed keeps a = .1, b = .2 (and a2 = .3).
        order = [(letter, i) for i in range(1, max(nodes) + 1) for k, letter in enumerate("ab") if i <= nodes[k]]
        self._by_short: dict[str, Node] = {}
        self._mac_byte: dict[str, int] = {}
        for pos, (letter, i) in enumerate(order):
            short = letter if i == 1 else f"{letter}{i}"
            cluster, cidr, asn = CLUSTERS[letter]
            self._by_short[short] = Node(topo, short, f"198.18.0.{pos + 1}", cidr, asn=asn, cluster=cluster,
                                         node_name=f"node-{short}", dataplane_extra=dataplane_extra, bfdd=bfd)
            self._mac_byte[short] = 0x0a + pos
        self.a = self._by_short["a"]
        self.b = self._by_short["b"]
        self.a2: Optional[Node] = self._by_short.get("a2")
        self.nodes = tuple(self._by_short.values())
        self._attach: dict[str, tuple[str, list[str]]] = {}
        self.check = check_all(self.nodes)
        # A switch for three nodes or more, or to cut one node's port with BFD; else a veth.
        self.switch = connect_underlay(topo, list(self.nodes), switch=bfd)
        self.etcd = EtcdCluster(topo, members=1, ns=self.a.ns, host=self.a.ip)
        self.etcd.start()
        for n in self.nodes:
            peers, clusters = [], {}
            for peer in self.nodes:
                if peer is n:
                    continue
                session = {"address": peer.ip, "remote_asn": peer.asn, "network": "fed",
                           "keepalive": 3, "hold": 9, "connect_retry": 1, **({"bfd": True} if bfd else {})}
                if peer.cluster != n.cluster:
                    # eBGP: the peer's node blocks.
                    session.update(cluster=peer.cluster, accept=[f"{peer.pod_cidr} le 24"])
                clusters[peer.cluster] = [peer.pod_cidr]   # an iBGP peer accepts the declared clusters' blocks
                peers.append(session)
            bgp = n.bgp_config(peers=peers, clusters=clusters, graceful_restart=False,
                               fpm={"resync_settle_ms": 1000, "resync_min_ms": 2000})
            n.vxfedd.config = n.vxfedd_config(
                networks=[{"name": "fed", "subnet": n.pod_cidr}], bgp=bgp, log_level="debug",
                federation={"endpoints": [self.etcd.endpoint(0)], "key_prefix": PREFIX},
                services={"range": "10.96.0.0/24", "network": "fed"})
        for n in self.nodes:
            n.start_dataplane()
            n.start_vxfedd()
        for n in self.nodes:
            wait_until(lambda: n.vxfedctl("status").get("dataplane_ready"), 30, f"{n.short}'s dataplane ready",
                       self.check)
            n.start_frr()
        self.blocks: dict[str, str] = {}
        self.gateways: dict[str, str] = {}   # the network's gateway (its subnet's, not the node block's)
        for n in self.nodes:
            net = next(x for x in n.vxfedctl("networks")["networks"] if x["spec"]["name"] == "fed")
            self.blocks[n.short] = net["node_block"]
            self.gateways[n.short] = net["spec"]["gateway"]
        for n in self.nodes:
            for other in self.nodes:
                if other is not n:
                    wait_until(lambda: n.bgp_route(self.blocks[other.short]) is not None, 60,
                               f"{n.short} to learn {other.short}'s block", self.check)
        if bfd:
            peers = len(self.nodes) - 1
            for n in self.nodes:
                wait_until(lambda: (n.vtysh("show bfd peers json") or "").count('"status":"up"') >= peers, 30,
                           f"{n.short}'s {peers} BFD sessions up", self.check)

    def node(self, short: str) -> Node:
        return self._by_short[short]

    def cluster_nodes(self, letter: str) -> list[Node]:
        """The nodes of cluster-<letter>, its first node (the clients') first."""
        return [n for n in self.nodes if n.cluster == CLUSTERS[letter][0]]

    def backend_node(self, letter: str, k: int) -> str:
        """Where the k-th backend (from 0) of cluster-<letter> goes: round-robin over the
        cluster's nodes but its first (the clients'), or the first when it is alone."""
        shorts = [n.short for n in self.cluster_nodes(letter)]
        others = shorts[1:] or shorts
        return others[k % len(others)]

    def pod_node(self, pod: str) -> str:
        """The node (short name) pod was added on."""
        return self._attach[pod][0]

    def address(self, short: str, host: int) -> str:
        """Host number `host` of node `short`'s block."""
        return str(ipaddress.ip_network(self.blocks[short]).network_address + host)

    def add_pod(self, short: str, pod: str, host: int) -> tuple[Namespace, str]:
        """A pod namespace on node `short` at host `host` of its block: (namespace, address)."""
        node = self.node(short)
        ip = self.address(short, host)
        ns = self.topo.netns(f"p{pod}")
        host_if = f"h{pod}{self.topo.suffix}"[:15]
        self.topo.veth(node.ns, host_if, ns, "eth0", mtu=POD_MTU)
        gateway = self.gateways[short]
        mac = f"02:00:00:00:{self._mac_byte[short]:02x}:{host:02x}"
        ns.run(f"ip link set eth0 address {mac}")
        ns.run(f"ip addr add {ip}/32 dev eth0")
        ns.run(f"ip route add {gateway}/32 dev eth0 scope link")
        ns.run(f"ip route add default via {gateway} dev eth0")
        ns.run("ethtool -K eth0 tx off tso off gso off")
        self._attach[pod] = (short, ["attach", f"ctr-{pod}", "--ifname", "eth0", "--network", "fed", "--ip", ip,
                                     "--mac", mac, "--host-iface", host_if])
        self.attach_pod(pod)
        return ns, ip

    def attach_pod(self, pod: str) -> None:
        """The CNI plugin's ADD of a pod made by add_pod() (again after detach_pod())."""
        short, args = self._attach[pod]
        r = self.node(short).vxfedd.ctl(*args)
        assert r.returncode == 0, r.stderr

    def detach_pod(self, pod: str) -> None:
        """The CNI plugin's DEL of a pod added by add_pod(), on its node."""
        r = self.node(self.pod_node(pod)).vxfedd.ctl("detach", f"ctr-{pod}", "--ifname", "eth0")
        assert r.returncode == 0, r.stderr

    def apply(self, short: str, text: str, tag: str) -> float:
        """`vxfedctl service apply -f` of text on node `short` (a slice is its node's cluster's);
        returns the time it returned."""
        f = self.topo.workdir / f"{tag}.yaml"
        f.write_text(text)
        r = self.node(short).vxfedd.ctl("service", "apply", "-f", str(f))
        done = time.time()
        assert r.returncode == 0, (short, tag, r.stderr)
        return done

    def dataplane_backends(self, short: str, service: str, kept: bool = False) -> Optional[list[str]]:
        """The backend addresses of the forwarder's entry for service ("default/web") on node
        `short` that take new flows (weight above 0), from the forwarder's own dump; with
        kept=True those kept for their open flows only (weight 0: ready, but not allowed by the
        strategy now). None without an entry."""
        for s in self.node(short).dataplane.dump().get("tables", {}).get("services", []):
            if s.get("id") == service:
                return sorted(b["ip"] for b in s.get("backends", []) if (int(b.get("weight", 0)) == 0) == kept)
        return None

    def service_counters(self, short: str) -> dict[str, int]:
        """The forwarder's service counters of node `short`, summed over its workers."""
        out: dict[str, int] = {}
        for w in self.node(short).dataplane.counters().get("workers", []):
            for k, v in w.items():
                if k.startswith("service_"):
                    out[k] = out.get(k, 0) + int(v)
        return out

    def start_echo(self, ns: Namespace, name: str, port: int, tag: str = "echo"):
        """ECHO (answering with `name`) on UDP `port` in pod namespace ns, logging to
        log_path(topo, ns, tag); returns its process once it listens (a request sent before
        would be refused and cost the client a resend)."""
        proc = ns.spawn(["python3", "-c", ECHO, name, str(port)], name=tag)
        wait_until(lambda: ns.run(["ss", "-Hlun", f"sport = :{port}"]).stdout.strip(), 10,
                   f"{name}'s echo listening on {port}", self.check, interval=0.02)
        return proc

    def vip(self, short: str = "a") -> str:
        return self.node(short).vxfedctl("service", "get")["services"][0]["vip"]


    def service_entry(self, short: str, service: str) -> Optional[dict]:
        """The forwarder's whole entry for service on node `short` (backends with weights,
        table_size), from its dump; None without one."""
        for s in self.node(short).dataplane.dump().get("tables", {}).get("services", []):
            if s.get("id") == service:
                return s
        return None


def log_path(topo: Topology, ns: Namespace, name: str) -> Path:
    """Where Namespace.spawn(..., name=name) writes its output."""
    return topo.workdir / (f"{ns.name}:{name}".replace("/", "_").replace(":", "_") + ".log")


# A UDP echo (argv: name, port) that answers with its name and logs the source port of every
# request it receives: the backends count the flows themselves.
ECHO = r"""
import socket, sys
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
u.bind(("0.0.0.0", int(sys.argv[2])))
while True:
    data, peer = u.recvfrom(2048)
    print(peer[1], flush=True)
    u.sendto(sys.argv[1].encode() + b" " + data, peer)
"""

# argv: vip, port, first, flows. `flows` new flows to VIP:port from source ports first.., 100 at
# a time: each socket bound to its own port sends one request; the replies of a batch are
# collected for up to 0.5 s, and a flow still unanswered sends again (the same flow, so the same
# backend: a datagram lost on a loaded machine is not a flow elsewhere), up to 5 times. Prints a
# JSON of who answered.
BURST = r"""
import json, select, socket, sys, time
vip, port, first, flows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
BATCH = 100
who = {}
resent = 0
for start in range(first, first + flows, BATCH):
    socks = {}
    for sport in range(start, min(start + BATCH, first + flows)):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", sport))
        s.connect((vip, port))
        s.setblocking(False)
        s.send(b"q")
        socks[s.fileno()] = (s, sport)
    for attempt in range(5):
        deadline = time.time() + 0.5
        pending = {fd for fd, (_, sp) in socks.items() if sp not in who}
        while pending and time.time() < deadline:
            ready, _, _ = select.select(list(pending), [], [], max(0.0, deadline - time.time()))
            for fd in ready:
                s, sport = socks[fd]
                try:
                    who[sport] = s.recv(2048).split()[0].decode()
                except OSError:
                    pass
                pending.discard(fd)
        if not pending or attempt == 4:
            break
        for fd in pending:
            socks[fd][0].send(b"q")
            resent += 1
    for s, _ in socks.values():
        s.close()
counts = {}
for name in who.values():
    counts[name] = counts.get(name, 0) + 1
print(json.dumps({"answered": len(who), "resent": resent, "by": counts}))
"""

# argv: vip, port. 100 requests a second to VIP:port, each from a new socket (a new flow);
# "<unix time> <backend>" per answer. Each from the next source port of 61000..65535 (outside
# the kernel's ephemeral range and BURST's ports): a port the kernel picked at random could be
# one used within the forwarder's 30 s UDP timeout, the same flow, which stays on its backend
# even after a failback (a backend the strategy no longer prefers is kept for its open flows).
STREAM = r"""
import socket, sys, time
vip, port = sys.argv[1], int(sys.argv[2])
next_at = time.time()
sport = 61000
while True:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", sport))
    sport = 61000 if sport == 65535 else sport + 1
    s.connect((vip, port))
    s.settimeout(0.009)
    s.send(b"q")
    try:
        data = s.recv(2048)
        print(f"{time.time():.4f} {data.split()[0].decode()}", flush=True)
    except OSError:
        pass
    s.close()
    next_at += 0.01
    time.sleep(max(0.0, next_at - time.time()))
"""


def answers(path: Path) -> list[tuple[float, str]]:
    """A STREAM's log: (unix time, backend) per answer."""
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        when, _, who = line.partition(" ")
        if who:
            out.append((float(when), who))
    return out


def received_ports(path: Path, first: int, count: int) -> list[int]:
    """The source ports in first..first+count-1 an ECHO's log received requests from."""
    ports = [int(x) for x in path.read_text().split()] if path.exists() else []
    return [p for p in ports if first <= p < first + count]


__all__ = ["ServiceBed", "bed_size", "service_yaml", "log_path", "log", "PREFIX", "ECHO", "BURST", "STREAM", "answers",
           "received_ports"]
