"""CPU-bound processes beside the latency suite: the busy node of issue 35.

Nodes that run training jobs are never idle, and a forwarder whose workers are ordinary
threads queues behind whatever else is runnable, while the kernel's VXLAN path runs in softirq
ahead of any process. `latency_suite.py --background-load N` starts N `sha256sum /dev/zero`
processes at the default priority in the host's namespaces for the whole run (both variants,
the same load) and stops them at the end, on every path out.

What the load got is part of the result: a forwarder that keeps its latency by starving the
node is not a win. `cpus_used(mark)` is the CPUs' worth the hogs ran since `mark` (their
utime + stime from /proc/PID/stat over the wall time: 2.0 = two whole CPUs), taken around each
measurement, so the report can set the hogs' share under ours against their share under the
kernel variant.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional


@dataclass(frozen=True)
class LoadMark:
    cpu_seconds: float
    at: float            # time.monotonic()


def cpu_seconds_of(pid: int, ticks_per_second: Optional[int] = None) -> float:
    """utime + stime of a process, in seconds (0 once it is gone)."""
    hz = ticks_per_second or os.sysconf("SC_CLK_TCK")
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    # The command name (field 2) may hold spaces: the fields after it start past the last ')'.
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / hz   # utime, stime: fields 14 and 15 of stat


class BackgroundLoad:
    """N CPU-bound processes at the default priority, until stop()."""

    def __init__(self, processes: int):
        if processes < 0:
            raise ValueError("--background-load must be 0 or more processes")
        self.processes = processes
        self.procs: list[subprocess.Popen] = []

    def start(self) -> None:
        if not self.processes:
            return
        tool = shutil.which("sha256sum")
        if tool is None:
            raise RuntimeError("--background-load needs sha256sum (coreutils)")
        for _ in range(self.processes):
            self.procs.append(subprocess.Popen([tool, "/dev/zero"], stdin=subprocess.DEVNULL,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                               start_new_session=True))

    def mark(self) -> LoadMark:
        return LoadMark(sum(cpu_seconds_of(p.pid) for p in self.procs), time.monotonic())

    def cpus_used(self, since: LoadMark) -> Optional[float]:
        """CPUs' worth the hogs ran since `since` (None without load or for an empty interval)."""
        if not self.procs:
            return None
        now = self.mark()
        seconds = now.at - since.at
        return (now.cpu_seconds - since.cpu_seconds) / seconds if seconds > 0 else None

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
        for p in self.procs:
            p.wait(timeout=10)
        self.procs.clear()
