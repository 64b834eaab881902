"""No overlay at all: the baseline both overlays' overhead is measured against (issue 35).

The same nodes, underlay, pods, veths, addresses and pod MTU as the kernel VXLAN variant
(kernel.py; the pods from routed_pods.py), but no vxlan device: every node routes every other
node's block straight over the underlay, `ip route add <its block> via <its underlay address>
dev ul0`, so a pod's packet crosses the nodes as it left the pod, with no outer headers, no
encapsulation and no decapsulation. That is what the pod path costs when the network between
the nodes already routes pod addresses (Calico without encapsulation, or cloud VPC routes),
and what an overlay's "overhead" is relative to.

The pods keep MTU underlay − 50 as in the overlays, although nothing here needs the 50 bytes:
the same packet sizes on every variant, so that only the path differs.
"""

from __future__ import annotations

from . import routed_pods
from .plan import NodePlan
from .variant import Variant


class UnderlayVariant(Variant):
    name = "underlay"

    def tag(self) -> str:
        return "dunder"        # namespaces vxdunder-<node|pod>-<pid>

    def up(self) -> None:
        plan = self.plan
        self.progress(f"underlay: creating {len(plan.nodes)} node namespaces and the MTU {plan.underlay_mtu} "
                      f"underlay")
        for n in plan.nodes:
            self.make_node(n)
        self.make_underlay()
        for n in plan.nodes:
            self.progress(f"underlay: node {n.name}: no encapsulation, a route over ul0 to each of the "
                          f"{len(plan.nodes) - 1} other node(s)' blocks")
            self._routes(n)
            routed_pods.hold_gateway(self, n)
        routed_pods.add_pods(self)

    def _routes(self, n: NodePlan) -> None:
        node = self.nodes[n.short]
        for other in self.plan.nodes:
            if other is not n:
                node.run(["ip", "route", "add", other.block, "via", other.underlay_ip, "dev", "ul0"])

    def counters(self) -> dict:
        """ul0 link statistics per node (packets, bytes, errors, drops)."""
        return routed_pods.link_counters(self, ("ul0",))
