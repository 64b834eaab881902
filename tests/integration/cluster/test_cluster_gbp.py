#!/usr/bin/python3
"""VXLAN-GBP toward the VTEPs that take it, learned from the GBP mark on the routes (docs/bgp.md,
"The GBP mark"; docs/policy.md, "VXLAN-GBP on the wire").

Two clusters of two nodes (harness/vxfed_harness/federation_bed.py: real FRR on every node and
reflector, bgpd views, BMP to vxfedd, etcd). Every node runs with node.gbp true (the default)
except b2, configured with `gbp: false` (as a node of a mixed fleet would be). Asserts:
  1. the registrations in etcd say so: node-a1, a2, b1 `"gbp": true`, node-b2 `"gbp": false`;
  2. the mark survives the reflector (iBGP, a2's block on a1) and eBGP between the clusters'
     reflectors (b1's block on a1): bgpd's view on a1 shows the large community on both, and
     not on b2's block;
  3. every node's dataplane (vxfed-dpctl dump) holds Vtep{gbp: true} for exactly the other
     nodes that take GBP, never for b2;
  4. pod-to-pod pings flow between every pair of the four pods; afterwards the GBP-taking nodes
     have received GBP packets (gbp_rx_packets > 0) and b2 none: the others sent it plain VXLAN;
  5. b1's vxfedd restarted with `gbp: false`: its registration says false, every other
     dataplane drops its Vtep gbp entry (the mark went from its routes), pings still flow and b1
     receives no GBP packet from then on.

Prints `RESULTS {json}`: the Vtep entries per node and the GBP packet counts.
"""
from __future__ import annotations

import json
import time

import vxfed_harness as t
from vxfed_harness.federation_bed import KEY_PREFIX, FederationBed, ping_matrix, require_parts
from vxfed_harness.frr import require_frr

MARK = "4200000000:34:1"
PLAIN_NODE = "b2"


class MixedGbpBed(FederationBed):
    """The federation bed with b2's vxfedd told its forwarder does not take GBP."""

    def vxfedd_config(self, n, cl, build_dir=None) -> dict:
        cfg = super().vxfedd_config(n, cl, build_dir)
        if n.short == PLAIN_NODE:
            cfg["node"]["gbp"] = False
        return cfg


def gbp_vteps(n) -> list[str]:
    return sorted(v["ip"] for v in n.dataplane.dump().get("tables", {}).get("vteps", []) if v.get("gbp"))


def main() -> None:
    require_frr(bfdd=True)
    require_parts()
    results: dict = {}
    with t.Topology("gbp") as topo:
        bed = MixedGbpBed(topo, clusters=2, nodes_per_cluster=2)
        started = time.time()
        bed.up(progress=t.log)
        results["bed_up_s"] = round(time.time() - started, 1)
        takes = {s: s != PLAIN_NODE for s in bed.nodes}

        # 1. The registrations.
        records = bed.etcd.get_prefix(f"{KEY_PREFIX}/v1/nodes/")
        for s, n in bed.nodes.items():
            rec = json.loads(records[f"{KEY_PREFIX}/v1/nodes/{n.node_name}"])
            assert rec.get("gbp") is takes[s], f"{n.node_name}'s registration: {rec}"

        # 3. The dataplanes' Vtep entries (waiting for the routes' marks: convergence was on
        # next hops only).
        want = {s: sorted(o.ip for o_s, o in bed.nodes.items() if o_s != s and takes[o_s]) for s in bed.nodes}
        t.wait_until(lambda: all(gbp_vteps(n) == want[s] for s, n in bed.nodes.items()), 30,
                     "every dataplane to hold Vtep gbp for exactly the other GBP nodes", bed.check_alive)
        results["gbp_vteps"] = {s: gbp_vteps(n) for s, n in bed.nodes.items()}

        # 2. The mark on a1's bgpd, through the reflector (a2) and across eBGP (b1); none on b2's.
        a1 = bed.nodes["a1"]
        for s in ("a2", "b1", PLAIN_NODE):
            block = bed.block_of(bed.nodes[s])
            text = a1.frr.vtysh(f"show bgp ipv4 unicast {block}")
            assert block.split("/")[0] in text, f"a1's bgpd has no path for {s}'s block {block}: {text}"
            assert (MARK in text) is takes[s], f"a1's bgpd, {s}'s block {block}: mark {MARK} expected " \
                                               f"{takes[s]}:\n{text}"

        # 4. Traffic, and who received GBP.
        before = {s: int(n.dataplane.counters().get("gbp_rx_packets", 0)) for s, n in bed.nodes.items()}
        for s, n in bed.nodes.items():
            bed.add_pod(n, "p0")
        failures = ping_matrix(bed, bed.pods)
        assert not failures, f"pings failed: {failures}"
        received = {s: int(n.dataplane.counters().get("gbp_rx_packets", 0)) - before[s] for s, n in bed.nodes.items()}
        results["gbp_rx_packets"] = received
        for s in bed.nodes:
            if takes[s]:
                assert received[s] > 0, f"{s} takes GBP but received none: {received}"
            else:
                assert received[s] == 0, f"{s} does not take GBP but received {received[s]} GBP packets"

        # 5. b1 turned off: the mark goes, and with it every Vtep gbp entry for b1.
        b1 = bed.nodes["b1"]
        takes["b1"] = False
        cfg = bed.vxfedd_config(b1, bed.clusters[1])
        cfg["node"]["gbp"] = False
        b1.stop_vxfedd()
        started = time.time()
        b1.start_vxfedd(cfg, wait=True, timeout=60)
        rec = json.loads(bed.etcd.get_prefix(f"{KEY_PREFIX}/v1/nodes/")[f"{KEY_PREFIX}/v1/nodes/{b1.node_name}"])
        assert rec.get("gbp") is False, f"b1's registration after the restart: {rec}"
        want = {s: sorted(o.ip for o_s, o in bed.nodes.items() if o_s != s and takes[o_s]) for s in bed.nodes}
        t.wait_until(lambda: all(gbp_vteps(n) == want[s] for s, n in bed.nodes.items()), 60,
                     "every dataplane to drop b1's Vtep gbp entry", bed.check_alive)
        results["b1_off_s"] = round(time.time() - started, 1)
        results["gbp_vteps_b1_off"] = {s: gbp_vteps(n) for s, n in bed.nodes.items()}
        before_b1 = int(b1.dataplane.counters().get("gbp_rx_packets", 0))
        failures = ping_matrix(bed, bed.pods)
        assert not failures, f"pings failed after b1 turned GBP off: {failures}"
        got = int(b1.dataplane.counters().get("gbp_rx_packets", 0)) - before_b1
        assert got == 0, f"b1 turned GBP off but received {got} GBP packets"
    print("RESULTS " + json.dumps(results, sort_keys=True))
    t.log("PASS")


if __name__ == "__main__":
    t.main_wrapper(main)
