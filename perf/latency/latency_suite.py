#!/usr/bin/python3
"""The two-cluster latency suite: builds the demo topology in each variant (vxfed = "ours",
the Linux kernel VXLAN path = "kernel", and no overlay at all = "underlay": the same pods
routed node to node without encapsulation), N nodes per cluster, runs iperf3 and sockperf
between a pod in cluster A and a pod in cluster B (across clusters) and between pods on two
nodes of cluster A (same cluster), and reports every figure as ours, kernel and ratio, and
each overlay's overhead against the underlay, naming the nodes the measured pods sit on.

    sudo perf/latency/latency_suite.py                       # all three variants, defaults
    sudo perf/latency/latency_suite.py --variants kernel     # the kernel baseline alone
    sudo perf/latency/latency_suite.py --variants underlay,kernel   # the kernel overlay's overhead
    sudo perf/latency/latency_suite.py --runs 3 --duration 10 --suites latency
    sudo perf/latency/latency_suite.py --nodes-per-cluster 3 --same-cluster-suites all
    sudo perf/latency/latency_suite.py --runs 3 --background-load 2  # a busy node (issue 35)

Exit status: 0 every SLO met (the overlays': the underlay is a measuring stick, its figures are
reported, not judged); 1 an SLO failed; 3 a variant could not come up (the message
names the missing or failing part); 4 a measurement failed; 130/143 interrupted. Everything the
run created is removed on every path out, and checked to be gone.
"""

from __future__ import annotations

import argparse
import atexit
import datetime as dt
import os
import platform
import shutil
import signal
import sys
import time
from pathlib import Path

import vxfed_harness as tl
from vxfed_harness import leftovers
from vxfed_harness.latency import measure, plots, report
from vxfed_harness.latency.background_load import BackgroundLoad
from vxfed_harness.twocluster import path_checks
from vxfed_harness.twocluster.kernel import KernelVariant
from vxfed_harness.twocluster.plan import make_plan
from vxfed_harness.twocluster.underlay import UnderlayVariant
from vxfed_harness.twocluster.variant import Variant

EXIT_SLO, EXIT_UNAVAILABLE, EXIT_MEASUREMENT = 1, 3, 4
SOURCE_DIR = tl.SOURCE_DIR


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variants", default="underlay,kernel,ours",
                   help="comma list of: ours (vxfed), kernel (Linux VXLAN), underlay (the same pods routed "
                        "without any overlay: what each overlay's overhead is measured against). "
                        "Default: all three")
    p.add_argument("--suites", default="all",
                   help=f"comma list of {', '.join(report.SUITES)} or groups "
                        f"{', '.join(report.SUITE_GROUPS)}. Default: all")
    p.add_argument("--duration", type=float, default=5.0, help="seconds per measurement (default 5)")
    p.add_argument("--runs", type=int, default=1,
                   help="rounds of the whole suite; figures are medians, with min-max (default 1)")
    p.add_argument("--mtu", type=int, default=9000, choices=(9000, 1500), help="underlay MTU (default 9000)")
    p.add_argument("--nodes-per-cluster", type=int, default=2,
                   help="nodes per cluster, 1..5 (default 2: what the demo's time allows on 2 cores; "
                        "the vxfed variant adds a route reflector per cluster and a three-member etcd)")
    p.add_argument("--pods", type=int, default=1, help="pods per node (default 1; the suite runs between "
                   "the first pod of each cluster and between the first pods of two nodes of cluster A, "
                   "connectivity is checked for all)")
    p.add_argument("--same-cluster-suites", default="pp_udp",
                   help="what runs between pods on two nodes of cluster A: suites or groups as --suites, "
                        "or none (default: pp_udp, the latency figures, which is what fits the demo's time; "
                        "ignored with one node per cluster)")
    p.add_argument("--udp-rate", default="200M",
                   help="iperf3 UDP offered rate, bit/s (default 200M: what this 2-core machine's "
                        "sender reaches even under load; see docs/demo.md)")
    p.add_argument("--udp-len", type=int, default=1400, help="iperf3 UDP datagram bytes (default 1400)")
    p.add_argument("--msg-size", type=int, default=64, help="sockperf message bytes (default 64)")
    p.add_argument("--out", type=Path, default=None,
                   help="JSON path (default perf/results/latency-<UTC time>.json); PNGs beside it")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--build-dir", type=Path, default=tl.BUILD_DIR,
                   help="where the vxfed binaries are (default ./build or $VXFED_BUILD_DIR)")
    p.add_argument("--background-load", type=int, default=0, metavar="N",
                   help="run N CPU-bound processes (sha256sum /dev/zero, default priority) for the whole run, "
                        "every variant; the CPUs they got during each measurement are reported (default 0)")
    p.add_argument("--worker-rt-priority", type=int, default=None, metavar="N",
                   help="ours: the dataplanes' --worker-rt-priority (default: the DaemonSet's, 1; "
                        "0: ordinary worker threads, as before issue 35)")
    p.add_argument("--up-timeout", type=float, default=60,
                   help="seconds for a variant's daemons to come up and for BGP to exchange routes (default 60)")
    args = p.parse_args(argv)
    try:
        args.variant_list = report.parse_variants(args.variants)
        args.suite_list = report.parse_suites(args.suites)
        args.same_suite_list = ([] if args.same_cluster_suites.strip() == "none"
                                else report.parse_suites(args.same_cluster_suites))
        if args.duration < 1 or args.duration > 600:
            raise ValueError("--duration must be 1..600 seconds")
        if not 1 <= args.runs <= 20:
            raise ValueError("--runs must be 1..20")
        if not 0 <= args.background_load <= 64:
            raise ValueError("--background-load must be 0..64 processes")
        if args.worker_rt_priority is None:
            from vxfed_harness.twocluster.federated import DAEMONSET_WORKER_RT_PRIORITY
            args.worker_rt_priority = DAEMONSET_WORKER_RT_PRIORITY
        if not 0 <= args.worker_rt_priority <= 99:
            raise ValueError("--worker-rt-priority must be 0..99")
        report.rate_mbps(args.udp_rate)
        if not 64 <= args.udp_len <= (args.mtu - 50 - 28):
            raise ValueError(f"--udp-len must be 64..{args.mtu - 78} for MTU {args.mtu} (no fragmentation)")
        args.plan = make_plan(args.mtu, args.pods, args.nodes_per_cluster)
        if args.nodes_per_cluster == 1:
            args.same_suite_list = []
    except ValueError as exc:
        p.error(str(exc))
    if args.out is None:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        args.out = SOURCE_DIR / "perf" / "results" / f"latency-{stamp}.json"
    return args


def preflight() -> None:
    if os.geteuid() != 0:
        sys.exit("latency_suite: must run as root (it creates network namespaces)")
    missing = [t for t in ("ip", "bridge", "ss", "nstat", "ping", "iperf3", "sockperf") if not shutil.which(t)]
    if missing:
        sys.exit(f"latency_suite: missing tools: {', '.join(missing)} (scripts/install-deps.sh installs them)")


def make_variant(name: str, args) -> Variant:
    if name == "kernel":
        return KernelVariant(args.plan)
    if name == "underlay":
        return UnderlayVariant(args.plan)
    from vxfed_harness.twocluster.federated import FederatedVariant   # imported late: only this variant needs it
    return FederatedVariant(args.plan, build_dir=args.build_dir, source_dir=SOURCE_DIR,
                            up_timeout=args.up_timeout, worker_rt_priority=args.worker_rt_priority)


PATHS = ("cross_cluster", "same_cluster")
PATH_LABELS = {"cross_cluster": "across clusters", "same_cluster": "same cluster, two nodes"}


def path_suites(args) -> dict[str, list[str]]:
    return {"cross_cluster": args.suite_list, "same_cluster": args.same_suite_list}


def pair_info(v: Variant, path: str) -> dict:
    a, b = path_checks.measured_pairs(v)[path]
    return {"client": {"pod": a.name, "ip": a.ip, "node": f"node-{a.node}"},
            "server": {"pod": b.name, "ip": b.ip, "node": f"node-{b.node}"}}


def run_suite(suite: str, v: Variant, opts: measure.SuiteOptions, path: str = "cross_cluster") -> dict:
    a, b = path_checks.measured_pairs(v)[path]
    if suite == "tcp1":
        return measure.iperf3(a, b, opts, streams=1)
    if suite == "tcp4":
        return measure.iperf3(a, b, opts, streams=4)
    if suite == "udp":
        return measure.iperf3(a, b, opts, udp=True)
    return measure.sockperf_pingpong(a, b, opts, v.workdir(), tcp=(suite == "pp_tcp"))


def short(suite: str, figures: dict) -> str:
    return ", ".join(f"{k}={v:.4g}" for k, v in figures.items())


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    preflight()
    log = tl.log
    started = dt.datetime.now(dt.timezone.utc)
    args.loadavg_at_start = Path("/proc/loadavg").read_text().split()[:3]
    log(f"load average {' '.join(args.loadavg_at_start)} on {os.cpu_count()} CPUs "
        f"(a shared machine: compare the variants only within one run)")
    t0 = time.monotonic()
    opts = measure.SuiteOptions(duration=args.duration, udp_rate=args.udp_rate, udp_len=args.udp_len,
                                pp_msg_size=args.msg_size)
    suffix = tl.unique_suffix()
    markers = ["vxdkern-", "vxdours-", "vxdunder-"]
    before = leftovers.take(markers, suffix, set(), [])
    log(f"before: {before.describe()} of this run's names (suffix {suffix})")

    created: list[Variant] = []
    up: dict[str, Variant] = {}
    unavailable: dict[str, dict] = {}
    errors: list[str] = []
    raw: dict[str, list[dict]] = {v: [] for v in args.variant_list}          # cross_cluster
    raw_same: dict[str, list[dict]] = {v: [] for v in args.variant_list}     # same_cluster
    samples: dict[str, dict[str, list[float]]] = {v: {} for v in args.variant_list}
    counters: dict[str, dict] = {}
    checks: dict[str, dict] = {}
    all_pids: set[int] = set()
    workdirs: list[Path] = []
    interrupted = 0

    def on_term(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)
    # Also when started in the background by a non-interactive shell, which ignores SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    load = BackgroundLoad(args.background_load)
    atexit.register(load.stop)
    if args.background_load:
        load.start()
        log(f"background load: {args.background_load} CPU-bound process(es) (sha256sum /dev/zero, default priority) "
            f"for the whole run")

    def teardown() -> None:
        # Nothing may interrupt the teardown: a second Ctrl-C would leave namespaces behind.
        old = signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for v in reversed(created):
            try:
                all_pids.update(v.all_pids())
            except Exception:  # noqa: BLE001 - listing is best effort; close() must still run
                pass
            log(f"{v.name}: tearing down")
            v.close()
        created.clear()
        signal.signal(signal.SIGINT, old[0])
        signal.signal(signal.SIGTERM, old[1])
    atexit.register(teardown)

    try:
        for name in args.variant_list:
            v = make_variant(name, args)
            created.append(v)
            workdirs.extend(v.owned_paths())
            log(f"{name}: bringing up the two-cluster topology ({args.nodes_per_cluster} node(s) per cluster, "
                f"{args.pods} pod(s) per node, underlay MTU {args.mtu})")
            try:
                v.up()
                log(f"{name}: checking pod-to-pod reachability and the {args.plan.pod_mtu}-byte DF path")
                checks[name] = path_checks.check(v)
                log(f"{name}: up: {len(checks[name]['pairs'])} pod pairs reach each other, "
                    f"{args.plan.pod_mtu}-byte DF ping passes, {args.plan.pod_mtu + 1} is refused "
                    f"({', '.join(checks[name]['df_paths'])})")
                checks[name]["measured"] = {path: pair_info(v, path) for path in checks[name]["df_paths"]}
                for path, info in checks[name]["measured"].items():
                    log(f"{name}: {PATH_LABELS[path]}: {info['client']['pod']} on {info['client']['node']} -> "
                        f"{info['server']['pod']} on {info['server']['node']}")
                up[name] = v
            except (tl.PartUnavailable, path_checks.PathError, TimeoutError, RuntimeError) as exc:
                component = getattr(exc, "component", None) or f"{name} variant setup"
                unavailable[name] = {"component": component, "reason": str(exc)}
                log(f"{name}: NOT AVAILABLE: {exc}")
                if os.environ.get("VXFED_DEMO_DUMP_LOGS") == "1":
                    v.topo.dump_logs()
                all_pids.update(v.all_pids())
                v.close()
                created.remove(v)

        if up:
            order = [n for n in args.variant_list if n in up]
            for rnd in range(args.runs):
                # Alternate which variant goes first, so neither always gets the warmer machine.
                round_order = order if rnd % 2 == 0 else list(reversed(order))
                for path, suites in path_suites(args).items():
                    per_variant = {n: {} for n in order}
                    for suite in suites:
                        for name in round_order:
                            log(f"run {rnd + 1}/{args.runs}: {name}: {suite} ({args.duration:g}s, {PATH_LABELS[path]})")
                            try:
                                mark = load.mark()
                                result = run_suite(suite, up[name], opts, path)
                                result["background_cpus"] = load.cpus_used(mark)
                            except measure.MeasurementError as exc:
                                errors.append(f"{name} {suite} ({path}): {exc}")
                                log(f"{name}: {suite} FAILED: {exc}")
                                continue
                            figs = report.figures_from(suite, result)
                            if "retried_after" in result:
                                log(f"  {name}: {suite} taken again after: {result['retried_after']}")
                            log(f"  {name}: {short(suite, figs)}" + (
                                f" (background load got {result['background_cpus']:.2f} CPUs)"
                                if result["background_cpus"] is not None else ""))
                            samples_of = result.pop("samples", None)
                            if samples_of is not None and path == "cross_cluster":
                                samples[name].setdefault(suite[3:], []).extend(samples_of)
                            per_variant[name][suite] = {"figures": figs, "result": result}
                    for name in order:
                        (raw if path == "cross_cluster" else raw_same)[name].append(per_variant[name])
            for name, v in up.items():
                try:
                    counters[name] = v.counters()
                except Exception as exc:  # noqa: BLE001 - counters are diagnostics only
                    counters[name] = {"error": str(exc)}
    except KeyboardInterrupt as exc:
        interrupted = 143 if "signal 15" in str(exc) else 130
        log(f"interrupted ({str(exc) or 'Ctrl-C'}); tearing everything down")
    finally:
        teardown()
        load.stop()

    after = leftovers.take(markers, suffix, all_pids, workdirs)
    log(f"after teardown: {after.describe()} of this run's objects remain")
    if interrupted:
        return interrupted

    doc = assemble(args, started, time.monotonic() - t0, raw, raw_same, samples, unavailable, errors,
                   counters, checks, after)
    for path in PATHS:
        if path not in doc["paths"]:
            continue
        print()
        print(f"{PATH_LABELS[path]}: " + "; ".join(
            f"{name} {pods['client']['pod']} on {pods['client']['node']} -> {pods['server']['pod']} on "
            f"{pods['server']['node']}" for name, pods in doc["paths"][path]["pods"].items()))
        print(report.table(doc["paths"][path]))
    print()
    for line in report.slo_lines(doc):
        print(line)
    if doc["background"]["processes"]:
        print(report.background_line(doc["background"]))
    for name, info in unavailable.items():
        print(f"\n{name} variant NOT MEASURED: missing or failing part: {info['component']}\n  {info['reason']}")
    for e in errors:
        print(f"measurement error: {e}")

    report.write_json(doc, args.out)
    print(f"\nJSON: {args.out}")
    if not args.no_plots:
        try:
            pngs = plots.render(doc, args.out.with_suffix(""))
            doc["plots"] = [str(p) for p in pngs]
            report.write_json(doc, args.out)
            for p in pngs:
                print(f"plot: {p}")
        except (RuntimeError, OSError) as exc:
            print(f"plots not drawn: {exc}")
    if not after.empty():
        print(f"teardown left objects behind: {after.describe()}")
        return EXIT_MEASUREMENT
    if unavailable:
        return EXIT_UNAVAILABLE
    if errors:
        return EXIT_MEASUREMENT
    failed = [s for variant in doc["slo"].values() for s in variant if s["pass"] is False]
    return EXIT_SLO if failed else 0


def sent_mbps(rounds: list[dict]):
    """Median rate the UDP sender really achieved over the rounds (None if UDP did not run)."""
    values = [r["udp"]["result"]["sent_mbps"] for r in rounds if "udp" in r]
    return report.spread(values).median


def summarize(raw: dict[str, list[dict]]) -> tuple[dict, dict, dict, dict]:
    """Medians, spreads, ratios (ours / kernel) and overheads (each overlay against the
    underlay) over the rounds of one path."""
    spreads: dict[str, dict] = {}
    medians: dict[str, dict] = {}
    for name in report.VARIANTS:
        medians[name] = {k: None for k in report.KEY_NAMES}
        spreads[name] = {}
        for key in report.KEY_NAMES:
            values = [r[s]["figures"][key] for r in raw.get(name, []) for s in r if key in r[s]["figures"]]
            sp = report.spread(values)
            medians[name][key] = sp.median
            if values:
                spreads[name][key] = {"median": sp.median, "min": sp.minimum, "max": sp.maximum, "runs": sp.runs}
    ratios = {k: report.ratio(medians["ours"][k], medians["kernel"][k]) for k in report.KEY_NAMES}
    return medians, spreads, ratios, report.overheads(medians)


def assemble(args, started, elapsed, raw, raw_same, samples, unavailable, errors, counters, checks, after) -> dict:
    medians, spreads, ratios, overheads = summarize(raw)
    paths = {}
    for path, rounds, suites in (("cross_cluster", raw, args.suite_list), ("same_cluster", raw_same, args.same_suite_list)):
        pods = {name: c["measured"][path] for name, c in checks.items() if path in c.get("measured", {})}
        if not suites or not pods:
            continue
        m, sp, r, o = summarize(rounds)
        paths[path] = {"label": PATH_LABELS[path], "suites": suites, "pods": pods, "ours": m["ours"],
                       "kernel": m["kernel"], "underlay": m["underlay"], "ratio": r, "overhead": o,
                       "spread": sp, "runs": rounds}
    distributions = {}
    for name, by_proto in samples.items():
        for proto, s in by_proto.items():
            pcts = {}
            last = [r[f"pp_{proto}"]["result"]["summary"]["percentiles"] for r in raw[name] if f"pp_{proto}" in r]
            if last:
                pcts = last[-1]
            distributions.setdefault(name, {})[proto] = report.distribution(s, pcts)
    status = {}
    for name in args.variant_list:
        if name in unavailable:
            status[name] = {"status": "unavailable", **unavailable[name]}
        else:
            status[name] = {"status": "measured", "path_checks": checks.get(name)}
    return {
        "schema": "vxfed-latency/1",
        "started_utc": started.isoformat(timespec="seconds"),
        "elapsed_s": round(elapsed, 1),
        "command": " ".join([sys.argv[0]] + sys.argv[1:]),
        "config": {
            "variants": args.variant_list, "suites": args.suite_list, "duration_s": args.duration,
            "runs": args.runs, "underlay_mtu": args.mtu, "pod_mtu": args.plan.pod_mtu,
            "nodes_per_cluster": args.nodes_per_cluster, "pods_per_node": args.pods,
            "same_cluster_suites": args.same_suite_list, "udp_offered_rate": args.udp_rate,
            "udp_datagram_bytes": args.udp_len, "sockperf_msg_bytes": args.msg_size,
            "background_load_processes": args.background_load,
            "ours_worker_rt_priority": args.worker_rt_priority,
            "latency_definition": "sockperf ping-pong one-way latency = RTT/2, microseconds",
        },
        "environment": {
            "kernel": platform.release(), "cpus": os.cpu_count(),
            "loadavg_at_start": args.loadavg_at_start,
            "loadavg_at_end": Path("/proc/loadavg").read_text().split()[:3],
        },
        "ours": medians["ours"],
        "kernel": medians["kernel"],
        "ratio": ratios,
        "underlay": medians["underlay"],
        "ratio_definition": "ours / kernel (null when a side is missing or the kernel figure is 0)",
        "overhead": overheads,
        "overhead_definition": report.OVERHEAD_DEFINITION,
        "figures_are": "cross_cluster (paths.cross_cluster); paths.same_cluster: pods on two nodes of cluster A",
        "paths": paths,
        "spread": spreads,
        # The SLOs are the overlays' (the underlay is the measuring stick, not a path anyone ships).
        "slo": {name: report.slo_verdicts(medians[name], args.udp_rate, sent_mbps(raw.get(name, [])))
                for name in args.variant_list if name not in unavailable and name in report.OVERLAYS},
        "udp_sent_mbps": {name: sent_mbps(raw.get(name, [])) for name in args.variant_list},
        "goals": report.goal_verdicts(ratios),
        "overhead_claims": report.overhead_claim_verdicts(overheads),
        "background": report.background_summary(args.background_load, raw),
        "variants": status,
        "errors": errors,
        "runs": raw,
        "distributions": distributions,
        "counters": counters,
        "teardown_leftovers": after.__dict__,
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
