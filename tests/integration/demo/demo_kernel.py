"""Integration: the demo topology over the Linux kernel's VXLAN path (the baseline every run
compares against). Two node namespaces joined by an MTU 9000 underlay, one pod namespace per
cluster. Asserts connectivity both ways, the 8950-byte pod MTU with DF (and that 8951 is
refused), UDP loss under the SLO, and that teardown leaves nothing."""

import vxfed_harness as tl

import demo_common as dc
from vxfed_harness.twocluster.kernel import KernelVariant
from vxfed_harness.twocluster.plan import make_plan


def main() -> None:
    dc.require_tools()
    v = KernelVariant(make_plan(9000, 2))

    def overlay_route_written() -> None:
        # The baseline's routes are written by hand (as flanneld/calico-node write them):
        # check that they are there, so that a later failure is not blamed on the wrong thing.
        routes = v.nodes["a"].run("ip route show 10.245.0.0/16").stdout
        assert "dev vxlan0" in routes and "onlink" in routes, f"node A has no overlay route: {routes!r}"

    dc.run_variant(v, v.up, overlay_route_written)


if __name__ == "__main__":
    tl.main_wrapper(main)
