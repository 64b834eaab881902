"""vxfedd: its config (the one writer of the YAML; control/daemon/daemon_config.hpp and
docs/control.md name the fields), the daemon process and vxfedctl.

The config is written as JSON, which is YAML: no dependency on python3-yaml.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Iterable, Optional

from .env import binary
from .proc import PartUnavailable, run, wait_path, wait_until
from .topology import Namespace

VXFEDD = "control/vxfedd"
VXFEDCTL = "control/vxfedctl"
EXIT_DATAPLANE_NOT_READY = 4          # vxfedctl status: vxfedd serves, its dataplane is not ready


def config(node: str, vtep_ip: str, cluster: str, pod_cidrs: list[str], dataplane_socket: Path, *,
           socket: Optional[Path] = None, state_dir: Optional[Path] = None, uplink: str = "ul0",
           underlay_mtu: Optional[int] = 9000, asn: Optional[int] = None, networks: Iterable[dict] = (),
           log_level: Optional[str] = "info", dataplane: Optional[dict] = None, metrics_listen: str = "",
           **sections) -> dict:
    """vxfedd's config. socket/state_dir/log_level None: left to the command line or the
    defaults. dataplane: more keys of the `dataplane:` section (reconnect_min_ms ...).
    sections: whole further sections (bgp=, vni=, bpf=). Metrics are off unless
    metrics_listen names an address (no port to collide on between concurrent runs: give one
    only in a namespace of the test's own, e.g. a Node's, where 127.0.0.1:9472 is free)."""
    cfg: dict = {
        "node": {"name": node, "vtep_ip": vtep_ip, "uplink": uplink},
        "cluster": {"name": cluster, "pod_cidrs": list(pod_cidrs)},
        "daemon": {"metrics_listen": metrics_listen},
        "dataplane": {"socket": str(dataplane_socket), **(dataplane or {})},
        "networks": list(networks),
    }
    if underlay_mtu is not None:
        cfg["node"]["underlay_mtu"] = underlay_mtu
    if asn is not None:
        cfg["cluster"]["asn"] = asn
    for key, value in (("socket", socket), ("state_dir", state_dir), ("log_level", log_level)):
        if value is not None:
            cfg["daemon"][key] = str(value)
    cfg.update(sections)
    return cfg


def bgp_section(asn: int, router_id: str, peers: list[dict], clusters: dict[str, list[str]],
                frr: dict, **options) -> dict:
    """The `bgp:` section (docs/bgp.md). frr: Frr.adapter_section(); options: graceful_restart,
    fpm, feed, ... as the page names them. VXFED_BGP_FEED=bmp|fpm in the environment sets a
    node's `feed` where the caller did not (to run a suite on either feed); unset, the key is
    left out (vxfedd's default; a previous release does not know it)."""
    return with_feed_from_env({"enabled": True, "asn": asn, "router_id": router_id, "clusters": clusters,
                               "peers": peers, "frr": frr, **options})


def with_feed_from_env(bgp: dict) -> dict:
    """`bgp` with `feed` set from VXFED_BGP_FEED (bmp|fpm) for a node whose section names none."""
    feed = os.environ.get("VXFED_BGP_FEED", "")
    if feed and "feed" not in bgp and bgp.get("role", "node") == "node":
        return dict(bgp, feed=feed)
    return bgp


class Vxfedd:
    """One vxfedd in `where` (Topology.host for the host's namespaces). `config` is written to
    `config_path` by start(); its process log is `<namespace>_<name>.log` (`-run<N>` from the
    second start on)."""

    def __init__(self, where: Namespace, config_path: Path, socket: Path, config: Optional[dict] = None,
                 build_dir: Optional[Path] = None, name: str = "vxfedd", env: Optional[dict] = None,
                 args: Iterable[str] = ()):
        self.ns = where
        self.topo = where.topo
        self.config_path = Path(config_path)
        self.socket = Path(socket)
        self.config = config
        self.name = name
        self.env = env
        self.args = list(args)
        self.program = binary(VXFEDD, build_dir)
        self.ctl_program = binary(VXFEDCTL, build_dir)
        self.proc: Optional[subprocess.Popen] = None     # the last one started
        self.stopped = False
        self.starts = 0

    def write_config(self) -> Path:
        if self.config is None:
            raise ValueError("Vxfedd: no config to write")
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(self.config, indent=1) + "\n")
        return self.config_path

    def check_config(self) -> subprocess.CompletedProcess:
        """vxfedd --check-config: raises with its output if the config is refused."""
        return run([str(self.program), "--check-config", str(self.write_config())])

    def start(self, wait: bool = True, timeout: float = 30) -> subprocess.Popen:
        """Writes the config (if one is set) and starts vxfedd in the foreground; with wait,
        returns once its API socket exists (PartUnavailable if it exits or times out)."""
        if not self.program.exists():
            raise PartUnavailable("vxfedd", f"{self.program} is not built")
        if self.config is not None:
            self.write_config()
        # A socket left by a killed run must not be taken for the new one's.
        self.socket.unlink(missing_ok=True)
        self.starts += 1
        self.stopped = False
        name = self.name if self.starts == 1 else f"{self.name}-run{self.starts}"
        self.proc = self.ns.spawn([str(self.program), "--config", str(self.config_path), "--foreground",
                                   *self.args], name=name, env=self.env)
        if wait:
            wait_path(self.socket, self.proc, f"vxfedd in {self.ns}", timeout, self.log)
        return self.proc

    def log(self) -> str:
        """The log of the last start (also after it stopped)."""
        return self.topo.log_of_process(self.proc) if self.proc is not None else ""

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self) -> None:
        """Raises if it was started and has exited since (a stop() or kill() is not a crash)."""
        if self.proc is not None and not self.stopped and self.proc.poll() is not None:
            raise PartUnavailable(f"vxfedd in {self.ns}",
                                  f"exited with status {self.proc.returncode}:\n{self.log()[-2000:]}")

    def stop(self, timeout: float = 15) -> Optional[int]:
        """SIGTERM and wait (SIGKILL after timeout). Returns the exit status."""
        return self._end(signal.SIGTERM, timeout)

    def kill(self) -> Optional[int]:
        """SIGKILL, as a crash: nothing is cleaned up by vxfedd."""
        return self._end(signal.SIGKILL, 10)

    def _end(self, sig: int, timeout: float) -> Optional[int]:
        proc = self.proc
        if proc is None or self.stopped:
            return None
        self.stopped = True
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        return proc.returncode

    # -- vxfedctl --
    def ctl(self, *args: str, check: bool = False, timeout: float = 15) -> subprocess.CompletedProcess:
        """vxfedctl --socket S ARGS (global options such as --json before the subcommand)."""
        return run([str(self.ctl_program), "--socket", str(self.socket), *args], check=check, timeout=timeout)

    def ctl_json(self, *args: str, ok: tuple[int, ...] = (0,), timeout: float = 15):
        """vxfedctl --json ARGS, parsed; RuntimeError with its output on another exit status."""
        res = self.ctl("--json", *args, timeout=timeout)
        if res.returncode not in ok:
            raise RuntimeError(f"vxfedctl {' '.join(args)} ({self.ns}): exit {res.returncode} "
                               f"{(res.stdout + res.stderr).strip()[-300:]}")
        return json.loads(res.stdout)

    def status(self) -> dict:
        return self.ctl_json("status", ok=(0, EXIT_DATAPLANE_NOT_READY))

    def wait_ready(self, timeout: float = 60) -> None:
        """Until `vxfedctl status` reports the dataplane connected and ready."""
        def ready() -> bool:
            st = self.status()
            return bool(st.get("dataplane_connected") and st.get("dataplane_ready"))
        wait_until(ready, timeout, f"vxfedd in {self.ns} to report the dataplane ready", self.check_alive)

    def routes(self) -> list[dict]:
        return self.ctl_json("routes").get("routes", [])

    def bgp_route(self, prefix: str) -> Optional[dict]:
        """The route to prefix vxfedd holds with source "bgp", or None."""
        for r in self.routes():
            if r.get("prefix") == prefix and r.get("source") == "bgp":
                return r
        return None

    def endpoints(self) -> list[dict]:
        return self.ctl_json("endpoints")["endpoints"]

    def vni_of(self, network: str) -> int:
        for n in self.ctl_json("networks").get("networks", []):
            if n.get("spec", {}).get("name") == network:
                return int(n["vni"])
        raise KeyError(network)
