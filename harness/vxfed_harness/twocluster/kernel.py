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
Per pod (Calico's routed veth):
  - eth0 in the pod with a /32 address from its node's block, route to the gateway scope link,
    default via the gateway (the first address of the node's block, held by the node on lo,
    as Flannel's cni0 holds it); the node's end answers ARP (proxy_arp, proxy_delay 0, as
    Calico sets them) and holds a /32 route to the pod.
"""

from __future__ import annotations

import ipaddress

from .plan import VXLAN_PORT, NodePlan
from .variant import Pod, Variant


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
        for c in plan.clusters:
            for n in c.nodes:
                for p in n.pods:
                    self._pod(n, p.short, p.ip, p.index)
            self.progress(f"kernel: cluster {c.name.upper()}: {len(c.pods)} pod(s) "
                          f"{', '.join(f'{p.ip} on node-{p.node}' for p in c.pods)}")

    def _vxlan(self, n: NodePlan) -> None:
        node = self.nodes[n.short]
        own_net = str(ipaddress.ip_network(n.block).network_address)
        node.run(["ip", "link", "add", "vxlan0", "address", n.vtep_mac, "mtu", str(self.plan.pod_mtu),
                  "type", "vxlan", "id", str(self.plan.vni), "dstport", str(VXLAN_PORT),
                  "local", n.underlay_ip, "dev", "ul0", "nolearning"])
        node.run(["ip", "addr", "add", f"{own_net}/32", "dev", "vxlan0"])
        # The pods' gateway is an address of the node (Flannel's cni0 holds it): the node
        # answers the pods' ARP for it on every pod veth.
        node.run(["ip", "addr", "add", f"{n.gateway}/32", "dev", "lo"])
        node.run(["ip", "link", "set", "vxlan0", "up"])
        for other in self.plan.nodes:
            if other is n:
                continue
            other_net = str(ipaddress.ip_network(other.block).network_address)
            node.run(["ip", "neigh", "add", other_net, "lladdr", other.vtep_mac, "dev", "vxlan0",
                      "nud", "permanent"])
            node.run(["bridge", "fdb", "append", other.vtep_mac, "dev", "vxlan0", "dst", other.underlay_ip])
            node.run(["ip", "route", "add", other.block, "via", other_net, "dev", "vxlan0", "onlink"])

    def _pod(self, n: NodePlan, short: str, ip: str, index: int) -> None:
        node = self.nodes[n.short]
        pod_ns = self.topo.netns(short)
        host_if = f"cali{n.cluster}{index}"
        self.topo.veth(pod_ns, "eth0", node, host_if, mtu=self.plan.pod_mtu)
        pod_ns.run(["ip", "addr", "add", f"{ip}/32", "dev", "eth0"])
        pod_ns.run(["ip", "route", "add", n.gateway, "dev", "eth0", "scope", "link"])
        pod_ns.run(["ip", "route", "add", "default", "via", n.gateway, "dev", "eth0"])
        node.run(["sysctl", "-qw", f"net.ipv4.conf.{host_if}.proxy_arp=1"])
        node.run(["sysctl", "-qw", f"net.ipv4.neigh.{host_if}.proxy_delay=0"])
        node.run(["ip", "route", "add", f"{ip}/32", "dev", host_if, "scope", "link"])
        self.pods[n.cluster].append(Pod(name=short, cluster=n.cluster, ns=pod_ns, ip=ip, node=n.short))

    def counters(self) -> dict:
        """vxlan0 and ul0 link statistics per node (packets, bytes, errors, drops)."""
        import json as _json
        out = {}
        for short, node in self.nodes.items():
            res = node.run(["ip", "-s", "-j", "link", "show"], check=False)
            try:
                links = _json.loads(res.stdout)
            except ValueError:
                continue
            out[f"node-{short}"] = {l["ifname"]: l.get("stats64", {}) for l in links
                                    if l.get("ifname") in ("vxlan0", "ul0")}
        return out
