"""The two-cluster demo topology as data: names, addresses, AS numbers, MTUs. No I/O.

Both variants (the kernel VXLAN path and vxfed) are built from the same plan, so that the
only difference between them is the path the packets take. Each cluster has N nodes
(`nodes_per_cluster`), every node a block of its cluster's pod CIDR and `pods_per_node` pods:

    cluster A (AS 65001, 10.244.0.0/16)                    cluster B (AS 65002, 10.245.0.0/16)
    node a1 198.18.0.11  pods A0 ..   \\                 /  node b1 198.18.0.21  pods B0 ..
    node a2 198.18.0.12  pods ..       >== underlay ==<     node b2 198.18.0.22  pods ..
    (reflector 198.18.0.10)           /  MTU 9000      \\   (reflector 198.18.0.20)

The addresses are those of harness/vxfed_harness/federation_bed.py (cluster c's reflector at
.(10c+10), its nodes at .(10c+11) ...), which the vxfed variant runs; the kernel variant has
no reflector. Pods are numbered across their cluster, node by node: with 2 nodes and 1 pod per
node, A0 is on a1 and A1 on a2. Pods see the same thing in both variants: one interface eth0
with MTU underlay - 50 and a default route through a gateway the node answers for.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

VXLAN_OVERHEAD = 50          # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8 (dataplane/core/wire/vxlan.hpp)
VXLAN_PORT = 4789
DEMO_VNI = 1000              # first VNI of the federation range (docs/vxfedd.example.yaml: pool federation, 1000-2000)
UNDERLAY_CIDR = "198.18.0.0/24"
SUPPORTED_MTUS = (1500, 9000)
MAX_NODES_PER_CLUSTER = 5    # the underlay plan's room: .(10c+11) .. .(10c+15), a /28 per cluster
BLOCK_LEN = 24               # a node's block of its cluster's pod CIDR (vxfed's default)


@dataclass(frozen=True)
class PodPlan:
    cluster: str             # "a" or "b"
    index: int               # within the cluster, node by node
    node: str                # the node it sits on ("a1")
    ip: str                  # the address the kernel variant assigns (vxfed's IPAM picks its own)

    @property
    def short(self) -> str:
        return f"pod{self.cluster.upper()}{self.index}"


@dataclass(frozen=True)
class NodePlan:
    cluster: str             # "a" or "b"
    index: int               # 0-based within the cluster
    underlay_ip: str         # the node's underlay address = its VTEP
    vtep_mac: str            # MAC of the kernel vxlan device (Flannel/Calico pin one per node)
    block: str               # the kernel variant's block of the cluster's pod CIDR (vxfed's come from its store)
    pods: tuple[PodPlan, ...] = field(default_factory=tuple)

    @property
    def short(self) -> str:
        return f"{self.cluster}{self.index + 1}"

    @property
    def name(self) -> str:
        """The node's name (vxfedd's node.name in the vxfed variant)."""
        return f"node-{self.short}"

    @property
    def gateway(self) -> str:
        """First address of the node's block: its pods' gateway in the kernel variant (Flannel's cni0)."""
        return str(ipaddress.ip_network(self.block).network_address + 1)


@dataclass(frozen=True)
class ClusterPlan:
    name: str                # "a" or "b"
    asn: int
    pod_cidr: str            # the whole cluster's pod CIDR
    reflector_ip: str        # the vxfed variant's route reflector
    nodes: tuple[NodePlan, ...] = field(default_factory=tuple)

    @property
    def pods(self) -> tuple[PodPlan, ...]:
        return tuple(p for n in self.nodes for p in n.pods)

    @property
    def gateway(self) -> str:
        """First address of the pod CIDR: the pods' gateway of a one-node cluster."""
        return str(ipaddress.ip_network(self.pod_cidr).network_address + 1)

    @property
    def underlay_ip(self) -> str:
        """The first node's address (the one-node eBGP topology of vxfed.VxfedVariant)."""
        return self.nodes[0].underlay_ip

    @property
    def node_short(self) -> str:
        """The namespace name of a one-node cluster's node (vxfed.VxfedVariant)."""
        return f"node{self.name.upper()}"


@dataclass(frozen=True)
class DemoPlan:
    underlay_mtu: int
    clusters: tuple[ClusterPlan, ClusterPlan]
    vni: int = DEMO_VNI

    @property
    def pod_mtu(self) -> int:
        return self.underlay_mtu - VXLAN_OVERHEAD

    @property
    def a(self) -> ClusterPlan:
        return self.clusters[0]

    @property
    def b(self) -> ClusterPlan:
        return self.clusters[1]

    @property
    def nodes_per_cluster(self) -> int:
        return len(self.a.nodes)

    @property
    def nodes(self) -> tuple[NodePlan, ...]:
        return tuple(n for c in self.clusters for n in c.nodes)

    def peer_of(self, cluster: ClusterPlan) -> ClusterPlan:
        return self.b if cluster is self.a else self.a


def make_plan(underlay_mtu: int = 9000, pods_per_node: int = 1, nodes_per_cluster: int = 1) -> DemoPlan:
    """Builds the plan; refuses values the demo does not support with a sentence that says why."""
    if underlay_mtu not in SUPPORTED_MTUS:
        raise ValueError(f"underlay MTU {underlay_mtu} is not supported; use one of {SUPPORTED_MTUS}")
    if not 1 <= nodes_per_cluster <= MAX_NODES_PER_CLUSTER:
        raise ValueError(f"nodes per cluster must be 1..{MAX_NODES_PER_CLUSTER} (the underlay plan's room), "
                         f"got {nodes_per_cluster}")
    if not 1 <= pods_per_node <= 50:
        raise ValueError(f"pods per node must be 1..50, got {pods_per_node}")

    def cluster(c: int, name: str, asn: int, cidr: str) -> ClusterPlan:
        blocks = ipaddress.ip_network(cidr).subnets(new_prefix=BLOCK_LEN)
        underlay = ipaddress.ip_network(UNDERLAY_CIDR).network_address
        nodes = []
        for i in range(nodes_per_cluster):
            block = next(blocks)
            host = 10 * c + 11 + i
            pods = tuple(PodPlan(name, i * pods_per_node + k, f"{name}{i + 1}", str(block.network_address + 10 + k))
                         for k in range(pods_per_node))
            nodes.append(NodePlan(cluster=name, index=i, underlay_ip=str(underlay + host),
                                  vtep_mac=f"02:00:c6:12:00:{host:02x}", block=str(block), pods=pods))
        return ClusterPlan(name=name, asn=asn, pod_cidr=cidr, reflector_ip=str(underlay + 10 * c + 10),
                           nodes=tuple(nodes))

    return DemoPlan(underlay_mtu=underlay_mtu,
                    clusters=(cluster(0, "a", 65001, "10.244.0.0/16"),
                              cluster(1, "b", 65002, "10.245.0.0/16")))


def df_ping_payload(pod_mtu: int) -> int:
    """ICMP echo payload that makes an IPv4 packet of exactly pod_mtu bytes (IP 20 + ICMP 8)."""
    return pod_mtu - 28
