"""The pods of the kernel-routed variants (kernel VXLAN and the underlay baseline), wired the
same way in both so that the only difference between them is what carries a packet from node
to node.

Per node: the pods' gateway (the first address of the node's block, as Flannel's cni0 holds
it) on `lo`, so that the node answers the pods' ARP for it on every pod veth.
Per pod (Calico's routed veth): eth0 in the pod with a /32 address from its node's block and
the pod MTU, a route to the gateway scope link, default via the gateway; the node's end
(`cali<cluster><index>`) answers ARP (proxy_arp, proxy_delay 0, as Calico sets them) and holds
a /32 route to the pod.
"""

from __future__ import annotations

from .plan import NodePlan, PodPlan
from .variant import Pod, Variant


def hold_gateway(v: Variant, n: NodePlan) -> None:
    v.nodes[n.short].run(["ip", "addr", "add", f"{n.gateway}/32", "dev", "lo"])


def add_pod(v: Variant, n: NodePlan, p: PodPlan) -> Pod:
    """Creates the pod's namespace and veth, addresses and routes it; appends it to v.pods."""
    node = v.nodes[n.short]
    pod_ns = v.topo.netns(p.short)
    host_if = f"cali{n.cluster}{p.index}"
    v.topo.veth(pod_ns, "eth0", node, host_if, mtu=v.plan.pod_mtu)
    pod_ns.run(["ip", "addr", "add", f"{p.ip}/32", "dev", "eth0"])
    pod_ns.run(["ip", "route", "add", n.gateway, "dev", "eth0", "scope", "link"])
    pod_ns.run(["ip", "route", "add", "default", "via", n.gateway, "dev", "eth0"])
    node.run(["sysctl", "-qw", f"net.ipv4.conf.{host_if}.proxy_arp=1"])
    node.run(["sysctl", "-qw", f"net.ipv4.neigh.{host_if}.proxy_delay=0"])
    node.run(["ip", "route", "add", f"{p.ip}/32", "dev", host_if, "scope", "link"])
    pod = Pod(name=p.short, cluster=n.cluster, ns=pod_ns, ip=p.ip, node=n.short)
    v.pods[n.cluster].append(pod)
    return pod


def add_pods(v: Variant) -> None:
    """Every pod of the plan, cluster by cluster, logging each cluster's pods."""
    for c in v.plan.clusters:
        for n in c.nodes:
            for p in n.pods:
                add_pod(v, n, p)
        v.progress(f"{v.name}: cluster {c.name.upper()}: {len(c.pods)} pod(s) "
                   f"{', '.join(f'{p.ip} on node-{p.node}' for p in c.pods)}")


def link_counters(v: Variant, ifnames: tuple[str, ...]) -> dict:
    """Link statistics (packets, bytes, errors, drops) of the named interfaces per node."""
    import json
    out = {}
    for short, node in v.nodes.items():
        res = node.run(["ip", "-s", "-j", "link", "show"], check=False)
        try:
            links = json.loads(res.stdout)
        except ValueError:
            continue
        out[f"node-{short}"] = {l["ifname"]: l.get("stats64", {}) for l in links if l.get("ifname") in ifnames}
    return out
