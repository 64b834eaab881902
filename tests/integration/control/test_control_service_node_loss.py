#!/usr/bin/env python3
"""A backend's node lost: its block withdrawn by BGP/BFD takes it out of the Service entry and
the strategy falls over (docs/services.md, "Serving a VIP"), measured from the link's drop.

Two nodes with FRR (bgpd + bfdd), the real vxfed-dataplane and vxfedd, one eBGP session with
`bfd: true` (300 ms x 3) through a switch namespace, as test_bgp_bfd: A of cluster-a
(10.244.0.0/16), B of cluster-b (10.245.0.0/16), etcd in A's namespace on the underlay, network
`fed` on both, `services: {range: 10.96.0.0/24, network: fed}`.
default/ckpt is FailoverOnly with failover-order cluster-b,cluster-a: cluster-b's backend P_B is
a pod address in B's block (reached from A through B's BGP route), cluster-a's P_A is attached
on A. A's entry:
  1. [P_B]: the primary cluster, though remote;
  2. B's switch port down: BFD drops the session, B's block leaves A, and A's entry falls over
     to [P_A]; the time from the link drop to the entry (vxfedd's log line) is printed, beside
     the route's own withdrawal, and must be within 3 s (test_bgp_bfd's budget for the route);
  3. the port up: BFD and the route come back, the entry returns to [P_B].
Prints `RESULTS {json}`.
"""
from __future__ import annotations

import datetime
import ipaddress
import json
import re
import time
from pathlib import Path

import vxfed_harness as t
from vxfed_harness.etcd_cluster import EtcdCluster
from vxfed_harness.frr import require_frr
from vxfed_harness.node import Node, check_all, connect_underlay

PREFIX = "/vxfed"
BUDGET = 3.0
LINE = re.compile(r"^\[(\S+ \S+)\] \[vxfedd\] \[debug\] services: default/ckpt VIP \S+ on VNI \d+: backends \[([^\]]*)\]")


def ckpt(cluster: str, address: str, created: str) -> str:
    return f"""\
apiVersion: v1
kind: Service
metadata:
  name: ckpt
  namespace: default
  annotations:
    vxfed.io/strategy: FailoverOnly
    vxfed.io/failover-order: cluster-b,cluster-a
spec:
  ports:
  - {{name: sync, protocol: TCP, port: 7000}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ckpt-{cluster}
  namespace: default
  labels:
    kubernetes.io/service-name: ckpt
addressType: IPv4
ports:
- {{name: sync, protocol: TCP, port: 7000}}
endpoints:
- addresses: ["{address}"]
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata:
  name: ckpt
  namespace: default
  creationTimestamp: "{created}"
"""


def entries(n: Node) -> list[tuple[float, list[str]]]:
    """A's entry lines for default/ckpt: (unix time, backend addresses)."""
    out = []
    for line in n.vxfedd.log().splitlines():
        m = LINE.match(line)
        if m:
            when = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
            out.append((when, [b.split("/")[0] for b in m.group(2).split()]))
    return out


def main() -> None:
    require_frr()
    if not Path("/usr/lib/frr/bfdd").exists():
        t.skip("/usr/lib/frr/bfdd missing (apt-get install frr)")
    for b in ("dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl", "control/vxfedd", "control/vxfedctl"):
        t.require_binary(b)
    results: dict = {}
    with t.Topology("svcloss") as topo:
        a = Node(topo, "a", "198.18.0.1", "10.244.0.0/16", asn=65001, bfdd=True)
        b = Node(topo, "b", "198.18.0.2", "10.245.0.0/16", asn=65002, bfdd=True)
        nodes = (a, b)
        sw = connect_underlay(topo, [a, b], switch=True)
        etcd = EtcdCluster(topo, members=1, ns=a.ns, host=a.ip)
        etcd.start()
        for n, peer in ((a, b), (b, a)):
            bgp = n.bgp_config(
                peers=[{"address": peer.ip, "remote_asn": peer.asn, "cluster": peer.cluster, "network": "fed",
                        "keepalive": 3, "hold": 9, "connect_retry": 1, "bfd": True,
                        "accept": [f"{peer.pod_cidr} le 24"]}],  # the peer's node blocks
                clusters={peer.cluster: [peer.pod_cidr]}, graceful_restart=False,
                fpm={"resync_settle_ms": 1000, "resync_min_ms": 2000})
            n.vxfedd.config = n.vxfedd_config(
                networks=[{"name": "fed", "subnet": n.pod_cidr}], bgp=bgp, log_level="debug",
                federation={"endpoints": [etcd.endpoint(0)], "key_prefix": PREFIX},
                services={"range": "10.96.0.0/24", "network": "fed"})
        for n in nodes:
            n.start_dataplane()
            n.start_vxfedd()
        for n in nodes:
            t.wait_until(lambda: n.vxfedctl("status").get("dataplane_ready"), 30, f"{n.short}'s dataplane ready",
                         check_all(nodes))
            n.start_frr()
        blocks = {}
        for n in nodes:
            net = next(x for x in n.vxfedctl("networks")["networks"] if x["spec"]["name"] == "fed")
            blocks[n.short] = net["node_block"]
        t.wait_until(lambda: a.bgp_route(blocks["b"]) is not None, 60, "A to learn B's block", check_all(nodes))
        t.wait_until(lambda: (a.vtysh("show bfd peers json") or "").count('"status":"up"') >= 1, 30,
                     "A's BFD session up", check_all(nodes))

        p_a = str(ipaddress.ip_network(blocks["a"]).network_address + 5)
        p_b = str(ipaddress.ip_network(blocks["b"]).network_address + 5)
        r = a.vxfedd.ctl("attach", "pod-a", "--network", "fed", "--ip", p_a, "--mac", "02:00:00:00:0a:05",
                         "--host-iface", "vpa0")
        assert r.returncode == 0, r.stderr
        for n, cl, addr, created in ((a, "cluster-a", p_a, "2026-12-06T10:00:00Z"),
                                     (b, "cluster-b", p_b, "2026-12-06T09:00:00Z")):
            f = topo.workdir / f"ckpt-{cl}.yaml"
            f.write_text(ckpt(cl, addr, created))
            r = n.vxfedd.ctl("service", "apply", "-f", str(f))
            assert r.returncode == 0, (n.short, r.stderr)

        # 1. the primary cluster's backend, though remote.
        t.wait_until(lambda: entries(a) and entries(a)[-1][1] == [p_b], 10, "A's entry [P_B]", check_all(nodes))
        t.log(f"A's entry: [{p_b}] (cluster-b, the primary); P_A {p_a} on A")

        # 2. B's link drops.
        t0 = time.time()
        sw.run(["ip", "link", "set", "pb", "down"])
        seen: dict[str, float] = {}

        def fell_over() -> bool:
            if "route" not in seen and a.bgp_route(blocks["b"]) is None:
                seen["route"] = time.time() - t0
            last = entries(a)[-1]
            if last[1] == [p_a]:
                seen["entry"] = last[0] - t0
            return "entry" in seen and "route" in seen
        t.wait_until(fell_over, 20, "A's entry to fall over to P_A", check_all(nodes), interval=0.05)
        results["link_down"] = {k: round(v, 2) for k, v in seen.items()}
        t.log(f"link down: B's route gone from A's vxfedd after {seen['route']:.2f} s (polled), "
              f"the entry [P_A] after {seen['entry']:.2f} s (vxfedd's log)")
        assert seen["entry"] <= BUDGET, f"the entry fell over {seen['entry']:.2f} s after the link drop (budget {BUDGET} s)"

        # 3. B's link back: back to the primary.
        t0 = time.time()
        sw.run(["ip", "link", "set", "pb", "up"])
        t.wait_until(lambda: entries(a)[-1][1] == [p_b], 60, "A's entry back to P_B", check_all(nodes))
        results["link_back_entry_s"] = round(entries(a)[-1][0] - t0, 2)
        t.log(f"link back: the entry [P_B] again after {results['link_back_entry_s']:.2f} s")
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    t.main_wrapper(main)
