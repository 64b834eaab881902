"""RSS and open fds of every daemon of the topology, sampled from /proc every few seconds
by a thread, by process: each sample carries the pid it read, so a restart (a new pid) starts
a new segment of the daemon's series (growth.py).

The daemons are found through the harness's own handles, never by name over the machine
(other engineers run the same programs): vxfedd and vxfed-dataplane by the Popen the node
holds now (replaced at every restart), FRR's daemons by their pid files in the node's FRR
directory, etcd members by the EtcdCluster's Popens. A pid is only sampled when
/proc/PID/exe is the program expected, so a stale pid file or a reused pid is not sampled.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Optional

# The FRR daemons sampled when their pid file exists (bfdd runs on the federated topology only).
FRR_DAEMONS = ("zebra", "bgpd", "bfdd")


def read_proc(pid: int) -> tuple[int, int]:
    """(VmRSS in KiB, open fds) of pid; OSError/ValueError when it is gone."""
    rss = None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
                break
    if rss is None:
        raise ValueError(f"pid {pid}: no VmRSS (a zombie)")
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def exe_name(pid: int) -> Optional[str]:
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name
    except OSError:
        return None


def popen_pid(proc) -> Optional[int]:
    return proc.pid if proc is not None and proc.poll() is None else None


def pid_file(path: Path) -> Optional[int]:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def daemon_finders(topology) -> dict[str, tuple[str, Callable[[], Optional[int]]]]:
    """name -> (the program's file name, a function giving its pid now or None)."""
    out: dict[str, tuple[str, Callable[[], Optional[int]]]] = {}
    for label, n in topology.nodes().items():
        out[f"{label}/vxfedd"] = ("vxfedd", lambda n=n: popen_pid(n.vxfedd.proc))
        out[f"{label}/vxfed-dataplane"] = ("vxfed-dataplane", lambda n=n: popen_pid(n.dataplane.proc))
        for d in FRR_DAEMONS:
            path = n.frr.dir / f"{d}.pid"
            if d == "bfdd" and not n.frr.bfdd:
                continue
            out[f"{label}/{d}"] = (d, lambda path=path: pid_file(path))
    etcd = topology.etcd
    if etcd is not None:
        for i in range(etcd.size):
            out[f"etcd/m{i}"] = ("etcd", lambda etcd=etcd, i=i: popen_pid(etcd.procs[i]))
    return out


def dataplane_tables_bytes(node) -> Optional[int]:
    """What the dataplane says its forwarding tables use (status tables_bytes: the mapped
    arrays' resident pages), to tell the tables' share of its RSS; None when it does not answer."""
    try:
        return int(node.dataplane.status()["tables_bytes"])
    except (RuntimeError, ValueError, KeyError, TypeError, OSError, subprocess.SubprocessError):
        return None


class Sampler(threading.Thread):
    """series[name] = [[unix time, pid or None, rss KiB or None, fds or None], ...];
    tables[<node>/vxfed-dataplane] = [[unix time, tables bytes or None], ...]."""

    def __init__(self, topology, interval_s: float = 10.0):
        super().__init__(name="soak-sampler", daemon=True)
        self.finders = daemon_finders(topology)
        self.interval = interval_s
        self.series: dict[str, list[list]] = {name: [] for name in self.finders}
        self.nodes = topology.nodes()
        self.tables: dict[str, list[list]] = {f"{label}/vxfed-dataplane": [] for label in self.nodes}
        self.stop = threading.Event()

    def sample_once(self) -> None:
        now = time.time()
        for name, (program, find) in self.finders.items():
            pid = find()
            rss = fds = None
            if pid is not None:
                if exe_name(pid) != program:
                    # Between a kill and the new start, or a pid file left by a killed daemon.
                    pid = None
                else:
                    try:
                        rss, fds = read_proc(pid)
                    except (OSError, ValueError):
                        pid = None       # exited between the lookup and the read
            self.series[name].append([round(now, 3), pid, rss, fds])
        for label, n in self.nodes.items():
            self.tables[f"{label}/vxfed-dataplane"].append([round(now, 3), dataplane_tables_bytes(n)])

    def missing(self) -> list[str]:
        """The daemons the last sample found no process of (at the start: a part not running)."""
        return [name for name, rows in self.series.items() if not rows or rows[-1][1] is None]

    def run(self) -> None:
        next_at = time.monotonic()
        while not self.stop.is_set():
            self.sample_once()
            next_at += self.interval
            self.stop.wait(max(0.0, next_at - time.monotonic()))
