"""One FRR instance per namespace, started and stopped by scripts/frr-start.sh and
scripts/frr-stop.sh (the real thing: docs/bgp.md, "Running FRR for tests"); its directory
holds frr.conf, the daemons' sockets, pid files and logs. vtysh talks to it through that
directory."""

from __future__ import annotations

import re
import time
from pathlib import Path

from .env import SCRIPTS_DIR, require_program, require_root, skip
from .proc import PartUnavailable, run
from .topology import Namespace

FRR_LIB = Path("/usr/lib/frr")
FPM_MODULE = Path("/usr/lib/x86_64-linux-gnu/frr/modules/dplane_fpm_nl.so")


def require_frr(bfdd: bool = False) -> None:
    """Skips unless root and FRR with what vxfed uses (zebra's FPM module, frr-reload)."""
    require_root()
    daemons = ["zebra", "bgpd", "frr-reload.py"] + (["bfdd"] if bfdd else [])
    for d in daemons:
        if not (FRR_LIB / d).exists():
            skip(f"{FRR_LIB / d} missing (apt-get install frr frr-pythontools)")
    require_program("vtysh")
    if not FPM_MODULE.exists():
        skip("FRR's dplane_fpm_nl module is missing")


class Frr:
    """FRR (zebra with dplane_fpm_nl, bgpd; bfdd with bfdd=True) in `where`, under `directory`.
    Once started it is stopped when the Topology closes."""

    def __init__(self, where: Namespace, directory: Path, bfdd: bool = False):
        self.ns = where
        self.dir = Path(directory)
        self.bfdd = bfdd
        self.started = False

    def start(self, only: str = "") -> float:
        """Starts the instance (or, with only="bgpd", that daemon again, loading frr.conf into
        it alone). Returns the seconds it took; PartUnavailable if it did not come up."""
        args = [str(SCRIPTS_DIR / "frr-start.sh"), "--dir", str(self.dir)]
        if self.ns.name:
            args += ["--netns", self.ns.name]
        if only:
            args += ["--only", only]
        elif self.bfdd:
            args.append("--bfdd")
        t0 = time.monotonic()
        res = run(args, check=False, timeout=60)
        if res.returncode != 0:
            raise PartUnavailable("FRR (scripts/frr-start.sh)",
                                  f"did not start in {self.ns}: {(res.stderr or res.stdout).strip()[-400:]}")
        if not self.started:
            self.ns.topo.on_close(f"FRR in {self.ns}", self.stop)
        self.started = True
        return time.monotonic() - t0

    def stop(self, kill: bool = False, only: str = "") -> None:
        """SIGTERM (bgpd notifies its peers) or, with kill=True, SIGKILL as a crash does."""
        if not self.started:
            return
        args = [str(SCRIPTS_DIR / "frr-stop.sh"), "--dir", str(self.dir)]
        if kill:
            args.append("--kill")
        if only:
            args += ["--only", only]
        run(args, check=False, timeout=30)

    def bgp_view(self) -> str:
        """The BGP view bgpd runs as ("" for the default instance): a node on the BMP feed
        (bgp.feed: bmp) runs `router bgp ASN view vxfed`, as its frr.conf says."""
        conf = self.dir / "frr.conf"
        text = conf.read_text(errors="replace") if conf.exists() else ""
        m = re.search(r"^router bgp \d+ view (\S+)", text, re.M)
        return m.group(1) if m else ""

    def in_view(self, command: str) -> str:
        """`command` aimed at bgpd's view when it runs one: `show bgp X`, `show ip bgp X` and
        `clear bgp X` ask the default instance otherwise, which a view-only bgpd does not have
        (it answers {} or "No BGP process")."""
        view = self.bgp_view()
        if not view:
            return command
        return re.sub(r"^(show bgp|show ip bgp|clear bgp|clear ip bgp)(?! view )\b", rf"\1 view {view}", command)

    def vtysh(self, *commands: str, check: bool = False, timeout: float = 60, daemon: str = "") -> str:
        """vtysh -c ... inside the namespace; its standard output. daemon: ask that daemon
        alone (vtysh -d), not the merged view of all of them. BGP show/clear commands go to
        bgpd's view when it runs one (in_view)."""
        args = ["vtysh", "--vty_socket", str(self.dir), "--config_dir", str(self.dir)]
        if daemon:
            args += ["-d", daemon]
        for c in commands:
            args += ["-c", self.in_view(c)]
        return self.ns.run(args, check=check, timeout=timeout).stdout

    def write_conf(self, text: str) -> None:
        """frr.conf for a plain FRR peer (frr-start.sh loads it); vxfedd writes its own."""
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "frr.conf").write_text(text)

    def adapter_section(self, status_interval_ms: int = 500, **extra) -> dict:
        """The `bgp.frr` section of a vxfedd (or vxfed-bgp-driver) config for this instance."""
        return {"config_path": str(self.dir / "frr.conf"), "vty_socket_dir": str(self.dir),
                "status_interval_ms": status_interval_ms, **extra}

    def dump(self, label: str) -> None:
        """On failure: what FRR thinks, and its daemons' logs."""
        print(f"----- FRR on {label}: show bgp summary -----\n" + self.vtysh("show bgp summary"))
        for f in sorted(self.dir.glob("*.log")):
            print(f"----- {label}/frr/{f.name} -----\n" + f.read_text(errors="replace")[-2000:])
