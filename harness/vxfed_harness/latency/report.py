"""Turns measurements into the report: medians, ratios, SLO verdicts, the table, the JSON.
No I/O except `write_json`.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import parsers

# The keys of the `ours`, `kernel`, `underlay`, `ratio` and `overhead.<overlay>` objects, in table order, with their labels,
# and which suite produces them.
KEYS: list[tuple[str, str, str]] = [
    ("tcp_gbps_1", "TCP 1 stream (Gbit/s)", "tcp1"),
    ("tcp_gbps_4", "TCP 4 streams (Gbit/s)", "tcp4"),
    # What the throughput cost (cpu_use.py): CPUs busy machine-wide, and Gbit/s per busy CPU.
    ("tcp_cpus_1", "TCP 1 stream: CPUs busy", "tcp1"),
    ("tcp_gbps_per_cpu_1", "TCP 1 stream: Gbit/s per busy CPU", "tcp1"),
    ("tcp_cpus_4", "TCP 4 streams: CPUs busy", "tcp4"),
    ("tcp_gbps_per_cpu_4", "TCP 4 streams: Gbit/s per busy CPU", "tcp4"),
    ("udp_loss_pct", "UDP loss (%)", "udp"),
    ("udp_jitter_ms", "UDP jitter (ms)", "udp"),
    ("udp_p50_us", "UDP ping-pong p50 (us)", "pp_udp"),
    ("udp_p99_us", "UDP ping-pong p99 (us)", "pp_udp"),
    ("udp_p999_us", "UDP ping-pong p99.9 (us)", "pp_udp"),
    ("tcp_p50_us", "TCP ping-pong p50 (us)", "pp_tcp"),
    ("tcp_p99_us", "TCP ping-pong p99 (us)", "pp_tcp"),
    ("tcp_p999_us", "TCP ping-pong p99.9 (us)", "pp_tcp"),
]
KEY_NAMES = [k for k, _, _ in KEYS]
SUITES = ["tcp1", "tcp4", "udp", "pp_udp", "pp_tcp"]
SUITE_GROUPS = {"all": SUITES, "throughput": ["tcp1", "tcp4"], "loss": ["udp"],
                "latency": ["pp_udp", "pp_tcp"]}
# underlay: no overlay at all, what both overlays' overhead is measured against (issue 35).
VARIANTS = ["underlay", "kernel", "ours"]
OVERLAYS = ["kernel", "ours"]

# Figures where more is better: an overlay's overhead is the share of the underlay's figure it
# loses (1 - overlay / underlay). For every other figure (latency, CPUs busy, loss, jitter)
# it is the share it adds (overlay / underlay - 1). Positive = the overlay costs that much.
HIGHER_IS_BETTER = frozenset({"tcp_gbps_1", "tcp_gbps_4", "tcp_gbps_per_cpu_1", "tcp_gbps_per_cpu_4"})
OVERHEAD_DEFINITION = ("per overlay (kernel, ours) against underlay in the same run, as a fraction: "
                       "1 - overlay/underlay for Gbit/s and Gbit/s per busy CPU, overlay/underlay - 1 for "
                       "every other figure; positive = the overlay is worse; null when a side is missing or "
                       "the underlay's figure is 0")
# The seed's claim: an overlay overhead under 5 %. Reported for ours, not an exit condition.
OVERHEAD_CLAIM = 0.05
OVERHEAD_CLAIM_KEYS = ["tcp_gbps_1", "tcp_gbps_4", "udp_p50_us", "udp_p99_us", "tcp_p50_us", "tcp_p99_us"]

# The field's targets (issue 7): cross-cluster p99 under 1 ms, loss under 0.01 % at the offered rate.
P99_SLO_US = 1000.0
LOSS_SLO_PCT = 0.01


def parse_suites(text: str) -> list[str]:
    """"all", a group name or a comma list of suites; refuses unknown names."""
    out: list[str] = []
    for item in (s.strip() for s in text.split(",") if s.strip()):
        names = SUITE_GROUPS.get(item, [item])
        for n in names:
            if n not in SUITES:
                raise ValueError(f"unknown suite {item!r}; choose from {', '.join(SUITES)} "
                                 f"or {', '.join(SUITE_GROUPS)}")
            if n not in out:
                out.append(n)
    if not out:
        raise ValueError("no suite selected")
    return out


def parse_variants(text: str) -> list[str]:
    out = [v.strip() for v in text.split(",") if v.strip()]
    for v in out:
        if v not in VARIANTS:
            raise ValueError(f"unknown variant {v!r}; choose from {', '.join(VARIANTS)}")
    if not out:
        raise ValueError("no variant selected")
    return [v for v in VARIANTS if v in out]


def figures_from(suite: str, result: dict) -> dict[str, float]:
    """The report keys one suite's raw result yields."""
    if suite in ("tcp1", "tcp4"):
        n = suite[-1]
        out = {f"tcp_gbps_{n}": result["gbps"]}
        cpus = result.get("busy_cpus")
        if cpus:  # absent in results recorded before it was measured; 0 would be a broken clock
            out[f"tcp_cpus_{n}"] = cpus
            out[f"tcp_gbps_per_cpu_{n}"] = result["gbps"] / cpus
        return out
    if suite == "udp":
        return {"udp_loss_pct": result["loss_pct"], "udp_jitter_ms": result["jitter_ms"]}
    if suite in ("pp_udp", "pp_tcp"):
        proto = "udp" if suite == "pp_udp" else "tcp"
        pct = result["summary"]["percentiles"]
        return {f"{proto}_p50_us": pct[50.0], f"{proto}_p99_us": pct[99.0],
                f"{proto}_p999_us": pct[99.9]}
    raise ValueError(f"unknown suite {suite}")


@dataclass
class Spread:
    median: Optional[float]
    minimum: Optional[float]
    maximum: Optional[float]
    runs: list[float]


def spread(values: list[float]) -> Spread:
    if not values:
        return Spread(None, None, None, [])
    return Spread(statistics.median(values), min(values), max(values), list(values))


def ratio(ours: Optional[float], kernel: Optional[float]) -> Optional[float]:
    """ours / kernel; None when either is missing or the kernel figure is zero."""
    if ours is None or kernel is None or kernel == 0:
        return None
    return ours / kernel


def overhead(key: str, overlay: Optional[float], underlay: Optional[float]) -> Optional[float]:
    """What an overlay costs against no overlay, for one figure (OVERHEAD_DEFINITION)."""
    r = ratio(overlay, underlay)
    if r is None:
        return None
    return 1.0 - r if key in HIGHER_IS_BETTER else r - 1.0


def overheads(medians: dict[str, dict]) -> dict[str, dict[str, Optional[float]]]:
    """Per overlay, every key's overhead against the underlay's median of the same run."""
    under = medians.get("underlay") or {}
    return {o: {k: overhead(k, (medians.get(o) or {}).get(k), under.get(k)) for k in KEY_NAMES}
            for o in OVERLAYS}


def overhead_claim_verdicts(over: dict[str, dict[str, Optional[float]]]) -> list[dict]:
    """The seed's claim (ours' overhead under OVERHEAD_CLAIM) per headline figure."""
    ours = over.get("ours") or {}
    return [{"claim": f"ours overhead vs underlay < {OVERHEAD_CLAIM:.0%} ({key})", "key": key,
             "overhead": ours.get(key),
             "met": None if ours.get(key) is None else ours[key] < OVERHEAD_CLAIM}
            for key in OVERHEAD_CLAIM_KEYS]


def rate_mbps(rate: str) -> float:
    """iperf3's -b syntax ("500M", "1G", "200000K", "1e9") in Mbit/s; iperf3 rates are 1000-based."""
    text = rate.strip()
    scale = {"k": 1e-3, "m": 1.0, "g": 1e3, "t": 1e6}.get(text[-1:].lower())
    try:
        return float(text[:-1]) * scale if scale else float(text) / 1e6
    except ValueError:
        raise ValueError(f"offered rate {rate!r} is not a number with an optional K/M/G/T suffix") from None


# The loss SLO is judged only if the sender really offered (nearly) the rate: a starved iperf3
# that sent 60 % of it proves nothing about loss at the offered rate.
OFFERED_RATE_MIN_SHARE = 0.95


def slo_verdicts(figures: dict[str, Optional[float]], udp_rate: str,
                 udp_sent_mbps: Optional[float] = None) -> list[dict]:
    """Each SLO with its value and verdict: True pass, False fail, None not measured.
    The loss SLO fails as "inconclusive" when the sender did not reach the offered rate."""
    checks = [
        ("UDP p99 latency < 1 ms", "udp_p99_us", P99_SLO_US, "us"),
        ("TCP p99 latency < 1 ms", "tcp_p99_us", P99_SLO_US, "us"),
        (f"UDP loss < {LOSS_SLO_PCT}% at {udp_rate}bit/s", "udp_loss_pct", LOSS_SLO_PCT, "%"),
    ]
    out = []
    for name, key, target, unit in checks:
        value = figures.get(key)
        verdict = {"slo": name, "key": key, "target": target, "unit": unit, "value": value,
                   "pass": None if value is None else value < target}
        if key == "udp_loss_pct" and value is not None and udp_sent_mbps is not None:
            verdict["sent_mbps"] = udp_sent_mbps
            if verdict["pass"] and udp_sent_mbps < OFFERED_RATE_MIN_SHARE * rate_mbps(udp_rate):
                verdict["pass"] = False
                verdict["note"] = (f"inconclusive: the sender reached only {udp_sent_mbps:.0f} Mbit/s "
                                   f"of {udp_rate}bit/s offered (CPU-starved sender)")
        out.append(verdict)
    return out


def goal_verdicts(ratios: dict[str, Optional[float]]) -> list[dict]:
    """Issue 7's goal against the kernel in the same run (reported, not an exit condition)."""
    goals = [("p99 ratio <= 1.0", k, lambda r: r <= 1.0) for k in ("udp_p99_us", "tcp_p99_us")]
    goals += [("TCP throughput ratio >= 1.0", k, lambda r: r >= 1.0) for k in ("tcp_gbps_1", "tcp_gbps_4")]
    return [{"goal": f"{name} ({key})", "key": key, "ratio": ratios.get(key),
             "met": None if ratios.get(key) is None else test(ratios[key])} for name, key, test in goals]


# Issue 35: a forwarder that keeps its latency by starving the node is not a win. Under ours
# the background load must get at least this share of the CPUs it got under the kernel variant.
BACKGROUND_SHARE_GOAL = 0.8


def background_summary(processes: int, rounds: dict[str, list[dict]]) -> dict:
    """What `--background-load` got: per variant the median (and range) over every measurement
    of the CPUs' worth the CPU-bound processes ran while it lasted, and ours / kernel."""
    out: dict = {"processes": processes, "cpus_used": {}, "share_goal": BACKGROUND_SHARE_GOAL}
    if not processes:
        return out
    for name, runs in rounds.items():
        values = [s["result"]["background_cpus"] for r in runs for s in r.values()
                  if s["result"].get("background_cpus") is not None]
        sp = spread(values)
        out["cpus_used"][name] = {"median": sp.median, "min": sp.minimum, "max": sp.maximum}
    share = ratio((out["cpus_used"].get("ours") or {}).get("median"),
                  (out["cpus_used"].get("kernel") or {}).get("median"))
    out["share_ours_vs_kernel"] = share
    out["share_goal_met"] = None if share is None else share >= BACKGROUND_SHARE_GOAL
    return out


def background_line(bg: dict) -> str:
    used = ", ".join(f"{name} {u['median']:.2f} CPUs ({u['min']:.2f}-{u['max']:.2f})"
                     for name, u in bg["cpus_used"].items() if u["median"] is not None)
    share = bg.get("share_ours_vs_kernel")
    verdict = "not measured" if share is None else ("met" if bg["share_goal_met"] else "not met")
    return (f"background load: {bg['processes']} CPU-bound process(es) got {used or '-'}; under ours / under "
            f"kernel {'-' if share is None else f'{share:.2f}'} (goal >= {bg['share_goal']}): {verdict}")


def distribution(samples: list[float], summary_pcts: dict) -> dict:
    ordered = sorted(samples)
    mine = {str(p): parsers.percentile(ordered, p) for p in (50, 90, 99, 99.9, 99.99)} if ordered else {}
    return {
        "samples": len(samples),
        "sockperf_percentiles_us": {f"{k:g}": v for k, v in summary_pcts.items()},
        "percentiles_us_from_samples": mine,
        "histogram_us": [[lo, n] for lo, n in parsers.histogram(samples, 5.0)],
        "histogram_bucket_us": 5.0,
        "cdf": [[round(x, 3), round(f, 6)] for x, f in parsers.cdf_points(samples, 1500)],
    }


def _fmt(v: Optional[float], key: str) -> str:
    if v is None:
        return "-"
    if key.endswith("_pct"):
        return f"{v:.4f}"
    if key.endswith("_ms"):
        return f"{v:.4f}"
    if key.endswith(("_gbps_1", "_gbps_4", "_cpus_1", "_cpus_4", "_cpu_1", "_cpu_4")):
        return f"{v:.2f}"
    return f"{v:.1f}"


def _fmt_overhead(o: Optional[float]) -> str:
    if o is None:
        return "-"
    return f"{100 * o:+.1f}%" if abs(o) < 0.1 else f"{100 * o:+.0f}%"


def table(doc: dict) -> str:
    """The terminal table: median [min-max] per variant, the ratio ours/kernel, and when the
    underlay was measured its figures and each overlay's overhead against it."""
    spreads = doc.get("spread", {})
    with_underlay = any(v is not None for v in (doc.get("underlay") or {}).values())
    variants = ["ours", "kernel"] + (["underlay"] if with_underlay else [])
    header = ["metric", "ours", "kernel", "ratio"]
    if with_underlay:
        header += ["underlay", "kernel overhead", "ours overhead"]
    rows = [tuple(header)]
    for key, label, _ in KEYS:
        cells = [label]
        for variant in variants:
            s = spreads.get(variant, {}).get(key)
            v = (doc.get(variant) or {}).get(key)
            cell = _fmt(v, key)
            if s and len(s["runs"]) > 1:
                cell += f" [{_fmt(s['min'], key)}-{_fmt(s['max'], key)}]"
            cells.append(cell)
            if variant == "kernel":
                r = doc["ratio"].get(key)
                cells.append("-" if r is None else f"{r:.2f}")
        if with_underlay:
            over = doc.get("overhead") or {}
            cells += [_fmt_overhead((over.get(o) or {}).get(key)) for o in OVERLAYS]
        rows.append(tuple(cells))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for n, r in enumerate(rows):
        lines.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def slo_lines(doc: dict) -> list[str]:
    lines = []
    for variant in ("ours", "kernel"):
        for v in doc["slo"].get(variant, []):
            if v["pass"] is None:
                verdict = "not measured"
            else:
                verdict = "PASS" if v["pass"] else "FAIL"
            value = "-" if v["value"] is None else f"{v['value']:.4g} {v['unit']}"
            lines.append(f"SLO {variant:6} {v['slo']:40} {value:>14}  {verdict}"
                         + (f" ({v['note']})" if v.get("note") else ""))
    for g in doc.get("goals", []):
        met = "not measured" if g["met"] is None else ("met" if g["met"] else "not met")
        r = "-" if g["ratio"] is None else f"{g['ratio']:.2f}"
        lines.append(f"goal   {g['goal']:47} {r:>14}  {met}")
    for c in doc.get("overhead_claims", []):
        if c["overhead"] is None:
            continue    # the underlay or ours not measured for this figure: nothing to claim
        met = "met" if c["met"] else "not met"
        lines.append(f"claim  {c['claim']:47} {_fmt_overhead(c['overhead']):>14}  {met}")
    return lines


def write_json(doc: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)
