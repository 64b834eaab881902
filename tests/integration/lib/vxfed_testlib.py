"""Shared harness for vxfed integration tests: network namespaces, veth links, processes.

Every integration test builds its topology out of real kernel objects and must leave nothing
behind. Use `Topology` as a context manager: namespaces, links and processes it created are
removed on exit, on failure and on SIGTERM/SIGINT.

Skipping: a test that cannot run on this machine calls `skip(reason)`. That exits 77 (meson
reports "skipped") unless VXFED_REQUIRE_ALL=1 (set by scripts/test.sh, i.e. in CI), where it
exits 1: CI has no skipped tests.
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
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

SKIP_EXIT = 77

BUILD_DIR = Path(os.environ.get("VXFED_BUILD_DIR", Path(__file__).resolve().parents[3] / "build"))
SOURCE_DIR = Path(os.environ.get("VXFED_SOURCE_DIR", Path(__file__).resolve().parents[3]))


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def skip(reason: str) -> None:
    """Skips the test, or fails it where every test must run (CI)."""
    if os.environ.get("VXFED_REQUIRE_ALL") == "1" or os.environ.get("CI") == "true":
        print(f"FAIL (cannot run, and skipping is not allowed here): {reason}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(SKIP_EXIT)


def require_root() -> None:
    if os.geteuid() != 0:
        skip("needs root (network namespaces)")


def require_binary(path: Path | str) -> Path:
    p = Path(path)
    if not p.is_absolute():
        p = BUILD_DIR / p
    if not p.exists():
        skip(f"{p} is not built")
    return p


def require_program(name: str) -> str:
    found = shutil.which(name)
    if not found:
        skip(f"{name} is not installed (scripts/install-deps.sh installs it)")
    return found


def run(cmd: str | list[str], check: bool = True, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    """Runs a command on the host, capturing text output; raises with its output on failure."""
    args = shlex.split(cmd) if isinstance(cmd, str) else cmd
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"command failed ({proc.returncode}): {' '.join(args)}\n"
            f"stdout: {proc.stdout.strip()}\nstderr: {proc.stderr.strip()}")
    return proc


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.1) -> None:
    """Polls predicate until it is true; raises TimeoutError naming `what` otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception:  # the thing may not exist yet
            pass
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def stop_process(proc: Optional[subprocess.Popen], grace: float = 10) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `grace` seconds. None or exited: nothing."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def unique_suffix() -> str:
    """Short suffix so that concurrent tests never share namespace or link names."""
    return f"{os.getpid() % 100000:05d}"


class Namespace:
    def __init__(self, topo: "Topology", name: str):
        self.topo = topo
        self.name = name

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.name]

    def run(self, cmd: str | list[str], check: bool = True, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        args = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        return run(self.prefix() + args, check=check, timeout=timeout, **kw)

    def spawn(self, cmd: str | list[str], name: str, env: Optional[dict] = None, **kw) -> subprocess.Popen:
        args = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        return self.topo.spawn(self.prefix() + args, name=f"{self.name}:{name}", env=env, **kw)

    def ping(self, dest: str, count: int = 3, size: Optional[int] = None, df: bool = False,
             timeout: float = 30) -> subprocess.CompletedProcess:
        args = ["ping", "-n", "-c", str(count), "-i", "0.2", "-W", "2"]
        if size is not None:
            args += ["-s", str(size)]
        if df:
            args += ["-M", "do"]
        return self.run(args + [dest], check=False, timeout=timeout)

    def __str__(self) -> str:
        return self.name


class Topology:
    """Owns namespaces, links and processes; tears all of them down on exit."""

    def __init__(self, tag: str):
        self.tag = tag
        self.suffix = unique_suffix()
        self.namespaces: list[Namespace] = []
        self.host_links: list[str] = []
        self.processes: list[tuple[str, subprocess.Popen]] = []
        self.workdir = Path(tempfile.mkdtemp(prefix=f"vxfed-{tag}-"))
        self._closed = False

    # -- lifecycle --
    def __enter__(self) -> "Topology":
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        atexit.register(self.close)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _on_signal(self, signum, _frame) -> None:
        self.close()
        sys.exit(128 + signum)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
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
        """Creates a veth pair with ends a_name (in a) and b_name (in b); None means the host."""
        tmp_a = f"va{self.suffix}{len(self.host_links)}"[:15]
        tmp_b = f"vb{self.suffix}{len(self.host_links)}"[:15]
        run(["ip", "link", "add", tmp_a, "mtu", str(mtu), "type", "veth", "peer", "name", tmp_b, "mtu", str(mtu)])
        for tmp, ns, final in ((tmp_a, a, a_name), (tmp_b, b, b_name)):
            if ns is not None:
                run(["ip", "link", "set", tmp, "netns", ns.name])
                ns.run(["ip", "link", "set", tmp, "name", final])
                ns.run(["ip", "link", "set", final, "up"])
            else:
                run(["ip", "link", "set", tmp, "name", final])
                run(["ip", "link", "set", final, "up"])
                self.host_links.append(final)

    def spawn(self, args: list[str], name: str, env: Optional[dict] = None, **kw) -> subprocess.Popen:
        """Starts a long-running process; its output goes to workdir/<name>.log."""
        log_path = self.workdir / (name.replace("/", "_").replace(":", "_") + ".log")
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        out = open(log_path, "w")
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=full_env,
                                start_new_session=True, **kw)
        self.processes.append((name, proc))
        return proc

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


def main_wrapper(test_main: Callable[[], None]) -> None:
    """Runs a test's main, turning exceptions into a clear failure with exit code 1."""
    try:
        test_main()
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - report everything
        import traceback
        traceback.print_exc()
        print(f"FAIL: {exc}", file=sys.stderr)
        sys.exit(1)
    print("PASS")
