"""Lists what a run left behind: namespaces, host links, mounts, processes, temp dirs.

Other engineers create and delete their own namespaces on this machine at the same time, so
the listing is restricted to objects whose names carry this run's tag and pid suffix, and to
the processes this run started or found inside its namespaces.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .proc import run


@dataclass
class Inventory:
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    mounts: list[str] = field(default_factory=list)
    processes: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.namespaces or self.links or self.mounts or self.processes or self.dirs)

    def describe(self) -> str:
        parts = [f"{len(v)} {k}" + (f" ({', '.join(v[:6])}{'...' if len(v) > 6 else ''})" if v else "")
                 for k, v in (("namespaces", self.namespaces), ("host links", self.links),
                              ("mounts", self.mounts), ("processes", self.processes),
                              ("temp dirs", self.dirs))]
        return ", ".join(parts)


def _alive(pid: int) -> str | None:
    """The command line of pid if it is alive and not a zombie, else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return None
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def take(name_markers: list[str], suffix: str, pids: set[int], dirs: list[Path]) -> Inventory:
    """Objects of this run: netns/mounts whose name starts with a marker and ends with -suffix;
    host links carrying the suffix (Topology.veth's temporary names); the given pids;
    the given temp dirs; any process whose command line names one of those dirs."""
    inv = Inventory()

    def ours(name: str) -> bool:
        return any(name.startswith(m) for m in name_markers) and name.endswith(f"-{suffix}")

    listing = run(["ip", "netns", "list"], check=False).stdout.split("\n")
    inv.namespaces = [l.split()[0] for l in listing if l.strip() and ours(l.split()[0])]
    for line in run(["ip", "-o", "link", "show"], check=False).stdout.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if suffix in name:
                inv.links.append(name)
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        mnt = fields[4] if len(fields) > 4 else ""
        if (mnt.startswith("/run/netns/") and ours(Path(mnt).name)) or any(str(d) in mnt for d in dirs):
            inv.mounts.append(mnt)
    for pid in sorted(pids):
        cmd = _alive(pid)
        if cmd is not None:
            inv.processes.append(f"{pid} {cmd[:60]}")
    dir_strs = [str(d) for d in dirs]
    if dir_strs:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in pids or int(entry.name) == os.getpid():
                continue
            cmd = _alive(int(entry.name))
            if cmd and any(d in cmd for d in dir_strs):
                inv.processes.append(f"{entry.name} {cmd[:60]}")
    inv.dirs = [str(d) for d in dirs if d.exists()]
    return inv
