#!/usr/bin/env python3
"""Tables benchmark driver: what one in-place change of the dataplane's forwarding tables
costs with 10 and with 130,000 routes installed, route churn, forwarding during churn, memory.

  perf/tables/run.py --build-dir build [--out FILE] [--changes 1000] [--churn-rate 10000]

Needs perf/tables/vxfed-tables-bench and perf/control/vxfed-routes-bench built (both are part of
the default build) and root (the routes bench plays zebra's part on vxfedd's FPM port).
Writes FILE (default perf/results/tables/summary.json) with the benchmark's full output under
"detail" and the headline keys:

  attach_p99_us_130k          one endpoint attach (a Delta: parse, validate, apply until the
                              workers see it; deferred frees excluded), p99 over --changes
  route_change_p99_us_130k    the worse p99 of one route add / one route withdraw
  churn_routes_per_s          single-route Deltas back to back, 130k routes installed
  forwarding_during_churn_ratio  one worker thread's encapsulation rate while the control
                              thread applies --churn-rate route changes/s, against the same
                              worker's rate without churn (alternating windows; median ratio)
  peak_over_steady_memory     the process's peak RSS during all of the above / its RSS with
                              the 130k tables built (tables + a 4,096-mbuf pool)
  dataplane_tables_mb_130k    the tables' resident MiB (ForwardingTables::memory_bytes)
  vxfedd_rss_mb_130k          vxfedd's resident MiB holding 130,000 routes learned over FPM
                              (perf/control/vxfed-routes-bench: a real vxfedd, a synthetic
                              zebra, a null dataplane; its JSON under "vxfedd" in the output)

and the same figures for 10 routes (suffix _10) to read them as ratios. Each headline key is
also compared with the issue's goal ("goals": met true/false).
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=str(SOURCE / "build"))
    ap.add_argument("--out", default=str(SOURCE / "perf" / "results" / "tables" / "summary.json"))
    ap.add_argument("--changes", type=int, default=1000, help="changes timed per kind (>= 1000 for the goals)")
    ap.add_argument("--churn-rate", type=float, default=10000, help="route changes/s while forwarding")
    ap.add_argument("--churn-seconds", type=float, default=2)
    ap.add_argument("--windows", type=int, default=10)
    ap.add_argument("--window-seconds", type=float, default=0.5)
    args = ap.parse_args()
    bench = Path(args.build_dir) / "perf/tables/vxfed-tables-bench"
    if not bench.exists():
        sys.exit(f"{bench} is not built (ninja -C {args.build_dir} perf/tables/vxfed-tables-bench)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = out.with_name(out.stem + "-bench.json")
    cmd = [str(bench), "--out", str(raw), "--routes", "10", "130000", "--changes", str(args.changes),
           "--churn-rate", str(args.churn_rate), "--churn-seconds", str(args.churn_seconds),
           "--windows", str(args.windows), "--window-seconds", str(args.window_seconds)]
    print("+", " ".join(cmd), flush=True)
    res = subprocess.run(cmd)
    if res.returncode != 0 or not raw.exists():
        sys.exit(f"benchmark failed (exit {res.returncode})")
    d = json.loads(raw.read_text())

    routes_bench = Path(args.build_dir) / "perf/control/vxfed-routes-bench"
    vxfedd_raw = out.with_name(out.stem + "-vxfedd.json")
    vcmd = [str(routes_bench), "--vxfedd", str(Path(args.build_dir) / "control/vxfedd"), "--out", str(vxfedd_raw),
            "--routes", "10", "130000"]
    print("+", " ".join(vcmd), flush=True)
    if subprocess.run(vcmd).returncode != 0 or not vxfedd_raw.exists():
        sys.exit("vxfedd routes benchmark failed")
    vx = json.loads(vxfedd_raw.read_text())

    def figures(routes):
        r = d["routes"][str(routes)]
        return {
            "attach_p99_us": r["attach"]["p99_us"],
            "route_change_p99_us": max(r["route_add"]["p99_us"], r["route_withdraw"]["p99_us"]),
            "churn_routes_per_s": d["churn"][str(routes)]["changes_per_s"],
            "forwarding_during_churn_ratio": r["forwarding"]["ratio_median"],
            "forwarding_lost": r["forwarding"]["lost"],
            "peak_over_steady_memory": r["peak_over_steady"],
            "dataplane_tables_mb": r["tables_mib"],
        }

    big, small = figures(130000), figures(10)
    summary = {f"{k}_130k" if k in ("attach_p99_us", "route_change_p99_us", "dataplane_tables_mb") else k: v
               for k, v in big.items()}
    summary["vxfedd_rss_mb_130k"] = vx["runs"]["130000"]["vxfedd_rss_mib"]
    summary["vxfedd_rss_mb_10"] = vx["runs"]["10"]["vxfedd_rss_mib"]
    summary["vxfedd_burst_s_130k"] = vx["runs"]["130000"]["burst_s"]
    summary.update({f"{k}_10": v for k, v in small.items()})
    summary["goals"] = {
        "attach_p99_us_130k < 100": summary["attach_p99_us_130k"] < 100,
        "route_change_p99_us_130k < 100": summary["route_change_p99_us_130k"] < 100,
        "churn_routes_per_s >= 10000": summary["churn_routes_per_s"] >= 10000,
        "forwarding_during_churn_ratio >= 0.95": summary["forwarding_during_churn_ratio"] >= 0.95,
        "zero loss for steady destinations": summary["forwarding_lost"] == 0,
        "peak_over_steady_memory <= 1.1": summary["peak_over_steady_memory"] <= 1.1,
        "dataplane_tables_mb_130k <= 64": summary["dataplane_tables_mb_130k"] <= 64,
        "vxfedd_rss_mb_130k <= 64": summary["vxfedd_rss_mb_130k"] <= 64,
    }
    summary["command"] = " ".join(cmd) + " ; " + " ".join(vcmd)
    summary["detail"] = d
    summary["vxfedd"] = vx
    out.write_text(json.dumps(summary, indent=2) + "\n")
    for k, v in summary.items():
        if k not in ("detail", "goals", "command", "vxfedd"):
            print(f"{k:36s} {v}")
    for k, v in summary["goals"].items():
        print(f"  goal {k:40s} {'met' if v else ('not measured' if v is None else 'NOT met')}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
