#!/usr/bin/python3
"""The soak: the fault suite's topology for an hour under churn and restarts (not in CI).

    sudo perf/soak/run.py --build-dir build                     # one hour, the demo topology
    sudo perf/soak/run.py --build-dir build --minutes 5         # a short look
    sudo perf/soak/run.py --build-dir build --nodes-per-cluster 2

Brings up the fault suite's topology (harness/vxfed_harness/faults/: the demo's, or the
federated one with --nodes-per-cluster N) and its four UDP probe streams between the clusters'
pods, then for --minutes: pods added and removed through the CNI plugin on every node (one per
--pod-interval s, --pods-kept alive at once), node A's static routes rotated by SIGHUP every
--route-period s, node A's vxfedd SIGKILLed and restarted every --vxfedd-restart s and its
vxfed-dataplane every --dataplane-restart s (each at least once in any run), and the RSS and
open fds of every daemon sampled every --sample s (harness/vxfed_harness/soak/).

At the end: the nodes' links, addresses, pinned eBPF programs, IPAM reservations, CNI records,
vxfedd's records and the dataplane's tables compared with the start; nothing misdelivered;
every daemon's memory and fds flat (docs/faults.md, "Soak", defines flat). JSON with the time
series and the verdicts to --out (default perf/results/soak-<UTC time>.json), a table on the
terminal.

Exit status: 0 every check passed; 1 a check failed (or a daemon died during the soak);
2 usage; 3 the topology could not come up (the part is named); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

import vxfed_harness as tl
from vxfed_harness.faults.suite import FaultSuite, Options
from vxfed_harness.soak import inventory, report
from vxfed_harness.soak.soak import FD_TOLERANCE, RSS_TOLERANCE, WARMUP_S, Soak, SoakOptions

# 100 datagrams/s per stream, not the fault suite's 500: an hour of four streams is 1.44 M
# records for the analysis to hold in memory at this rate (7.2 M at 500/s), and a 10 ms
# spacing still shows any outage of the restarts.
RATE = 100.0


def loss_figures(suite: FaultSuite, soak: Soak) -> tuple[dict, list[dict]]:
    """The probes' figures over the whole soak and per restart (a window from the kill to a
    little after every node is ready again)."""
    suite.windows.append(("soak", soak.started, soak.ended))
    suite.results["soak"] = {"what": "the whole soak", "recovered_at": soak.started, "t0": soak.started,
                             "state_equal": True, "hitless_goal": False}
    for i, e in enumerate(soak.events):
        name = f"{e['kind']}#{i}"
        suite.windows.append((name, e["t0"], e["end"]))
        suite.results[name] = {"what": e["kind"], "recovered_at": e["end"], "t0": e["t0"], "state_equal": True,
                               "hitless_goal": False}
    res = suite.analyse()
    whole = res.pop("soak")
    keep = ("sent", "lost", "longest_gap_ms", "misdelivered", "duplicates", "reordered")
    events = []
    for i, e in enumerate(soak.events):
        r = res[f"{e['kind']}#{i}"]
        events.append({**{k: v for k, v in e.items() if k != "end"}, **{k: r[k] for k in keep}})
    in_events = sum(e["lost"] for e in events)
    return ({**{k: whole[k] for k in keep}, "per_stream": whole["per_stream"],
             "lost_outside_restarts": whole["lost"] - in_events}, events)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--build-dir", type=Path, default=tl.BUILD_DIR)
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--out", type=Path)
    p.add_argument("--nodes-per-cluster", type=int, metavar="N",
                   help="the federated topology with N (1-5) nodes per cluster; default: the demo topology")
    p.add_argument("--sample", type=float, default=10.0, help="seconds between RSS/fd samples")
    p.add_argument("--pod-interval", type=float, default=1.0, help="seconds between pod ADDs on each node")
    p.add_argument("--pods-kept", type=int, default=10, help="churned pods alive at once per node")
    p.add_argument("--route-period", type=float, default=15.0, help="seconds between static-route reloads")
    p.add_argument("--vxfedd-restart", type=float, default=240.0, help="seconds between vxfedd SIGKILLs")
    p.add_argument("--dataplane-restart", type=float, default=900.0, help="seconds between dataplane SIGKILLs")
    args = p.parse_args(argv)
    if args.minutes <= 0:
        p.error("--minutes must be positive")
    if args.nodes_per_cluster is not None and not 1 <= args.nodes_per_cluster <= 5:
        p.error(f"--nodes-per-cluster must be 1..5, got {args.nodes_per_cluster}")
    if args.pods_kept < 1 or args.pod_interval <= 0 or args.sample <= 0:
        p.error("--pods-kept, --pod-interval and --sample must be positive")
    if os.geteuid() != 0:
        sys.exit("soak: must run as root (network namespaces)")
    out = args.out or tl.SOURCE_DIR / "perf" / "results" / f"soak-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)

    def on_term(_signum, _frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    opts = SoakOptions(duration_s=args.minutes * 60, sample_s=args.sample, pod_interval_s=args.pod_interval,
                       pods_kept=args.pods_kept, route_period_s=args.route_period,
                       vxfedd_restart_s=args.vxfedd_restart, dataplane_restart_s=args.dataplane_restart)
    suite = FaultSuite(Options(build_dir=args.build_dir.resolve(), rate=RATE,
                               nodes_per_cluster=args.nodes_per_cluster, progress=tl.log))
    soak = Soak(suite, opts, tl.log)
    started = time.time()
    died = None
    left: list[str] = []
    try:
        try:
            suite.up()
        except tl.PartUnavailable as exc:
            tl.log(f"soak: NOT AVAILABLE: {exc}")
            return 3
        try:
            soak.run()
        except (tl.PartUnavailable, inventory.InventoryError) as exc:
            # A daemon died or a part could not be read: the soak stops there, still reported.
            died = str(exc)[:2000]
            tl.log(f"soak: stopped: {died}")
            soak.ended = soak.ended or time.time()
        if died is None:
            left = soak.finish()
        else:
            soak.stop_threads()
        suite.stop_probes()
        whole, events = loss_figures(suite, soak)
    except KeyboardInterrupt:
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        soak.stop_threads()          # no CNI call into a namespace being removed
        tl.log("soak: tearing down")
        suite.close()
    if soak.sampler is None or soak.routes is None:
        tl.log(f"soak: stopped before it began: {died}")
        return 1
    grow = soak.growth()
    churn = {c.label: c.figures(soak.ended - soak.started) for c in soak.churn}
    leaks = ({node: inventory.compare(soak.start_inventory[node], soak.end_inventory[node])
              for node in soak.start_inventory} if soak.end_inventory else {})
    rows = report.checks(whole["misdelivered"], leaks, grow, churn, soak.in_event, soak.routes.figures(),
                         soak.events)
    if died is not None:
        rows.insert(0, {"check": "soak ran to the end", "pass": False, "detail": died[:300]})
    if left:
        rows.append({"check": "churned pods removed", "pass": False, "detail": ", ".join(left[:10])})
    doc = {"config": {**vars(opts), "rate_per_stream": RATE, "streams": [pr.name for pr in suite.probes],
                      "build_dir": str(args.build_dir), "minutes": args.minutes,
                      "topology": {"kind": suite.t.kind, "nodes_per_cluster": args.nodes_per_cluster or 1,
                                   "description": suite.t.describe()},
                      "rss_tolerance_kib": vars(RSS_TOLERANCE), "fd_tolerance": vars(FD_TOLERANCE),
                      "warmup_s": WARMUP_S},
           "started_unix": started, "soak_started_unix": soak.started, "soak_s": round(soak.ended - soak.started, 1),
           "duration_s": round(time.time() - started, 1),
           "series_columns": ["unix_time", "pid", "rss_kib", "fds"], "series": soak.sampler.series,
           "dataplane_tables_bytes": soak.sampler.tables,
           "growth": grow, "probes": whole, "restarts": events, "pod_churn": churn,
           "route_churn": soak.routes.figures(), "leaks": leaks,
           "inventory_info": {n: {"start": soak.start_inventory[n]["info"],
                                  "end": (soak.end_inventory.get(n) or {}).get("info")}
                              for n in soak.start_inventory},
           "checks": rows, "pass": all(r["pass"] for r in rows)}
    out.write_text(json.dumps(doc, indent=1, sort_keys=True))
    print(report.series_table(grow, soak.sampler.series))
    print(report.tables_line(soak.sampler.tables))
    print(f"\nprobes: {whole['sent']} sent, {whole['lost']} lost ({whole['lost_outside_restarts']} outside the "
          f"restarts), longest gap {whole['longest_gap_ms']:.1f} ms, {whole['misdelivered']} misdelivered, "
          f"{whole['duplicates']} duplicated, {whole['reordered']} reordered")
    for e in events:
        print(f"  {e['kind']:9} at {e['at_s']:6.0f} s: ready in "
              f"{'-' if e['ready_s'] is None else format(e['ready_s'], '.1f')} s, lost {e['lost']}, "
              f"longest gap {e['longest_gap_ms']:.1f} ms")
    print()
    print(report.table(rows))
    print(f"JSON: {out}")
    return 0 if doc["pass"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
