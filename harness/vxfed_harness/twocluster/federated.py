"""The vxfed path ("ours") of the demo and the latency suite: clusters of many nodes, federated,
as docs/federation.md describes them. Built by harness/vxfed_harness/federation_bed.py, the
bed the integration test test_cluster_federation runs:

  - a three-member etcd (the federation store: the network's VNI, a block of the cluster's pod
    CIDR per node);
  - per cluster a route reflector (plain FRR; its frr.conf is vxfed-reflector's) and N nodes,
    each its own namespace with FRR (zebra + bgpd + bfdd), vxfed-dataplane and vxfedd; a node
    peers iBGP with its reflector only, the reflectors peer eBGP (AS 65001 <-> 65002) and keep
    the next hops, so a packet goes straight to the node that hosts the pod;
  - pods made by invoking the vxfed CNI plugin the way a container runtime does, addressed by
    host-local from their node's block (GetNetwork's node_block).

Nothing on the overlay is written by hand. When a part is missing (not built, not installed)
or does not come up, `up()` raises PartUnavailable naming the part; nothing is faked.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from ..cni_runtime import CniError
from ..federation_bed import NETWORK, FederationBed
from ..node import Node
from ..proc import PartUnavailable
from .plan import DemoPlan
from .variant import Pod, Variant
from .vxfed import COMPONENTS, Component, describe_missing

FEDERATION_COMPONENTS = COMPONENTS + [
    Component("vxfed-reflector", "build:bgp/vxfed-reflector", "the route reflector's config (bgp/)"),
    Component("vxfed-dpctl", "build:dataplane/runtime/vxfed-dpctl", "the dataplane's CLI (dataplane/runtime/)"),
    Component("FRR bfdd", "/usr/lib/frr/bfdd", "Debian package frr"),
    Component("etcd", "/usr/bin/etcd", "Debian package etcd-server"),
    Component("etcdctl", "/usr/bin/etcdctl", "Debian package etcd-client"),
]


def missing_components(build_dir: Path, source_dir: Path) -> list[tuple[Component, Path]]:
    """Every part that is not there (not built / not installed), with the path looked at."""
    out = []
    for c in FEDERATION_COMPONENTS:
        p = c.resolve(build_dir, source_dir)
        if not (p.exists() and os.access(p, os.X_OK)):
            out.append((c, p))
    return out


# The workers real-time, as the DaemonSet runs them (deploy/vxfed-daemonset.yaml, checked by
# tests/deploy/manifests_test.py; docs/dataplane.md, "Real-time workers").
DAEMONSET_WORKER_RT_PRIORITY = 1

class FederatedVariant(Variant):
    name = "ours"

    def __init__(self, plan: DemoPlan, build_dir: Path, source_dir: Path, up_timeout: float = 60,
                 worker_rt_priority: int = DAEMONSET_WORKER_RT_PRIORITY, **kw):
        """worker_rt_priority: the dataplanes' --worker-rt-priority (default: the DaemonSet's;
        0: ordinary worker threads, as before issue 35)."""
        super().__init__(plan, **kw)
        self.worker_rt_priority = worker_rt_priority
        self.build_dir = Path(build_dir)
        self.source_dir = Path(source_dir)
        self.up_timeout = up_timeout
        self.bed: FederationBed | None = None
        self.bed_pods = []                      # federation_bed.Pod, in the order made
        self.vni: int | None = None
        self.blocks: dict[str, str] = {}       # node short -> its block of `fed`

    def owned_paths(self) -> list[Path]:
        nodes = self.bed.nodes.values() if self.bed else []
        return super().owned_paths() + [n.dataplane.launch.runtime_dir() for n in nodes]

    def vx_node(self, short: str) -> Node:
        assert self.bed is not None
        return self.bed.nodes[short]

    # ------------------------------------------------------------------ bring-up
    def up(self) -> None:
        missing = missing_components(self.build_dir, self.source_dir)
        if missing:
            names, detail = describe_missing(missing)
            raise PartUnavailable(names, f"not built or not installed: {detail}")
        plan = self.plan
        self.progress(f"ours: {plan.nodes_per_cluster} node(s) per cluster, a route reflector per cluster, "
                      f"a three-member etcd; MTU {plan.underlay_mtu} underlay switch")
        self.bed = FederationBed(self.topo, clusters=2, nodes_per_cluster=plan.nodes_per_cluster,
                                 build_dir=self.build_dir, mtu=plan.underlay_mtu,
                                 dataplane_extra=("--worker-rt-priority", str(self.worker_rt_priority)))
        for n in plan.nodes:
            bn = self.bed.nodes[n.short]
            assert bn.ip == n.underlay_ip, f"the plan and the bed disagree on {n.short}'s address"
            self.nodes[n.short] = bn.ns
        try:
            self.bed.up(timeout=self.up_timeout, progress=lambda line: self.progress(f"ours: {line}"))
        except TimeoutError as exc:
            raise PartUnavailable("the federation (etcd, reflectors, FRR, vxfedd, vxfed-dataplane)",
                                  f"{exc}; {self.bgp_summaries()}") from None
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            raise PartUnavailable("the federation (etcd, reflectors, FRR, vxfedd, vxfed-dataplane)", str(exc)) from None
        self.blocks = self.bed.blocks()
        vnis = {s: n.vni_of(NETWORK) for s, n in self.bed.nodes.items()}
        if len(set(vnis.values())) != 1:
            raise PartUnavailable("the federation store (etcd)", f"network {NETWORK!r} has different VNIs: {vnis}")
        self.vni = next(iter(vnis.values()))
        self.progress(f"ours: network {NETWORK!r} VNI {self.vni} on every node; blocks "
                      + ", ".join(f"node-{s} {b}" for s, b in self.blocks.items()))
        for c in plan.clusters:
            for n in c.nodes:
                for p in n.pods:
                    self._cni_add(n.short, c.name, p.short)
            self.progress(f"ours: cluster {c.name.upper()}: {len(c.pods)} pod(s) from the CNI plugin: "
                          f"{', '.join(f'{p.ip} on node-{p.node}' for p in self.pods[c.name])}")

    def bgp_summaries(self) -> str:
        if not self.bed:
            return ""
        out = []
        for cl in self.bed.clusters:
            try:
                out.append(f"reflector of {cl.name}: {cl.reflector.vtysh('show bgp summary').strip()[-600:]}")
            except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
                out.append(f"reflector of {cl.name}: {exc}")
        return "; ".join(out)

    def _cni_add(self, node_short: str, cluster: str, pod_short: str) -> None:
        assert self.bed is not None
        try:
            bp = self.bed.add_pod(self.bed.nodes[node_short], pod_short)
        except CniError as exc:
            raise PartUnavailable("vxfed CNI plugin", f"ADD for {pod_short} on node-{node_short} failed "
                                  f"({exc.rc}): {exc}") from None
        except (KeyError, IndexError, TypeError) as exc:
            raise PartUnavailable("vxfed CNI plugin", f"ADD for {pod_short} printed no IP: {exc}") from None
        self.bed_pods.append(bp)
        self.pods[cluster].append(Pod(name=pod_short, cluster=cluster, ns=bp.ns, ip=bp.ip, node=node_short))

    def counters(self) -> dict:
        out = {}
        for short, n in (self.bed.nodes.items() if self.bed else []):
            try:
                out[f"node-{short}"] = n.vxfedctl("stats")
            except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
                out[f"node-{short}"] = {"error": str(exc)}
        return out

    # ------------------------------------------------------------------ teardown
    def close(self) -> None:
        """As a runtime and an operator would: CNI DEL every pod, then each node (vxfedd, the
        dataplane, FRR), the reflectors and etcd, then the namespaces, DPDK's run files and the
        work dir (Topology.close)."""
        if self.bed:
            for bp in reversed(list(self.bed_pods)):
                try:
                    self.bed.delete_pod(bp)
                except (CniError, subprocess.TimeoutExpired, ValueError) as exc:
                    self.progress(f"ours: CNI DEL {bp.container_id}: {exc}")
            self.bed_pods.clear()
            # The nodes are independent: stopping them side by side takes a quarter of the time.
            threads = [threading.Thread(target=n.close, name=f"close {s}") for s, n in self.bed.nodes.items()]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        super().close()
