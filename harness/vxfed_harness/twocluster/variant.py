"""What the latency suite needs from a variant of the two-cluster topology: bring it up,
hand out pods, tear down.

A variant owns one Topology, so that everything it creates (namespaces, links, processes) is
removed by Topology.close(), whatever happens. A part that is missing or does not come up is
a PartUnavailable naming the part (vxfed_harness.proc), so the demo can say which.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..env import log
from ..node import prepare_node_namespace
from ..proc import run
from ..topology import Namespace, Topology
from .plan import DemoPlan, NodePlan

Progress = Callable[[str], None]


@dataclass
class Pod:
    name: str                 # "podA0"
    cluster: str              # "a" / "b"
    ns: Namespace
    ip: str
    ifname: str = "eth0"
    node: str = ""            # the node it sits on ("a1"; vxfed's node name is node-a1)


class Variant:
    """Base class: `up()` builds the topology, `pods[cluster]` lists the pods, `close()` removes it."""

    name = "?"                # "kernel" or "ours": the key in the results JSON

    def __init__(self, plan: DemoPlan, progress: Progress = log):
        self.plan = plan
        self.progress = progress
        self.topo = Topology(self.tag())
        self.nodes: dict[str, Namespace] = {}          # node short ("a1") -> its namespace
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

    def make_node(self, node: NodePlan) -> Namespace:
        """A node namespace whose kernel forwards (prepare_node_namespace)."""
        ns = self.topo.netns(node.short)
        prepare_node_namespace(ns, forwarding=True)
        self.nodes[node.short] = ns
        return ns

    def make_underlay(self) -> None:
        """The underlay ul0 of every node, addressed in 198.18.0.0/24: one MTU-sized veth between
        two nodes, a bridge in a switch namespace ("sw", ports p<node>) for more."""
        nodes = self.plan.nodes
        if len(nodes) == 2:
            a, b = nodes
            self.topo.wire(self.nodes[a.short], [f"{a.underlay_ip}/24"], self.nodes[b.short], [f"{b.underlay_ip}/24"],
                           ifname="ul0", mtu=self.plan.underlay_mtu)
            return
        self.topo.switch("sw", [(f"p{n.short}", self.nodes[n.short], "ul0", [f"{n.underlay_ip}/24"]) for n in nodes],
                         mtu=self.plan.underlay_mtu)

    def all_pids(self) -> set[int]:
        """Every process inside our namespaces now (for the leftover check after teardown)."""
        pids: set[int] = set()
        for name in self.namespaces():
            out = run(["ip", "netns", "pids", name], check=False).stdout.split()
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
