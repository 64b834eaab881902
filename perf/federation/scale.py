#!/usr/bin/python3
"""Scale of many nodes per cluster: 130,000 node-block routes through a route reflector into one
vxfed node's dataplane, and one new node block after them.

    sudo perf/federation/scale.py --build-dir build                    # 130,000 routes, 3 runs
    sudo perf/federation/scale.py --build-dir build --routes 20000 --runs 2
    sudo perf/federation/scale.py --build-dir build --vteps 100        # routes sharing 100 VTEPs per cluster
    sudo perf/federation/scale.py --build-dir build --reflectors 2     # the node peers with two reflectors
    sudo perf/federation/scale.py --build-dir build --speaker exabgp   # ExaBGP as the speaker (before)

The bed (harness/vxfed_harness/scale_bed.py): a BGP speaker stands for the other nodes of both
clusters (--speaker native: vxfed-scale-speaker, perf/federation/speaker/, the default;
--speaker exabgp: ExaBGP, which at 130,000 routes was the bottleneck: docs/federation.md, "Scale") (half the routes as an iBGP client of the reflector, half as the other cluster's
reflector over eBGP), each route a /26 block with a VTEP of its own; the reflector is FRR with
vxfed-reflector's config; the node runs FRR (bgpd as a view feeding vxfedd over BMP; with
--feed fpm bgpd + zebra's FPM stream, the path before), vxfedd, vxfed-dataplane and a CNI pod. Each run (harness/vxfed_harness/scale_run.py) starts the speaker, waits until the
dataplane holds every route, announces one more block while the pod sends to it, and stops the
speaker (every route withdrawn) before the next run.

With --reflectors 2 cluster-a has a second reflector (rendered like the first, its own router
id), the speaker sends every block to both and the node peers with both: FRR 8.4's BMP has no
Loc-RIB monitoring, so the node's bgpd sends vxfedd each route once per reflector. The speaker
is then one speaker process per reflector (--speakers 1: one process with all four sessions).

JSON to --out (default perf/results/federation-scale-<UTC time>.json): per run the timeline,
medians with min/max over runs, the daemons' memory, the load average, and `goals` (the
scale issue's: 130k end to end < 5 s (must: < 8 s), vxfed's part after the feed's last message
< 0.3 s, withdrawing all < 5 s, a new block forwarding < 0.15 s after its UPDATE reached the
reflector, bgpd + zebra + vxfedd <= 300 MB and vxfedd <= 100 MB on the node; with
--reflectors 2 the end-to-end goal is the issue's for two reflectors, < 8 s) with met
true/false (null: not measured). Keys of the feed's own times carry its name: bmp_first_s,
bmp_last_s (the first and last segment of bgpd's BMP stream to vxfedd carrying the burst), or
fpm_* with --feed fpm. Exit status 0 none unmet, 1 not, 3 the bed did
not come up.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import vxfed_harness as tl
from vxfed_harness.exabgp import require_exabgp
from vxfed_harness.native_speaker import require_native_speaker
from vxfed_harness.frr import require_frr
from vxfed_harness.latency.report import spread
from vxfed_harness.scale_bed import ScaleBed
from vxfed_harness.scale_run import Timeline, run_once

# The scale issue's goals (docs/federation.md, "Scale").
GOAL_END_TO_END_S = 5.0
GOAL_END_TO_END_MUST_S = 8.0
GOAL_VXFED_AFTER_FEED_S = 0.3
GOAL_WITHDRAW_ALL_S = 5.0
GOAL_NEW_BLOCK_S = 0.15
GOAL_NODE_MEMORY_MB = 300.0     # bgpd + zebra + vxfedd
GOAL_VXFEDD_MEMORY_MB = 100.0
# With two reflectors (each route reaches the node twice: no Loc-RIB monitoring in FRR 8.4's
# BMP) the issue asks < 8 s end to end; its memory goals are stated for this case already.
GOAL_END_TO_END_TWO_REFLECTORS_S = 8.0


def figures(t: Timeline, feed: str) -> dict:
    """One run's figures in seconds, each from the run's timeline (scale_run.py says where
    each time is taken). `feed`: bmp or fpm, the name of the feed's keys."""
    t0 = t.first_update_at_rr
    return {
        # the issue's
        "end_to_end_s": t.since(t0, t.dataplane_all),
        "vxfed_share_s": t.since(t.feed_first, t.dataplane_all),
        "new_block_to_forwarding_s": t.since(t.new_update_at_rr, t.new_forwarded),
        # where the time goes, each from the first UPDATE's arrival at the reflector
        "speaker_last_update_s": t.since(t0, t.last_update_at_rr),
        "reflector_first_to_node_s": t.since(t0, t.rr_first_to_node),
        "reflector_last_to_node_s": t.since(t0, t.rr_last_to_node),
        f"{feed}_first_s": t.since(t0, t.feed_first),
        f"{feed}_last_s": t.since(t0, t.feed_last),
        # vxfed's part that does not overlap the feed's stream
        f"vxfed_after_last_{feed}_s": t.since(t.feed_last, t.dataplane_all),
        "dataplane_poll_resolution_s": t.since(t.dataplane_previous_poll, t.dataplane_all),
        # two reflectors: the node's bgpd holding every block from both (polled, ~0.1 s late)
        "all_copies_at_node_s": t.since(t0, t.all_copies_at_node),
        "speaker_start_to_first_update_s": t.since(t.speaker_started, t0),
        # the new block, stage by stage from its UPDATE's arrival at the reflector
        "new_block_reflector_to_node_s": t.since(t.new_update_at_rr, t.new_rr_to_node),
        f"new_block_{feed}_s": t.since(t.new_update_at_rr, t.new_feed),
        "new_block_in_dataplane_s": t.since(t.new_update_at_rr, t.new_in_dataplane),
        "withdraw_all_s": t.since(t.speaker_stopped, t.withdrawn_all),
    }


def loadavg() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


def git_commit() -> str:
    res = subprocess.run(["git", "-C", str(tl.SOURCE_DIR), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True)
    return res.stdout.strip()


def summarize(runs: list[dict], memory: list[dict], routes: int, feed: str, reflectors: int = 1) -> dict:
    keys = runs[0]["figures"].keys()
    sp = {k: spread([r["figures"][k] for r in runs if r["figures"][k] is not None]) for k in keys}
    out = {k: {"median": s.median, "min": s.minimum, "max": s.maximum} for k, s in sp.items()}
    mem = {}
    for proc in memory[0] if memory else []:
        for kind in ("rss_mb", "hwm_mb"):
            mem[f"{proc}_{kind}"] = max(m[proc][kind] for m in memory)
    suffix = f"_{routes // 1000}k"
    e2e, share, new = sp["end_to_end_s"], sp["vxfed_share_s"], sp["new_block_to_forwarding_s"]
    after, withdraw = sp[f"vxfed_after_last_{feed}_s"], sp["withdraw_all_s"]
    node_mb = None
    if all(mem.get(f"{p}_rss_mb") is not None for p in ("node_bgpd", "node_zebra", "vxfedd")):
        node_mb = round(mem["node_bgpd_rss_mb"] + mem["node_zebra_rss_mb"] + mem["vxfedd_rss_mb"], 1)
    head = {
        "feed": feed, "reflectors": reflectors,
        f"end_to_end_s{suffix}": e2e.median, f"vxfed_share_s{suffix}": share.median,
        f"vxfed_after_last_{feed}_s": after.median, "withdraw_all_s": withdraw.median,
        "new_block_to_forwarding_s": new.median,
        "frr_bgpd_rss_mb": mem.get("node_bgpd_rss_mb"), "frr_zebra_rss_mb": mem.get("node_zebra_rss_mb"),
        "reflector_bgpd_rss_mb": mem.get("reflector_bgpd_rss_mb"),
        "reflector_zebra_rss_mb": mem.get("reflector_zebra_rss_mb"),
        **({"reflector2_bgpd_rss_mb": mem.get("reflector2_bgpd_rss_mb"),
            "reflector2_zebra_rss_mb": mem.get("reflector2_zebra_rss_mb")} if reflectors == 2 else {}),
        "vxfedd_rss_mb": mem.get("vxfedd_rss_mb"), "dataplane_rss_mb": mem.get("dataplane_rss_mb"),
        "node_bgpd_zebra_vxfedd_rss_mb": node_mb,
    }

    timed_out = [r for r in runs if r["timeline"]["timed_out"]]

    def met(s, limit):
        """On the median over runs (docs/conventions.md: measuring); every_run says whether
        the slowest run met it too."""
        if timed_out:
            return False
        return None if s.median is None else bool(s.median < limit)

    def every(s, limit):
        return False if timed_out else (None if s.maximum is None else bool(s.maximum < limit))

    def goal(s, limit) -> dict:
        return {"met": met(s, limit), "every_run": every(s, limit), "median_s": s.median, "max_s": s.maximum,
                "limit_s": limit}

    # A run that timed out never announced the new block: not measured rather than not met.
    new_goal = {"met": None if new.median is None else bool(new.median < GOAL_NEW_BLOCK_S),
                "every_run": None if new.maximum is None else bool(new.maximum < GOAL_NEW_BLOCK_S),
                "median_s": new.median, "max_s": new.maximum, "limit_s": GOAL_NEW_BLOCK_S}
    unfinished = [r for r in runs if r["timeline"]["withdraw_timed_out"]]
    withdraw_goal = goal(withdraw, GOAL_WITHDRAW_ALL_S)
    if unfinished:     # a withdrawal that never finished is not met, whatever the others took
        withdraw_goal.update(met=False, every_run=False, not_finished_runs=len(unfinished))
    stopped = [{"after_s": r["timeline"]["progress"][-1][0], "routes_in_dataplane": r["timeline"]["progress"][-1][1]}
               for r in timed_out if r["timeline"]["progress"]]
    if reflectors == 2:
        end_to_end = {"end_to_end_under_8s_two_reflectors": dict(goal(e2e, GOAL_END_TO_END_TWO_REFLECTORS_S),
                                                                 routes=routes, timed_out=stopped)}
    else:
        end_to_end = {"end_to_end_under_5s": dict(goal(e2e, GOAL_END_TO_END_S), routes=routes, timed_out=stopped),
                      "end_to_end_under_8s_must": goal(e2e, GOAL_END_TO_END_MUST_S)}
    goals = {
        **end_to_end,
        f"vxfed_after_last_{feed}_under_0.3s": goal(after, GOAL_VXFED_AFTER_FEED_S),
        "withdraw_all_under_5s": withdraw_goal,
        "new_block_under_0.15s": new_goal,
        "node_memory_under_300mb": {"met": None if node_mb is None else node_mb <= GOAL_NODE_MEMORY_MB,
                                    "rss_mb": node_mb, "limit_mb": GOAL_NODE_MEMORY_MB},
        "vxfedd_memory_under_100mb": {"met": None if mem.get("vxfedd_rss_mb") is None
                                      else mem["vxfedd_rss_mb"] <= GOAL_VXFEDD_MEMORY_MB,
                                      "rss_mb": mem.get("vxfedd_rss_mb"), "limit_mb": GOAL_VXFEDD_MEMORY_MB},
    }
    return {"headline": head, "figures": out, "memory_mb": mem, "goals": goals}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--build-dir", type=Path, default=tl.BUILD_DIR)
    p.add_argument("--out", type=Path)
    p.add_argument("--routes", type=int, default=130000, help="node blocks in all, half per cluster")
    p.add_argument("--vteps", type=int, default=0,
                   help="VTEPs per cluster the blocks are spread over (default 0: one per block, as real nodes)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--timeout", type=float, default=1800, help="seconds a run may take to get every route in")
    p.add_argument("--poll", type=float, default=0.1, help="seconds between dataplane route counts")
    p.add_argument("--withdraw-timeout", type=float, default=300,
                   help="seconds the speaker's routes may take to leave the dataplane (a run that takes longer "
                        "reports its withdrawal as not finished and ends the series)")
    p.add_argument("--feed", choices=("bmp", "fpm"), default="bmp",
                   help="how the node's vxfedd learns routes (bgp.feed; default bmp, fpm: the path before)")
    p.add_argument("--reflectors", type=int, choices=(1, 2), default=1,
                   help="cluster-a's reflectors, each getting every block and peering with the node (default 1)")
    p.add_argument("--speakers", type=int, choices=(1, 2),
                   help="speaker processes with --reflectors 2 (default 2: one per reflector; 1: one for all sessions)")
    p.add_argument("--speaker", choices=("native", "exabgp"), default="native",
                   help="what stands for the other nodes: vxfed-scale-speaker (native, default) or ExaBGP")
    args = p.parse_args(argv)
    if args.speakers is not None and args.speakers > args.reflectors:
        p.error("--speakers may not exceed --reflectors")
    speakers = args.speakers or args.reflectors
    if os.geteuid() != 0:
        sys.exit("scale: must run as root (network namespaces)")
    if args.routes < 2 or args.routes % 2:
        p.error("--routes must be an even number >= 2 (half per cluster)")
    require_frr()
    if args.speaker == "exabgp":
        require_exabgp()
    else:
        require_native_speaker(args.build_dir)
    tl.require_binary("bgp/vxfed-reflector", args.build_dir)
    kind = ("" if args.reflectors == 1 else f"{args.reflectors}rr-") + ("exabgp-" if args.speaker == "exabgp" else "")
    out = args.out or tl.SOURCE_DIR / "perf" / "results" / \
        f"federation-scale-{kind}{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {"benchmark": "federation_scale", "feed": args.feed, "routes": args.routes, "vteps_per_cluster": args.vteps or "one per block",
              "reflectors": args.reflectors, "speaker": args.speaker, "speaker_processes": speakers,
              "runs": args.runs, "commit": git_commit(), "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "cpus": os.cpu_count(), "loadavg_at_start": loadavg()}
    tl.log(f"load average {' '.join(result['loadavg_at_start'])} on {os.cpu_count()} CPUs")
    with tl.Topology("fedscale") as topo:
        bed = ScaleBed(topo, args.routes // 2, vteps=args.vteps, build_dir=args.build_dir, feed=args.feed,
                       reflectors=args.reflectors, speakers=speakers, speaker=args.speaker)
        try:
            bed.up()
        except tl.PartUnavailable as exc:
            print(f"scale: the bed did not come up: {exc}", file=sys.stderr)
            return 3
        runs, memory = [], []
        for i in range(args.runs):
            load = loadavg()
            t = run_once(bed, timeout=args.timeout, poll=args.poll, log=lambda m, i=i: tl.log(f"run {i + 1}: {m}"),
                         withdraw_timeout=args.withdraw_timeout)
            f = figures(t, args.feed)
            runs.append({"loadavg_at_start": load, "loadavg_at_end": loadavg(), "figures": f, "timeline": vars(t)})
            memory.append(t.memory)
            if t.timed_out:
                reached = t.progress[-1] if t.progress else [args.timeout, 0]
                tl.log(f"run {i + 1}: {reached[1]} of {args.routes} routes in the dataplane after {reached[0]} s; "
                       f"no further runs")
                break
            if t.withdraw_timed_out:
                tl.log(f"run {i + 1}: end to end {f['end_to_end_s']} s, new block {f['new_block_to_forwarding_s']} s; "
                       f"the withdrawal did not finish within {args.withdraw_timeout:.0f} s; no further runs")
                break
            tl.log(f"run {i + 1}: end to end {f['end_to_end_s']} s, vxfed share {f['vxfed_share_s']} s "
                   f"(after the feed's last message {f[f'vxfed_after_last_{args.feed}_s']} s), "
                   f"new block {f['new_block_to_forwarding_s']} s, withdraw all {f['withdraw_all_s']} s; "
                   f"load {' '.join(load)}")
        result["runs_detail"] = runs
        result.update(summarize(runs, memory, args.routes, args.feed, args.reflectors))
        result["headline"] = {"speaker": args.speaker, **result["headline"]}
    result["loadavg_at_end"] = loadavg()
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({"headline": result["headline"], "goals": result["goals"]}, indent=1))
    tl.log(f"wrote {out}")
    return 0 if all(g["met"] is not False for g in result["goals"].values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
