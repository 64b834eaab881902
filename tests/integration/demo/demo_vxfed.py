"""Integration: the demo topology over vxfed, as the demo and the latency suite run it: two
clusters of two nodes, each node FRR + vxfed-dataplane + vxfedd, a route reflector per cluster,
a three-member etcd (harness/vxfed_harness/twocluster/federated.py); pods made by the vxfed
CNI plugin from their node's block. Asserts that every node learned every other node's block
over BGP (source "bgp", next hop that node's VTEP, also across clusters: the reflectors keep
the next hops) and that FRR holds it from its cluster's reflector, the VNI is the same on every
node, then the same checks as the kernel baseline: connectivity between every pod pair, the
8950-byte DF path across clusters and between two nodes of a cluster, UDP loss under the SLO,
and a clean teardown (CNI DEL, daemons, FRR, etcd, namespaces).

A missing part is a FAILURE here, not a skip: this test exists to prove the parts work
together. (Not being root is still a skip, which CI turns into a failure.)"""

import json
import sys

import vxfed_harness as tl

import demo_common as dc
from vxfed_harness.federation_bed import NETWORK
from vxfed_harness.twocluster.federated import FederatedVariant, missing_components
from vxfed_harness.twocluster.plan import make_plan
from vxfed_harness.twocluster.vxfed import describe_missing


def main() -> None:
    dc.require_tools()
    missing = missing_components(tl.BUILD_DIR, tl.SOURCE_DIR)
    if missing:
        names, detail = describe_missing(missing)
        print(f"FAIL: the vxfed variant cannot run, missing: {names}\n  {detail}", file=sys.stderr)
        sys.exit(1)
    plan = make_plan(9000, 1, nodes_per_cluster=2)
    v = FederatedVariant(plan, build_dir=tl.BUILD_DIR, source_dir=tl.SOURCE_DIR, up_timeout=90)

    def bring_up() -> None:
        try:
            v.up()
        except tl.PartUnavailable as exc:
            raise AssertionError(f"the vxfed variant did not come up: {exc.component}: {exc.reason}") from None

    def blocks_learned_over_bgp() -> None:
        assert len(set(v.blocks.values())) == len(plan.nodes), f"blocks not distinct: {v.blocks}"
        for n in plan.nodes:
            node = v.vx_node(n.short)
            assert node.vni_of(NETWORK) == v.vni, f"node-{n.short}: another VNI than {v.vni}"
            rr = next(c.reflector_ip for c in plan.clusters if c.name == n.cluster)
            for other in plan.nodes:
                if other is n:
                    continue
                block = v.blocks[other.short]
                route = node.bgp_route(block)
                assert route is not None and route.get("vteps") == [other.underlay_ip], \
                    f"node-{n.short}: BGP route to node-{other.short}'s block {block}: {route}"
                doc = json.loads(node.vtysh(f"show bgp ipv4 unicast {block} json") or "{}")
                paths = doc.get("paths", [])
                assert any(p.get("peer", {}).get("peerId") == rr for p in paths), \
                    f"FRR on node-{n.short} did not learn {block} from its reflector {rr}: {doc}"
            tl.log(f"node-{n.short}: every other node's block learned from its reflector {rr}, next hops kept")

    dc.run_variant(v, bring_up, blocks_learned_over_bgp)


if __name__ == "__main__":
    tl.main_wrapper(main)
