#!/usr/bin/env python3
"""A backend's node lost: its block withdrawn by BGP/BFD takes it out of the Service entry and
the strategy falls over (docs/services.md, "Serving a VIP"), measured from the link's drop.

Two nodes with FRR (bgpd + bfdd), the real vxfed-dataplane and vxfedd, one eBGP session with
`bfd: true` (300 ms x 3) through a switch namespace, as test_bgp_bfd: A of cluster-a
(10.244.0.0/16), B of cluster-b (10.245.0.0/16), etcd in A's namespace on the underlay, network
`fed` on both, `services: {range: 10.96.0.0/24, network: fed}`.
default/ckpt (UDP 7000) is FailoverOnly with failover-order cluster-b,cluster-a: cluster-b's
backend is pod P_B on B (reached from A through B's BGP route), cluster-a's pod P_A on A, each a
UDP echo naming itself; a client pod on A sends 100 requests a second to the VIP, each from a
new socket (a new flow). A's entry:
  1. [P_B]: the primary cluster, though remote; the client is answered by P_B;
  2. B's switch port down: BFD drops the session, B's block leaves A, and A's entry falls over
     to [P_A] within 3 s of the link drop (vxfedd's log line); the client is answered by P_A
     again within 2 s of the drop (the issue's node-loss goal), the gap printed;
  3. the port up: BFD and the route come back, the entry returns to [P_B], and so do new flows;
  4. P_B's pod goes (cluster-b's slice marks it not ready, applied on B): the client is answered
     by P_A within 1 s of the apply's return (the issue's pod-deletion goal), the gap printed.
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
BUDGET = 3.0          # s from the link drop to A's entry falling over
CLIENT_BUDGET = 2.0   # s from the link drop to the client answered again (the node-loss goal)
DELETE_BUDGET = 1.0   # s from the pod's removal (the apply's return) to the client answered again
POD_MTU = 1500
PORT = 7000

# A UDP echo that says who answers.
SERVER = r"""
import socket, sys
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("0.0.0.0", int(sys.argv[2])))
while True:
    data, peer = u.recvfrom(2048)
    u.sendto(sys.argv[1].encode() + b" " + data, peer)
"""

# 100 requests a second to VIP:PORT, each from a new socket (a new flow, so each one is given a
# backend by the entry in force); prints "<unix time of the reply> <backend>" per answer.
CLIENT = r"""
import socket, sys, time
vip, port = sys.argv[1], int(sys.argv[2])
next_at = time.time()
while True:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
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
LINE = re.compile(r"^\[(\S+ \S+)\] \[vxfedd\] \[debug\] services: default/ckpt VIP \S+ on VNI \d+: backends \[([^\]]*)\]")


def ckpt(cluster: str, address: str, created: str, ready: bool = True) -> str:
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
  - {{name: sync, protocol: UDP, port: 7000}}
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
- {{name: sync, protocol: UDP, port: 7000}}
endpoints:
- addresses: ["{address}"]
  conditions: {{ready: {'true' if ready else 'false'}}}
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata:
  name: ckpt
  namespace: default
  creationTimestamp: "{created}"
"""


def add_pod(topo: t.Topology, node: Node, short: str, ip: str, mac: str) -> t.Namespace:
    """A pod namespace behind a veth on the node, attached in vxfedd as the CNI plugin would."""
    pod = topo.netns(f"pod{short}")
    host_if = f"h{short}{topo.suffix}"[:15]
    topo.veth(node.ns, host_if, pod, "eth0", mtu=POD_MTU)
    gateway = node.pod_cidr.split("/")[0].rsplit(".", 1)[0] + ".1"
    pod.run(f"ip link set eth0 address {mac}")
    pod.run(f"ip addr add {ip}/32 dev eth0")
    pod.run(f"ip route add {gateway}/32 dev eth0 scope link")
    pod.run(f"ip route add default via {gateway} dev eth0")
    pod.run("ethtool -K eth0 tx off tso off gso off")
    r = node.vxfedd.ctl("attach", f"ctr-{short}", "--ifname", "eth0", "--network", "fed", "--ip", ip, "--mac", mac,
                        "--host-iface", host_if)
    assert r.returncode == 0, r.stderr
    return pod


def answers(path: Path) -> list[tuple[float, str]]:
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        when, _, who = line.partition(" ")
        out.append((float(when), who))
    return out


def entries(n: Node) -> list[tuple[float, list[str]]]:
    """A's entry lines for default/ckpt: (unix time, backend addresses)."""
    out = []
    for line in n.vxfedd.log().splitlines():
        m = LINE.match(line)
        if m:
            when = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
            # Backends at weight 0 take no new flow (kept for their open ones): not counted.
            out.append((when, [b.split("/")[0] for b in m.group(2).split() if not b.endswith("/0")]))
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
        p_client = str(ipaddress.ip_network(blocks["a"]).network_address + 9)
        pods = {"a": add_pod(topo, a, "pa", p_a, "02:00:00:00:0a:05"),
                "b": add_pod(topo, b, "pb", p_b, "02:00:00:00:0b:05"),
                "client": add_pod(topo, a, "pc", p_client, "02:00:00:00:0a:09")}
        pods["a"].spawn(["python3", "-c", SERVER, "P_A", str(PORT)], name="server-a")
        pods["b"].spawn(["python3", "-c", SERVER, "P_B", str(PORT)], name="server-b")
        for n, cl, addr, created in ((a, "cluster-a", p_a, "2026-12-06T10:00:00Z"),
                                     (b, "cluster-b", p_b, "2026-12-06T09:00:00Z")):
            f = topo.workdir / f"ckpt-{cl}.yaml"
            f.write_text(ckpt(cl, addr, created))
            r = n.vxfedd.ctl("service", "apply", "-f", str(f))
            assert r.returncode == 0, (n.short, r.stderr)

        # 1. the primary cluster's backend, though remote.
        t.wait_until(lambda: entries(a) and entries(a)[-1][1] == [p_b], 10, "A's entry [P_B]", check_all(nodes))
        t.log(f"A's entry: [{p_b}] (cluster-b, the primary); P_A {p_a} on A")
        vip = a.vxfedctl("service", "get")["services"][0]["vip"]
        client = pods["client"].spawn(["python3", "-c", CLIENT, vip, str(PORT)], name="client")
        client_log = topo.workdir / (f"{pods['client'].name}:client".replace(":", "_") + ".log")
        t.wait_until(lambda: len([x for x in answers(client_log) if x[1] == "P_B"]) >= 50, 20,
                     "the client's requests to the VIP answered by P_B", check_all(nodes))

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
        t.wait_until(lambda: any(w > t0 and who == "P_A" for w, who in answers(client_log)), 10,
                     "the client answered by P_A", check_all(nodes), interval=0.05)
        got = answers(client_log)
        last_b = max(w for w, who in got if who == "P_B")
        first_a = min(w for w, who in got if who == "P_A" and w > t0)
        seen["client_answered_again"] = first_a - t0
        seen["client_gap"] = first_a - last_b
        results["link_down"] = {k: round(v, 2) for k, v in seen.items()}
        t.log(f"link down: B's route gone from A's vxfedd after {seen['route']:.2f} s (polled), "
              f"the entry [P_A] after {seen['entry']:.2f} s (vxfedd's log)")
        assert seen["entry"] <= BUDGET, f"the entry fell over {seen['entry']:.2f} s after the link drop (budget {BUDGET} s)"
        t.log(f"the client (100 new flows a second to the VIP) answered by P_A {seen['client_answered_again']:.2f} s "
              f"after the link drop; gap between the last P_B and the first P_A answer {seen['client_gap']:.2f} s")
        assert seen["client_answered_again"] <= CLIENT_BUDGET, results["link_down"]

        # 3. B's link back: back to the primary.
        t0 = time.time()
        sw.run(["ip", "link", "set", "pb", "up"])
        t.wait_until(lambda: entries(a)[-1][1] == [p_b], 60, "A's entry back to P_B", check_all(nodes))
        results["link_back_entry_s"] = round(entries(a)[-1][0] - t0, 2)
        t.wait_until(lambda: any(w > entries(a)[-1][0] + 0.1 and who == "P_B" for w, who in answers(client_log)), 10,
                     "new flows answered by P_B again", check_all(nodes))

        # 4. P_B's pod goes (cluster-b's slice marks it not ready, as the EndpointSlice
        # controller does when a pod terminates): counted from the apply's return.
        f = topo.workdir / "ckpt-cluster-b-gone.yaml"
        f.write_text(ckpt("cluster-b", p_b, "2026-12-06T09:00:00Z", ready=False))
        r = b.vxfedd.ctl("service", "apply", "-f", str(f))
        t0 = time.time()
        assert r.returncode == 0, r.stderr
        t.wait_until(lambda: any(w > t0 and who == "P_A" for w, who in answers(client_log)), 10,
                     "the client answered by P_A after P_B's pod went", check_all(nodes), interval=0.05)
        got = answers(client_log)
        first_a = min(w for w, who in got if who == "P_A" and w > t0)
        last_b = max(w for w, who in got if who == "P_B")
        results["pod_gone"] = {"client_answered_again": round(first_a - t0, 3), "client_gap": round(first_a - last_b, 3)}
        t.log(f"P_B's pod gone: the client answered by P_A {first_a - t0:.3f} s after the apply returned "
              f"(gap between answers {first_a - last_b:.3f} s)")
        assert first_a - t0 <= DELETE_BUDGET, results["pod_gone"]
        client.terminate()
        t.log(f"link back: the entry [P_B] again after {results['link_back_entry_s']:.2f} s")
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    t.main_wrapper(main)
