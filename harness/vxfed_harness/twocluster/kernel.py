"""The baseline: the Linux kernel's VXLAN path, wired the way Flannel (vxlan backend) and
Calico (VXLAN mode) wire it, on every node of both clusters.

Per node:
  - vxlan0: kernel vxlan device, VNI 1000, dstport 4789, `nolearning`, local = the node's
    underlay address, MTU = underlay - 50, a fixed MAC (Flannel and Calico pin one per node
    and publish it), address <node block network>/32 (Flannel's flannel.1 convention).
  - For every other node, of its own cluster and of the other: a route `<its block> via <its
    block network> dev vxlan0 onlink`, a permanent neighbour entry for that next hop with that
    node's VTEP MAC, and an fdb entry mapping the MAC to the node's underlay address. These are
    the three entries flanneld / calico-node write per node from their datastores; here they
    are written from the plan, which is exactly what "routes written by hand" means for the
    baseline.
Per pod (Calico's routed veth): routed_pods.py, the same as the underlay baseline's
(underlay.py), which routes the same pods between the nodes without the vxlan device.
"""

from __future__ import annotations

import ipaddress

from . import routed_pods
from .plan import VXLAN_PORT, NodePlan
from .variant import Variant


class KernelVariant(Variant):
    name = "kernel"

    def up(self) -> None:
        plan = self.plan
        self.progress(f"kernel: creating {len(plan.nodes)} node namespaces and the MTU {plan.underlay_mtu} underlay")
        for n in plan.nodes:
            self.make_node(n)
        self.make_underlay()
        for n in plan.nodes:
            self.progress(f"kernel: node {n.name}: vxlan0 (VNI {plan.vni}, dstport {VXLAN_PORT}, nolearning, "
                          f"MTU {plan.pod_mtu}), route/neigh/fdb to the {len(plan.nodes) - 1} other node(s)")
            self._vxlan(n)
            routed_pods.hold_gateway(self, n)
        routed_pods.add_pods(self)

    def _vxlan(self, n: NodePlan) -> None:
        node = self.nodes[n.short]
        own_net = str(ipaddress.ip_network(n.block).network_address)
        node.run(["ip", "link", "add", "vxlan0", "address", n.vtep_mac, "mtu", str(self.plan.pod_mtu),
                  "type", "vxlan", "id", str(self.plan.vni), "dstport", str(VXLAN_PORT),
                  "local", n.underlay_ip, "dev", "ul0", "nolearning"])
        node.run(["ip", "addr", "add", f"{own_net}/32", "dev", "vxlan0"])
        node.run(["ip", "link", "set", "vxlan0", "up"])
        for other in self.plan.nodes:
            if other is n:
                continue
            other_net = str(ipaddress.ip_network(other.block).network_address)
            node.run(["ip", "neigh", "add", other_net, "lladdr", other.vtep_mac, "dev", "vxlan0",
                      "nud", "permanent"])
            node.run(["bridge", "fdb", "append", other.vtep_mac, "dev", "vxlan0", "dst", other.underlay_ip])
            node.run(["ip", "route", "add", other.block, "via", other_net, "dev", "vxlan0", "onlink"])

    def counters(self) -> dict:
        """vxlan0 and ul0 link statistics per node (packets, bytes, errors, drops)."""
        return routed_pods.link_counters(self, ("vxlan0", "ul0"))
