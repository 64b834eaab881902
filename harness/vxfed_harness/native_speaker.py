"""vxfed-scale-speaker (perf/federation/speaker/) as the BGP speaker that stands for many nodes:
the same interface as ExaBgp (exabgp.py), so that scale_bed.py takes either. Each session
announces its fixed list of (prefix, next hop) routes as soon as it is Established, from one
pre-encoded buffer written in large writes; more routes are announced through the process's
stdin; SIGTERM ends every session with a Cease, and the peers withdraw its routes.

    spk = NativeSpeaker(ns, workdir / "speaker", build_dir)
    spk.session(Session(peer="198.18.0.10", local="198.18.0.12", local_as=65001, peer_as=65001,
                        routes=[("10.64.0.64/26", "198.18.1.1"), ...]))
    spk.start()                                  # connects, sends every route
    spk.announce(session, "10.128.0.0/26", "198.19.255.1")
    spk.stop()                                   # SIGTERM: a Cease to each peer

Like ExaBGP it packs routes with equal next hops into one UPDATE; with a next hop of their own
every route is an UPDATE of its own. Why not ExaBGP at 130,000: docs/federation.md, "Scale".
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Optional

from .env import binary, require_binary
from .exabgp import Session
from .proc import PartUnavailable, stop_process
from .topology import Namespace

BINARY = "perf/federation/speaker/vxfed-scale-speaker"


def require_native_speaker(build_dir: Optional[Path] = None) -> Path:
    return require_binary(BINARY, build_dir)


class NativeSpeaker:
    """One vxfed-scale-speaker process in `where`, its config and log under `directory`."""

    def __init__(self, where: Namespace, directory: Path, build_dir: Optional[Path] = None):
        self.ns = where
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.build_dir = build_dir
        self.sessions: list[Session] = []
        self.proc: Optional[subprocess.Popen] = None
        self.starts = 0
        self.last_status: Optional[int] = None
        where.topo.on_close(f"vxfed-scale-speaker in {where}", self.stop)

    def session(self, s: Session) -> Session:
        self.sessions.append(s)
        return s

    def write_config(self) -> Path:
        doc = {"sessions": [{"peer": s.peer, "local": s.local, "local_as": s.local_as, "peer_as": s.peer_as,
                             "hold": s.hold, "connect_retry": 1, "routes": [list(r) for r in s.routes]}
                            for s in self.sessions]}
        path = self.dir / "speaker.json"
        path.write_text(json.dumps(doc))
        return path

    def start(self) -> subprocess.Popen:
        conf = self.write_config()
        self.starts += 1
        self.proc = self.ns.spawn([str(binary(BINARY, self.build_dir)), "--config", str(conf)],
                                  name=f"{self.dir.name}-run{self.starts}", stdin=subprocess.PIPE, text=True)
        return self.proc

    def _command(self, line: str) -> None:
        self.check_alive()
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def announce(self, s: Session, prefix: str, next_hop: str) -> None:
        """One more route on session s (named by the peer and our address)."""
        self._command(f"announce {s.peer} {s.local} {prefix} {next_hop}")

    def withdraw(self, s: Session, prefix: str, next_hop: str) -> None:
        self._command(f"withdraw {s.peer} {s.local} {prefix}")

    def log(self) -> str:
        return self.ns.topo.log_of_process(self.proc) if self.proc is not None else ""

    def check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise PartUnavailable("vxfed-scale-speaker", f"exited with {self.proc.returncode}:\n{self.log()[-2000:]}")

    def stop(self) -> None:
        """SIGTERM: a Cease to every peer, which withdraws the session's routes."""
        if self.proc is not None:
            # 0 when every session closed with its Cease (the speaker logs any it could not send).
            self.last_status = stop_process(self.proc, grace=20)
            if self.proc.stdin is not None:
                try:
                    self.proc.stdin.close()
                except OSError:
                    pass
            self.proc = None
