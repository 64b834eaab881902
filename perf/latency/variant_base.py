"""What the suite needs from a variant of the topology: bring it up, hand out pods, tear down.

A variant owns one vxfed_testlib.Topology, so that everything it creates (namespaces, links,
processes) is removed by Topology.close(), whatever happens.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parents[1] / "tests" / "integration" / "lib"))

import vxfed_testlib as tl  # noqa: E402  (path set just above)

from topology_plan import ClusterPlan, DemoPlan  # noqa: E402

Progress = Callable[[str], None]


class VariantUnavailable(RuntimeError):
    """A part of the variant is missing or did not come up. `component` names the part
    (e.g. "vxfed-dataplane (build/dataplane/vxfed-dataplane)") so the demo can say which."""

    def __init__(self, component: str, reason: str):
        super().__init__(f"{component}: {reason}")
        self.component = component
        self.reason = reason


@dataclass
class Pod:
    name: str                 # "podA0"
    cluster: str              # "a" / "b"
    ns: tl.Namespace
    ip: str
    ifname: str = "eth0"


class Variant:
    """Base class: `up()` builds the topology, `pods[cluster]` lists the pods, `close()` removes it."""

    name = "?"                # "kernel" or "ours": the key in the results JSON

    def __init__(self, plan: DemoPlan, progress: Progress = tl.log):
        self.plan = plan
        self.progress = progress
        self.topo = tl.Topology(self.tag())
        self.nodes: dict[str, tl.Namespace] = {}
        self.pods: dict[str, list[Pod]] = {"a": [], "b": []}

    def tag(self) -> str:
        return f"d{self.name[:4]}"

    # -- to implement --
    def up(self) -> None:
        raise NotImplementedError

    def counters(self) -> dict:
        """Per-node counters after the run (where the packets went); best effort."""
        return {}

    # -- shared --
    def namespaces(self) -> list[str]:
        return [ns.name for ns in self.topo.namespaces]

    def close(self) -> None:
        self.topo.close()

    def make_node(self, cluster: ClusterPlan, forwarding: bool = True) -> tl.Namespace:
        """A node namespace. `forwarding`: the kernel routes between pods and the overlay
        (kernel variant); the vxfed dataplane forwards by itself, so there the kernel must not.
        Strict reverse-path filtering off (pods' /32 addresses behind veths would trip it);
        IPv6 off, so that no router solicitations or ND wander over the underlay."""
        ns = self.topo.netns(cluster.node_short)
        for key in (f"net.ipv4.ip_forward={int(forwarding)}", "net.ipv4.conf.all.rp_filter=0",
                    "net.ipv4.conf.default.rp_filter=0", "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1"):
            ns.run(["sysctl", "-qw", key])
        self.nodes[cluster.name] = ns
        return ns

    def make_underlay(self) -> None:
        """One MTU-sized veth between node A and node B, each end addressed in 198.18.0.0/24."""
        a, b = self.plan.a, self.plan.b
        self.topo.veth(self.nodes["a"], "ul0", self.nodes["b"], "ul0", mtu=self.plan.underlay_mtu)
        for c in (a, b):
            self.nodes[c.name].run(["ip", "addr", "add", f"{c.underlay_ip}/24", "dev", "ul0"])

    def all_pids(self) -> set[int]:
        """Every process inside our namespaces now (for the leftover check after teardown)."""
        pids: set[int] = set()
        for name in self.namespaces():
            out = tl.run(["ip", "netns", "pids", name], check=False).stdout.split()
            pids.update(int(p) for p in out if p.isdigit())
        for _, proc in self.topo.processes:
            pids.add(proc.pid)
        return pids

    def workdir(self) -> Path:
        return self.topo.workdir

    def owned_paths(self) -> list[Path]:
        """Every path this variant creates, all of which must be gone after close()."""
        return [self.topo.workdir]

    def env_keep(self) -> bool:
        return os.environ.get("VXFED_KEEP_WORKDIR") == "1"
