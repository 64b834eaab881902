"""A two-cluster bed for global services through the real forwarder (docs/services.md, "Tests").

Two nodes, each its own namespace with the real vxfed-dataplane, vxfedd and FRR's bgpd, one
eBGP session between them (as test_control_service_node_loss, without BFD): A of cluster-a
(10.244.0.0/16), B of cluster-b (10.245.0.0/16), etcd in A's namespace on the underlay, network
`fed` on both, `services: {range: 10.96.0.0/24, network: fed}`. Pods are namespaces behind a
veth on their node, attached in vxfedd as the CNI plugin would; services are written as
Kubernetes users write them (Service, one EndpointSlice per cluster, ServiceExport) and applied
with `vxfedctl service apply -f` on the node of the slice's cluster.
"""
from __future__ import annotations

import ipaddress
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
    """Nodes a (cluster-a) and b (cluster-b) up, BGP established, each node's block learned by
    the other. Use inside `with Topology(...)`."""

    def __init__(self, topo: Topology, dataplane_extra: tuple[str, ...] = ()):
        require_frr()
        for b in ("dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl", "control/vxfedd", "control/vxfedctl"):
            require_binary(b)
        self.topo = topo
        self.a = Node(topo, "a", "198.18.0.1", "10.244.0.0/16", asn=65001, dataplane_extra=dataplane_extra)
        self.b = Node(topo, "b", "198.18.0.2", "10.245.0.0/16", asn=65002, dataplane_extra=dataplane_extra)
        self.nodes = (self.a, self.b)
        self._attach: dict[str, tuple[str, list[str]]] = {}
        self.check = check_all(self.nodes)
        connect_underlay(topo, [self.a, self.b])
        self.etcd = EtcdCluster(topo, members=1, ns=self.a.ns, host=self.a.ip)
        self.etcd.start()
        for n, peer in ((self.a, self.b), (self.b, self.a)):
            bgp = n.bgp_config(
                peers=[{"address": peer.ip, "remote_asn": peer.asn, "cluster": peer.cluster, "network": "fed",
                        "keepalive": 3, "hold": 9, "connect_retry": 1,
                        "accept": [f"{peer.pod_cidr} le 24"]}],  # the peer's node blocks
                clusters={peer.cluster: [peer.pod_cidr]}, graceful_restart=False,
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
        for n in self.nodes:
            net = next(x for x in n.vxfedctl("networks")["networks"] if x["spec"]["name"] == "fed")
            self.blocks[n.short] = net["node_block"]
        wait_until(lambda: self.a.bgp_route(self.blocks["b"]) is not None, 60, "A to learn B's block", self.check)
        wait_until(lambda: self.b.bgp_route(self.blocks["a"]) is not None, 60, "B to learn A's block", self.check)

    def node(self, short: str) -> Node:
        return self.a if short == "a" else self.b

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
        gateway = str(ipaddress.ip_network(self.blocks[short]).network_address + 1)
        mac = f"02:00:00:00:{0x0a if short == 'a' else 0x0b:02x}:{host:02x}"
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

    def detach_pod(self, short: str, pod: str) -> None:
        """The CNI plugin's DEL of a pod added by add_pod()."""
        r = self.node(short).vxfedd.ctl("detach", f"ctr-{pod}", "--ifname", "eth0")
        assert r.returncode == 0, r.stderr

    def apply(self, short: str, text: str, tag: str) -> float:
        """`vxfedctl service apply -f` of text on node `short`; returns the time it returned."""
        f = self.topo.workdir / f"{tag}.yaml"
        f.write_text(text)
        r = self.node(short).vxfedd.ctl("service", "apply", "-f", str(f))
        done = time.time()
        assert r.returncode == 0, (short, tag, r.stderr)
        return done

    def dataplane_backends(self, short: str, service: str) -> Optional[list[str]]:
        """The backend addresses of the forwarder's entry for service ("default/web") on node
        `short`, from the forwarder's own dump; None without an entry."""
        for s in self.node(short).dataplane.dump().get("tables", {}).get("services", []):
            if s.get("id") == service:
                return sorted(b["ip"] for b in s.get("backends", []))
        return None

    def service_counters(self, short: str) -> dict[str, int]:
        """The forwarder's service counters of node `short`, summed over its workers."""
        out: dict[str, int] = {}
        for w in self.node(short).dataplane.counters().get("workers", []):
            for k, v in w.items():
                if k.startswith("service_"):
                    out[k] = out.get(k, 0) + int(v)
        return out

    def vip(self, short: str = "a") -> str:
        return self.node(short).vxfedctl("service", "get")["services"][0]["vip"]


def log_path(topo: Topology, ns: Namespace, name: str) -> Path:
    """Where Namespace.spawn(..., name=name) writes its output."""
    return topo.workdir / (f"{ns.name}:{name}".replace("/", "_").replace(":", "_") + ".log")


__all__ = ["ServiceBed", "service_yaml", "log_path", "log", "PREFIX"]
