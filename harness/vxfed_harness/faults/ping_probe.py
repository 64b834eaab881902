"""The ping-pong probe: `ping -D -i 0.01` from pod A0 to pod B0 for the whole run, so each
fault also gets the round-trip latency a pod sees (one ICMP echo outstanding at a time per
10 ms, each answered by the other pod's kernel across both dataplanes).

Per window (by send time = reply time - RTT): replies, RTT percentiles, and lost: the echoes
that got no reply, each placed at a send time interpolated between the replies around it (ping
keeps sending at its interval during an outage; its sequence numbers show the gap).
"""

from __future__ import annotations

import re
import signal
import subprocess

INTERVAL_S = 0.01
REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from [^:]+: icmp_seq=(\d+) .*time=([\d.]+) ms")


def command(dst_ip: str) -> list[str]:
    # -W 1: an echo unanswered for 1 s counts as lost (ping then does not wait for it).
    return ["ping", "-D", "-n", "-i", str(INTERVAL_S), "-W", "1", dst_ip]


def stop(proc: subprocess.Popen) -> None:
    """SIGINT: ping flushes its (block-buffered) output and exits."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def parse(text: str) -> list[tuple[int, float, float]]:
    """(sequence number unwrapped past 65535, send time, RTT ms) of every reply, in order."""
    out = []
    base, last = 0, None
    for line in text.splitlines():
        m = REPLY.match(line)
        if not m:
            continue
        seq = int(m.group(2))
        if last is not None and seq + base < last - 30000:
            base += 65536
        seq += base
        last = seq
        rtt = float(m.group(3))
        out.append((seq, float(m.group(1)) - rtt / 1000.0, rtt))
    return out


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def window(replies: list[tuple[int, float, float]], t0: float, t1: float) -> dict:
    inside = [r for r in replies if t0 <= r[1] < t1]
    if not inside:
        return {"replies": 0, "lost": None, "rtt_ms": None}
    lost = 0
    for (sa, ta, _), (sb, tb, _) in zip(replies, replies[1:]):
        if sb - sa <= 1 or tb < t0 or ta >= t1:
            continue
        step = (tb - ta) / (sb - sa)
        lost += sum(1 for k in range(1, sb - sa) if t0 <= ta + k * step < t1)
    rtts = [r[2] for r in inside]
    return {"replies": len(inside), "lost": lost,
            "rtt_ms": {"p50": percentile(rtts, 0.5), "p99": percentile(rtts, 0.99), "max": max(rtts)}}
