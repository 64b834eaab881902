#!/usr/bin/env python3
"""vxfedd's BGP wiring end to end: two nodes, each with real FRR (zebra + dplane_fpm_nl, bgpd),
vxfed-dataplane (af_packet uplink) and vxfedd with a `bgp:` section. Nothing but vxfedd's
config is written by hand: vxfedd renders and applies FRR's config, FRR peers over eBGP,
zebra streams the selected routes to vxfedd over FPM, vxfedd programs the dataplane.

Topology (namespaces created and removed here; MTU 9000 underlay veth ul0):
  A: AS 65001, underlay/VTEP 198.18.0.1, pods 10.244.0.0/16  --ul0--  B: AS 65002, 198.18.0.2,
  pods 10.245.0.0/16. Both have the network "fed" (B in its YAML, A through `vxfedctl
  add-network`); its VNI comes from vxfedd's pool (the same name gets the same VNI on both
  nodes; the test reads it from `vxfedctl networks`).

Phases:
 1. convergence: from the start of both vxfedds until A's `vxfedctl routes` holds
    10.245.0.0/16 via B's VTEP in the network's VNI and B's holds 10.244.0.0/16 via A's;
    both routes also in each dataplane's tables (vxfed-dpctl dump). Time printed.
 2. `vxfedctl peers`: Established, 1 prefix received, 1 advertised, on both sides;
    `vxfedctl status`: fpm_connected. Then the idle cost: each converged vxfedd, with the
    helpers it runs, uses at most IDLE_CPU_LIMIT_PERCENT of a core over 5 s (its peer
    status poll every 500 ms once ran vtysh: 11.6-11.8 % measured on that build).
 3. peer down: B's bgpd stopped (SIGTERM, graceful restart off): A's route leaves vxfedd and
    the dataplane within the hold time.
 4. peer back: B's bgpd started again (scripts/frr-start.sh --only bgpd, which loads the
    frr.conf vxfedd rendered): A re-learns the route, in vxfedd and in the dataplane.
 5. vxfedd restart: A's dataplane never loses B's route (vxfedd replays its route cache
    before its first snapshot), and A's vxfedd has it again once FPM is back.
 6. vxfedd restart with a route withdrawn meanwhile (B's bgpd stopped while A's vxfedd was
    down): the replayed route is removed by the resync after the restart.
 7. a network added after its routes were learned: with A's network removed, B's route is
    in A's zebra but not installed; `vxfedctl add-network` brings it in (no reload needed).
 8. a bare bgpd: B's bgpd restarted with an frr.conf that lacks vxfedd's config; B's vxfedd
    sees a new bgpd (its pid file) at its next peer poll and applies its config to it: the
    session and A's route come back, frr.conf is vxfedd's again.

Prints `RESULTS {json}` with the measured times.
"""
import json
import re
import time

import vxfed_harness as t
from vxfed_harness.node import Node, connect_underlay
from vxfedd_node import (NETWORK, add_network, check_route, frr_has_route, remove_network, require, vxfedd_config,
                         wait_until)

HOLD = 3
POLL = 0.2          # s between observations: each is one short-lived client process
IDLE_CPU_LIMIT_PERCENT = 5.0   # of one core, vxfedd and its children, converged and quiet


def main() -> None:
    require()
    results: dict = {}
    with t.Topology("bgpvxd") as topo:
        timers = {"keepalive": 1, "hold": HOLD, "connect_retry": 1}
        a = Node(topo, "a", "198.18.0.1", "10.244.0.0/16", asn=65001)
        b = Node(topo, "b", "198.18.0.2", "10.245.0.0/16", asn=65002)
        # A gets its network at run time (vxfedctl add-network), B from its YAML.
        a.vxfedd.config = vxfedd_config(a, b, timers, network_in_yaml=False)
        b.vxfedd.config = vxfedd_config(b, a, timers)
        connect_underlay(topo, [a, b])
        run_phases(a, b, results)
    print("RESULTS " + json.dumps(results))


def run_phases(a: Node, b: Node, results: dict) -> None:
    nodes = (a, b)
    for n in nodes:
        n.start_frr()
    for n in nodes:
        n.start_dataplane()

    # ---- 1. convergence ----
    t.log("starting vxfedd on both nodes")
    start = time.monotonic()
    a.start_vxfedd(wait=False)
    b.start_vxfedd(wait=False)
    add_network(a)
    seen: dict[str, float] = {}

    def converged() -> bool:
        for n, peer in ((a, b), (b, a)):
            if f"vxfedd-{n.short}" not in seen and n.bgp_route(peer.pod_cidr) is not None:
                seen[f"vxfedd-{n.short}"] = time.monotonic() - start
            if f"dataplane-{n.short}" not in seen and n.dataplane_route(peer.pod_cidr) is not None:
                seen[f"dataplane-{n.short}"] = time.monotonic() - start
        return len(seen) == 4
    wait_until(converged, 60, "both nodes to learn the other's pod CIDR (vxfedd and dataplane)", nodes)
    results["convergence_s"] = round(max(seen[f"vxfedd-{n.short}"] for n in nodes), 2)
    results["convergence_dataplane_s"] = round(max(seen[f"dataplane-{n.short}"] for n in nodes), 2)
    results["convergence_detail_s"] = {k: round(v, 2) for k, v in sorted(seen.items())}
    t.log(f"converged: routes in both vxfedds {results['convergence_s']} s, in both dataplanes "
          f"{results['convergence_dataplane_s']} s after starting vxfedd ({results['convergence_detail_s']})")

    vni = a.vni_of(NETWORK)
    assert vni == b.vni_of(NETWORK), f"network {NETWORK} has VNI {vni} on A but {b.vni_of(NETWORK)} on B"
    results["vni"] = vni
    ra = check_route(a, b, vni)
    rb = check_route(b, a, vni)
    t.log(f"A: {ra}\nB: {rb}")
    # Only the other cluster's CIDR is learned: our own advertisement must not come back.
    for n, peer in ((a, b), (b, a)):
        bgp_prefixes = {r["prefix"] for r in n.vxfedctl("routes").get("routes", []) if r.get("source") == "bgp"}
        assert bgp_prefixes == {peer.pod_cidr}, f"{n.short}: BGP routes {bgp_prefixes}"

    # ---- 2. peers and status ----
    def peer_ok(n: Node, peer: Node) -> bool:
        ps = n.vxfedctl("peers").get("peers", [])
        return (len(ps) == 1 and ps[0]["address"] == peer.ip and ps[0]["state"] == "Established"
                and int(ps[0]["prefixes_received"]) == 1 and int(ps[0]["prefixes_advertised"]) == 1)
    for n, peer in ((a, b), (b, a)):
        wait_until(lambda: peer_ok(n, peer), 15, f"{n.short}'s vxfedctl peers: Established, 1 received, 1 advertised",
                   nodes)
        p = n.vxfedctl("peers")["peers"][0]
        assert int(p["remote_asn"]) == peer.asn and p["cluster"] == f"cluster-{peer.short}", p
        st = n.vxfedctl("status")
        assert st.get("bgp_enabled") and st.get("fpm_connected"), f"{n.short} status: {st}"
        assert st.get("dataplane_connected") and st.get("dataplane_ready"), f"{n.short} status: {st}"
    results["peer_a"] = a.vxfedctl("peers")["peers"][0]
    t.log(f"A's peer: {results['peer_a']}")

    # The idle cost of a converged node's vxfedd (peer status polls, timers), with any helper
    # process it waits for counted: nothing here may cost a pod's core.
    pids = {n.short: n.vxfedd.proc.pid for n in nodes}
    before = {k: t.cpu_seconds(pid, children=True) for k, pid in pids.items()}
    t0 = time.monotonic()
    time.sleep(5)
    elapsed = time.monotonic() - t0
    idle = {k: round(100.0 * (t.cpu_seconds(pid, children=True) - before[k]) / elapsed, 2) for k, pid in pids.items()}
    results["vxfedd_idle_cpu_percent"] = idle
    t.log(f"vxfedd idle CPU (with its children), % of a core over {elapsed:.1f} s: {idle}")
    for k, pct in idle.items():
        assert pct <= IDLE_CPU_LIMIT_PERCENT, (f"{k}'s vxfedd used {pct} % of a core while idle "
                                               f"(limit {IDLE_CPU_LIMIT_PERCENT} %)")

    # ---- 3. peer down ----
    t.log("stopping B's bgpd")
    t0 = time.monotonic()
    b.stop_frr(only="bgpd")
    wait_until(lambda: a.bgp_route(b.pod_cidr) is None, HOLD + 10, "A's vxfedd to drop B's route", nodes)
    gone = time.monotonic() - t0
    wait_until(lambda: a.dataplane_route(b.pod_cidr) is None, 10, "A's dataplane to drop B's route", nodes)
    results["peer_down_vxfedd_s"] = round(gone, 2)
    results["peer_down_dataplane_s"] = round(time.monotonic() - t0, 2)
    t.log(f"B's bgpd stopped: A's vxfedd dropped the route after {gone:.2f} s, "
          f"its dataplane after {results['peer_down_dataplane_s']} s (hold time {HOLD} s)")
    assert results["peer_down_dataplane_s"] <= HOLD + 2, \
        f"withdrawal took {results['peer_down_dataplane_s']} s, hold time is {HOLD} s"
    wait_until(lambda: a.vxfedctl("peers")["peers"][0]["state"] != "Established", 10,
               "A's vxfedctl peers to show the session down", nodes)
    results["peer_down_state_a"] = a.vxfedctl("peers")["peers"][0]["state"]
    # On B, zebra drops the routes of its departed bgpd, so B's vxfedd loses A's route too
    # (graceful restart off); not asserted here, bgp_graceful_restart covers keeping them.

    # ---- 4. peer back ----
    t.log("starting B's bgpd again")
    t0 = time.monotonic()
    b.start_frr(only="bgpd")
    wait_until(lambda: a.bgp_route(b.pod_cidr) is not None, 60, "A's vxfedd to re-learn B's route", nodes)
    back = time.monotonic() - t0
    wait_until(lambda: a.dataplane_route(b.pod_cidr) is not None, 10, "A's dataplane to re-learn B's route", nodes)
    results["peer_back_vxfedd_s"] = round(back, 2)
    results["peer_back_dataplane_s"] = round(time.monotonic() - t0, 2)
    check_route(a, b, vni)
    wait_until(lambda: b.bgp_route(a.pod_cidr) is not None and b.dataplane_route(a.pod_cidr) is not None, 30,
               "B to hold A's route again", nodes)
    check_route(b, a, vni)
    for n, peer in ((a, b), (b, a)):
        wait_until(lambda: peer_ok(n, peer), 15, f"{n.short}'s peer Established again", nodes)
    t.log(f"B's bgpd back: A re-learned the route after {back:.2f} s (dataplane "
          f"{results['peer_back_dataplane_s']} s)")

    # ---- 5. vxfedd restart ----
    # The dataplane keeps its tables while vxfedd is away; the new vxfedd must not replace
    # them with a table that lacks the BGP routes while its adapter re-learns them from zebra.
    t.log("restarting A's vxfedd")
    a.stop_vxfedd()
    t0 = time.monotonic()
    a.start_vxfedd(wait=False)
    absent: list[float] = []       # seconds after the restart at which A's dataplane lacked the route
    back_in_vxfedd = None
    while True:
        a.check_alive()
        now = time.monotonic() - t0
        if a.dataplane_route(b.pod_cidr) is None:
            absent.append(round(now, 2))
        if back_in_vxfedd is None:
            try:
                if a.bgp_route(b.pod_cidr) is not None and a.vxfedctl("status").get("fpm_connected"):
                    back_in_vxfedd = now
            except RuntimeError:
                pass               # the API socket is not up yet
        # Watch on until the adapter's FPM resync is over (resync_min_ms 2 s, settle 1 s).
        if back_in_vxfedd is not None and now > back_in_vxfedd + 4:
            break
        if now > 60:
            raise TimeoutError("A's vxfedd did not get its BGP route back within 60 s of its restart")
        time.sleep(0.1)
    results["vxfedd_restart_route_back_s"] = round(back_in_vxfedd, 2)
    results["vxfedd_restart_dataplane_gap_s"] = [absent[0], absent[-1]] if absent else []
    t.log(f"A's vxfedd restarted: BGP route in vxfedd (FPM connected) after {back_in_vxfedd:.2f} s; "
          f"dataplane without it: {results['vxfedd_restart_dataplane_gap_s'] or 'never'}")
    assert not absent, (f"A's dataplane lost {b.pod_cidr} during the vxfedd restart "
                        f"(missing at {absent[0]}..{absent[-1]} s)")
    assert "forwarding on 1 routes of the previous run" in a.vxfedd.log(), "the route cache was not replayed"
    check_route(a, b, vni)

    # ---- 6. vxfedd restart, a route withdrawn meanwhile ----
    # The replayed routes are only kept until the adapter's first full table: one that zebra
    # no longer has is removed by the resync after the restart.
    t.log("stopping A's vxfedd, then B's bgpd; starting A's vxfedd again")
    a.stop_vxfedd()
    b.stop_frr(only="bgpd")
    wait_until(lambda: not frr_has_route(a, b.pod_cidr), HOLD + 10, "A's FRR to drop B's route", nodes)
    t0 = time.monotonic()
    a.start_vxfedd(wait=False)
    wait_until(lambda: a.bgp_route(b.pod_cidr) is None and a.dataplane_route(b.pod_cidr) is None, 30,
               "A's vxfedd resync to remove the route withdrawn while it was down", nodes)
    results["vxfedd_restart_stale_removed_s"] = round(time.monotonic() - t0, 2)
    assert "forwarding on 1 routes of the previous run" in a.vxfedd.log(), "the route cache was not replayed"
    t.log(f"the route withdrawn while A's vxfedd was down: removed {results['vxfedd_restart_stale_removed_s']} s "
          "after its restart (FPM reconnect + resync)")

    # ---- 7. a network added after its routes were learned ----
    # Routes of a network vxfedd does not have yet wait, unresolved, in the adapter; adding
    # the network through the API (not a reload) must bring them in.
    t.log("A: remove-network; B's bgpd back; A learns B's route without a network for it")
    remove_network(a)
    b.start_frr(only="bgpd")
    wait_until(lambda: frr_has_route(a, b.pod_cidr), 60, "A's FRR to learn B's route again", nodes)
    t_end = time.monotonic() + 2           # zebra -> FPM -> adapter takes milliseconds
    while time.monotonic() < t_end:
        assert a.bgp_route(b.pod_cidr) is None and a.dataplane_route(b.pod_cidr) is None, \
            "a route was installed for a network A does not have"
        time.sleep(POLL)
    t0 = time.monotonic()
    add_network(a)
    assert a.vni_of(NETWORK) == vni, f"the re-added network got VNI {a.vni_of(NETWORK)}, was {vni}"
    wait_until(lambda: a.bgp_route(b.pod_cidr) is not None and a.dataplane_route(b.pod_cidr) is not None, 10,
               "B's route in A's vxfedd and dataplane after add-network", nodes)
    results["network_added_route_in_s"] = round(time.monotonic() - t0, 2)
    check_route(a, b, vni)
    t.log(f"A: add-network -> B's route in vxfedd and the dataplane after {results['network_added_route_in_s']} s")

    # A new bgpd without vxfedd's config (its own load of frr.conf failed, as it did in the FRR
    # container before frr-node.sh had the permissions it needs): B's vxfedd applies the
    # config to it at its next peer poll, and the session and the route come back.
    t.log("B's bgpd restarted bare (an frr.conf without vxfedd's config)")
    conf = b.frr.dir / "frr.conf"
    rendered = conf.read_text()
    b.stop_frr(only="bgpd")
    wait_until(lambda: a.bgp_route(b.pod_cidr) is None, 60, "A to drop B's route", nodes)
    conf.write_text("frr defaults traditional\n")
    t0 = time.monotonic()
    b.start_frr(only="bgpd")
    try:
        wait_until(lambda: a.bgp_route(b.pod_cidr) is not None and a.dataplane_route(b.pod_cidr) is not None, 60,
                   "B's route back in A after B's vxfedd configured its new bgpd", nodes)
    except Exception:
        t.log("B running: " + b.vtysh("show running-config"))
        t.log("B nbr: " + b.vtysh("show bgp neighbors json")[:3000])
        t.log("B rib: " + b.vtysh("show ip route json")[:2000])
        raise
    results["bare_bgpd_configured_route_back_s"] = round(time.monotonic() - t0, 2)
    assert "applying the FRR config to it" in b.vxfedd.log(), b.vxfedd.log()[-3000:]
    assert conf.read_text() == rendered, "B's vxfedd did not write its frr.conf again"
    # The new bgpd itself holds every route-map of the config (frr-reload alone would leave
    # them out: vtysh's merged view shows zebra's copies; docs/bgp.md).
    maps = re.findall(r"^route-map (\S+) ", rendered, re.M)
    assert maps, rendered
    for name in sorted(set(maps)):
        shown = b.frr.vtysh(f"show route-map {name}", daemon="bgpd")
        assert f"route-map: {name}" in shown, f"B's new bgpd lacks route-map {name}: {shown}"
    t.log(f"bare bgpd on B: configured by B's vxfedd, B's route back in A after "
          f"{results['bare_bgpd_configured_route_back_s']} s")


if __name__ == "__main__":
    t.main_wrapper(main)
