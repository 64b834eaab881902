"""How many of the machine's CPUs were busy over an interval, from /proc/stat.

A throughput figure alone hides what it cost: on a 2-core machine the kernel VXLAN path and
vxfed share the CPUs with both pods' stacks and the iperf3 ends, and a path that needs three
times the CPU per byte runs out of CPUs at a third of the rate. So each TCP run also reports
the CPUs busy while it ran and the Gbit/s that bought per busy CPU (docs/pod-ports.md,
"Where the rest goes"). Machine-wide on purpose: the namespaces of a test bed share one
kernel, and a packet's cost lands on whichever task the kernel runs it in (a pod's TCP
receive runs inside the sending dataplane's sendmmsg, for one), so no per-process split
tells the path's whole cost.

Busy = user + nice + system + irq + softirq (guest time is inside user already); idle and
iowait are not; steal (time the hypervisor gave to other guests) is not ours either.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class CpuSnapshot:
    busy_ticks: int
    at: float            # time.monotonic()


def parse_cpu_line(line: str) -> int:
    """Busy ticks of the aggregate `cpu` line of /proc/stat; ValueError if it is not one."""
    fields = line.split()
    if not fields or fields[0] != "cpu" or len(fields) < 8:
        raise ValueError(f"not the aggregate cpu line of /proc/stat: {line!r}")
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[1:8])
    return user + nice + system + irq + softirq


def snapshot(stat_text: Optional[str] = None) -> CpuSnapshot:
    text = stat_text if stat_text is not None else _STAT.read_text()
    return CpuSnapshot(parse_cpu_line(text.splitlines()[0]), time.monotonic())


def busy_cpus(before: CpuSnapshot, after: CpuSnapshot, ticks_per_second: Optional[int] = None) -> Optional[float]:
    """Average number of CPUs busy between the two snapshots (0 .. the CPU count); None for
    an empty interval."""
    hz = ticks_per_second or os.sysconf("SC_CLK_TCK")
    seconds = after.at - before.at
    if seconds <= 0:
        return None
    return (after.busy_ticks - before.busy_ticks) / hz / seconds
