"""Integration: the demo topology over vxfed. Per node FRR + vxfed-dataplane + vxfedd, pods
made by the vxfed CNI plugin; asserts that each node learned the other cluster's pod CIDR over
BGP (source "bgp", next hop the peer's VTEP) and that FRR itself holds that route from its
eBGP peer, then the same checks as the kernel baseline: connectivity both ways, the 8950-byte
DF path, UDP loss under the SLO, and a clean teardown (CNI DEL, daemons, FRR, namespaces).

A missing part is a FAILURE here, not a skip: this test exists to prove the parts work
together. (Not being root is still a skip, which CI turns into a failure.)"""

import json
import sys

import vxfed_harness as tl

import demo_common as dc
from vxfed_harness.twocluster.plan import make_plan
from vxfed_harness.twocluster.vxfed import VxfedVariant, describe_missing, missing_components


def main() -> None:
    dc.require_tools()
    missing = missing_components(tl.BUILD_DIR, tl.SOURCE_DIR)
    if missing:
        names, detail = describe_missing(missing)
        print(f"FAIL: the vxfed variant cannot run, missing: {names}\n  {detail}", file=sys.stderr)
        sys.exit(1)
    plan = make_plan(9000, 1)
    v = VxfedVariant(plan, build_dir=tl.BUILD_DIR, source_dir=tl.SOURCE_DIR, up_timeout=60)

    def bring_up() -> None:
        try:
            v.up()
        except tl.PartUnavailable as exc:
            raise AssertionError(f"the vxfed variant did not come up: {exc.component}: {exc.reason}") from None

    def routes_learned_over_bgp() -> None:
        for c in plan.clusters:
            peer = plan.peer_of(c)
            route = v.learned_route(c, peer.pod_cidr)
            assert route is not None, f"node {c.name.upper()} has no BGP route to {peer.pod_cidr}"
            assert peer.underlay_ip in route.get("vteps", []), \
                f"node {c.name.upper()}: route to {peer.pod_cidr} does not point at {peer.underlay_ip}: {route}"
            shown = v.vx_nodes[c.name].vtysh(f"show bgp ipv4 unicast {peer.pod_cidr} json")
            doc = json.loads(shown or "{}")
            paths = doc.get("paths", [])
            assert any(p.get("peer", {}).get("peerId") == peer.underlay_ip for p in paths), \
                f"FRR on node {c.name.upper()} did not learn {peer.pod_cidr} from {peer.underlay_ip}: {shown[-500:]}"
            tl.log(f"node {c.name.upper()}: {peer.pod_cidr} learned over eBGP from AS {peer.asn}, "
                   f"vxfedd route {route}")

    dc.run_variant(v, bring_up, routes_learned_over_bgp)


if __name__ == "__main__":
    tl.main_wrapper(main)
