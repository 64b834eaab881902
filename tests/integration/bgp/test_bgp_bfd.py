#!/usr/bin/env python3
"""BFD with FRR's real bfdd: a peer whose link drops is declared down in about a second, long
before the BGP hold time, and its routes leave vxfedd and the dataplane.

Topology (namespaces created and removed here): A and B (each FRR zebra + bgpd + bfdd,
vxfed-dataplane, vxfedd with `bfd: true` and BGP's default timers keepalive 3 s / hold 9 s)
joined through a bridge in a third namespace, the underlay "switch":
  A ul0 --- pa [br0 in sw] pb --- ul0 B
B's link drops: the switch port pb goes down. B's ul0 loses its carrier; A's link stays up, so
A sees nothing but silence: only BFD (300 ms x 3 by default) or the hold timer can tell.

Phases:
 1. vxfedd starts before FRR: it serves (status, dataplane programmed) and retries; once FRR
    is started both sides converge. `show bfd peers` on A: the session to B is up.
 2. link drop: A's BFD session goes down, BGP resets the session for it (lastResetDueTo),
    and B's route leaves A's vxfedd and dataplane; all well under the 9 s hold time.
 3. link back: BFD up, B's route re-learned.

Prints `RESULTS {json}`.
"""
import json
import time
from pathlib import Path

import vxfed_harness as t
from vxfed_harness.node import Node, connect_underlay
from vxfedd_node import check_route, require, vxfedd_config, wait_until

HOLD = 9            # BGP's default: without BFD, a silent peer is noticed only after this
BFD_BUDGET = 3.0    # s from the link drop to the route gone from A's dataplane


def bfd_peer(n: Node, address: str) -> dict:
    for p in json.loads(n.vtysh("show bfd peers json") or "[]"):
        if p.get("peer") == address:
            return p
    return {}


def neighbor(n: Node, address: str) -> dict:
    return json.loads(n.vtysh(f"show bgp neighbors {address} json") or "{}").get(address, {})


def main() -> None:
    require()
    if not Path("/usr/lib/frr/bfdd").exists():
        t.skip("/usr/lib/frr/bfdd missing (apt-get install frr)")
    results: dict = {}
    with t.Topology("bgpbfd") as topo:
        opts = {"keepalive": 3, "hold": HOLD, "connect_retry": 1, "bfd": True}
        a = Node(topo, "a", "198.18.0.1", "10.244.0.0/16", asn=65001, bfdd=True)
        b = Node(topo, "b", "198.18.0.2", "10.245.0.0/16", asn=65002, bfdd=True)
        a.vxfedd.config = vxfedd_config(a, b, opts)
        b.vxfedd.config = vxfedd_config(b, a, opts)
        for n in (a, b):
            topo.on_failure(f"BFD on {n.short}", lambda n=n: print(f"----- FRR on {n.short}: show bfd peers -----\n"
                                                                    + n.vtysh("show bfd peers")))
        # Switch ports pa and pb (bridge br0 in namespace sw).
        sw = connect_underlay(topo, [a, b], switch=True)
        run_phases(a, b, sw, results)
    print("RESULTS " + json.dumps(results))


def run_phases(a: Node, b: Node, sw, results: dict) -> None:
    nodes = (a, b)
    # vxfedd before FRR (boot order is not guaranteed): it must serve, not exit, and pick
    # BGP up once FRR is there.
    for n in nodes:
        n.start_dataplane()
    for n in nodes:
        n.start_vxfedd(wait=False)
    for n in nodes:
        wait_until(lambda: n.vxfedctl("status").get("dataplane_ready"), 30, f"{n.short}'s vxfedd to serve", nodes)
    time.sleep(1)
    for n in nodes:
        n.check_alive()
        st = n.vxfedctl("status")
        assert st.get("bgp_enabled") and not st.get("fpm_connected"), st
    t.log("vxfedd serves on both nodes without FRR; starting FRR")
    start = time.monotonic()
    for n in nodes:
        n.start_frr()

    # ---- 1. convergence, BFD up ----
    wait_until(lambda: all(n.bgp_route(p.pod_cidr) and n.dataplane_route(p.pod_cidr) for n, p in ((a, b), (b, a))),
               60, "both nodes to learn the other's pod CIDR", nodes)
    results["convergence_after_frr_start_s"] = round(time.monotonic() - start, 2)
    for n in nodes:
        assert "bgp: adapter started after" in n.vxfedd.log(), f"{n.short}'s vxfedd did not retry its BGP start"
    vni = a.vni_of("fed")
    check_route(a, b, vni)
    check_route(b, a, vni)
    wait_until(lambda: bfd_peer(a, b.ip).get("status") == "up" and bfd_peer(b, a.ip).get("status") == "up", 30,
               "the BFD sessions to come up", nodes)
    pa = bfd_peer(a, b.ip)
    results["bfd_a"] = {k: pa.get(k) for k in ("status", "receive-interval", "transmit-interval", "detect-multiplier")}
    t.log(f"converged {results['convergence_after_frr_start_s']} s after FRR started (vxfedd retries its FRR "
          f"config after 0.25 s, doubling to 5 s); A's BFD session to B: {results['bfd_a']}")
    dropped_before = neighbor(a, b.ip).get("connectionsDropped", 0)

    # ---- 2. B's link drops ----
    t.log("B's switch port goes down")
    t0 = time.monotonic()
    sw.run(["ip", "link", "set", "pb", "down"])
    seen: dict[str, float] = {}

    def all_down() -> bool:
        now = time.monotonic() - t0
        if "bfd" not in seen and bfd_peer(a, b.ip).get("status") == "down":
            seen["bfd"] = now
        if "vxfedd" not in seen and a.bgp_route(b.pod_cidr) is None:
            seen["vxfedd"] = now
        if "dataplane" not in seen and a.dataplane_route(b.pod_cidr) is None:
            seen["dataplane"] = now
        return len(seen) == 3
    wait_until(all_down, HOLD + 10, "A to see B down (BFD) and drop its route", nodes)
    results["link_down"] = {k: round(v, 2) for k, v in seen.items()}
    n = neighbor(a, b.ip)
    results["link_down"]["bgp_state"] = n.get("bgpState")
    results["link_down"]["last_reset"] = n.get("lastResetDueTo")
    t.log(f"link down: A's BFD down after {seen['bfd']:.2f} s, route gone from vxfedd {seen['vxfedd']:.2f} s, "
          f"from the dataplane {seen['dataplane']:.2f} s (hold time {HOLD} s); BGP: {n.get('bgpState')}, "
          f"last notification: {n.get('lastNotificationReason')}")
    assert n.get("bgpState") != "Established", n.get("bgpState")
    assert n.get("connectionsDropped", 0) == dropped_before + 1, "A's BGP session was not reset"
    # FRR tears the session down with a Cease NOTIFICATION, subcode 10 "BFD Down".
    results["link_down"]["last_notification"] = n.get("lastNotificationReason")
    assert n.get("lastNotificationReason") == "Cease/BFD Down", \
        f"A's session went down for another reason: {n.get('lastNotificationReason')} / {n.get('lastResetDueTo')}"
    assert seen["dataplane"] <= BFD_BUDGET, \
        f"the route left A's dataplane {seen['dataplane']:.2f} s after the link drop (budget {BFD_BUDGET} s, hold {HOLD} s)"

    # ---- 3. link back ----
    t.log("B's switch port comes back")
    t0 = time.monotonic()
    sw.run(["ip", "link", "set", "pb", "up"])
    wait_until(lambda: bfd_peer(a, b.ip).get("status") == "up", 30, "A's BFD session to come back", nodes)
    bfd_up = time.monotonic() - t0
    wait_until(lambda: a.bgp_route(b.pod_cidr) is not None and a.dataplane_route(b.pod_cidr) is not None, 60,
               "A to re-learn B's route", nodes)
    results["link_back"] = {"bfd_up": round(bfd_up, 2), "route_back": round(time.monotonic() - t0, 2)}
    check_route(a, b, vni)
    t.log(f"link back: BFD up after {bfd_up:.2f} s, route back after {results['link_back']['route_back']} s")


if __name__ == "__main__":
    t.main_wrapper(main)
