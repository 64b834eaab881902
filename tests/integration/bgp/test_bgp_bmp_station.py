#!/usr/bin/env python3
"""The BMP station and RIB (bgp/bmp_station.hpp, bgp/bmp_rib.hpp) against real FRR 8.4.

Topology (namespaces, created and removed here):
  spk  (AS 65002, 198.18.0.2): a plain bgpd originating N prefixes 10.245.i.0/24, each with its
       own next hop 198.18.1.i (an outbound route-map), as the nodes of a cluster would.
  node (AS 65001, 198.18.0.1): bgpd -M bmp as the view `vxfed` peering with spk, with a BMP
       target at 127.0.0.1:621 (a privileged port); tests/bgp/bmp_station_probe listens there
       (only a socket of user frr may connect) and prints each route message as a JSON line.

Phases:
 1. the probe is up before FRR: every prefix arrives with its own next hop (bgpd sends no
    End-of-RIB when the station was there before the peer came up);
 2. a prefix withdrawn at the speaker (`no network`) is deleted;
 3. the probe SIGKILLed and started again: bgpd reconnects and the new probe has the whole table
    back (asserted < 2 s after its restart; measured) and the full-table signal (End-of-RIB);
 4. the speaker's session shut (`neighbor 198.18.0.1 shutdown`): Peer Down withdraws every
    prefix at once (measured).
Prints `RESULTS {json}`.
"""
import json
import os
import signal
import time

import vxfed_harness as t
from bgp_topo import Node, underlay
from vxfed_harness.frr import require_frr

N = 20
PORT = 621
SPEAKER, NODE = "198.18.0.2", "198.18.0.1"


def prefix(i: int) -> str:
    return f"10.245.{i}.0/24"


def next_hop(i: int) -> str:
    return f"198.18.1.{i}"


def speaker_conf() -> str:
    lines = ["frr defaults traditional", "!"]
    for i in range(1, N + 1):
        lines.append(f"ip prefix-list p{i} seq 5 permit {prefix(i)}")
    for i in range(1, N + 1):
        lines += [f"route-map out permit {i}", f" match ip address prefix-list p{i}",
                  f" set ip next-hop {next_hop(i)}", "exit"]
    lines += ["!", "router bgp 65002", f" bgp router-id {SPEAKER}", " no bgp ebgp-requires-policy",
              " no bgp network import-check", f" neighbor {NODE} remote-as 65001",
              f" neighbor {NODE} timers 1 3", f" neighbor {NODE} timers connect 1",
              " address-family ipv4 unicast"]
    lines += [f"  network {prefix(i)}" for i in range(1, N + 1)]
    lines += [f"  neighbor {NODE} route-map out out", " exit-address-family", "exit", ""]
    return "\n".join(lines)


def view_conf() -> str:
    return "\n".join([
        "frr defaults traditional", "!",
        "router bgp 65001 view vxfed", f" bgp router-id {NODE}", " no bgp ebgp-requires-policy",
        f" neighbor {SPEAKER} remote-as 65002", f" neighbor {SPEAKER} timers 1 3",
        f" neighbor {SPEAKER} timers connect 1", " !",
        " bmp targets probe",
        "  bmp monitor ipv4 unicast post-policy",
        f"  bmp connect 127.0.0.1 port {PORT} min-retry 100 max-retry 1000",
        " exit", "exit", ""])


class Probe:
    """One run of bmp_station_probe in the node's namespace; its JSON lines read from its log."""

    def __init__(self, node: Node, name: str):
        self.node = node
        self.proc = node.ns.spawn([str(t.binary("tests/bgp/bmp_station_probe")), "--port", str(PORT),
                                   "--peer-user", "frr", "--stale-limit-ms", "30000"], name)
        self.started = time.monotonic()

    def lines(self) -> list[dict]:
        out = []
        for line in self.node.topo.log_of_process(self.proc).splitlines():
            if line.startswith("{"):
                out.append(json.loads(line))
        return out

    def routes(self) -> dict[str, list[str]]:
        """The table the consumer holds after every route message so far."""
        table: dict[str, list[str]] = {}
        for m in self.lines():
            if "route" in m:
                if m["delete"]:
                    table.pop(m["route"], None)
                else:
                    table[m["route"]] = m["next_hops"]
        return table

    def last_time(self, pred) -> float:
        times = [m["t"] for m in self.lines() if pred(m)]
        return max(times) if times else -1.0

    def event(self, name: str) -> list[dict]:
        return [m for m in self.lines() if m.get("event") == name]

    def stats(self) -> dict:
        before = len([m for m in self.lines() if "stats" in m])
        os.kill(self.proc.pid, signal.SIGUSR1)
        t.wait_for(lambda: len([m for m in self.lines() if "stats" in m]) > before, 10, "the probe's stats")
        return [m for m in self.lines() if "stats" in m][-1]["stats"]

    def alive(self) -> None:
        assert self.proc.poll() is None, "the probe exited:\n" + self.node.topo.log_of_process(self.proc)[-2000:]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def expected(skip: set[int] = frozenset()) -> dict[str, list[str]]:
    return {prefix(i): [next_hop(i)] for i in range(1, N + 1) if i not in skip}


def main() -> None:
    require_frr()
    t.require_binary("tests/bgp/bmp_station_probe")
    results: dict = {"prefixes": N}
    with t.Topology("bgpbmp") as topo:
        spk = Node(topo, "spk", 65002, SPEAKER, SPEAKER)
        node = Node(topo, "node", 65001, NODE, NODE)
        underlay(topo, spk, node)
        spk.write_frr_conf(speaker_conf())
        node.write_frr_conf(view_conf())
        for n in (spk, node):
            topo.on_failure(f"FRR on {n.short}", lambda n=n: n.frr.dump(n.short))

        # 1. The station first, then FRR: routes as the session comes up, no End-of-RIB.
        probe = Probe(node, "probe1")
        t.wait_for(lambda: probe.event("listening"), 10, "the probe to listen")
        t0 = time.monotonic()
        node.start_frr()
        spk.start_frr()
        t.wait_for(lambda: probe.routes() == expected(), 60, f"all {N} prefixes with their next hops at the probe")
        results["first_table_s"] = round(time.monotonic() - t0, 2)
        probe.alive()
        s = probe.stats()
        assert s["station"]["connections"] == 1 and s["station"]["refused_wrong_user"] == 0, s
        assert s["station"]["framing_errors"] == 0, s
        assert s["rib"]["routes_per_peer"] == {SPEAKER: N}, s
        t.log(f"phase 1: {N} prefixes with their next hops {results['first_table_s']} s after FRR started; "
              f"End-of-RIBs {s['rib']['end_of_ribs']}, full tables {s['rib']['full_tables']}")

        # 2. A withdrawal at the speaker removes the prefix.
        t1 = time.monotonic()
        spk.vtysh("configure terminal", "router bgp 65002", "address-family ipv4 unicast", f"no network {prefix(1)}")
        t.wait_for(lambda: probe.routes() == expected({1}), 15, f"{prefix(1)} withdrawn at the probe")
        results["withdrawal_s"] = round(probe.last_time(lambda m: m.get("route") == prefix(1) and m["delete"]) - t1, 3)
        t.log(f"phase 2: {prefix(1)} withdrawn {results['withdrawal_s']} s after `no network`")

        # 3. The probe killed and started again: bgpd reconnects and resends its table + EoR.
        probe.kill()
        time.sleep(0.5)  # bgpd notices the closed connection and starts its retries
        probe = Probe(node, "probe2")
        t.wait_for(lambda: probe.routes() == expected({1}), 10, "the table back at the restarted probe")
        t.wait_for(lambda: probe.event("full_table"), 10, "the full-table signal after bgpd's End-of-RIB")
        listening = probe.event("listening")[0]["t"]
        back = probe.last_time(lambda m: "route" in m) - listening
        full = probe.event("full_table")[0]["t"] - listening
        results["restart_table_back_s"] = round(back, 3)
        results["restart_full_table_s"] = round(full, 3)
        t.log(f"phase 3: probe restarted: table back {back:.3f} s, full table {full:.3f} s after it listened")
        assert back < 2.0, f"the table took {back:.3f} s to come back after the probe's restart"
        s = probe.stats()
        assert s["rib"]["end_of_ribs"] >= 1 and s["rib"]["full_tables"] == 1, s
        assert s["rib"]["stale_swept"] == 0, s

        # 4. The speaker's session shut: Peer Down withdraws every prefix at once.
        t2 = time.monotonic()
        spk.vtysh("configure terminal", "router bgp 65002", f"neighbor {NODE} shutdown")
        t.wait_for(lambda: probe.routes() == {}, 15, "every prefix withdrawn after the session was shut")
        gone = probe.last_time(lambda m: "route" in m and m["delete"]) - t2
        results["peer_down_withdrawn_s"] = round(gone, 3)
        s = probe.stats()
        assert s["rib"]["peer_down_withdrawn"] == N - 1 and s["rib"]["peers_up"] == 0, s
        assert s["station"]["framing_errors"] == 0 and s["station"]["refused_wrong_user"] == 0, s
        results["stats"] = s
        t.log(f"phase 4: session shut: all {N - 1} prefixes withdrawn {gone:.3f} s after `neighbor shutdown`")
        probe.alive()
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    t.main_wrapper(main)
