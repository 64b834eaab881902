#!/usr/bin/env python3
"""The fault suite (perf/faults/run.py --nodes-per-cluster 1) on the federated topology: one
node per cluster, a route reflector per cluster, a three-member etcd holding the VNIs and node
blocks (harness/vxfed_harness/faults/topologies.py), four probe streams between the clusters'
pods, and three faults:
  - vxfedd SIGKILL + restart on node A (the state compared includes the store's keys);
  - reflector_kill (last: it first waits until every bgpd has run for two minutes, as peers of
    a reflector in production have, faults.reflector_kill_prepare): cluster A's reflector
    (zebra, bgpd, bfdd; a BGP view, as the bed renders them) SIGKILLed and started again: its
    node must dial it again and every session be back within REFLECTOR_BACK_BOUND_S, and no
    route may leave any dataplane meanwhile (sampled every 0.1 s);
  - etcd_member_kills: the leader SIGKILLed (quorum kept), a second member (quorum lost), both
    held, restarted with their data (faults/etcd_faults.py).
Asserts the invariants, not the timings:
  - nothing misdelivered, and zero loss in all three faults (forwarding and BGP never depend on
    etcd for existing traffic; a reflector's restart withdraws nothing its nodes still have);
  - after each fault the state (every node's VNIs, endpoints, routes, dataplane tables, and the
    store's networks, VNIs, node blocks, memberships) equals the state before, recovered within
    RECOVERY_BOUND_S;
  - etcd_member_kills' own checks passed (no error): while quorum was lost a new network and a
    block claim were refused with UNAVAILABLE naming the federation store, nothing they tried
    was left behind, afterwards both succeed with no VNI or block shared, every node's VNI and
    block equal the store's.
What fell short of docs/federation.md without breaking an invariant (the fault's
goal_shortfalls: answers slower than the clients' 5 s timeouts, pod ADDs failing while vxfedd's
store calls block it) is printed, not asserted; docs/faults.md has the figures.
"""

from __future__ import annotations

import json

import vxfed_harness as t
from vxfed_harness.faults.faults import BY_NAME
from vxfed_harness.faults.suite import FaultSuite, Options, invariant_failures, table
from vxfed_harness.frr import require_frr

FAULTS = ["vxfedd_sigkill", "etcd_member_kills", "reflector_kill"]
# Every fault is asserted hitless. reflector_kill was not (docs/faults.md, "A route reflector
# killed": 104.5 s of loss before the nodes dialed their restarted reflector, then 4,000-11,000
# datagrams, then ~100 while its End-of-RIB raced next-hop tracking, before it was a view).
REFLECTOR_BACK_BOUND_S = 30.0
RECOVERY_BOUND_S = 90.0


def require() -> None:
    t.require_root()
    require_frr(bfdd=True)
    for b in ("dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl", "control/vxfedd", "control/vxfedctl",
              "cni/vxfed", "bgp/vxfed-reflector"):
        t.require_binary(b)
    for prog in ("ip", "etcd", "etcdctl"):
        t.require_program(prog)


def main() -> None:
    require()
    suite = FaultSuite(Options(build_dir=t.BUILD_DIR, rate=500, recovery_timeout=RECOVERY_BOUND_S, baseline_s=3,
                               nodes_per_cluster=1, progress=t.log))
    try:
        suite.up()
        suite.baseline()
        for name in FAULTS:
            suite.run_fault(BY_NAME[name])
        suite.stop_probes()
        results = suite.analyse()
    finally:
        suite.close()
    print(table(results))
    assert results["baseline"]["sent"] > 0, "the probes sent nothing"
    failures = invariant_failures(results, RECOVERY_BOUND_S)
    for name, r in results.items():
        if name != "baseline" and r["lost"]:
            failures.append(f"{name}: {r['lost']} of {r['sent']} datagrams lost (longest gap "
                            f"{r['longest_gap_ms']:.0f} ms): must be hitless")
    rk = results["reflector_kill"]
    print("FAULT_REFLECTOR " + json.dumps({k: rk.get(k) for k in (
        "lost", "longest_gap_ms", "recovered_s", "waited_for_bgp_startup_s", "reflector_started_s", "sessions_back_s",
        "routes_withdrawn")}))
    back = rk.get("sessions_back_s")
    if back is None or back > REFLECTOR_BACK_BOUND_S:
        failures.append(f"reflector_kill: the nodes' sessions to the restarted reflector were not Established "
                        f"within {REFLECTOR_BACK_BOUND_S:.0f} s of the kill (sessions_back_s {back})")
    for w in rk.get("routes_withdrawn") or []:
        failures.append(f"reflector_kill: {w['prefix']} left {w['node']}'s dataplane {w['at_s']} s after the kill, "
                        f"for {w['for_s']} s")
    e = results["etcd_member_kills"]
    print("FAULT_ETCD " + json.dumps({k: e.get(k) for k in (
        "members_killed", "quorum_lost_s", "refusals", "pod_add_del_without_quorum", "api_without_quorum",
        "store_seen_again_s", "goal_shortfalls")}))
    assert e.get("refusals"), "etcd_member_kills recorded no refusals: the quorum-lost step did not run"
    assert not failures, "\n".join(failures)


if __name__ == "__main__":
    t.main_wrapper(main)
