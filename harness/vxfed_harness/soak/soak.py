"""The soak: the fault suite's topology and probe streams (faults/suite.py) kept up for a long
time while pods churn on every node, node B's static routes churn by SIGHUP, and node A's
vxfedd (SIGKILL) and vxfed-dataplane (SIGKILL) are restarted now and then (faults/faults.py's
own functions). Node B's daemons are never restarted: their series run the whole soak, the
longest look at growth there is (the reloads' included: a restart would cut a leak per
reload out of the series).

At the end: the churned pods removed, the original config back; then the nodes' inventory
compared with the start (inventory.py), the probes' datagrams (nothing misdelivered; loss per
restart and outside them) and every daemon's memory and fds (growth.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..proc import PartUnavailable
from ..faults import faults as fault_fns
from ..faults.suite import FaultSuite
from . import growth, inventory
from .churn import PodChurn, RouteChurn
from .sampler import Sampler
from .schedule import restart_times

# Growth tolerances (docs/faults.md, "Soak", says why these).
RSS_TOLERANCE = growth.Tolerance(abs=2048, rel=0.05)    # KiB: 2 MiB or 5 %
FD_TOLERANCE = growth.Tolerance(abs=2, rel=0.0)         # fds
WARMUP_S = 60.0
EVENT_MARGIN_S = 5.0        # an event's window runs this long after every vxfedd is ready again


@dataclass
class SoakOptions:
    duration_s: float
    sample_s: float = 10.0
    pod_interval_s: float = 1.0
    pods_kept: int = 10
    route_period_s: float = 15.0
    vxfedd_restart_s: float = 240.0
    dataplane_restart_s: float = 900.0
    recovery_timeout_s: float = 60.0


class Soak:
    def __init__(self, suite: FaultSuite, opts: SoakOptions, log):
        self.suite, self.opts, self.log = suite, opts, log
        self.t = suite.t
        self.events: list[dict] = []
        self.churn: list[PodChurn] = []
        self.routes: RouteChurn | None = None
        self.sampler: Sampler | None = None
        self.start_inventory: dict = {}
        self.end_inventory: dict = {}
        self.started = self.ended = 0.0

    def _node_inventory(self) -> dict:
        return {label: inventory.take(n, n.dir / "ipam", n.dir / "cni", n.dir / "bpf")
                for label, n in self.t.nodes().items()}

    def _wait_ready(self) -> float | None:
        """Seconds until every vxfedd reports its dataplane and peers up again; None if not
        within the recovery timeout."""
        t0 = time.time()
        deadline = time.monotonic() + self.opts.recovery_timeout_s
        while time.monotonic() < deadline:
            self.t.check_alive()
            if self.suite.ready():
                return time.time() - t0
            time.sleep(0.2)
        return None

    def _restart(self, kind: str) -> None:
        fn = {"vxfedd": fault_fns.vxfedd_sigkill, "dataplane": fault_fns.dataplane_sigkill}[kind]
        ctx = fault_fns.FaultContext(self.t, self.log)
        t0 = time.time()
        self.log(f"soak: {t0 - self.started:.0f} s: {kind} on node A: SIGKILL + restart")
        error = None
        try:
            fn(ctx)
        except PartUnavailable as exc:
            error = str(exc)[:400]
        injected = time.time()
        ready = self._wait_ready() if error is None else None
        # The event's window (its loss, the churn errors it explains) ends a little after
        # every node is ready again.
        self.events.append({"kind": kind, "t0": t0, "at_s": round(t0 - self.started, 1),
                            "inject_s": round(injected - t0, 3),
                            "ready_s": None if ready is None else round(time.time() - t0, 3), "error": error,
                            "end": time.time() + EVENT_MARGIN_S})
        time.sleep(EVENT_MARGIN_S)

    def run(self) -> None:
        """The soak itself (the topology is up and the probes run)."""
        o = self.opts
        self.sampler = Sampler(self.t, o.sample_s)
        self.routes = RouteChurn(self.t.node_b, self.t.node_a.ip)
        self.start_inventory = self._node_inventory()
        self.sampler.sample_once()
        missing = self.sampler.missing()
        if missing:
            raise PartUnavailable(", ".join(missing), "not running (no process found to sample) at the start")
        self.sampler.series = {k: [] for k in self.sampler.series}
        self.sampler.tables = {k: [] for k in self.sampler.tables}
        self.started = time.time()
        self.sampler.start()
        for label, n in self.t.nodes().items():
            self.churn.append(PodChurn(self.t, label, n, o.pod_interval_s, o.pods_kept, self.log))
        for c in self.churn:
            c.start()
        plan = sorted([(s, "vxfedd") for s in restart_times(o.duration_s, o.vxfedd_restart_s, 1 / 3)]
                      + [(s, "dataplane") for s in restart_times(o.duration_s, o.dataplane_restart_s, 2 / 3)])
        self.log(f"soak: {o.duration_s / 60:.1f} min; restarts planned at "
                 + ", ".join(f"{k} {s:.0f} s" for s, k in plan))
        next_route = o.route_period_s
        next_report = 60.0
        end = o.duration_s
        while (now := time.time() - self.started) < end:
            self.t.check_alive()
            if plan and now >= plan[0][0]:
                self._restart(plan.pop(0)[1])
            elif now >= next_route:
                self.routes.tick()
                next_route += o.route_period_s
            elif now >= next_report:
                self.log(f"soak: {now:.0f} s: pods added " + ", ".join(f"{c.label} {c.added}" for c in self.churn)
                         + f"; route reloads {self.routes.reloads}")
                next_report += 60.0
            else:
                time.sleep(0.2)
        self.ended = time.time()

    def stop_threads(self) -> None:
        """Churn and sampling stopped (also when the soak stopped early: teardown follows)."""
        for c in self.churn:
            c.stop.set()
        if self.sampler is not None:
            self.sampler.stop.set()
        for c in self.churn:
            c.join(timeout=120)
        if self.sampler is not None and self.sampler.is_alive():
            self.sampler.join(timeout=30)

    def finish(self) -> list[str]:
        """Churn stopped and undone, the original config back, the end inventory taken.
        Returns the churned pods that could not be removed."""
        self.stop_threads()
        left = [p for c in self.churn for p in c.drain()]
        if self.routes is not None:
            self.routes.restore()
        if self._wait_ready() is None:
            self.log("soak: the nodes did not report ready at the end")
        time.sleep(2.0)      # the last DELs' deltas reach the dataplane
        self.end_inventory = self._node_inventory()
        return left

    # ------------------------------------------------------------ figures
    def in_event(self, t: float) -> bool:
        return any(e["t0"] - 1.0 <= t <= e["end"] for e in self.events)

    def growth(self) -> dict:
        out = {}
        for name, rows in self.sampler.series.items():
            rss = [growth.Sample(r[0], r[1], r[2]) for r in rows]
            fds = [growth.Sample(r[0], r[1], r[3]) for r in rows]
            out[name] = {"rss": growth.judge(rss, RSS_TOLERANCE, WARMUP_S),
                         "fds": growth.judge(fds, FD_TOLERANCE, WARMUP_S)}
        return out
