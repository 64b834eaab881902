"""Integration: the demo topology over the Linux kernel's VXLAN path (the baseline every run
compares against). Two clusters of two node namespaces on an MTU 9000 underlay switch, one pod
namespace per node, every node routing every other node's block. Asserts connectivity between
every pod pair, the 8950-byte pod MTU with DF across clusters and between two nodes of a
cluster (and that 8951 is refused), UDP loss under the SLO, and that teardown leaves nothing."""

import vxfed_harness as tl

import demo_common as dc
from vxfed_harness.twocluster.kernel import KernelVariant
from vxfed_harness.twocluster.plan import make_plan


def main() -> None:
    dc.require_tools()
    plan = make_plan(9000, 1, nodes_per_cluster=2)
    v = KernelVariant(plan)

    def overlay_routes_written() -> None:
        # The baseline's routes are written by hand (as flanneld/calico-node write them):
        # check that they are there, so that a later failure is not blamed on the wrong thing.
        for other in plan.nodes[1:]:
            routes = v.nodes["a1"].run(f"ip route show {other.block}").stdout
            assert "dev vxlan0" in routes and "onlink" in routes, \
                f"node-a1 has no overlay route to node-{other.short}'s block {other.block}: {routes!r}"

    dc.run_variant(v, v.up, overlay_routes_written)


if __name__ == "__main__":
    tl.main_wrapper(main)
