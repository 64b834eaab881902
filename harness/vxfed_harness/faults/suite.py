"""The fault suite: a two-cluster topology (topologies.py: the demo's, or the federated one
with N nodes per cluster and a three-member etcd; two pods per cluster), four probe streams
between the clusters' pods (A0->B0, B0->A0, A1->B1, B1->A1; stream.py), and the faults of
faults.py injected one at a time with recovery between. Per fault: what the pods saw
(analysis.py), how long until everything was back, and whether the state after recovery equals
the state before.

Recovery of a fault: every node's vxfedd reports its dataplane ready and its BGP peers
Established (and, with the federation store, that the store answers), the state of every node
(VNIs, endpoints, routes with their source, the dataplane's own tables) and of the store (VNIs,
node blocks, memberships: topologies.store_view) equals the state before the fault, and every
probe has received a datagram within the last 0.3 s. recovered_s is from the start of the
injection to the later of that moment and the first datagram after the last loss (traffic
flowing again).
"""

from __future__ import annotations

import array
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..dataplane import canonical_tables
from ..env import SOURCE_DIR
from ..proc import PartUnavailable
from . import analysis, ping_probe, stream, tcp_probe
from .faults import STATE_TMPFS_BYTES, Fault, FaultContext
from .topologies import FEDERATED, make_topology

PROBE_PAIRS = [("a", 0, "b", 0), ("b", 0, "a", 0), ("a", 1, "b", 1), ("b", 1, "a", 1)]
SETTLE_S = 1.0          # measured after recovery, before the window closes
QUIET_S = 2.0           # between faults


@dataclass
class Options:
    build_dir: Path
    rate: float = 500.0
    recovery_timeout: float = 90.0
    churn_pods: int = 20
    baseline_s: float = 5.0
    ping: bool = False      # the ping-pong probe too (latency per fault; ping_probe.py)
    tcp: bool = False       # the TCP probe too (throughput dip, retransmits; tcp_probe.py)
    nodes_per_cluster: Optional[int] = None   # None: the demo topology; N: the federated one
    progress: Callable[[str], None] = print


class FaultNotApplicable(ValueError):
    """A fault asked for on a topology it does not apply to (Fault.refusal says why)."""


@dataclass
class Probe:
    name: str
    stream: int
    src: object
    dst: object
    proc: Optional[subprocess.Popen] = None



def node_state(n) -> Optional[dict]:
    """VNIs in use, endpoints, routes (vxfedd) and the dataplane's tables; None while a part
    does not answer."""
    try:
        vnis = {v["network"]: v["vni"] for v in n.vxfedctl("vnis")["vnis"] if v.get("network")}
        eps = sorted((e["container_id"], e["ifname"], e["ip"], e["mac"], e["vni"], e["in_dataplane"])
                     for e in n.vxfedctl("endpoints")["endpoints"])
        routes = sorted((r.get("network"), r.get("prefix"), tuple(r.get("vteps", [])), r.get("source"))
                        for r in n.vxfedctl("routes")["routes"])
        tables = canonical_tables(n.dataplane.dump())
    except (RuntimeError, ValueError, KeyError, subprocess.SubprocessError, OSError):
        return None
    return {"vnis": vnis, "endpoints": [list(e) for e in eps], "routes": [list(r) for r in routes],
            "dataplane": tables}


class FaultSuite:
    def __init__(self, opts: Options):
        self.opts = opts
        self.progress = opts.progress
        self.t = make_topology(opts.nodes_per_cluster, opts.build_dir, SOURCE_DIR, self.progress)
        self.v = self.t.v
        self.plan = self.t.plan
        self.probe_dir = self.v.workdir() / "probes"
        self.probe_dir.mkdir(parents=True, exist_ok=True)
        self.probes: list[Probe] = []
        self.windows: list[tuple[str, float, float]] = []
        self.results: dict = {}
        self.timelines: dict = {}         # fault -> analysis.timeline(), filled by analyse()
        self.ping: Optional[subprocess.Popen] = None
        self.tcp: Optional[subprocess.Popen] = None
        self.tcp_started = 0.0

    # ------------------------------------------------------------ bring-up
    def up(self) -> None:
        # Node A's state dir on a small tmpfs of its own, so that the state_disk_full fault can
        # fill it without touching the machine's disk (unmounted after the node has stopped).
        state = self.t.state_dir_a()
        state.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={STATE_TMPFS_BYTES},mode=0700", "tmpfs", str(state)],
                       check=True)
        self.v.topo.on_close("state tmpfs", lambda: subprocess.run(["umount", "-l", str(state)], check=False))
        self.t.up()
        for i, (sc, si, dc, di) in enumerate(PROBE_PAIRS):
            src, dst = self.v.pods[sc][si], self.v.pods[dc][di]
            self.probes.append(Probe(f"{src.name}->{dst.name}", i, src, dst))
        self._start_probes()

    def _start_probes(self) -> None:
        if self.opts.ping:
            src, dst = self.v.pods["a"][0], self.v.pods["b"][0]
            self.ping = src.ns.spawn(ping_probe.command(dst.ip), name="probe-ping")
        if self.opts.tcp:
            if shutil.which("iperf3") is None:
                raise PartUnavailable("iperf3", "the TCP probe needs it (Debian package iperf3), or run with --no-tcp")
            src, dst = self.v.pods["a"][0], self.v.pods["b"][0]
            dst.ns.spawn(tcp_probe.server_command(dst.ip), name="probe-tcp-server")
            time.sleep(0.5)
            self.tcp_started = time.time()
            self.tcp = src.ns.spawn(tcp_probe.client_command(src.ip, dst.ip), name="probe-tcp")
        env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        for p in self.probes:
            p.proc = p.src.ns.spawn([sys.executable, "-m", "vxfed_harness.faults.stream", "--name", f"s{p.stream}",
                                     "--ip", p.src.ip, "--stream", str(p.stream), "--peer", p.dst.ip,
                                     "--rate", str(self.opts.rate), "--out", str(self.probe_dir)],
                                    name=f"probe-s{p.stream}", env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all(self._live(p)[1] > 0 for p in self.probes):
                return
            for p in self.probes:
                if p.proc.poll() is not None:
                    raise PartUnavailable("fault probe", f"{p.name} exited: {self.v.topo.log_of_process(p.proc)[-800:]}")
            time.sleep(0.2)
        raise PartUnavailable("the pod path", "probe datagrams did not arrive within 30 s: "
                              + ", ".join(f"{p.name}: {self._live(p)[1]}" for p in self.probes))

    def _receiver_of(self, p: Probe) -> Probe:
        """The probe running in p's destination pod (its receiver)."""
        return next(q for q in self.probes if q.src is p.dst)

    def _live(self, p: Probe) -> tuple[float, int]:
        """(time of the last datagram received by the probe in p's source pod, count)."""
        try:
            last, count = (self.probe_dir / f"s{p.stream}.live").read_text().split()
            return float(last), int(count)
        except (OSError, ValueError):
            return 0.0, 0

    def flowing(self, within: float = 0.3) -> bool:
        now = time.time()
        return all(now - self._live(p)[0] <= within for p in self.probes)

    # ------------------------------------------------------------ the run
    def state(self) -> dict:
        out = {label: node_state(n) for label, n in self.t.nodes().items()}
        if self.t.kind == FEDERATED:
            out["store"] = self.t.store_state()
        return out

    def ready(self) -> bool:
        """Every vxfedd reports its dataplane ready, every BGP peer Established and, with the
        federation store, that the store answers."""
        for n in self.t.nodes().values():
            r = n.vxfedd.ctl("--json", "status", timeout=10)
            if r.returncode != 0:
                return False
            if self.t.kind == FEDERATED:
                try:
                    if not json.loads(r.stdout).get("federation_available"):
                        return False
                except ValueError:
                    return False
            try:
                peers = n.vxfedctl("peers").get("peers", [])
            except (RuntimeError, ValueError, subprocess.SubprocessError):
                return False
            if not peers or any(p.get("state") != "Established" for p in peers):
                return False
        return True

    def baseline(self) -> None:
        self.progress(f"faults: baseline, {self.opts.baseline_s:.0f} s without a fault")
        t0 = time.time()
        time.sleep(self.opts.baseline_s)
        self.windows.append(("baseline", t0, time.time()))
        self.results["baseline"] = {"what": "no fault (the machine's own loss)", "recovered_s": 0.0,
                                    "state_equal": True, "hitless_goal": True}

    def run_fault(self, f: Fault) -> None:
        refusal = f.refusal(self.t)
        if refusal:
            raise FaultNotApplicable(refusal)
        ctx = FaultContext(self.t, self.progress, churn_pods=self.opts.churn_pods)
        if f.prepare:
            f.prepare(ctx)
        before = self.state()
        self.progress(f"faults: {f.name}: {f.what}")
        t0 = time.time()
        error = None
        try:
            f.inject(ctx)
        except Exception as exc:  # noqa: BLE001 - reported with the fault, the suite goes on
            error = f"{type(exc).__name__}: {exc}"
            self.progress(f"faults: {f.name}: injection failed: {error}")
        injected = time.time()
        recovered_at = None
        after = None
        deadline = time.monotonic() + self.opts.recovery_timeout
        while time.monotonic() < deadline:
            try:
                self.t.check_alive()
            except PartUnavailable as exc:
                error = error or str(exc)[:400]
                break
            if self.ready():
                after = self.state()
                if after == before and self.flowing():
                    recovered_at = time.time()
                    break
            time.sleep(0.1)
        end = (recovered_at or time.time()) + SETTLE_S
        time.sleep(max(0.0, end - time.time()))
        self.windows.append((f.name, t0, end))
        if after is None or recovered_at is None:
            after = self.state()
        self.results[f.name] = {
            "what": f.what, "hitless_goal": f.hitless, "max_gap_goal_ms": f.max_gap_ms,
            "inject_s": round(injected - t0, 3),
            "recovered_at": recovered_at, "t0": t0,
            "state_equal": after == before,
            "state_diff": None if after == before else diff(before, after),
            "error": error, "notes": ctx.notes}
        clash = set(ctx.observed) & set(self.results[f.name])
        assert not clash, f"{f.name}: observed figures {clash} would overwrite the suite's"
        self.results[f.name].update(ctx.observed)
        time.sleep(QUIET_S)

    def stop_probes(self) -> None:
        if self.ping and self.ping.poll() is None:
            ping_probe.stop(self.ping)
        if self.tcp and self.tcp.returncode is None:
            tcp_probe.stop(self.tcp)
        for p in self.probes:
            if p.proc and p.proc.poll() is None:
                p.proc.terminate()
        for p in self.probes:
            if p.proc:
                try:
                    p.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.proc.kill()

    # ------------------------------------------------------------ figures
    def analyse(self) -> dict:
        streams: dict[int, analysis.Stream] = {}
        for p in self.probes:
            raw = (self.probe_dir / f"s{p.stream}.sent").read_bytes()
            sent = array.array("d")
            sent.frombytes(raw)
            streams[p.stream] = analysis.Stream(p.stream, p.name, stream.ip_u32(p.dst.ip), list(sent))
        receptions = []
        for p in self.probes:
            at = stream.ip_u32(p.src.ip)
            data = (self.probe_dir / f"s{p.stream}.recv").read_bytes()
            for rec in stream.RECORD.iter_unpack(data):
                sid, seq, sent_t, recv_t, ip_dst, dst = rec
                receptions.append(analysis.Reception(sid, seq, sent_t, recv_t, ip_dst, dst, at))
        receptions.sort(key=lambda r: r.received)
        wrong = analysis.assign(streams, receptions)
        out = {}
        self.timelines = {}
        replies = ping_probe.parse(self.v.topo.log_of_process(self.ping)) if self.ping else None
        tcp = tcp_probe.parse(self.v.topo.log_of_process(self.tcp), self.tcp_started) if self.tcp else None
        for name, t0, t1 in self.windows:
            w = analysis.window(streams, wrong, t0, t1)
            self.timelines[name] = {"bucket_s": 0.05, "streams": analysis.timeline(streams, t0, t1, 0.05)}
            r = dict(self.results[name])
            recovered_at = r.pop("recovered_at", t0)
            t_start = r.pop("t0", t0)
            if name != "baseline":
                r["recovered_s"] = (None if recovered_at is None
                                    else round(max(recovered_at, w.flowing_at or t_start) - t_start, 3))
            r.update({"sent": w.sent, "lost": w.lost, "longest_gap_ms": w.longest_gap_ms,
                      "misdelivered": w.misdelivered, "duplicates": w.duplicates, "reordered": w.reordered,
                      "window_s": round(t1 - t0, 3), "per_stream": w.per_stream})
            if replies is not None:
                r["ping"] = ping_probe.window(replies, t0, t1)
            if tcp is not None:
                r["tcp"] = tcp_probe.window(tcp, t0, t1)
            r["goal_met"] = goal_met(r)
            out[name] = r
        return out

    def close(self) -> None:
        self.stop_probes()
        self.t.close()


def invariant_failures(results: dict, recovery_bound_s: float) -> list[str]:
    """What every fault must keep whatever its timings (the CI tests' assertions): nothing
    misdelivered (the baseline included), no error in the fault's own checks, the state after
    recovery equal to the state before, recovery within the bound. One line per failure."""
    failures = []
    for name, r in results.items():
        if r["misdelivered"]:
            failures.append(f"{name}: {r['misdelivered']} datagrams misdelivered")
        if name == "baseline":
            continue
        if r.get("error"):
            failures.append(f"{name}: {r['error']}")
        if not r["state_equal"]:
            failures.append(f"{name}: the state after recovery differs: {json.dumps(r['state_diff'])[:1500]}")
        if r["recovered_s"] is None:
            failures.append(f"{name}: not recovered within {recovery_bound_s:.0f} s")
    return failures


def goal_met(r: dict) -> bool:
    """Nothing misdelivered, the state equal, recovered, the injection's own checks passed
    (no error, no shortfall it measured), and the fault's loss or gap goal."""
    if r["misdelivered"] or not r["state_equal"] or r["recovered_s"] is None:
        return False
    if r.get("error") or r.get("goal_shortfalls"):
        return False
    if r.get("hitless_goal"):
        return r["lost"] == 0
    if r.get("max_gap_goal_ms") is not None:
        return r["longest_gap_ms"] <= r["max_gap_goal_ms"]
    return True


def diff(before: dict, after: dict) -> dict:
    out = {}
    for node in before:
        b, a = before.get(node), after.get(node)
        if b == a:
            continue
        if b is None or a is None:
            out[node] = {"before": b is not None, "after": a is not None}
            continue
        out[node] = {k: {"before": b[k], "after": a[k]} for k in b if b[k] != a.get(k)}
    return out


def table(results: dict) -> str:
    with_ping = any("ping" in r for r in results.values())
    with_tcp = any("tcp" in r for r in results.values())
    cols = ("fault", "sent", "lost", "gap ms", "misdeliv", "dup", "reord", "recov s", "state", "goal") + (
        ("ping rtt ms p50/p99/max", "ping lost") if with_ping else ()) + (
        ("tcp Mbit/s min/mean", "retrans") if with_tcp else ())
    rows = [cols]
    for name, r in results.items():
        goal = "-" if name == "baseline" else ("met" if r["goal_met"] else "NOT met")
        row = (name, str(r["sent"]), str(r["lost"]), f'{r["longest_gap_ms"]:.1f}', str(r["misdelivered"]),
               str(r["duplicates"]), str(r["reordered"]),
               "-" if r["recovered_s"] is None else f'{r["recovered_s"]:.2f}',
               "equal" if r["state_equal"] else "DIFFERS", goal)
        if with_ping:
            pg = r.get("ping") or {}
            rtt = pg.get("rtt_ms")
            row += ("-" if not rtt else f'{rtt["p50"]:.2f}/{rtt["p99"]:.2f}/{rtt["max"]:.1f}', str(pg.get("lost", "-")))
        if with_tcp:
            tc = r.get("tcp") or {}
            row += ("-" if tc.get("mbps_min") is None else f'{tc["mbps_min"]:.1f}/{tc["mbps_mean"]:.1f}',
                    str(tc.get("retransmits", "-")))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(cols))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows)
