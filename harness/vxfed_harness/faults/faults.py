"""The faults, one function each: inject it on the running two-cluster topology and restart
what it killed, as an operator or a supervisor (kubelet, systemd) would. Each returns once
its commands are done; the suite then waits for recovery and measures.

Node A is "this node" (cluster A); node B is the remote node. Every fault is on node A unless
its name says remote.
"""

from __future__ import annotations

import copy
import signal
import time
from dataclasses import dataclass
from typing import Callable

from ..proc import run
from ..twocluster.vxfed import VxfedVariant

CHURN_PODS = 20


@dataclass(frozen=True)
class Fault:
    name: str
    what: str                     # one line for the table and the JSON
    inject: Callable[["FaultContext"], None]
    hitless: bool                 # the goal: zero loss
    max_gap_ms: float | None = None   # the goal on the longest gap, when not hitless


class FaultContext:
    def __init__(self, variant: VxfedVariant, progress: Callable[[str], None], churn_pods: int = CHURN_PODS):
        self.v = variant
        self.a = variant.vx_nodes["a"]
        self.b = variant.vx_nodes["b"]
        self.progress = progress
        self.churn_pods = churn_pods
        self.notes: list[str] = []


def vxfedd_sigkill(ctx: FaultContext) -> None:
    ctx.a.vxfedd.kill()
    ctx.a.start_vxfedd()


def vxfedd_sighup(ctx: FaultContext) -> None:
    """A network added and the BGP peer's hold time changed, by SIGHUP; then the original
    config back by another SIGHUP (so that the state after recovery compares with before)."""
    d = ctx.a.vxfedd
    original = copy.deepcopy(d.config)
    changed = copy.deepcopy(original)
    changed["networks"].append({"name": "faultx", "vni": 1999, "subnet": "10.246.0.0/24"})
    for p in changed.get("bgp", {}).get("peers", []):
        p["hold"] = p.get("hold", 3) + 3
    def reload(cfg: dict, has_network: bool) -> None:
        d.config = cfg
        d.write_config()
        d.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                names = {n.get("spec", {}).get("name") for n in d.ctl_json("networks")["networks"]}
            except (RuntimeError, ValueError, KeyError):
                names = set()
            if ("faultx" in names) == has_network:
                return
            time.sleep(0.1)
        ctx.notes.append(f"the reload {'adding' if has_network else 'removing'} network faultx did not "
                         f"take effect within 30 s")

    try:
        reload(changed, True)
    finally:
        reload(original, False)


def dataplane_sigkill(ctx: FaultContext) -> None:
    ctx.a.dataplane.kill()
    ctx.a.start_dataplane()


def bgpd_kill(ctx: FaultContext) -> None:
    ctx.a.stop_frr(only="bgpd", kill=True)
    ctx.a.start_frr(only="bgpd")


def zebra_kill(ctx: FaultContext) -> None:
    ctx.a.stop_frr(only="zebra", kill=True)
    ctx.a.start_frr(only="zebra")


def frr_restart(ctx: FaultContext) -> None:
    ctx.a.stop_frr()
    ctx.a.start_frr()


def remote_dataplane_sigkill(ctx: FaultContext) -> None:
    ctx.b.dataplane.kill()
    ctx.b.start_dataplane()


def underlay_flap(ctx: FaultContext) -> None:
    ctx.a.ns.run(["ip", "link", "set", ctx.a.uplink, "down"])
    time.sleep(2)
    ctx.a.ns.run(["ip", "link", "set", ctx.a.uplink, "up"])


def pod_churn(ctx: FaultContext) -> None:
    """churn_pods pods added on both nodes through the CNI plugin while the measured pods talk,
    then removed (DEL) and their namespaces deleted."""
    v = ctx.v
    added = []
    for c in v.plan.clusters:
        for i in range(ctx.churn_pods):
            short = f"ch{c.name.upper()}{i}"
            ns = v.topo.netns(short)
            cid = f"vxfault-{v.topo.suffix}-{short.lower()}"
            v._cni(c, "ADD", cid, ns.path, "eth0", short)
            added.append((c, cid, ns, short))
    for c, cid, ns, short in added:
        v._cni(c, "DEL", cid, ns.path, "eth0", short)
    for c, cid, ns, short in added:
        run(["ip", "netns", "del", ns.name], check=False)
        v.topo.namespaces.remove(ns)


FAULTS = [
    Fault("vxfedd_sigkill", "vxfedd SIGKILL + restart", vxfedd_sigkill, hitless=True),
    Fault("vxfedd_sighup", "vxfedd SIGHUP: network added, peer hold time changed; then back", vxfedd_sighup,
          hitless=True),
    Fault("dataplane_sigkill", "vxfed-dataplane SIGKILL + restart", dataplane_sigkill, hitless=False,
          max_gap_ms=1000),
    Fault("bgpd_kill", "bgpd SIGKILL + restart (graceful restart on the peer)", bgpd_kill, hitless=True),
    Fault("zebra_kill", "zebra SIGKILL + restart (FPM reconnect, resync)", zebra_kill, hitless=True),
    Fault("frr_restart", "FRR stopped (SIGTERM) and started", frr_restart, hitless=False),
    Fault("remote_dataplane_sigkill", "the remote node's vxfed-dataplane SIGKILL + restart",
          remote_dataplane_sigkill, hitless=False),
    Fault("underlay_flap", "node A's underlay link down 2 s, up", underlay_flap, hitless=False),
    Fault("pod_churn", "pods added and removed on both nodes (CNI ADD/DEL)", pod_churn, hitless=True),
]
BY_NAME = {f.name: f for f in FAULTS}
