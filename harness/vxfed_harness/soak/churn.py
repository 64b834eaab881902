"""The soak's churn: pods added and removed on every node through the CNI plugin (a thread
per node), and routes changed on node B by config reloads (SIGHUP).

Pod churn: every `interval_s` a new pod is added on the node (CNI ADD, its own namespace);
once `keep` churned pods are alive, the oldest is removed (CNI DEL, namespace deleted), so the
set stays bounded and every pod lives about keep * interval_s. A failed ADD is undone as a
runtime does (DEL) and counted with its time and error; a failed DEL is retried at the next
tick and again at the end, as a runtime retries DEL until it succeeds.

Route churn: one node's first network (the soak's node B, never restarted) gets a rotating
window of static routes (docs/control.md: networks[].static_routes) to prefixes in ROUTE_SPACE
via the other node's VTEP, one prefix in and one
out per reload, applied by SIGHUP; each reload is checked by reading vxfedd's static routes.
Those prefixes carry no traffic: the churn is of the tables (vxfedd's routes, the dataplane's
route table), which is what must not leak.
"""

from __future__ import annotations

import copy
import ipaddress
import signal
import threading
import time
from collections import deque

from ..proc import PartUnavailable

ROUTE_SPACE = ipaddress.ip_network("10.250.0.0/16")   # outside every pod CIDR of the plans
ROUTE_WINDOW = 8                                       # static routes present at a time


class PodChurn(threading.Thread):
    def __init__(self, topology, label: str, node, interval_s: float, keep: int, log):
        super().__init__(name=f"soak-churn-{label}", daemon=True)
        self.t, self.label, self.node = topology, label, node
        self.interval, self.keep, self.log = interval_s, keep, log
        self.stop = threading.Event()
        self.alive: deque = deque()
        self.undeleted: list = []          # DEL failed: retried
        self.added = self.deleted = 0
        self.errors: list[dict] = []       # {"t", "op", "pod", "error"}
        self.k = 0

    def _remove(self, pod) -> bool:
        try:
            self.t.delete_pod(pod)
            self.deleted += 1
            return True
        except PartUnavailable as exc:
            self.errors.append({"t": time.time(), "op": "DEL", "pod": pod.short, "error": str(exc)[:300]})
            return False

    def tick(self) -> None:
        short = f"k{self.label}{self.k}"
        self.k += 1
        try:
            self.alive.append(self.t.add_pod(self.node, short))
            self.added += 1
        except PartUnavailable as exc:
            self.errors.append({"t": time.time(), "op": "ADD", "pod": short, "error": str(exc)[:300]})
        retry, self.undeleted = self.undeleted, []
        for pod in retry:
            if not self._remove(pod):
                self.undeleted.append(pod)
        while len(self.alive) > self.keep:
            pod = self.alive.popleft()
            if not self._remove(pod):
                self.undeleted.append(pod)

    def run(self) -> None:
        next_at = time.monotonic()
        while not self.stop.is_set():
            self.tick()
            # A tick that ran late is not made up by a burst: the rate is measured, not forced.
            next_at = max(next_at + self.interval, time.monotonic())
            self.stop.wait(max(0.0, next_at - time.monotonic()))

    def drain(self, attempts: int = 5) -> list[str]:
        """Removes every churned pod still there (after the thread stopped); the ones that
        could not be removed."""
        pending = list(self.alive) + self.undeleted
        self.alive.clear()
        for i in range(attempts):
            pending = [p for p in pending if not self._remove(p)]
            if not pending:
                break
            time.sleep(1.0)
        self.undeleted = pending
        return [p.short for p in pending]

    def figures(self, seconds: float) -> dict:
        return {"added": self.added, "deleted": self.deleted, "pods_per_s": round(self.added / seconds, 3)
                if seconds > 0 else None, "left": [p.short for p in self.undeleted], "errors": self.errors}


class RouteChurn:
    """Static routes on `node` rotated by SIGHUP (run from the soak's main loop, never beside a
    vxfedd restart), via `vtep`."""

    def __init__(self, node, vtep: str):
        self.node, self.vtep = node, vtep
        self.original = copy.deepcopy(node.vxfedd.config)
        self.network = self.original["networks"][0]["name"]
        self.prefixes = list(ROUTE_SPACE.subnets(new_prefix=24))
        self.step = 0
        self.reloads = 0
        self.errors: list[dict] = []

    def _apply(self, prefixes: list[str]) -> None:
        d = self.node.vxfedd
        cfg = copy.deepcopy(self.original)
        if prefixes:
            cfg["networks"][0]["static_routes"] = [{"prefix": p, "vteps": [self.vtep]} for p in prefixes]
        d.config = cfg
        d.write_config()
        d.proc.send_signal(signal.SIGHUP)
        self.reloads += 1
        want = set(prefixes)
        deadline = time.monotonic() + 10
        got: set = set()
        while time.monotonic() < deadline:
            try:
                got = {r["prefix"] for r in d.routes() if r.get("source") == "static"}
            except (RuntimeError, ValueError, KeyError, OSError):
                got = {"<vxfedctl routes failed>"}
            if got == want:
                return
            time.sleep(0.2)
        self.errors.append({"t": time.time(), "op": "SIGHUP", "error": f"static routes after 10 s: "
                            f"{sorted(got)[:4]}..., wanted {sorted(want)[:4]}... ({len(got)} vs {len(want)})"})

    def tick(self) -> None:
        window = [str(self.prefixes[(self.step + i) % len(self.prefixes)]) for i in range(ROUTE_WINDOW)]
        self.step += 1
        self._apply(window)

    def restore(self) -> None:
        """The original config back (no static routes)."""
        self._apply([])

    def figures(self) -> dict:
        return {"reloads": self.reloads, "errors": self.errors}
