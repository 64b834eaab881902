"""ExaBGP (Debian's exabgp 4.2) as a BGP speaker that stands for many nodes: each session
announces a fixed list of (prefix, next hop) routes as soon as it is Established, and more
routes can be announced later through ExaBGP's process API (a FIFO we write commands into).

    spk = ExaBgp(ns, workdir / "exabgp")
    spk.session(Session(peer="198.18.0.10", local="198.18.0.12", local_as=65001, peer_as=65001,
                        routes=[("10.64.0.64/26", "198.18.1.1"), ...]))
    spk.start()                                  # connects, sends every route
    spk.announce(session, "10.128.0.0/26", "198.19.255.1")
    spk.stop()                                   # SIGTERM: ExaBGP closes with a Cease

ExaBGP packs routes with equal attributes into one UPDATE; with a next hop of their own (one
VTEP per node block) every route is an UPDATE of its own, as a federation of many nodes sends.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .env import require_program
from .proc import PartUnavailable, stop_process
from .topology import Namespace


def require_exabgp() -> str:
    return require_program("exabgp")


@dataclass
class Session:
    peer: str
    local: str
    local_as: int
    peer_as: int
    routes: list[tuple[str, str]] = field(default_factory=list)   # (prefix, next hop)
    hold: int = 30

    def render(self, process: str) -> str:
        lines = [f"neighbor {self.peer} {{",
                 f"  router-id {self.local};",
                 f"  local-address {self.local};",
                 f"  local-as {self.local_as};",
                 f"  peer-as {self.peer_as};",
                 f"  hold-time {self.hold};",
                 "  family { ipv4 unicast; }",
                 f"  api {{ processes [ {process} ]; }}",
                 "  static {"]
        lines += [f"    route {p} next-hop {nh};" for p, nh in self.routes]
        lines += ["  }", "}"]
        return "\n".join(lines) + "\n"


class ExaBgp:
    """One ExaBGP process in `where`, its config, FIFO and log under `directory`."""

    PROCESS = "vxfedapi"

    def __init__(self, where: Namespace, directory: Path):
        self.ns = where
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.sessions: list[Session] = []
        self.fifo = self.dir / "api.fifo"
        self.proc: Optional[subprocess.Popen] = None
        self._api = None
        self.starts = 0
        where.topo.on_close(f"ExaBGP in {where}", self.stop)

    def session(self, s: Session) -> Session:
        self.sessions.append(s)
        return s

    def write_config(self) -> Path:
        # The API process is cat reading our FIFO: every line we write is a command to ExaBGP.
        text = (f"process {self.PROCESS} {{\n  run /bin/cat {self.fifo};\n  encoder text;\n}}\n"
                + "".join(s.render(self.PROCESS) for s in self.sessions))
        path = self.dir / "exabgp.conf"
        path.write_text(text)
        return path

    def start(self) -> subprocess.Popen:
        conf = self.write_config()
        if not self.fifo.exists():
            os.mkfifo(self.fifo, 0o600)
        # Runs as root (no privilege drop: it must read our files), no CLI pipes in /run, no
        # listening socket (it connects to its peers), acks off (cat does not read them).
        env = {"exabgp.daemon.drop": "false", "exabgp.daemon.user": "root", "exabgp.api.cli": "false",
               "exabgp.api.ack": "false", "exabgp.tcp.bind": "", "exabgp.log.level": "INFO",
               "exabgp.daemon.daemonize": "false"}
        self.starts += 1
        self.proc = self.ns.spawn(["exabgp", str(conf)], name=f"exabgp-run{self.starts}", env=env)
        # Opening the FIFO for writing blocks until cat opens it for reading: ExaBGP has read its
        # config and started its API process by then.
        self._api = self._open_fifo()
        return self.proc

    def _open_fifo(self):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PartUnavailable("ExaBGP", f"exited with {self.proc.returncode}:\n{self.log()[-2000:]}")
            try:
                return open(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK), "w", buffering=1)
            except OSError:   # ENXIO: no reader yet
                time.sleep(0.05)
        raise PartUnavailable("ExaBGP", f"its API process did not open {self.fifo} in 120 s")

    def announce(self, s: Session, prefix: str, next_hop: str) -> None:
        """One more route on session s (the selector names the peer and our address)."""
        self._api.write(f"neighbor {s.peer} local-ip {s.local} announce route {prefix} next-hop {next_hop}\n")
        self._api.flush()

    def withdraw(self, s: Session, prefix: str, next_hop: str) -> None:
        self._api.write(f"neighbor {s.peer} local-ip {s.local} withdraw route {prefix} next-hop {next_hop}\n")
        self._api.flush()

    def log(self) -> str:
        return self.ns.topo.log_of_process(self.proc) if self.proc is not None else ""

    def check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise PartUnavailable("ExaBGP", f"exited with {self.proc.returncode}:\n{self.log()[-2000:]}")

    def stop(self) -> None:
        """SIGTERM: ExaBGP sends its peers a Cease and exits; its routes are withdrawn."""
        if self._api is not None:
            try:
                self._api.close()
            except OSError:
                pass
            self._api = None
        if self.proc is not None:
            stop_process(self.proc, grace=20)
            self.proc = None
