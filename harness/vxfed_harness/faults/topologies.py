"""The topologies the fault suite runs on, behind one small interface, so that a fault is
written once and runs on either:

  - "demo" (DemoTopology): the two-cluster demo of docs/demo.md, vxfed variant, one node per
    cluster peering eBGP directly (with graceful restart), no federation store; two pods on
    each node (twocluster/vxfed.py).
  - "federated" (FederatedTopology): docs/federation.md's model, N nodes per cluster, a route
    reflector per cluster, a three-member etcd holding the VNIs and node blocks
    (twocluster/federated.py on federation_bed.py); two pods per cluster, both on the first
    node with one node per cluster, else one on each of the first two nodes.

Node A is the first node of cluster A ("this node", where faults are injected), node B the
first of cluster B (the remote node).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..cni_runtime import CniError
from ..etcd_cluster import EtcdCluster
from ..federation_bed import KEY_PREFIX, node_cni_config
from ..node import Node
from ..proc import PartUnavailable, run
from ..topology import Namespace
from ..twocluster import plan as plan_mod
from ..twocluster.federated import FederatedVariant
from ..twocluster.vxfed import VxfedVariant

DEMO = "demo"
FEDERATED = "federated"


@dataclass
class AddedPod:
    node: Node
    container_id: str
    ns: Namespace
    short: str


class FaultTopology:
    kind = "?"

    def __init__(self, variant, progress: Callable[[str], None]):
        self.v = variant
        self.progress = progress

    # -- what the faults and the suite use --
    @property
    def plan(self):
        return self.v.plan

    @property
    def pods(self):
        return self.v.pods

    def workdir(self) -> Path:
        return self.v.workdir()

    @property
    def node_a(self) -> Node:
        raise NotImplementedError

    @property
    def node_b(self) -> Node:
        raise NotImplementedError

    def nodes(self) -> dict[str, Node]:
        """Every vxfed node, by a label for the state and the messages."""
        raise NotImplementedError

    def state_dir_a(self) -> Path:
        """Node A's state dir, known before up() (the suite mounts a small tmpfs there)."""
        raise NotImplementedError

    @property
    def etcd(self) -> Optional[EtcdCluster]:
        return None

    def store_state(self) -> Optional[dict]:
        """What the federation store holds that must survive a fault; None without a store."""
        return None

    def check_alive(self) -> None:
        for n in self.nodes().values():
            n.check_alive()

    def up(self) -> None:
        self.v.up()

    def close(self) -> None:
        self.v.close()

    def describe(self) -> str:
        raise NotImplementedError

    # -- pods through the CNI plugin, as a container runtime adds them --
    def add_pod(self, node: Node, short: str) -> AddedPod:
        """CNI ADD of a new pod (its own namespace) on node; PartUnavailable when refused."""
        raise NotImplementedError

    def delete_pod(self, pod: AddedPod) -> None:
        """CNI DEL, then the pod's namespace removed."""
        raise NotImplementedError

    def _undo_failed_add(self, pod: AddedPod) -> None:
        """What a runtime does after a failed ADD (the CNI spec asks it to): DEL, best effort,
        then the pod's namespace goes."""
        try:
            self.delete_pod(pod)
        except PartUnavailable as exc:
            self.progress(f"faults: CNI DEL after a failed ADD of {pod.short}: {exc}")
            self._drop_namespace(pod.ns)

    def _drop_namespace(self, ns: Namespace) -> None:
        run(["ip", "netns", "del", ns.name], check=False)
        self.v.topo.namespaces.remove(ns)


class DemoTopology(FaultTopology):
    kind = DEMO

    def __init__(self, build_dir: Path, source_dir: Path, progress: Callable[[str], None]):
        super().__init__(VxfedVariant(plan_mod.make_plan(9000, 2), build_dir=build_dir, source_dir=source_dir,
                                      progress=progress), progress)

    @property
    def node_a(self) -> Node:
        return self.v.vx_nodes["a"]

    @property
    def node_b(self) -> Node:
        return self.v.vx_nodes["b"]

    def nodes(self) -> dict[str, Node]:
        return dict(self.v.vx_nodes)

    def state_dir_a(self) -> Path:
        return self.v.workdir() / self.plan.a.node_short / "state"

    def describe(self) -> str:
        return "the demo topology (one node per cluster, direct eBGP, no federation store)"

    def _cluster_of(self, node: Node):
        return next(c for c in self.plan.clusters if self.v.vx_nodes[c.name] is node)

    def add_pod(self, node: Node, short: str) -> AddedPod:
        ns = self.v.topo.netns(short)
        pod = AddedPod(node, f"vxfault-{self.v.topo.suffix}-{short.lower()}", ns, short)
        try:
            self.v._cni(self._cluster_of(node), "ADD", pod.container_id, ns.path, "eth0", short)
        except PartUnavailable:
            self._undo_failed_add(pod)
            raise
        return pod

    def delete_pod(self, pod: AddedPod) -> None:
        self.v._cni(self._cluster_of(pod.node), "DEL", pod.container_id, pod.ns.path, "eth0", pod.short)
        self._drop_namespace(pod.ns)


class FederatedTopology(FaultTopology):
    kind = FEDERATED

    def __init__(self, nodes_per_cluster: int, build_dir: Path, source_dir: Path, progress: Callable[[str], None]):
        # Two pods per cluster as in the demo; with several nodes they sit on two nodes, so
        # that the streams of the cluster's second node are a control for faults on node A.
        pods_per_node = 2 if nodes_per_cluster == 1 else 1
        plan = plan_mod.make_plan(9000, pods_per_node, nodes_per_cluster)
        super().__init__(FederatedVariant(plan, build_dir=build_dir, source_dir=source_dir, progress=progress),
                         progress)

    @property
    def bed(self):
        assert self.v.bed is not None, "the federated topology is not up"
        return self.v.bed

    @property
    def node_a(self) -> Node:
        return self.bed.nodes["a1"]

    @property
    def node_b(self) -> Node:
        return self.bed.nodes["b1"]

    def nodes(self) -> dict[str, Node]:
        return dict(self.bed.nodes)

    def state_dir_a(self) -> Path:
        return self.v.workdir() / "a1" / "state"    # Node's directory for node a1 (federation_bed.py)

    @property
    def etcd(self) -> EtcdCluster:
        return self.bed.etcd

    def store_state(self) -> Optional[dict]:
        try:
            kvs = self.bed.etcd.get_prefix(f"{KEY_PREFIX}/v1/")
        except (RuntimeError, ValueError, subprocess.SubprocessError, OSError):
            return None          # no quorum: the store cannot be read (linearizable reads)
        return store_view(kvs)

    def describe(self) -> str:
        n = self.plan.nodes_per_cluster
        return (f"the federated topology ({n} node(s) per cluster, a route reflector per cluster, "
                f"a three-member etcd)")

    def add_pod(self, node: Node, short: str) -> AddedPod:
        ns = self.v.topo.netns(f"{node.short}{short}")
        pod = AddedPod(node, f"vxfault-{self.v.topo.suffix}-{node.short}-{short.lower()}", ns, short)
        try:
            self.bed.runtimes[node.short].add(node_cni_config(node), pod.container_id, ns.path, "eth0",
                                              args={"IgnoreUnknown": 1, "K8S_POD_NAMESPACE": "faults",
                                                    "K8S_POD_NAME": f"{node.short}-{short}"})
        except (CniError, subprocess.TimeoutExpired) as exc:
            self._undo_failed_add(pod)
            raise PartUnavailable("vxfed CNI plugin", f"ADD for {short} on node-{node.short} failed: {exc}") from None
        return pod

    def delete_pod(self, pod: AddedPod) -> None:
        try:
            self.bed.runtimes[pod.node.short].delete(node_cni_config(pod.node), pod.container_id, pod.ns.path, "eth0")
        except (CniError, subprocess.TimeoutExpired) as exc:
            raise PartUnavailable("vxfed CNI plugin", f"DEL for {pod.short} on node-{pod.node.short} failed: "
                                  f"{exc}") from None
        self._drop_namespace(pod.ns)


def store_view(kvs: dict[str, str]) -> dict:
    """The store's keys (docs/federation.md, "Key schema") as the state to compare, without
    what legitimately changes while nothing is wrong:
      - v1/alive/* and v1/collector are on leases: a restarted vxfedd registers a new lease,
        and any node may hold the collector role; the set of nodes alive is kept;
      - a node record's registered_unix_ms is rewritten at every vxfedd start;
      - held VNI records: removing a network (the faults that add one and take it away again)
        leaves its VNI held down for hold_down_seconds, as it must.
    Everything that says who has which VNI and block is kept: networks, allocated and pinned
    VNIs, blocks, memberships, node-networks, pools."""
    prefix = f"{KEY_PREFIX}/v1/"
    out: dict = {"alive": []}
    for key, value in sorted(kvs.items()):
        rel = key[len(prefix):] if key.startswith(prefix) else key
        kind = rel.split("/", 1)[0]
        if kind == "alive":
            out["alive"].append(rel.split("/", 1)[1])
            continue
        if kind == "collector":
            continue
        try:
            data = json.loads(value) if value.startswith("{") else value
        except ValueError:
            data = value                   # damaged: kept as it is, so a change shows
        if kind == "nodes" and isinstance(data, dict):
            data = {k: v for k, v in data.items() if k != "registered_unix_ms"}
        if kind == "vnis" and isinstance(data, dict) and data.get("state") == "held":
            continue
        out[rel] = data
    return out


def make_topology(nodes_per_cluster: Optional[int], build_dir: Path, source_dir: Path,
                  progress: Callable[[str], None]) -> FaultTopology:
    """None: the demo topology; N (1..5): the federated one with N nodes per cluster."""
    if nodes_per_cluster is None:
        return DemoTopology(build_dir, source_dir, progress)
    if not 1 <= nodes_per_cluster <= plan_mod.MAX_NODES_PER_CLUSTER:
        raise ValueError(f"nodes per cluster must be 1..{plan_mod.MAX_NODES_PER_CLUSTER} (the underlay plan's room), "
                         f"got {nodes_per_cluster}")
    return FederatedTopology(nodes_per_cluster, build_dir, source_dir, progress)
