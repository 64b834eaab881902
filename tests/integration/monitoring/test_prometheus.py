#!/usr/bin/env python3
"""A real Prometheus (Debian's) scrapes a running vxfed node and sees its series move.

Two nodes of the harness (FRR + vxfed-dataplane + vxfedd each, eBGP between them, the network
"fed" on both), vxfedd serving metrics on 127.0.0.1:9472 in its node's namespace. A pod on
each node. Prometheus runs in node A's namespace, scrapes A's vxfedd every second and loads
deploy/monitoring/vxfed.rules.yaml. Through Prometheus' HTTP query API the test asserts:

 1. `promtool check metrics` finds nothing wrong on either node's endpoint;
 2. packets: a ping from pod A to pod B moves A's per-VNI encap and uplink TX counters;
 3. a drop reason: VXLAN with bad flags sent to A's VTEP moves drops{reason="bad_vxlan_flags"};
 4. eBPF: pod A has a tight egress limit and the default marking rule; a burst of RoCEv2-port
    datagrams moves its `marked` and `egress_dropped_rate` counters;
 5. refusals counted: a connection to the route feed's port (bgpd's BMP feed; zebra's FPM with
    `feed: fpm`) from a process running as `nobody` (refused: not FRR's user) and a POST to the
    metrics endpoint (405: read-only);
 6. every alert rule evaluates without error; every dashboard panel's query returns data;
 7. a BGP session drop (B's bgpd stopped): A's vxfed_bgp_peer_up goes 1 -> 0 and the
    VxfedBgpPeerDown alert goes pending.

Prints `RESULTS {json}` with the times it measured.
"""
from __future__ import annotations

import json
import time

import vxfed_harness as t
from vxfed_harness import prometheus as prom_mod
from vxfed_harness.frr import require_frr
from vxfed_harness.node import Node, check_all, connect_underlay
from vxfed_harness.prometheus import Prometheus, check_metrics, fetch

NETWORK = "fed"
METRICS = "127.0.0.1:9472"
POD_MTU = 1500


def require() -> None:
    require_frr()
    prom_mod.require_prometheus()
    for b in ("dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl", "control/vxfedd", "control/vxfedctl",
              "bpf/vxfed-bpf"):
        t.require_binary(b)
    t.require_program("setpriv")


def node_config(node: Node, peer: Node) -> dict:
    bgp = node.bgp_config(
        peers=[{"address": peer.ip, "remote_asn": peer.asn, "cluster": peer.cluster, "network": NETWORK,
                "keepalive": 1, "hold": 3, "connect_retry": 1}],
        clusters={peer.cluster: [peer.pod_cidr]}, graceful_restart=False,
        fpm={"resync_settle_ms": 1000, "resync_min_ms": 2000})
    return node.vxfedd_config(networks=[{"name": NETWORK, "subnet": node.pod_cidr}], bgp=bgp, metrics_listen=METRICS)


def add_pod(topo: t.Topology, node: Node, ip: str, mac: str) -> tuple[t.Namespace, str]:
    """A pod namespace behind a veth on the node, attached in vxfedd as the CNI plugin would."""
    pod = topo.netns(f"pod{node.short}")
    host_if = f"hv{node.short}{topo.suffix}"[:15]
    topo.veth(node.ns, host_if, pod, "eth0", mtu=POD_MTU)
    gateway = node.pod_cidr.split("/")[0].rsplit(".", 1)[0] + ".1"
    pod.run(f"ip link set eth0 address {mac}")
    pod.run(f"ip addr add {ip}/32 dev eth0")
    pod.run(f"ip route add {gateway}/32 dev eth0 scope link")
    pod.run(f"ip route add default via {gateway} dev eth0")
    pod.run("ethtool -K eth0 tx off tso off gso off")
    cid = f"ctr-{node.short}"
    node.vxfedctl("attach", cid, "--ifname", "eth0", "--network", NETWORK, "--ip", ip, "--mac", mac,
                  "--host-iface", host_if)
    return pod, cid


def main() -> None:
    require()
    results: dict = {}
    bpf_tool = t.binary("bpf/vxfed-bpf")
    with t.Topology("prom") as topo:
        a = Node(topo, "a", "198.18.0.1", "10.244.0.0/16", asn=65001)
        b = Node(topo, "b", "198.18.0.2", "10.245.0.0/16", asn=65002)
        nodes = (a, b)
        alive = check_all(nodes)
        connect_underlay(topo, [a, b])
        # A's pins: vxfedd runs under `ip netns exec`, which remounts /sys (no /sys/fs/bpf), so
        # the node's pin root is a bpffs of its own in the workdir (VXFED_BPF_PIN_ROOT).
        pin_root = a.dir / "bpf"
        t.run(["mount", "-t", "bpf", "bpf", str(pin_root)])
        topo.on_close("bpffs", lambda: (t.run([str(bpf_tool), "--pin-root", str(pin_root), "reconcile"], check=False),
                                        t.run(["umount", "-l", str(pin_root)], check=False)))
        for n, peer in ((a, b), (b, a)):
            n.start_frr()
            n.start_dataplane()
            n.start_vxfedd(node_config(n, peer))

        prom = Prometheus(a.ns, topo.workdir / "prometheus", targets=[METRICS],
                          rule_files=[t.SOURCE_DIR / "deploy" / "monitoring" / "vxfed.rules.yaml"])
        topo.on_close("prometheus", prom.stop)
        results["prometheus_start_s"] = round(prom.start(), 2)

        pod_a, cid_a = add_pod(topo, a, "10.244.0.5", "02:00:0a:f4:00:05")
        pod_b, _ = add_pod(topo, b, "10.245.0.5", "02:00:0a:f5:00:05")
        # pod A: egress 8 Mbit/s with a one-packet burst, and the default marking (RoCEv2 -> DSCP 26)
        t.run([str(bpf_tool), "--pin-root", str(pin_root), "attach", "--netns", pod_a.path, "--ifname", "eth0",
               "--container-id", cid_a, "--bandwidth", json.dumps({"egressRate": 8_000_000, "egressBurst": 12_000}),
               "--rules", "default"])

        t0 = time.monotonic()
        a.wait_until(lambda: a.dataplane_route(b.pod_cidr) and b.dataplane_route(a.pod_cidr), 90,
                     "both dataplanes to have the other cluster's route")
        results["bgp_converged_s"] = round(time.monotonic() - t0, 2)
        prom.wait_scraped(30, alive)

        def wait(expr: str, ok, what: str, timeout: float = 30) -> float:
            return prom.wait_value(expr, ok, timeout, what, alive)

        # ---- 1. the text itself ----
        for n in nodes:
            code, text = fetch(n.ns, f"http://{METRICS}/metrics")
            assert code == 200, f"{n.short}: GET /metrics: {code}"
            problems = check_metrics(text)
            assert not problems, f"promtool check metrics on node {n.short}:\n" + "\n".join(problems)
            results[f"series_{n.short}"] = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
        t.log(f"promtool check metrics: clean on both nodes ({results['series_a']} / {results['series_b']} series)")

        # ---- 2. packets after a ping ----
        vni = a.vni_of(NETWORK)
        encap = f'vxfed_dataplane_vni_encap_packets_total{{vni="{vni}"}}'
        uplink_tx = 'sum(vxfed_dataplane_port_tx_packets_total{port="uplink"})'
        wait(encap, lambda v: True, "the per-VNI encap series")
        before, before_tx = prom.value(encap), prom.value(uplink_tx)
        ping = pod_a.ping("10.245.0.5", count=5)
        assert ping.returncode == 0, f"pod A cannot ping pod B:\n{ping.stdout}{ping.stderr}"
        t1 = time.monotonic()
        wait(encap, lambda v: v >= before + 5, f"VNI {vni} encap packets to grow by the 5 pings (from {before})")
        results["encap_seen_s"] = round(time.monotonic() - t1, 2)
        wait(uplink_tx, lambda v: v >= before_tx + 5, "uplink TX packets to grow")
        t.log(f"ping: encap packets {before:.0f} -> {prom.value(encap):.0f} in Prometheus after "
              f"{results['encap_seen_s']} s")

        # ---- 3. a drop reason after a malformed packet ----
        bad = 'vxfed_dataplane_drops_total{reason="bad_vxlan_flags"}'
        wait(bad, lambda v: True, "the bad_vxlan_flags series")
        before = prom.value(bad)
        sender = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                  "[s.sendto(bytes([0x00, 0, 0, 0, 0, 0x03, 0xe8, 0]) + bytes(50), ('198.18.0.1', 4789)) for _ in range(5)]")
        b.ns.run(["python3", "-c", sender])
        wait(bad, lambda v: v >= before + 5, "drops{reason=bad_vxlan_flags} to count the 5 malformed frames")
        t.log(f"malformed VXLAN: bad_vxlan_flags {before:.0f} -> {prom.value(bad):.0f}")

        # ---- 4. the pod's eBPF counters ----
        marked = 'vxfed_bpf_pod_packets_total{outcome="marked",ifname="eth0"}'
        policed = 'vxfed_bpf_pod_packets_total{outcome="egress_dropped_rate",ifname="eth0"}'
        wait(marked, lambda v: True, "pod A's eBPF series")
        burst = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                 "[s.sendto(bytes(1200), ('10.245.0.5', 4791)) for _ in range(40)]")
        pod_a.run(["python3", "-c", burst], check=False)
        wait(marked, lambda v: v >= 1, "marked packets of pod A")
        wait(policed, lambda v: v >= 1, "rate-limit drops of pod A")
        results["bpf_marked"], results["bpf_policed"] = prom.value(marked), prom.value(policed)
        t.log(f"eBPF: pod A marked {results['bpf_marked']:.0f}, dropped by its limit {results['bpf_policed']:.0f}")

        # ---- 5. refusals, counted ----
        # The route feed's port: bgpd's BMP feed (the default) or zebra's FPM stream.
        feed = a.vxfedd.config["bgp"].get("feed", "bmp")
        port = {"bmp": 621, "fpm": 620}[feed]
        refused = f'vxfed_bgp_{feed}_refused_total{{reason="wrong_user"}}'
        wait(refused, lambda v: v == 0, f"no {feed} refusal yet")
        attack = (f"import socket, time; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); time.sleep(1)")
        a.ns.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "python3", "-c", attack], check=False)
        wait(refused, lambda v: v >= 1, f"the {feed} connection from nobody to be refused and counted")
        wait(f"vxfed_bgp_{feed}_connected", lambda v: v == 1, f"FRR's {feed} connection to stay up")
        code, _ = fetch(a.ns, f"http://{METRICS}/metrics", method="POST")
        assert code == 405, f"POST /metrics answered {code}, expected 405 (read-only)"
        wait('vxfedd_metrics_rejected_total{reason="method"}', lambda v: v >= 1, "the POST to be counted")
        wait('vxfed_bgp_tcp_md5_rejected_total{reason="wrong_signature"}', lambda v: v >= 0,
             "the kernel's TCP MD5 rejections to be exported (tests/integration/bgp/test_bgp_md5.py moves them)")
        t.log(f"refusals: {feed} from nobody and POST /metrics, both counted")

        # ---- 6. rules and dashboard ----
        # A store write inside the dashboard's rate window: the attaches above may predate the
        # first scrape, and a rate needs two samples that differ.
        a.vxfedctl("add-network", "scratch", "--subnet", "10.250.0.0/24")
        wait("sum(increase(vxfedd_store_write_duration_seconds_count[2m]))", lambda v: v > 0,
             "the store write to be seen")
        rules = prom.rules()
        assert len(rules) >= 10, f"only {len(rules)} rules loaded"
        bad_rules = [(r["name"], r.get("lastError")) for r in rules if r.get("health") != "ok"]
        assert not bad_rules, f"rules that do not evaluate: {bad_rules}"
        dashboard = json.loads((t.SOURCE_DIR / "deploy" / "monitoring" / "vxfed-dashboard.json").read_text())
        empty = []
        queries = 0
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                expr = target["expr"].replace("$instance", ".*").replace("$__rate_interval", "2m")
                queries += 1
                result = prom.query(expr)
                if not result or all(r["value"][1] == "NaN" for r in result):
                    empty.append(f"{panel['title']}: {expr}")
        assert not empty, "dashboard queries without data:\n" + "\n".join(empty)
        results["dashboard_queries"] = queries
        t.log(f"{len(rules)} rules evaluate cleanly; {queries} dashboard queries all return data")

        # ---- 7. a BGP session drop ----
        peer_up = f'vxfed_bgp_peer_up{{peer="{b.ip}"}}'
        wait(peer_up, lambda v: v == 1, "the session with B to be up")
        t2 = time.monotonic()
        b.stop_frr(only="bgpd")
        wait(peer_up, lambda v: v == 0, "A's vxfed_bgp_peer_up to drop to 0", timeout=30)
        results["peer_down_seen_s"] = round(time.monotonic() - t2, 2)
        wait(f'changes({peer_up}[5m])', lambda v: v >= 1, "the change to be in the stored series")
        wait('count(ALERTS{alertname="VxfedBgpPeerDown"})', lambda v: v >= 1, "VxfedBgpPeerDown to be pending")
        t.log(f"BGP drop: peer_up 0 in Prometheus {results['peer_down_seen_s']} s after B's bgpd stopped; "
              "VxfedBgpPeerDown pending")
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    t.main_wrapper(main)
