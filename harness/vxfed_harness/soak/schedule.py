"""When the soak restarts a daemon. Pure, no I/O.

Restarts come every `period_s`; the first one at min(period_s, duration_s * first_at), so that
every kind of restart happens at least once in a run shorter than its period (a short
validation run exercises what the hour does), and none in the last `quiet_tail_s`, so that the
end state is read from daemons that have settled.
"""

from __future__ import annotations


def restart_times(duration_s: float, period_s: float, first_at: float, quiet_tail_s: float = 30.0) -> list[float]:
    """Seconds from the start of the soak."""
    if period_s <= 0:
        raise ValueError(f"a restart period must be positive, got {period_s}")
    out = []
    t = min(period_s, duration_s * first_at)
    while t < duration_s - quiet_tail_s:
        out.append(round(t, 3))
        t += period_s
    return out
