#!/usr/bin/python3
"""The fault suite: what pods see while parts of a node die and restart.

    sudo perf/faults/run.py --build-dir build                       # every fault, ~2 min
    sudo perf/faults/run.py --build-dir build --faults vxfedd_sigkill,dataplane_sigkill
    sudo perf/faults/run.py --build-dir build --nodes-per-cluster 1 --faults etcd_member_kills
    sudo perf/faults/run.py --list

Brings up a two-cluster topology with two pods per cluster: by default the demo's (vxfed, one
node per cluster, direct eBGP, no federation store); with --nodes-per-cluster N the federated
one (N nodes per cluster, a route reflector per cluster, a three-member etcd). Runs four
fixed-rate UDP probe streams between the clusters' pods, and injects the faults one at a time
with recovery between (harness/vxfed_harness/faults/). Writes JSON (one object per fault under
`faults`) to --out (default perf/results/faults-<UTC time>.json), a timeline PNG per fault
beside it (<name>-<fault>.png), and prints a table.

Exit status: 0 every goal met; 1 a goal not met (or anything misdelivered); 2 usage (also a
fault that does not apply to the topology, named with the reason); 3 the topology could not
come up (the part is named); 130 interrupted (after teardown).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import vxfed_harness as tl
from vxfed_harness.faults import plots
from vxfed_harness.faults.faults import BY_NAME, FAULTS
from vxfed_harness.faults.suite import FaultSuite, Options, table


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--build-dir", type=Path, default=tl.BUILD_DIR)
    p.add_argument("--out", type=Path)
    p.add_argument("--faults", default="all", help="comma list of fault names (--list), or all")
    p.add_argument("--rate", type=float, default=500.0, help="datagrams per second per stream (4 streams)")
    p.add_argument("--churn-pods", type=int, default=20, help="pods added and removed per node by pod_churn")
    p.add_argument("--recovery-timeout", type=float, default=90.0)
    p.add_argument("--no-plots", action="store_true", help="no timeline PNGs (gnuplot)")
    p.add_argument("--no-ping", action="store_true", help="no ping-pong latency probe (ping -i 0.01, pod A0 -> B0)")
    p.add_argument("--no-tcp", action="store_true", help="no TCP probe (iperf3 at 50 Mbit/s, pod A0 -> B0)")
    p.add_argument("--nodes-per-cluster", type=int, metavar="N",
                   help="the federated topology with N (1-5) nodes per cluster, a route reflector per cluster and a "
                        "three-member etcd; default: the demo topology (one node per cluster, direct eBGP, no etcd)")
    p.add_argument("--list", action="store_true", help="print the faults and exit")
    args = p.parse_args(argv)
    if args.list:
        for f in FAULTS:
            where = "" if len(f.topologies) > 1 else f"  [{', '.join(f.topologies)} topology only]"
            print(f"{f.name:26} {f.what}{where}")
        return 0
    if args.nodes_per_cluster is not None and not 1 <= args.nodes_per_cluster <= 5:
        p.error(f"--nodes-per-cluster must be 1..5 (the underlay plan's room), got {args.nodes_per_cluster}")
    kind = "federated" if args.nodes_per_cluster is not None else "demo"
    # "all" is every fault that applies to the topology; one named explicitly that does not is refused.
    names = ([f.name for f in FAULTS if kind in f.topologies] if args.faults == "all"
             else [n.strip() for n in args.faults.split(",") if n.strip()])
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        p.error(f"unknown fault(s) {', '.join(unknown)}; --list shows them")
    if os.geteuid() != 0:
        sys.exit("faults: must run as root (network namespaces)")
    out = args.out or tl.SOURCE_DIR / "perf" / "results" / f"faults-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)

    def on_term(_signum, _frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    suite = FaultSuite(Options(build_dir=args.build_dir.resolve(), rate=args.rate, churn_pods=args.churn_pods,
                               recovery_timeout=args.recovery_timeout, ping=not args.no_ping, tcp=not args.no_tcp,
                               nodes_per_cluster=args.nodes_per_cluster, progress=tl.log))
    started = time.time()
    status = 0
    try:
        refusals = [BY_NAME[n].refusal(suite.t) for n in names]
        if any(refusals):
            for r in filter(None, refusals):
                tl.log(f"faults: refused: {r}")
            return 2
        suite.up()
        suite.baseline()
        for n in names:
            suite.run_fault(BY_NAME[n])
        suite.stop_probes()
        results = suite.analyse()
    except tl.PartUnavailable as exc:
        tl.log(f"faults: NOT AVAILABLE: {exc}")
        return 3
    except KeyboardInterrupt:
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        tl.log("faults: tearing down")
        suite.close()
    doc = {"faults": {k: v for k, v in results.items() if k != "baseline"}, "baseline": results.get("baseline"),
           "config": {"rate_per_stream": args.rate, "streams": [pr.name for pr in suite.probes],
                      "churn_pods": args.churn_pods, "faults": names, "build_dir": str(args.build_dir),
                      "topology": {"kind": suite.t.kind, "nodes_per_cluster": args.nodes_per_cluster or 1,
                                   "description": suite.t.describe()}},
           "started_unix": started, "duration_s": round(time.time() - started, 1)}
    if not args.no_plots:
        try:
            doc["plots"] = [str(pth) for pth in plots.render(suite.timelines, out.with_suffix(""), args.rate)]
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            doc["plots"] = []
            tl.log(f"faults: no timeline plots: {exc}")
    out.write_text(json.dumps(doc, indent=1, sort_keys=True))
    print(table(results))
    for name, r in results.items():
        for note in r.get("notes") or []:
            print(f"  {name}: {note}")
        for shortfall in r.get("goal_shortfalls") or []:
            print(f"  {name}: short of the goal: {shortfall}")
        if r.get("error"):
            print(f"  {name}: error: {r['error']}")
        if not r.get("state_equal", True):
            print(f"  {name}: state differs: {json.dumps(r.get('state_diff'))[:600]}")
    print(f"JSON: {out}")
    if any(r["misdelivered"] for r in results.values()) or not all(
            r["goal_met"] for k, r in results.items() if k != "baseline"):
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
