#!/usr/bin/python3
"""bgpd's BMP session to vxfedd cut, again and again, also in the middle of bgpd re-sending its
table: no route leaves the dataplane, none that bgpd no longer has stays in it, and the feed is
back within 2 s of each cut (the scale issue's bmp_cut).

Two nodes over eBGP (FRR + vxfed-dataplane + vxfedd each), both on the BMP feed (bgp.feed:
bmp; bgpd a view). B advertises its CIDR and 400 /26 blocks inside it; A accepts them (le 26).
  1. A's dataplane holds B's 401 routes.
  2. A's BMP session cut (ss -K on the station's port, both ends) 10 times, 0.05-0.6 s after
     the previous reconnect (some while bgpd re-sends its table): A's dataplane never holds
     fewer than 401 (sampled every 20 ms), and the feed is back within 2 s each time.
  3. B withdraws 100 of its blocks (SIGHUP with a shorter bgp.advertise) while A's session is
     cut every 0.3 s: once it settles, A's dataplane holds exactly the 301 B still has.
Prints `RESULTS {json}`.
"""
from __future__ import annotations

import ipaddress
import json
import signal
import threading
import time

import vxfed_harness as t
from vxfed_harness.node import Node, connect_underlay
from vxfedd_node import NETWORK, add_network, require, wait_until

BLOCKS = 400
WITHDRAWN = 100
CUTS = 10
BMP_PORT = 621


def blocks(cidr: str, count: int) -> list[str]:
    return [str(s) for s in list(ipaddress.IPv4Network(cidr).subnets(new_prefix=26))[1:count + 1]]


def config(node: Node, peer: Node, advertise: list[str], accept: list[str]) -> dict:
    bgp = node.bgp_config(
        peers=[{"address": peer.ip, "remote_asn": peer.asn, "cluster": peer.cluster, "network": NETWORK,
                "keepalive": 1, "hold": 3, "connect_retry": 1, "accept": accept}],
        clusters={peer.cluster: [peer.pod_cidr]}, graceful_restart=False, feed="bmp", advertise=advertise)
    return node.vxfedd_config(networks=[{"name": NETWORK, "subnet": node.pod_cidr, "vni": 1000}], bgp=bgp)


def cut(node: Node) -> None:
    """Both ends of the BMP session gone at once, as a reset would (needs INET_DIAG_DESTROY)."""
    node.ns.run(["ss", "-K", "-t", "state", "established", f"( sport = :{BMP_PORT} or dport = :{BMP_PORT} )"])


def feed_up(node: Node) -> bool:
    return bool(node.vxfedctl("status").get("fpm_connected"))   # the feed's session: BMP here


def main() -> None:
    require()
    results: dict = {}
    with t.Topology("bmpcut") as topo:
        a = Node(topo, "a", "198.18.0.1", "10.244.0.0/16", asn=65001)
        b = Node(topo, "b", "198.18.0.2", "10.245.0.0/16", asn=65002)
        b_blocks = blocks(b.pod_cidr, BLOCKS)
        a.vxfedd.config = config(a, b, [], [f"{b.pod_cidr} le 26"])
        b.vxfedd.config = config(b, a, b_blocks, [a.pod_cidr])
        connect_underlay(topo, [a, b])
        nodes = (a, b)
        for n in nodes:
            n.start_frr()
            n.start_dataplane()
        for n in nodes:
            n.start_vxfedd(wait=True)
        want = BLOCKS + 1

        def dataplane_count() -> int:
            return int(a.dataplane.status().get("routes", 0))
        took = wait_until(lambda: dataplane_count() == want and feed_up(a), 90,
                          f"A's dataplane to hold B's {want} routes", nodes)
        t.log(f"A's dataplane holds B's {want} routes ({took:.1f} s)")

        # ---- 2. cuts ----
        low = [want]
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                try:
                    low[0] = min(low[0], dataplane_count())
                except Exception:      # noqa: BLE001 - a failed status call is not a count
                    pass
                time.sleep(0.02)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        back = []
        for i in range(CUTS):
            cut(a)
            t0 = time.monotonic()
            time.sleep(0.05)
            back.append(round(wait_until(lambda: feed_up(a), 10, "A's BMP feed back after a cut", nodes) + 0.05, 2))
            time.sleep(0.05 + 0.0611 * i)    # 0.05 .. 0.6 s: later cuts land after bgpd's re-sent table
        time.sleep(1.0)
        stop.set()
        sampler.join()
        results.update(cuts=CUTS, feed_back_s=back, fewest_routes=low[0])
        t.log(f"{CUTS} cuts: the feed back after {back} s; A's dataplane held at least {low[0]} of {want} routes")
        assert low[0] == want, f"A's dataplane dropped to {low[0]} routes of {want} while its BMP session was cut"
        assert max(back) < 2.0, f"the BMP feed took {max(back)} s to come back after a cut (goal < 2 s)"

        # ---- 3. a withdrawal among cuts ----
        keep = b_blocks[:BLOCKS - WITHDRAWN]
        b.vxfedd.config = config(b, a, keep, [a.pod_cidr])
        b.vxfedd.write_config()
        b.vxfedd.proc.send_signal(signal.SIGHUP)
        end = time.monotonic() + 6.0
        while time.monotonic() < end:
            cut(a)
            time.sleep(0.3)
        want = len(keep) + 1
        took = wait_until(lambda: dataplane_count() == want and feed_up(a), 60,
                          f"A's dataplane to hold exactly B's {want} routes left", nodes)
        time.sleep(2.0)
        results.update(after_withdrawal=dataplane_count(), settled_s=round(took, 2))
        assert dataplane_count() == want, f"A's dataplane holds {dataplane_count()} routes, B has {want}"
        gone = set(b_blocks) - set(keep)
        held = {r["prefix"] for r in a.vxfedctl("routes").get("routes", []) if r.get("source") == "bgp"}
        assert not (held & gone), f"A still holds {len(held & gone)} blocks B withdrew"
        t.log(f"B withdrew {WITHDRAWN} blocks among cuts every 0.3 s: A holds exactly B's {want} "
              f"({took:.1f} s after the last cut window)")
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    t.main_wrapper(main)
