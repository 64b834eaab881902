"""Pure parsers for what iperf3 and sockperf print. No I/O: text in, numbers out.

Every parser raises ValueError with a sentence naming what was missing, so that a tool that
printed an error instead of results is reported as such rather than as a zero.
"""

from __future__ import annotations

import json
import math
import re

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _iperf3_json(text: str) -> dict:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"iperf3 did not print JSON ({exc}); output starts: {text[:200]!r}") from None
    if "error" in doc:
        raise ValueError(f"iperf3 reported an error: {doc['error']}")
    if "end" not in doc:
        raise ValueError("iperf3 JSON has no 'end' section (the test did not complete)")
    return doc


def parse_iperf3_tcp(text: str) -> dict:
    """Goodput as the receiver counted it, and the sender's retransmits."""
    end = _iperf3_json(text)["end"]
    received = end.get("sum_received")
    sent = end.get("sum_sent", {})
    if not received or "bits_per_second" not in received:
        raise ValueError("iperf3 TCP JSON has no end.sum_received.bits_per_second")
    return {
        "gbps": received["bits_per_second"] / 1e9,
        "seconds": received.get("seconds"),
        "bytes": received.get("bytes"),
        "retransmits": sent.get("retransmits"),
        "streams": len(end.get("streams", [])),
    }


def parse_iperf3_udp(text: str) -> dict:
    """Loss and jitter at the receiver. iperf3 >= 3.13 splits sum_sent/sum_received; 3.12 (Debian
    12) reports the receiver's jitter and loss, exchanged at the end of the test, in end.sum."""
    end = _iperf3_json(text)["end"]
    summary = end.get("sum_received") or end.get("sum")
    if not summary or "lost_percent" not in summary or "jitter_ms" not in summary:
        raise ValueError("iperf3 UDP JSON has no end.sum with lost_percent and jitter_ms")
    packets = summary.get("packets", 0)
    if packets <= 0:
        raise ValueError("iperf3 UDP test sent no datagrams")
    return {
        "loss_pct": float(summary["lost_percent"]),
        "jitter_ms": float(summary["jitter_ms"]),
        "packets": int(packets),
        "lost_packets": int(summary.get("lost_packets", 0)),
        "sent_mbps": (end.get("sum_sent") or summary).get("bits_per_second", 0) / 1e6,
    }


_PCT_LINE = re.compile(r"--->\s+percentile\s+([0-9.]+)\s*=\s*([0-9.]+)")
_MIN_MAX = re.compile(r"--->\s+<(MIN|MAX)>\s+observation\s*=\s*([0-9.]+)")
_OBS = re.compile(r"Total\s+(\d+)\s+observations")
_AVG = re.compile(r"avg-latency=([0-9.]+)\s+\(std-dev=([0-9.]+)\)")
_DROPS = re.compile(r"#\s*dropped messages\s*=\s*(\d+);\s*#\s*duplicated messages\s*=\s*(\d+);"
                    r"\s*#\s*out-of-order messages\s*=\s*(\d+)")


def parse_sockperf_summary(text: str) -> dict:
    """sockperf ping-pong's summary: percentiles of one-way latency (RTT/2) in microseconds."""
    text = _ANSI.sub("", text)
    pcts = {float(p): float(v) for p, v in _PCT_LINE.findall(text)}
    obs = _OBS.search(text)
    if not pcts or not obs:
        raise ValueError(f"sockperf printed no latency percentiles; output ends: {text[-300:]!r}")
    result = {"percentiles": pcts, "observations": int(obs.group(1))}
    for kind, value in _MIN_MAX.findall(text):
        result[kind.lower()] = float(value)
    avg = _AVG.search(text)
    if avg:
        result["avg"], result["stddev"] = float(avg.group(1)), float(avg.group(2))
    drops = _DROPS.search(text)
    if drops:
        result["dropped"], result["duplicated"], result["out_of_order"] = map(int, drops.groups())
    return result


def parse_sockperf_full_log(text: str) -> list[float]:
    """Every observation's latency (usec) from sockperf --full-log, in the order they were taken.
    Rows look like `17, 2.479140638, 2.479159504, 9.433` (packet, txTime, rxTime, latency)."""
    samples: list[float] = []
    in_rows = False
    for line in text.splitlines():
        if line.startswith("packet, txTime"):
            in_rows = True
            continue
        if not in_rows:
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4:
            continue
        try:
            samples.append(float(parts[3]))
        except ValueError:
            continue
    if not samples:
        raise ValueError("sockperf full log holds no observations")
    return samples


def percentile(sorted_samples: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list (the definition sockperf uses)."""
    if not sorted_samples:
        raise ValueError("no samples")
    # round() first: 99.9 / 100 * 1000 is 999.0000000000001 in binary floating point.
    rank = max(1, math.ceil(round(pct * len(sorted_samples) / 100.0, 9)))
    return sorted_samples[min(rank, len(sorted_samples)) - 1]


def cdf_points(samples: list[float], max_points: int = 2000) -> list[tuple[float, float]]:
    """(latency, fraction <= latency) pairs, thinned to at most max_points but always keeping
    the whole tail above p99 so that the plot shows it faithfully."""
    ordered = sorted(samples)
    n = len(ordered)
    if n == 0:
        return []
    tail_start = int(n * 0.99)
    step = max(1, tail_start // max_points)
    idx = list(range(0, tail_start, step)) + list(range(tail_start, n))
    return [(ordered[i], (i + 1) / n) for i in idx]


def histogram(samples: list[float], bucket_us: float = 5.0) -> list[tuple[float, int]]:
    """(bucket lower bound in usec, count): the full latency distribution in fixed buckets."""
    counts: dict[int, int] = {}
    for s in samples:
        b = int(s // bucket_us)
        counts[b] = counts.get(b, 0) + 1
    return [(b * bucket_us, counts[b]) for b in sorted(counts)]


def parse_nstat(text: str) -> dict[str, int]:
    """`nstat` output (`#kernel` header, then `Name value rate`) as {name: value}."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.startswith("#") and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out
