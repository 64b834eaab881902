"""The two-cluster demo topology as data: names, addresses, AS numbers, MTUs. No I/O.

Both variants (the kernel VXLAN path and vxfed) are built from the same plan, so that the
only difference between them is the path the packets take:

    pod A0..An (netns)                                           pod B0..Bn (netns)
      eth0 10.244.0.10+i/32 ---veth--- node A ===underlay=== node B ---veth--- eth0 10.245.0.10+i/32
                                       198.18.0.1/24  MTU 9000  198.18.0.2/24
                                       AS 65001                  AS 65002

Pods see the same thing in both variants: one interface eth0 with MTU underlay - 50, a
default route through the first address of their cluster's pod CIDR.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

VXLAN_OVERHEAD = 50          # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8 (dataplane/core/wire/vxlan.hpp)
VXLAN_PORT = 4789
DEMO_VNI = 1000              # first VNI of the federation range (docs/vxfedd.example.yaml: pool federation, 1000-2000)
UNDERLAY_CIDR = "198.18.0.0/24"
SUPPORTED_MTUS = (1500, 9000)


@dataclass(frozen=True)
class PodPlan:
    cluster: str             # "a" or "b"
    index: int
    ip: str                  # the address the kernel variant assigns (vxfed's IPAM picks its own)

    @property
    def short(self) -> str:
        return f"pod{self.cluster.upper()}{self.index}"


@dataclass(frozen=True)
class ClusterPlan:
    name: str                # "a" or "b"
    asn: int
    pod_cidr: str            # the whole cluster's pod CIDR, advertised over BGP
    underlay_ip: str         # the node's address on the underlay = its VTEP
    vtep_mac: str            # MAC of the kernel vxlan device (Flannel/Calico pin one per node)
    pods: tuple[PodPlan, ...] = field(default_factory=tuple)

    @property
    def gateway(self) -> str:
        """First address of the pod CIDR: the pods' default gateway in both variants."""
        return str(ipaddress.ip_network(self.pod_cidr).network_address + 1)

    @property
    def node_short(self) -> str:
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

    def peer_of(self, cluster: ClusterPlan) -> ClusterPlan:
        return self.b if cluster is self.a else self.a


def make_plan(underlay_mtu: int = 9000, pods_per_cluster: int = 1) -> DemoPlan:
    """Builds the plan; refuses values the demo does not support with a sentence that says why."""
    if underlay_mtu not in SUPPORTED_MTUS:
        raise ValueError(f"underlay MTU {underlay_mtu} is not supported; use one of {SUPPORTED_MTUS}")
    if not 1 <= pods_per_cluster <= 50:
        raise ValueError(f"pods per cluster must be 1..50, got {pods_per_cluster}")

    def cluster(name: str, asn: int, cidr: str, host: int) -> ClusterPlan:
        base = ipaddress.ip_network(cidr).network_address
        pods = tuple(PodPlan(name, i, str(base + 10 + i)) for i in range(pods_per_cluster))
        underlay = ipaddress.ip_network(UNDERLAY_CIDR).network_address + host
        return ClusterPlan(name=name, asn=asn, pod_cidr=cidr, underlay_ip=str(underlay),
                           vtep_mac=f"02:00:c6:12:00:{host:02x}", pods=pods)

    return DemoPlan(underlay_mtu=underlay_mtu,
                    clusters=(cluster("a", 65001, "10.244.0.0/16", 1),
                              cluster("b", 65002, "10.245.0.0/16", 2)))


def df_ping_payload(pod_mtu: int) -> int:
    """ICMP echo payload that makes an IPv4 packet of exactly pod_mtu bytes (IP 20 + ICMP 8)."""
    return pod_mtu - 28
