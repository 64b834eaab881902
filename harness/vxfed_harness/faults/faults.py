"""The faults, one function each: inject it on the running topology and restart what it
killed, as an operator or a supervisor (kubelet, systemd) would. Each returns once its
commands are done; the suite then waits for recovery and measures.

Node A is "this node" (cluster A's first node); node B is the remote node (cluster B's first).
Every fault is on node A unless its name says remote. A fault runs on the topologies it lists
(topologies.py: "demo", "federated"); on another it is refused, with its reason.
"""

from __future__ import annotations

import copy
import errno
import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

from ..proc import PartUnavailable
from . import etcd_faults
from .topologies import DEMO, FEDERATED, FaultTopology

CHURN_PODS = 20


@dataclass(frozen=True)
class Fault:
    name: str
    what: str                     # one line for the table and the JSON
    inject: Callable[["FaultContext"], None]
    hitless: bool                 # the goal: zero loss
    max_gap_ms: float | None = None   # the goal on the longest gap, when not hitless
    topologies: tuple[str, ...] = (DEMO, FEDERATED)
    why_not: str = ""             # why it does not apply to the other topologies
    # Run before the state is taken and the fault's window opens (its time is not the fault's).
    prepare: Optional[Callable[["FaultContext"], None]] = None

    def refusal(self, topology: FaultTopology) -> Optional[str]:
        """None when the fault applies to the topology, else a sentence naming both and why."""
        if topology.kind in self.topologies:
            return None
        return f"fault {self.name} does not apply to {topology.describe()}: {self.why_not}"


class FaultContext:
    def __init__(self, topology: FaultTopology, progress: Callable[[str], None], churn_pods: int = CHURN_PODS):
        self.t = topology
        self.a = topology.node_a
        self.b = topology.node_b
        self.progress = progress
        self.churn_pods = churn_pods
        self.notes: list[str] = []
        self.observed: dict = {}      # figures a fault measures itself, into its JSON object


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
    """churn_pods pods added on every node through the CNI plugin while the measured pods
    talk, then removed (DEL) and their namespaces deleted."""
    added = []
    try:
        for label, node in ctx.t.nodes().items():
            for i in range(ctx.churn_pods):
                added.append(ctx.t.add_pod(node, f"ch{label.upper()}{i}"))
    finally:
        for pod in added:
            ctx.t.delete_pod(pod)


SETTLE_AFTER_SESSIONS_S = 10.0


def reflector_kill_prepare(ctx: FaultContext) -> None:
    """In production the peers of a reflector that restarts have run for long: wait until every
    bgpd of the bed has (FederationBed.wait_past_bgp_startup; before, every peer still said it
    had restarted itself and the restarted reflector skipped its route selection deferral)."""
    ctx.observed["waited_for_bgp_startup_s"] = round(ctx.t.bed.wait_past_bgp_startup(ctx.progress), 1)


def reflector_kill(ctx: FaultContext) -> None:
    """Cluster A's route reflector crashes as its FRR container would: zebra, bgpd and bfdd
    SIGKILLed at once, started again on the same config. Its nodes keep its routes as
    graceful-restart helpers and must dial it again (it only listens); the other cluster's
    reflector keeps cluster A's blocks stale meanwhile. Every node's dataplane routes are sampled
    every 0.1 s from the kill until every node's session to its reflector is Established again:
    a route that left a dataplane meanwhile is listed in `routes_withdrawn` (node, prefix,
    seconds after the kill, how long it was gone)."""
    bed = ctx.t.bed
    rr = bed.clusters[0].reflector
    nodes = bed.nodes
    before = {s: bed.learned(n) for s, n in nodes.items()}
    gone: dict[tuple[str, str], float] = {}
    withdrawn: list[dict] = []
    stop = threading.Event()
    t0 = time.time()

    def sample() -> None:
        while not stop.is_set():
            for s, n in nodes.items():
                try:
                    have = bed.learned(n)
                except (RuntimeError, ValueError, OSError):
                    continue
                for prefix in before[s]:
                    key = (s, prefix)
                    if have.get(prefix) != before[s][prefix]:
                        gone.setdefault(key, time.time())
                    elif key in gone:
                        since = gone.pop(key)
                        withdrawn.append({"node": s, "prefix": prefix, "at_s": round(since - t0, 2),
                                          "for_s": round(time.time() - since, 2)})
            time.sleep(0.1)

    def sessions_up() -> bool:
        for n in nodes.values():
            try:
                peers = n.vxfedctl("peers").get("peers", [])
            except (RuntimeError, ValueError, OSError):
                return False
            if not peers or any(p.get("state") != "Established" for p in peers):
                return False
        return True

    th = threading.Thread(target=sample, name="reflector_kill routes", daemon=True)
    th.start()
    try:
        rr.stop(kill=True)                 # frr-stop.sh --kill: bfdd, bgpd, zebra SIGKILL
        ctx.observed["reflector_down_s"] = round(time.time() - t0, 2)
        rr.start()
        ctx.observed["reflector_started_s"] = round(time.time() - t0, 2)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not sessions_up():
            time.sleep(0.2)
        ctx.observed["sessions_back_s"] = round(time.time() - t0, 2) if sessions_up() else None
        # What the restarted reflector sends once they are up: its End-of-RIBs come once the
        # other reflector's session is back too (update-delay, ~3 s after its node's), and a
        # premature one made the helpers withdraw for seconds (docs/faults.md, "A route
        # reflector killed"). Until nothing is gone and SETTLE_AFTER_SESSIONS_S have passed, so
        # that the next fault starts from a quiet state.
        settle = time.monotonic() + SETTLE_AFTER_SESSIONS_S
        while time.monotonic() < deadline and (time.monotonic() < settle or gone):
            time.sleep(0.2)
    finally:
        stop.set()
        th.join()
    for (s, prefix), since in gone.items():
        withdrawn.append({"node": s, "prefix": prefix, "at_s": round(since - t0, 2), "for_s": None})
    ctx.observed["routes_withdrawn"] = withdrawn


STATE_TMPFS_BYTES = 8 << 20     # node A's state dir is a tmpfs this big (FaultSuite.up), so it can fill


def fill_filesystem(path) -> int:
    """Writes zeros to `path` until its filesystem is full; returns the bytes written."""
    block = bytes(1 << 16)
    written = 0
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                written += f.write(block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
        for size in (4096, 512, 1):           # the last partial blocks too
            try:
                while True:
                    written += f.write(bytes(size))
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    return written


def state_disk_full(ctx: FaultContext) -> None:
    """Node A's state dir (a tmpfs, FaultSuite.up) filled up while the pods talk: a network
    added over the API and a pod added through the CNI plugin must both be refused with an
    error naming the state dir; vxfedd SIGKILLed and restarted on the full disk must come back
    with everything it stored; once the space is back the same two changes succeed (and are
    undone, so that the state after recovery compares with before)."""
    a, t = ctx.a, ctx.t
    state_dir = str(t.state_dir_a())
    filler = t.state_dir_a() / "fault-filler"
    network = ["add-network", "faultd", "--subnet", "10.247.0.0/24", "--vni", "1998"]
    problems = []

    def refused(what: str, text: str) -> None:
        if f"state directory {state_dir} is full" not in text:
            problems.append(f"{what} on a full state dir: expected an error naming {state_dir}, got: {text[-300:]!r}")

    try:
        filled = fill_filesystem(filler)
        ctx.notes.append(f"filled {state_dir} with {filled} bytes")
        res = a.vxfedd.ctl(*network)
        if res.returncode == 0:
            problems.append("add-network succeeded on a full state dir")
        refused("add-network", res.stdout + res.stderr)
        try:
            t.delete_pod(t.add_pod(a, "dfA"))
            problems.append("CNI ADD succeeded on a full state dir")
        except PartUnavailable as exc:
            refused("CNI ADD", str(exc))
        a.vxfedd.kill()                       # nothing stored may depend on writing at start
        a.start_vxfedd()
    finally:
        try:
            os.unlink(filler)
        except FileNotFoundError:
            pass
    res = a.vxfedd.ctl(*network)
    if res.returncode != 0:
        problems.append(f"add-network refused with space back: {(res.stdout + res.stderr).strip()[-300:]}")
    try:
        t.delete_pod(t.add_pod(a, "dfA"))
    except PartUnavailable as exc:
        problems.append(f"CNI ADD refused with space back: {exc}")
    a.vxfedd.ctl("remove-network", "faultd")
    if problems:
        raise AssertionError("; ".join(problems))


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
    Fault("pod_churn", "pods added and removed on every node (CNI ADD/DEL)", pod_churn, hitless=True),
    Fault("state_disk_full", "node A's state dir full: a network and a pod refused, vxfedd SIGKILL + restart; "
          "space back, both succeed", state_disk_full, hitless=True),
    Fault("reflector_kill", "cluster A's route reflector: zebra, bgpd, bfdd SIGKILL, started again (its nodes and "
          "the other reflector as graceful-restart helpers)", reflector_kill, hitless=True, topologies=(FEDERATED,),
          prepare=reflector_kill_prepare,
          why_not="only the federated topology has route reflectors (run with --nodes-per-cluster N)"),
    Fault("etcd_member_kills", "etcd members SIGKILLed one by one (quorum kept, then lost), held, restarted: "
          "store operations refused while quorum is lost, nothing changed after", etcd_faults.etcd_member_kills,
          hitless=True, topologies=(FEDERATED,),
          why_not="it kills members of the federation store (etcd), which only the federated topology has "
                  "(run with --nodes-per-cluster N)"),
]
BY_NAME = {f.name: f for f in FAULTS}
