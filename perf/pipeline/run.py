#!/usr/bin/env python3
"""Pipeline benchmark driver: cycles per packet (rdtsc, several runs) and instructions per
packet (callgrind) for encap and decap, 64 and 8950-byte frames, 10 and 130,000 routes.

  perf/pipeline/run.py [--build-dir build] [--runs 5] [--packets 4000000] [--underlay-vlan VID]
                       [--policy-rules N]

Needs the targets perf/pipeline/vxfed-pipeline-bench and vxfed-pipeline-bench-callgrind built
(`ninja -C build perf/pipeline/vxfed-pipeline-bench perf/pipeline/vxfed-pipeline-bench-callgrind`).
Writes perf/results/pipeline/<direction>-<frame>-<routes>.json (one per case) and
summary.json (all cases, plus the 130k/10-route ratios), and prints a table.

Instructions per packet: the callgrind build runs one case with no warm-up and a known number
of packets; only instructions inside process_pod_burst / process_uplink_burst are collected
(--toggle-collect), so the count is the pipeline's alone, divided by the packets.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]
FUNCTION = {"encap": "process_pod_burst", "decap": "process_uplink_burst"}


def instructions_per_packet(binary, direction, frame, routes, packets, extra=()):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
               f"--toggle-collect=vxfed::dataplane::{FUNCTION[direction]}*",
               str(binary), "--direction", direction, "--frame-bytes", str(frame),
               "--routes", str(routes), "--packets", str(packets), "--runs", "1",
               "--warmup", "0", "--no-json", *extra]
        res = subprocess.run(cmd, capture_output=True, text=True)
        m = re.search(r"Collected : ([\d,]+)", res.stderr)
        if res.returncode != 0 or not m:
            sys.exit(f"callgrind failed ({' '.join(cmd)}):\n{res.stderr[-2000:]}")
        return int(m.group(1).replace(",", "")) / packets


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=str(SOURCE / "build"))
    ap.add_argument("--out", default=str(SOURCE / "perf" / "results" / "pipeline"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--packets", type=int, default=4_000_000, help="packets per timed run")
    ap.add_argument("--callgrind-packets", type=int, default=128_000)
    ap.add_argument("--skip-callgrind", action="store_true")
    ap.add_argument("--underlay-vlan", type=int, default=-1,
                    help="tag encapsulated frames with this VLAN ID (the --underlay-vlan cost); -1: untagged")
    ap.add_argument("--policy-rules", type=int, default=0,
                    help="a NetworkPolicy of N rules on the VNI, flows tracked (the enforcement's cost); 0: none")
    args = ap.parse_args()
    build = Path(args.build_dir)
    bench = build / "perf/pipeline/vxfed-pipeline-bench"
    cg_bench = build / "perf/pipeline/vxfed-pipeline-bench-callgrind"
    for b in (bench, cg_bench):
        if not b.exists():
            sys.exit(f"{b} is not built")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    extra = ["--underlay-vlan", str(args.underlay_vlan), "--policy-rules", str(args.policy_rules)]
    subprocess.run([str(bench), "--out", str(out), "--runs", str(args.runs), "--packets", str(args.packets), *extra],
                   check=True)
    cases = []
    for f in sorted(out.glob("*-*-*.json")):
        case = json.loads(f.read_text())
        if not args.skip_callgrind:
            case["instructions_per_packet"] = round(instructions_per_packet(
                cg_bench, case["direction"], case["frame_bytes"], case["routes"], args.callgrind_packets, extra), 1)
            f.write_text(json.dumps(case, indent=2) + "\n")
        cases.append(case)
    by = {(c["direction"], c["frame_bytes"], c["routes"]): c for c in cases}
    ratios = []
    for (d, fb, r), c in sorted(by.items()):
        if r != 10 and (d, fb, 10) in by:
            base = by[(d, fb, 10)]
            # The bench alternates route counts run by run: run i of each is a pair, measured
            # within the same minute, so the pairs' median is robust to the machine's drift.
            paired = sorted(x / y for x, y in zip(c["runs"], base["runs"]))
            ratios.append({"direction": d, "frame_bytes": fb, "routes": r,
                           "cycles_ratio_vs_10_routes": round(c["cycles_per_packet"] / base["cycles_per_packet"], 3),
                           "cycles_ratio_paired_runs_median": round(paired[len(paired) // 2], 3),
                           "cycles_ratio_paired_runs": [round(x, 3) for x in paired],
                           "instructions_ratio_vs_10_routes": (round(c["instructions_per_packet"] / base["instructions_per_packet"], 3)
                                                               if c.get("instructions_per_packet") and base.get("instructions_per_packet") else None)})
    (out / "summary.json").write_text(json.dumps({"cases": cases, "route_scaling": ratios}, indent=2) + "\n")
    print(f"\n{'dir':6} {'frame':>6} {'routes':>7} {'cyc/pkt':>8} {'min':>7} {'max':>7} {'Mpps':>6} {'instr/pkt':>9}")
    for (d, fb, r), c in sorted(by.items()):
        print(f"{d:6} {fb:6} {r:7} {c['cycles_per_packet']:8.1f} {c['cycles_per_packet_min']:7.1f} "
              f"{c['cycles_per_packet_max']:7.1f} {c['mpps_one_core']:6.2f} {c.get('instructions_per_packet') or '-':>9}")
    for x in ratios:
        print(f"{x['direction']} {x['frame_bytes']} B: {x['routes']} routes / 10 routes: cycles x{x['cycles_ratio_vs_10_routes']} "
              f"(paired runs x{x['cycles_ratio_paired_runs_median']}), "
              f"instructions x{x['instructions_ratio_vs_10_routes']}")
    print(f"\nJSON: {out}/")


if __name__ == "__main__":
    main()
