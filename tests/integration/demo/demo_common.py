"""What the demo's integration tests share: the checks that both variants must pass
(connectivity, MTU, the loss SLO, a clean teardown). Assertions are about behaviour, never
about timings."""

from __future__ import annotations

from typing import Callable

import vxfed_harness as tl
from vxfed_harness import leftovers
from vxfed_harness.latency import measure, report
from vxfed_harness.twocluster import path_checks
from vxfed_harness.twocluster.variant import Variant

# The loss SLO is asserted at a modest fixed rate: the test proves the path does not drop,
# it is not a throughput benchmark (that is perf/latency/latency_suite.py).
UDP_RATE = "200M"


def require_tools() -> None:
    tl.require_root()
    for tool in ("ip", "bridge", "ss", "nstat", "ping", "iperf3", "sockperf"):
        tl.require_program(tool)


def check_variant(v: Variant) -> None:
    """Every pod pair reachable, the pod MTU passes with DF and one byte more is refused,
    both directions; iperf3 UDP loss under the SLO."""
    plan = v.plan
    info = path_checks.check(v)
    tl.log(f"{v.name}: reachability ok for {info['pairs']}; {plan.pod_mtu}-byte DF ping ok, "
           f"{plan.pod_mtu + 1} refused")
    a, b = v.pods["a"][0], v.pods["b"][0]
    back = measure.df_ping(b, a, plan.pod_mtu)
    assert back.returncode == 0, f"{plan.pod_mtu}-byte DF ping B -> A failed: {back.stdout[-300:]}"
    opts = measure.SuiteOptions(duration=2, udp_rate=UDP_RATE)
    udp = measure.iperf3(a, b, opts, udp=True)
    tl.log(f"{v.name}: iperf3 UDP {UDP_RATE}bit/s: {udp['packets']} datagrams, {udp['lost_packets']} lost "
           f"({udp['loss_pct']:.4f}%), {udp['receiver_socket_drops']} dropped at the receiving socket")
    assert udp["packets"] > 1000, f"iperf3 sent too few datagrams to judge loss: {udp}"
    assert udp["sent_mbps"] >= report.OFFERED_RATE_MIN_SHARE * report.rate_mbps(UDP_RATE), \
        f"iperf3 did not reach the offered {UDP_RATE}bit/s, so loss at that rate is not shown: {udp}"
    assert udp["loss_pct"] < report.LOSS_SLO_PCT, \
        f"UDP loss {udp['loss_pct']:.4f}% >= SLO {report.LOSS_SLO_PCT}% at {UDP_RATE}bit/s: {udp}"
    pp = measure.sockperf_pingpong(a, b, measure.SuiteOptions(duration=1), v.workdir(), tcp=False)
    assert pp["summary"]["observations"] > 100 and pp["summary"].get("dropped", 0) == 0, \
        f"sockperf ping-pong did not run cleanly: {pp['summary']}"


def assert_torn_down(v: Variant, pids: set[int]) -> None:
    inv = leftovers.take([f"vx{v.tag()}-"], v.topo.suffix, pids, v.owned_paths())
    assert inv.empty(), f"teardown left objects behind: {inv.describe()}"
    tl.log(f"{v.name}: teardown left nothing ({inv.describe()})")


def run_variant(v: Variant, bring_up: Callable[[], None], variant_checks: Callable[[], None]) -> None:
    """The frame both demo tests share: bring_up(), the variant's own checks, the common
    checks, then teardown (always) and the assertion that it left nothing. On a failure the
    topology's logs are printed before teardown removes them."""
    pids: set[int] = set()
    try:
        bring_up()
        variant_checks()
        check_variant(v)
        pids = v.all_pids()
    except Exception:
        v.topo.dump_logs()
        raise
    finally:
        pids |= v.all_pids()
        v.close()
    assert_torn_down(v, pids)

