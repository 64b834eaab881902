#!/usr/bin/python3
"""Many node blocks through the reflector, at a scale CI affords: the path of
perf/federation/scale.py (harness/vxfed_harness/scale_bed.py) with 1,000 blocks per cluster.
A BGP speaker stands for the other nodes (cluster-a's as an iBGP client of the reflector,
cluster-b's as that cluster's reflector over eBGP): vxfed-scale-speaker (perf/federation/speaker/),
or ExaBGP with VXFED_SCALE_SPEAKER=exabgp, each block with a VTEP of its own; the reflector is FRR
on vxfed-reflector's config; the node runs FRR, vxfedd, vxfed-dataplane and a CNI pod.

Asserts:
  1. every one of the 2,000 blocks is in the node's dataplane with its own VTEP and the
     network's VNI, and nothing else arrived (vxfedd holds the same 2,000 BGP routes);
  2. no VXLAN packet leaves the node toward the new block before it is announced; once it is,
     the pod's packets to it leave the node encapsulated to its VTEP with the network's VNI
     (seen at the underlay router);
  3. the speaker stopped: every block leaves the dataplane.
Then the bed with two reflectors (scale.py --reflectors 2), 200 blocks per cluster:
  4. the node's bgpd holds every block from each reflector, the dataplane each block once with
     its one VTEP (two copies of a route are one route), vxfedd as many BGP routes; the new
     block forwarded with the network's VNI; the speaker stopped, every block gone.

Prints `RESULTS {json}` with the run's timeline figures (no timed assertions: the figures are
perf/federation/scale.py's business).
"""
from __future__ import annotations

import json
import os
import time

import vxfed_harness as t
from vxfed_harness.exabgp import require_exabgp
from vxfed_harness.frr import require_frr
from vxfed_harness.native_speaker import require_native_speaker
from vxfed_harness.scale_bed import NETWORK, VNI, ScaleBed
from vxfed_harness.scale_run import run_once

PER_CLUSTER = 1000
PER_CLUSTER_TWO_REFLECTORS = 200
SPEAKER = os.environ.get("VXFED_SCALE_SPEAKER", "native")


def require() -> None:
    t.require_root()
    require_frr()
    if SPEAKER == "exabgp":
        require_exabgp()
    else:
        require_native_speaker()
    t.require_program("tcpdump")
    for b in ("dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl", "control/vxfedd", "control/vxfedctl",
              "cni/vxfed", "bgp/vxfed-reflector"):
        t.require_binary(b)


def dataplane_routes(bed: ScaleBed) -> dict[str, tuple[int, list[str]]]:
    """prefix -> (VNI, VTEPs) of every route in the node's dataplane."""
    return {r["prefix"]: (int(r["vni"]), sorted(h["vtep"] for h in r.get("next_hops", [])))
            for r in bed.node.dataplane.dump().get("tables", {}).get("routes", [])}


def check_blocks(bed: ScaleBed) -> int:
    """Every announced block (and the new one) in the dataplane with its VTEP and the VNI,
    nothing else, and vxfedd holding as many BGP routes; returns how many."""
    want = {p: (VNI, [v]) for p, v in bed.routes_a + bed.routes_b + [bed.new_block]}
    have = dataplane_routes(bed)
    missing = [p for p in want if p not in have]
    wrong = [(p, have[p], want[p]) for p in want if p in have and have[p] != want[p]]
    extra = [p for p in have if p not in want]
    assert not missing, f"{len(missing)} of {len(want)} blocks not in the dataplane, e.g. {missing[:3]}"
    assert not wrong, f"{len(wrong)} blocks with the wrong (VNI, VTEPs), e.g. {wrong[:3]}"
    assert not extra, f"{len(extra)} routes nobody announced, e.g. {extra[:3]}"
    bgp = [r for r in bed.node.vxfedd.routes() if r.get("source") == "bgp"]
    assert len(bgp) == len(want), f"vxfedd holds {len(bgp)} BGP routes, {len(want)} were announced"
    return len(want)


def two_reflectors(results: dict) -> None:
    """4: the same path with cluster-a's two reflectors, each sending the node every block."""
    with t.Topology("clscale2") as topo:
        bed = ScaleBed(topo, PER_CLUSTER_TWO_REFLECTORS, reflectors=2, speaker=SPEAKER)
        bed.up()
        base = bed.dataplane_routes()
        tl = run_once(bed, timeout=120, withdraw=False, log=t.log)
        received = bed.node_received()
        assert received == [bed.total + 1] * 2, \
            f"the node's bgpd holds {received} blocks from its reflectors, not {bed.total + 1} from each"
        blocks = check_blocks(bed)
        assert tl.new_forwarded is not None and tl.new_forwarded_vni == VNI, \
            f"the new block not forwarded with VNI {VNI} (first packet's VNI {tl.new_forwarded_vni})"
        bed.stop_speaker()
        took = bed.wait_dataplane(base, 60, "every block to leave the dataplane (two reflectors)")
        results["two_reflectors"] = {
            "blocks": blocks, "node_bgpd_received": received,
            "end_to_end_s": tl.since(tl.first_update_at_rr, tl.dataplane_all),
            "all_copies_at_node_s": tl.since(tl.first_update_at_rr, tl.all_copies_at_node),
            "new_block_to_forwarding_s": tl.since(tl.new_update_at_rr, tl.new_forwarded),
            "withdraw_all_s": round(took, 3)}
        t.log(f"two reflectors: {blocks} blocks in the dataplane once each, {received} in the node's bgpd; "
              f"all gone {took:.2f} s after the speaker stopped")


def main() -> None:
    require()
    results: dict = {"speaker": SPEAKER}
    t0 = time.monotonic()
    with t.Topology("clscale") as topo:
        bed = ScaleBed(topo, PER_CLUSTER, speaker=SPEAKER)
        bed.up()
        results["up_s"] = round(time.monotonic() - t0, 1)
        assert bed.node.vni_of(NETWORK) == VNI
        base = bed.dataplane_routes()
        t.log(f"up in {results['up_s']} s; the dataplane holds {base} routes before the speaker starts")

        # ---- 1 and 2: the burst, the new block ----
        tl = run_once(bed, timeout=120, withdraw=False, log=t.log)
        blocks = check_blocks(bed)
        assert tl.new_forwarded is not None, "no VXLAN packet to the new block's VTEP left the node"
        assert tl.new_forwarded_vni == VNI, f"the new block's packets carry VNI {tl.new_forwarded_vni}, not {VNI}"
        assert tl.new_update_at_rr is not None and tl.new_forwarded > tl.new_update_at_rr
        t.log(f"all {blocks} blocks in the dataplane with their VTEPs and VNI {VNI}; the new block forwarded "
              f"{tl.new_forwarded - tl.new_update_at_rr:.3f} s after its UPDATE reached the reflector")

        # ---- 3: the speaker goes away ----
        bed.stop_speaker()
        took = bed.wait_dataplane(base, 120, "every block to leave the dataplane")
        results.update({
            "blocks": blocks,
            "end_to_end_s": tl.since(tl.first_update_at_rr, tl.dataplane_all),
            "feed": bed.feed,
            "vxfed_share_s": tl.since(tl.feed_first, tl.dataplane_all),
            "new_block_to_forwarding_s": tl.since(tl.new_update_at_rr, tl.new_forwarded),
            "withdraw_all_s": round(took, 3),
            "memory_mb": tl.memory,
        })
    t1 = time.monotonic()
    two_reflectors(results)
    results["two_reflectors"]["took_s"] = round(time.monotonic() - t1, 1)
    results["total_s"] = round(time.monotonic() - t0, 1)
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    t.main_wrapper(main)
