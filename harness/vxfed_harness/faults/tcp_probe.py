"""The TCP probe: one iperf3 stream from pod A0 to pod B0 for the whole run, paced at RATE
(so that it does not starve the UDP probes of the 2 shared cores), reported every 0.1 s
(`-J`: throughput and the sender's retransmits per interval; SIGINT ends it with the
intervals so far).

Interval times are iperf3's, from its test start, which is put at the moment the client was
started (the control connection's set-up, a few ms, is not subtracted). Per window: the
intervals that end in it, their lowest throughput (the dip), their mean, the retransmits.
"""

from __future__ import annotations

import json
import signal
import subprocess

PORT = 5201
RATE = "50M"
INTERVAL_S = 0.1


def server_command(ip: str) -> list[str]:
    return ["iperf3", "-s", "-1", "-B", ip, "-p", str(PORT)]


def client_command(src_ip: str, dst_ip: str) -> list[str]:
    return ["iperf3", "-c", dst_ip, "-B", src_ip, "-p", str(PORT), "-t", "86400", "-i", str(INTERVAL_S),
            "-b", RATE, "-J"]


def stop(proc: subprocess.Popen) -> None:
    """SIGINT: iperf3 prints its JSON with the intervals so far and exits."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def parse(text: str, started: float) -> list[tuple[float, float, int]]:
    """(end time, Mbit/s, retransmits) per interval; [] if iperf3 printed no JSON."""
    try:
        doc = json.loads(text[text.index("{"):])
    except ValueError:
        return []
    out = []
    for iv in doc.get("intervals", []):
        s = iv.get("sum", {})
        out.append((started + float(s.get("end", 0.0)), float(s.get("bits_per_second", 0.0)) / 1e6,
                    int(s.get("retransmits", 0) or 0)))
    return out


def window(intervals: list[tuple[float, float, int]], t0: float, t1: float) -> dict:
    inside = [iv for iv in intervals if t0 < iv[0] <= t1]
    if not inside:
        return {"intervals": 0, "mbps_min": None, "mbps_mean": None, "retransmits": None}
    rates = [iv[1] for iv in inside]
    return {"intervals": len(inside), "mbps_min": round(min(rates), 2), "mbps_mean": round(sum(rates) / len(rates), 2),
            "retransmits": sum(iv[2] for iv in inside)}
