"""Running commands and waiting for things: the helpers every other module is built on."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import Callable, Optional


class PartUnavailable(RuntimeError):
    """A part (a binary, a daemon, FRR ...) is missing or did not come up. `component` names
    the part, `reason` says what happened (with the end of its log where there is one)."""

    def __init__(self, component: str, reason: str):
        super().__init__(f"{component}: {reason}")
        self.component = component
        self.reason = reason


def run(cmd: str | list[str], check: bool = True, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    """Runs a command, capturing text output; raises with its output on failure."""
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


def wait_until(predicate: Callable[[], object], timeout: float, what: str,
               check_alive: Callable[[], None] = lambda: None, interval: float = 0.2) -> float:
    """Polls predicate until it is true and returns the seconds it took. check_alive() runs
    before every poll, outside the catch: a daemon that died fails the wait at once. The
    predicate's own errors (a client that cannot connect yet) count as "not yet", and the last
    one is named in the TimeoutError."""
    t0 = time.monotonic()
    last_exc: Optional[Exception] = None
    while True:
        check_alive()
        try:
            if predicate():
                return time.monotonic() - t0
        except (RuntimeError, ValueError, KeyError, OSError, subprocess.TimeoutExpired) as exc:
            last_exc = exc
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}"
                               + (f" (last error: {last_exc})" if last_exc else ""))
        time.sleep(interval)


def stop_process(proc: Optional[subprocess.Popen], grace: float = 10) -> Optional[int]:
    """SIGTERM, then SIGKILL if it has not exited within `grace` seconds. Returns the exit
    status (None for None)."""
    if proc is None:
        return None
    if proc.poll() is not None:
        return proc.returncode
    proc.terminate()
    try:
        return proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(timeout=5)


def wait_path(path: Path, proc: subprocess.Popen, what: str, timeout: float,
              log: Callable[[], str] = lambda: "") -> None:
    """Waits until `path` exists (a daemon's socket) while `proc` lives. Raises PartUnavailable
    naming `what` with the end of its log when it exits first or the time is up."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise PartUnavailable(what, f"exited with status {proc.returncode} before creating {path}; "
                                        f"log:\n{log()[-2000:]}")
        if time.monotonic() > deadline:
            raise PartUnavailable(what, f"did not create {path} within {timeout:.0f}s; log:\n{log()[-2000:]}")
        time.sleep(0.05)


def cpu_seconds(pid: int, children: bool = False) -> float:
    """CPU time (user + system, every thread) process `pid` has used so far; with `children`,
    plus that of the child processes it has waited for (the helpers it runs)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])        # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])   # cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")
