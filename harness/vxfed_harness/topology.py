"""Network namespaces, veth links and processes, all removed again.

Every topology is built out of real kernel objects and must leave nothing behind. Use
`Topology` as a context manager (or call close()): the cleanups registered with it, the
processes it started, its host links and namespaces, the paths registered with it and its
work directory are removed on exit, on failure and on SIGTERM/SIGINT, in that order. When the
`with` block ends in an exception, the dumps registered with on_failure() (FRR's view, ...)
and every process log are printed first, so that CI output explains the failure.

Names carry the pid (`unique_suffix()`), so topologies of concurrent runs never collide:
namespaces are `vx<tag[:6]>-<short>-<suffix>`.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Optional

from .env import log
from .proc import run, stop_process


def unique_suffix() -> str:
    """Short suffix so that concurrent runs never share namespace or link names."""
    return f"{os.getpid() % 100000:05d}"


class Namespace:
    """A network namespace of a Topology (or, with name None, the host's: `Topology.host`)."""

    def __init__(self, topo: "Topology", name: Optional[str]):
        self.topo = topo
        self.name = name

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.name] if self.name else []

    @property
    def path(self) -> str:
        """The namespace's bind mount, as CNI_NETNS names it."""
        return f"/var/run/netns/{self.name}"

    def run(self, cmd: str | list[str], check: bool = True, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        args = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        return run(self.prefix() + args, check=check, timeout=timeout, **kw)

    def spawn(self, cmd: str | list[str], name: str, env: Optional[dict] = None, **kw) -> subprocess.Popen:
        args = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        full = f"{self.name}:{name}" if self.name else name
        return self.topo.spawn(self.prefix() + args, name=full, env=env, **kw)

    def sysctl(self, *settings: str) -> None:
        for s in settings:
            self.run(["sysctl", "-qw", s])

    def nstat(self, *names: str, check: bool = True) -> dict[str, int]:
        """The kernel's counters of this namespace named (UdpNoPorts, UdpRcvbufErrors, ...),
        absolute (-a) and without touching nstat's history file (-s), which every namespace
        shares; zeros included (-z)."""
        from .latency.parsers import parse_nstat   # late: latency/ builds on this module
        return parse_nstat(self.run(["nstat", "-a", "-s", "-z", *names], check=check).stdout)

    def ping(self, dest: str, count: int = 3, size: Optional[int] = None, df: bool = False,
             timeout: float = 30) -> subprocess.CompletedProcess:
        args = ["ping", "-n", "-c", str(count), "-i", "0.2", "-W", "2"]
        if size is not None:
            args += ["-s", str(size)]
        if df:
            args += ["-M", "do"]
        return self.run(args + [dest], check=False, timeout=timeout)

    def __str__(self) -> str:
        return self.name or "host"


class Topology:
    """Owns namespaces, links, processes and paths; tears all of them down on close()."""

    def __init__(self, tag: str):
        self.tag = tag
        self.suffix = unique_suffix()
        self.namespaces: list[Namespace] = []
        self.host_links: list[str] = []
        self.processes: list[tuple[str, subprocess.Popen]] = []
        self.host = Namespace(self, None)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"vxfed-{tag}-"))
        self._logs: dict[int, Path] = {}
        self._cleanups: list[tuple[str, Callable[[], None]]] = []
        self._failure_dumps: list[tuple[str, Callable[[], None]]] = []
        self._paths: list[Path] = []
        self._closed = False

    # -- lifecycle --
    def __enter__(self) -> "Topology":
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        atexit.register(self.close)
        return self

    def __exit__(self, exc_type, _exc, _tb) -> None:
        if exc_type is not None and not issubclass(exc_type, SystemExit):
            self.report_failure()
        self.close()

    def _on_signal(self, signum, _frame) -> None:
        self.close()
        sys.exit(128 + signum)

    def on_close(self, what: str, cleanup: Callable[[], None]) -> None:
        """Runs cleanup() first thing in close(), the last registered first (e.g. a node's
        orderly shutdown: its daemons before FRR). A failing cleanup is logged, not raised."""
        self._cleanups.append((what, cleanup))

    def on_failure(self, what: str, dump: Callable[[], None]) -> None:
        """Runs dump() (it prints what explains a failure) when the `with` block fails."""
        self._failure_dumps.append((what, dump))

    def report_failure(self) -> None:
        """The registered dumps, then every process log (__exit__ calls it on an exception)."""
        for what, dump in self._failure_dumps:
            try:
                dump()
            except Exception as exc:  # noqa: BLE001 - a broken dump must not hide the failure
                print(f"----- {what}: dump failed: {exc}", file=sys.stderr)
        self.dump_logs()

    def remove_at_close(self, path: Path | str) -> None:
        """Removes path (a directory tree) in close(), after every process has stopped."""
        self._paths.append(Path(path))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for what, cleanup in reversed(self._cleanups):
            try:
                cleanup()
            except Exception as exc:  # noqa: BLE001 - the rest of the teardown must still run
                log(f"teardown: {what}: {exc}")
        for _name, proc in reversed(self.processes):
            stop_process(proc)
        for link in self.host_links:
            run(["ip", "link", "del", link], check=False)
        for ns in reversed(self.namespaces):
            # Kill anything still running inside before deleting the namespace.
            pids = run(["ip", "netns", "pids", ns.name], check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            run(["ip", "netns", "del", ns.name], check=False)
        for path in self._paths:
            shutil.rmtree(path, ignore_errors=True)
        if os.environ.get("VXFED_KEEP_WORKDIR") != "1":
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- building blocks --
    def netns(self, short: str) -> Namespace:
        name = f"vx{self.tag[:6]}-{short}-{self.suffix}"
        run(["ip", "netns", "add", name])
        ns = Namespace(self, name)
        self.namespaces.append(ns)
        ns.run("ip link set lo up")
        return ns

    def veth(self, a: Namespace | None, a_name: str, b: Namespace | None, b_name: str,
             mtu: int = 9000) -> None:
        """Creates a veth pair with ends a_name (in a) and b_name (in b); None (or
        Topology.host) means the host."""
        tmp_a = f"va{self.suffix}{len(self.host_links)}"[:15]
        tmp_b = f"vb{self.suffix}{len(self.host_links)}"[:15]
        run(["ip", "link", "add", tmp_a, "mtu", str(mtu), "type", "veth", "peer", "name", tmp_b, "mtu", str(mtu)])
        for tmp, ns, final in ((tmp_a, a, a_name), (tmp_b, b, b_name)):
            if ns is not None and ns.name is not None:
                run(["ip", "link", "set", tmp, "netns", ns.name])
                ns.run(["ip", "link", "set", tmp, "name", final])
                ns.run(["ip", "link", "set", final, "up"])
            else:
                run(["ip", "link", "set", tmp, "name", final])
                run(["ip", "link", "set", final, "up"])
                self.host_links.append(final)

    def wire(self, a: Namespace, a_addrs: list[str], b: Namespace, b_addrs: list[str], ifname: str = "ul0",
             b_ifname: Optional[str] = None, mtu: int = 9000) -> None:
        """A point-to-point veth named ifname on both sides (b_ifname for b's end if given),
        with addresses "IP/LEN" on each end."""
        b_ifname = b_ifname or ifname
        self.veth(a, ifname, b, b_ifname, mtu=mtu)
        for ns, dev, addrs in ((a, ifname, a_addrs), (b, b_ifname, b_addrs)):
            for addr in addrs:
                ns.run(["ip", "addr", "add", addr, "dev", dev])

    def switch(self, short: str, ports: list[tuple[str, Namespace, str, list[str]]], mtu: int = 9000) -> Namespace:
        """A namespace `short` with bridge br0 (an L2 switch) and, for each (port, ns, ifname,
        addrs), a veth from switch port `port` to `ifname` in ns with those addresses. Taking a
        port down (`sw.run("ip link set PORT down")`) cuts that member off silently."""
        sw = self.netns(short)
        sw.run(["ip", "link", "add", "br0", "mtu", str(mtu), "type", "bridge"])
        sw.run(["ip", "link", "set", "br0", "up"])
        for port, ns, ifname, addrs in ports:
            self.veth(ns, ifname, sw, port, mtu=mtu)
            sw.run(["ip", "link", "set", port, "master", "br0"])
            for addr in addrs:
                ns.run(["ip", "addr", "add", addr, "dev", ifname])
        return sw

    def spawn(self, args: list[str], name: str, env: Optional[dict] = None, **kw) -> subprocess.Popen:
        """Starts a long-running process; its output goes to workdir/<name>.log."""
        log_path = self.workdir / (name.replace("/", "_").replace(":", "_") + ".log")
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        out = open(log_path, "w")
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=full_env,
                                start_new_session=True, **kw)
        out.close()
        self.processes.append((name, proc))
        self._logs[proc.pid] = log_path
        return proc

    def log_of_process(self, proc: subprocess.Popen) -> str:
        """The log text of a process this topology started."""
        path = self._logs.get(proc.pid)
        return path.read_text(errors="replace") if path and path.exists() else ""

    def log_of(self, name_fragment: str) -> str:
        """Returns the log text of the first process whose name contains name_fragment."""
        for path in sorted(self.workdir.glob("*.log")):
            if name_fragment.replace(":", "_") in path.name:
                return path.read_text(errors="replace")
        return ""

    def dump_logs(self) -> None:
        """Prints every process log; call on failure so CI output explains it."""
        for path in sorted(self.workdir.glob("*.log")):
            print(f"----- {path.name} -----", file=sys.stderr)
            print(path.read_text(errors="replace")[-6000:], file=sys.stderr)
