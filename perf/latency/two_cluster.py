#!/usr/bin/python3
"""Brings up the two-cluster demo topology and keeps it up, for poking at by hand; tears it
down on Ctrl-C, SIGTERM or when the given command ends.

    sudo perf/latency/two_cluster.py --variant kernel                  # up until Ctrl-C
    sudo perf/latency/two_cluster.py --variant ours --pods 2 --nodes-per-cluster 3
    sudo perf/latency/two_cluster.py --variant kernel -- ip netns list  # run a command, then down
    sudo perf/latency/two_cluster.py --variant underlay                # the same pods, no overlay

While it is up, the namespace names and pod addresses are printed, e.g.
    ip netns exec vxdkern-podA0-12345 ping 10.245.0.10
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

import vxfed_harness as tl
from vxfed_harness.twocluster import path_checks
from vxfed_harness.twocluster.kernel import KernelVariant
from vxfed_harness.twocluster.plan import make_plan
from vxfed_harness.twocluster.underlay import UnderlayVariant

SOURCE_DIR = tl.SOURCE_DIR


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", choices=("kernel", "ours", "underlay"), default="kernel")
    p.add_argument("--mtu", type=int, choices=(9000, 1500), default=9000)
    p.add_argument("--nodes-per-cluster", type=int, default=2, help="1..5 (default 2)")
    p.add_argument("--pods", type=int, default=1, help="pods per node (default 1)")
    p.add_argument("--build-dir", type=Path, default=tl.BUILD_DIR)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- command to run while it is up")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("two_cluster: must run as root")
    plan = make_plan(args.mtu, args.pods, args.nodes_per_cluster)
    if args.variant == "kernel":
        v = KernelVariant(plan)
    elif args.variant == "underlay":
        v = UnderlayVariant(plan)
    else:
        from vxfed_harness.twocluster.federated import FederatedVariant
        v = FederatedVariant(plan, build_dir=args.build_dir, source_dir=SOURCE_DIR)

    def on_term(signum, _frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    status = 0
    try:
        v.up()
        path_checks.check(v)
        for short, ns in v.nodes.items():
            tl.log(f"node-{short}: {ns.name}")
            for pod in v.pods[short[0]]:
                if pod.node == short:
                    tl.log(f"  {pod.name}: {pod.ns.name} {pod.ip}")
        cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
        if cmd:
            status = subprocess.run(cmd).returncode
        else:
            tl.log("up; Ctrl-C tears it down")
            signal.pause()
    except tl.PartUnavailable as exc:
        tl.log(f"{v.name}: NOT AVAILABLE: {exc}")
        status = 3
    except KeyboardInterrupt:
        status = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        tl.log("tearing down")
        v.close()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
