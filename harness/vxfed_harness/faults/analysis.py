"""What the pods saw during one fault, from the probes' records (stream.py). No I/O.

A stream is one sender's datagrams to one receiver: the send time of every sequence number,
and every datagram any probe received with that stream's id. Figures for a window of send
times [t0, t1):
  lost           sequence numbers sent in the window that the right pod never received;
  duplicates     receptions of a sequence number beyond the first;
  reordered      datagrams that arrived after a higher sequence number of their stream;
  misdelivered   datagrams that arrived at a pod other than the one they were sent to (by
                 stream, IPv4 destination or the destination carried in the payload);
  longest_gap_ms the longest time, in send times, between two consecutive datagrams that
                 arrived, over the window (with no loss: the sender's own spacing);
  flowing_at     the send time of the first datagram received after the window's last loss
                 (None when nothing was lost): when traffic flowed again.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Iterable, Optional


@dataclass
class Reception:
    stream: int
    seq: int
    sent: float
    received: float
    ip_dst: int          # the IPv4 destination it arrived with
    dst: int             # the pod it was meant for (payload)
    at: int              # the address of the pod that received it


@dataclass
class Stream:
    id: int
    name: str            # "A0->B0"
    dst: int             # the receiving pod's address
    sent: list[float]    # send time by sequence number
    receptions: list[Reception] = field(default_factory=list)   # at the right pod, in arrival order


@dataclass
class WindowFigures:
    lost: int = 0
    duplicates: int = 0
    reordered: int = 0
    misdelivered: int = 0
    sent: int = 0
    longest_gap_ms: float = 0.0
    flowing_at: Optional[float] = None
    per_stream: dict = field(default_factory=dict)


def assign(streams: dict[int, Stream], receptions: Iterable[Reception]) -> list[Reception]:
    """Hands every reception to its stream; returns the misdelivered ones."""
    wrong = []
    for r in receptions:
        s = streams.get(r.stream)
        if s is None or r.at != s.dst or r.ip_dst != s.dst or r.dst != s.dst:
            wrong.append(r)
        else:
            s.receptions.append(r)
    return wrong


def _stream_window(s: Stream, t0: float, t1: float) -> dict:
    lo = bisect.bisect_left(s.sent, t0)
    hi = bisect.bisect_left(s.sent, t1)
    first: dict[int, Reception] = {}
    dups = reordered = 0
    top = -1
    for r in s.receptions:
        if r.seq in first:
            if lo <= r.seq < hi:
                dups += 1
            continue
        first[r.seq] = r
        if r.seq < top and lo <= r.seq < hi:
            reordered += 1
        top = max(top, r.seq)
    got = sorted(q for q in first if q < len(s.sent))
    in_window = [q for q in got if lo <= q < hi]
    lost = (hi - lo) - len(in_window)
    # Gaps between consecutive received sequence numbers whose span touches the window.
    longest = 0.0
    flowing_at = None
    i = bisect.bisect_left(got, lo)
    prev = got[i - 1] if i > 0 else None
    for q in got[i:]:
        if prev is not None:
            span_start, span_end = s.sent[prev], s.sent[q]
            if span_end >= t0 and span_start < t1:
                longest = max(longest, span_end - span_start)
                if q > prev + 1:
                    flowing_at = s.sent[q]
        prev = q
        if q >= hi:
            break
    never_recovered = False
    if hi > lo and (prev is None or prev < hi - 1) and (not got or got[-1] < hi):
        # The loss runs to the end of the window and nothing arrived after it.
        never_recovered = True
        flowing_at = None
        longest = max(longest, s.sent[hi - 1] - (s.sent[prev] if prev is not None else t0))
    return {"sent": hi - lo, "lost": lost, "duplicates": dups, "reordered": reordered,
            "longest_gap_ms": round(1000 * longest, 2), "flowing_at": flowing_at,
            "never_recovered": never_recovered}


def window(streams: dict[int, Stream], misdelivered: list[Reception], t0: float, t1: float) -> WindowFigures:
    out = WindowFigures()
    for s in streams.values():
        f = _stream_window(s, t0, t1)
        out.per_stream[s.name] = f
        out.sent += f["sent"]
        out.lost += f["lost"]
        out.duplicates += f["duplicates"]
        out.reordered += f["reordered"]
        out.longest_gap_ms = max(out.longest_gap_ms, f["longest_gap_ms"])
        if f["flowing_at"] is not None:
            out.flowing_at = max(out.flowing_at or 0.0, f["flowing_at"])
    out.misdelivered = sum(1 for r in misdelivered if t0 <= r.sent < t1)
    return out


def timeline(streams: dict[int, Stream], t0: float, t1: float, bucket_s: float = 0.05) -> dict[str, list[int]]:
    """Per stream, how many of the datagrams sent in each bucket of send time [t0, t1) arrived
    (first receptions only): the shape of an outage."""
    n = max(1, int(math.ceil((t1 - t0) / bucket_s)))
    out = {}
    for s in streams.values():
        counts = [0] * n
        seen = set()
        for r in s.receptions:
            if r.seq in seen or not t0 <= r.sent < t1:
                continue
            seen.add(r.seq)
            counts[min(n - 1, int((r.sent - t0) / bucket_s))] += 1
        out[s.name] = counts
    return out
