"""Integration: the demo topology with no overlay at all, the underlay baseline both overlays'
overhead is measured against (issue 35). The same nodes, underlay switch, pods, veths and
8950-byte pod MTU as the kernel VXLAN variant, but every node routes every other node's block
straight over ul0. Asserts that no node has a vxlan device and every node's route to every
other block goes via that node's underlay address on ul0, then the checks every variant
passes: connectivity between every pod pair, the 8950-byte DF path across clusters and
between two nodes of a cluster (8951 refused), UDP loss under the SLO, a clean teardown."""

import vxfed_harness as tl

import demo_common as dc
from vxfed_harness.twocluster.plan import make_plan
from vxfed_harness.twocluster.underlay import UnderlayVariant


def main() -> None:
    dc.require_tools()
    plan = make_plan(9000, 1, nodes_per_cluster=2)
    v = UnderlayVariant(plan)

    def routed_without_encapsulation() -> None:
        for n in plan.nodes:
            node = v.nodes[n.short]
            tunnels = node.run(["ip", "-o", "link", "show", "type", "vxlan"]).stdout.strip()
            assert not tunnels, f"node-{n.short} has a vxlan device in the underlay variant: {tunnels!r}"
            for other in plan.nodes:
                if other is n:
                    continue
                route = node.run(["ip", "route", "show", other.block]).stdout
                assert f"via {other.underlay_ip} dev ul0" in route, \
                    f"node-{n.short}: no underlay route to node-{other.short}'s block {other.block}: {route!r}"
        tl.log(f"underlay: no vxlan device; every node routes the {len(plan.nodes) - 1} other blocks over ul0")

    dc.run_variant(v, v.up, routed_without_encapsulation)


if __name__ == "__main__":
    tl.main_wrapper(main)
