#!/usr/bin/env python3
"""TCP and UDP through a pod's rate limits, over a matrix of rate x burst x mode x direction.

The long measurement behind docs/cni.md ("Bandwidth") and docs/bpf.md ("Rate limits"); the
short check in CI is tests/integration/bpf/bpf_pod_limits.py. Topology as there: namespace
"pod" (eth0) <-veth-> namespace "peer"; vxfed-bpf attaches the limits inside "pod" with
--egress-mode/--ingress-mode MODE (shape: the default tbf queues; police: the token bucket
that drops). Each cell: RUNS iperf3 runs of SECONDS (the first second omitted), min/median/max
of what the receiver got. JSON goes to perf/results/pod_limits_<time>.json.

  /usr/bin/python3 perf/bpf/pod_limits_matrix.py [--rates 10e6,1e9] [--bursts 1e6,10e6]
      [--modes shape,police] [--runs 3] [--seconds 3] [--udp]
"""
import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

from vxfed_harness import Topology, log, main_wrapper, require_binary, require_program, require_root


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default="10e6,100e6,1e9")
    ap.add_argument("--bursts", default="1e6,10e6")
    ap.add_argument("--modes", default="shape,police")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--udp", action="store_true", help="also UDP offered at 5x the rate (one run per cell)")
    a = ap.parse_args()
    require_root()
    tool = require_binary("bpf/vxfed-bpf")
    require_program("iperf3")
    pin_root = f"/sys/fs/bpf/vxfed-perf-{os.getpid()}"
    key = f"perf-{os.getpid()}"
    cells = []
    try:
        with Topology("bpfmx") as topo:
            pod, peer = topo.netns("pod"), topo.netns("peer")
            topo.veth(pod, "eth0", peer, "eth0")
            pod.run("ip addr add 10.244.78.1/24 dev eth0")
            peer.run("ip addr add 10.244.78.2/24 dev eth0")
            port = [6201 + os.getpid() % 500]

            def iperf(reverse: bool, udp_bits: int = 0) -> float:
                port[0] += 1
                server = peer.spawn(["iperf3", "-s", "-1", "-p", str(port[0])], name=f"iperf3-s{port[0]}")
                time.sleep(0.4)
                args = ["iperf3", "-c", "10.244.78.2", "-p", str(port[0]), "-t", str(a.seconds), "-O", "1", "-J"]
                if reverse:
                    args.append("-R")
                if udp_bits:
                    args += ["-u", "-b", str(udp_bits)]
                out = pod.run(args, timeout=120)
                server.wait(timeout=10)
                return json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"]

            for mode in a.modes.split(","):
                for rate in (int(float(r)) for r in a.rates.split(",")):
                    for burst in (int(float(b)) for b in a.bursts.split(",")):
                        bw = {"ingressRate": rate, "ingressBurst": burst, "egressRate": rate, "egressBurst": burst}
                        # Detach first: a change of mode on the same key must start from nothing.
                        subprocess.run([str(tool), "--pin-root", pin_root, "detach", "--pod-key", key], check=True)
                        subprocess.run([str(tool), "--pin-root", pin_root, "--egress-mode", mode, "--ingress-mode",
                                        mode, "attach", "--netns", f"/run/netns/{pod.name}", "--ifname", "eth0",
                                        "--pod-key", key, "--rules", "none", "--bandwidth", json.dumps(bw)],
                                       check=True, capture_output=True)
                        kinds = [("tcp", 0)] + ([("udp", 5 * rate)] if a.udp else [])
                        for proto, udp in kinds:
                            for direction, reverse in (("egress", False), ("ingress", True)):
                                runs = [iperf(reverse, udp) for _ in range(a.runs if not udp else 1)]
                                cell = {"mode": mode, "rate": rate, "burst": burst, "proto": proto,
                                        "direction": direction, "runs_bps": runs, "min": min(runs),
                                        "median": statistics.median(runs), "max": max(runs)}
                                cells.append(cell)
                                log(f"{mode:6} {rate / 1e6:7.0f} Mbit/s burst {burst / 1e6:5.1f} Mbit {proto} "
                                    f"pod {direction:7}: min/median/max {cell['min'] / 1e6:.2f}/"
                                    f"{cell['median'] / 1e6:.2f}/{cell['max'] / 1e6:.2f} Mbit/s "
                                    f"({100 * (cell['median'] / rate - 1):+.1f}%)")
            subprocess.run([str(tool), "--pin-root", pin_root, "detach", "--pod-key", key], check=True)
    finally:
        subprocess.run(["rm", "-rf", pin_root], check=False)
    out = Path(__file__).resolve().parents[1] / "results" / f"pod_limits_{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"seconds": a.seconds, "cells": cells}, indent=1))
    log(f"wrote {out}")


if __name__ == "__main__":
    main_wrapper(main)
