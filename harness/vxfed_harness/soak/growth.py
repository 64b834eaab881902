"""Is a daemon's memory or fd count flat? Pure functions over samples, no I/O.

A daemon's series is cut into segments at every change of process id (a restart starts a
new process: its memory says nothing about the old one's). Within a segment the first
`warmup_s` are dropped (a process fills its caches, allocator arenas and the churn's bounded
set of pods after it starts); of what remains, the median of the last `fraction` of the
samples is compared with the median of the first `fraction`. Medians, not the first and last
sample: a sample can catch a transient (an API connection open, a burst of allocations in
flight) that is not growth.

A segment is flat when last - first <= max(abs_tolerance, rel_tolerance * first). A daemon
is "flat" when at least one segment could be judged and none grew, "grows" when one grew,
and "not judged" when no segment had `min_samples` samples after its warm-up: that is not a
pass (the check was not made).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Optional

FLAT, GROWS, NOT_JUDGED = "flat", "grows", "not judged"


@dataclass(frozen=True)
class Sample:
    t: float                 # unix time
    pid: Optional[int]       # None: the daemon was not running at that moment (restart)
    value: Optional[float]   # RSS in KiB or open fds; None with pid None


@dataclass(frozen=True)
class Tolerance:
    abs: float               # in the value's unit
    rel: float               # of the first median

    def allowed(self, first: float) -> float:
        return max(self.abs, self.rel * first)


def segments(samples: list[Sample]) -> list[list[Sample]]:
    """Runs of consecutive samples of one process; samples without a process end a run."""
    out: list[list[Sample]] = []
    current: list[Sample] = []
    for s in samples:
        if s.pid is None or s.value is None:
            if current:
                out.append(current)
            current = []
            continue
        if current and current[-1].pid != s.pid:
            out.append(current)
            current = []
        current.append(s)
    if current:
        out.append(current)
    return out


def judge_segment(seg: list[Sample], tol: Tolerance, warmup_s: float, fraction: float = 0.2,
                  min_samples: int = 5) -> dict:
    """The figures of one segment and its verdict."""
    start = seg[0].t
    kept = [s for s in seg if s.t - start >= warmup_s]
    out = {"pid": seg[0].pid, "from": seg[0].t, "to": seg[-1].t, "samples": len(seg), "judged_samples": len(kept)}
    if len(kept) < min_samples:
        out.update(verdict=NOT_JUDGED, reason=f"{len(kept)} sample(s) after the {warmup_s:.0f} s warm-up, "
                                              f"{min_samples} needed")
        return out
    n = max(1, int(round(len(kept) * fraction)))
    first = statistics.median(s.value for s in kept[:n])
    last = statistics.median(s.value for s in kept[-n:])
    allowed = tol.allowed(first)
    out.update(first_median=first, last_median=last, growth=last - first, allowed=allowed,
               window_samples=n, slope_per_hour=slope_per_hour(kept),
               verdict=FLAT if last - first <= allowed else GROWS)
    return out


def slope_per_hour(samples: list[Sample]) -> float | None:
    """The least-squares slope of the samples, per hour: reported beside the verdict (not
    judged), so that a steady rise within the tolerance of a short segment is still seen."""
    if len(samples) < 2:
        return None
    mt = statistics.fmean(s.t for s in samples)
    mv = statistics.fmean(s.value for s in samples)
    den = sum((s.t - mt) ** 2 for s in samples)
    if den == 0:
        return None
    return round(3600 * sum((s.t - mt) * (s.value - mv) for s in samples) / den, 1)


def judge(samples: list[Sample], tol: Tolerance, warmup_s: float, fraction: float = 0.2,
          min_samples: int = 5) -> dict:
    """A daemon's verdict over all its segments: flat, grows or not judged."""
    segs = [judge_segment(s, tol, warmup_s, fraction, min_samples) for s in segments(samples)]
    verdicts = [s["verdict"] for s in segs]
    if GROWS in verdicts:
        verdict = GROWS
    elif FLAT in verdicts:
        verdict = FLAT
    else:
        verdict = NOT_JUDGED
    pids = [s["pid"] for s in segs]
    restarts = sum(1 for a, b in zip(pids, pids[1:]) if a != b)
    return {"verdict": verdict, "segments": segs, "restarts": restarts}
