"""The baseline: the Linux kernel's VXLAN path, wired the way Flannel (vxlan backend) and
Calico (VXLAN mode) wire it.

Per node:
  - vxlan0: kernel vxlan device, VNI 1000, dstport 4789, `nolearning`, local = the node's
    underlay address, MTU = underlay - 50, a fixed MAC (Flannel and Calico pin one per node
    and publish it), address <pod CIDR network>/32 (Flannel's flannel.1 convention).
  - For the other cluster: a route `<remote pod CIDR> via <remote CIDR network> dev vxlan0
    onlink`, a permanent neighbour entry for that next hop with the remote VTEP's MAC, and an
    fdb entry mapping that MAC to the remote node's underlay address. These are the three
    entries flanneld / calico-node write from their datastores; here they are written from
    the plan, which is exactly what "routes written by hand" means for the baseline.
Per pod (Calico's routed veth):
  - eth0 in the pod with a /32 address, route to the gateway scope link, default via the
    gateway (the first address of the cluster's pod CIDR, held by the node on lo, as
    Flannel's cni0 holds it); the node's end answers ARP (proxy_arp, proxy_delay 0, as
    Calico sets them) and holds a /32 route to the pod.
"""

from __future__ import annotations

import ipaddress

from .plan import VXLAN_PORT, ClusterPlan
from .variant import Pod, Variant


class KernelVariant(Variant):
    name = "kernel"

    def up(self) -> None:
        plan = self.plan
        self.progress(f"kernel: creating node namespaces and the MTU {plan.underlay_mtu} underlay")
        for c in plan.clusters:
            self.make_node(c)
        self.make_underlay()
        for c in plan.clusters:
            self.progress(f"kernel: node {c.name.upper()}: vxlan0 (VNI {plan.vni}, dstport {VXLAN_PORT}, "
                          f"nolearning, MTU {plan.pod_mtu}), route/neigh/fdb to cluster "
                          f"{plan.peer_of(c).name.upper()}")
            self._vxlan(c)
        for c in plan.clusters:
            for p in c.pods:
                self._pod(c, p.short, p.ip, p.index)
            self.progress(f"kernel: cluster {c.name.upper()}: {len(c.pods)} pod(s) "
                          f"{', '.join(p.ip for p in c.pods)}")

    def _vxlan(self, c: ClusterPlan) -> None:
        node = self.nodes[c.name]
        peer = self.plan.peer_of(c)
        own_net = str(ipaddress.ip_network(c.pod_cidr).network_address)
        peer_net = str(ipaddress.ip_network(peer.pod_cidr).network_address)
        node.run(["ip", "link", "add", "vxlan0", "address", c.vtep_mac, "mtu", str(self.plan.pod_mtu),
                  "type", "vxlan", "id", str(self.plan.vni), "dstport", str(VXLAN_PORT),
                  "local", c.underlay_ip, "dev", "ul0", "nolearning"])
        node.run(["ip", "addr", "add", f"{own_net}/32", "dev", "vxlan0"])
        # The pods' gateway is an address of the node (Flannel's cni0 holds it): the node
        # answers the pods' ARP for it on every pod veth.
        node.run(["ip", "addr", "add", f"{c.gateway}/32", "dev", "lo"])
        node.run(["ip", "link", "set", "vxlan0", "up"])
        node.run(["ip", "neigh", "add", peer_net, "lladdr", peer.vtep_mac, "dev", "vxlan0",
                  "nud", "permanent"])
        node.run(["bridge", "fdb", "append", peer.vtep_mac, "dev", "vxlan0", "dst", peer.underlay_ip])
        node.run(["ip", "route", "add", peer.pod_cidr, "via", peer_net, "dev", "vxlan0", "onlink"])

    def _pod(self, c: ClusterPlan, short: str, ip: str, index: int) -> None:
        node = self.nodes[c.name]
        pod_ns = self.topo.netns(short)
        host_if = f"cali{c.name}{index}"
        self.topo.veth(pod_ns, "eth0", node, host_if, mtu=self.plan.pod_mtu)
        pod_ns.run(["ip", "addr", "add", f"{ip}/32", "dev", "eth0"])
        pod_ns.run(["ip", "route", "add", c.gateway, "dev", "eth0", "scope", "link"])
        pod_ns.run(["ip", "route", "add", "default", "via", c.gateway, "dev", "eth0"])
        node.run(["sysctl", "-qw", f"net.ipv4.conf.{host_if}.proxy_arp=1"])
        node.run(["sysctl", "-qw", f"net.ipv4.neigh.{host_if}.proxy_delay=0"])
        node.run(["ip", "route", "add", f"{ip}/32", "dev", host_if, "scope", "link"])
        self.pods[c.name].append(Pod(name=short, cluster=c.name, ns=pod_ns, ip=ip))

    def counters(self) -> dict:
        """vxlan0 and ul0 link statistics per node (packets, bytes, errors, drops)."""
        import json as _json
        out = {}
        for cname, node in self.nodes.items():
            res = node.run(["ip", "-s", "-j", "link", "show"], check=False)
            try:
                links = _json.loads(res.stdout)
            except ValueError:
                continue
            out[cname] = {l["ifname"]: l.get("stats64", {}) for l in links
                          if l.get("ifname") in ("vxlan0", "ul0")}
        return out
