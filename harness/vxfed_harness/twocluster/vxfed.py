"""The vxfed path with one node per cluster, the two nodes peering eBGP directly (the faults
suite's topology, perf/faults; the demo and the latency suite run the many-node model of
federated.py): per node FRR (zebra + bgpd), vxfed-dataplane and vxfedd; pods made
by invoking the vxfed CNI plugin the way a container runtime does. Nothing on the overlay is
written by hand: vxfedd renders FRR's config, BGP exchanges the pod CIDRs, zebra streams the
selected routes to vxfedd over FPM, vxfedd programs the dataplane.

Each node is a vxfed_harness.node.Node: the command lines and configs of the parts are the
harness's (dataplane.DataplaneLaunch, vxfedd.config, frr.Frr), the same the integration tests
run; what is particular to the demo (its network, BGP timers, the CNI network config) is
below. Experiments: $VXFED_DATAPLANE_LCORES (EAL --lcores value) and
$VXFED_DATAPLANE_EXTRA_ARGS (more vxfed-dataplane options).

When a part is missing (not built) or does not come up, `up()` raises PartUnavailable
naming the part; nothing is faked.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..cni_runtime import CniError, Runtime
from ..dataplane import node_lcores
from ..node import Node, connect_underlay
from ..proc import PartUnavailable
from .plan import ClusterPlan, DemoPlan
from .variant import Pod, Variant

NETWORK = "fed"                       # the vxfed network both clusters' pods join


@dataclass(frozen=True)
class Component:
    name: str                         # what the demo calls it in messages
    path: str                         # relative to the build dir ("build:"), the source dir ("src:"), or absolute
    owner: str                        # which part provides it

    def resolve(self, build_dir: Path, source_dir: Path) -> Path:
        if self.path.startswith("build:"):
            return build_dir / self.path[len("build:"):]
        if self.path.startswith("src:"):
            return source_dir / self.path[len("src:"):]
        return Path(self.path)


COMPONENTS = [
    Component("vxfed-dataplane", "build:dataplane/vxfed-dataplane", "the DPDK forwarder (dataplane/)"),
    Component("vxfedd", "build:control/vxfedd", "the node daemon (control/)"),
    Component("vxfedctl", "build:control/vxfedctl", "the node daemon's CLI (control/)"),
    Component("vxfed CNI plugin", "build:cni/vxfed", "the CNI plugin (cni/)"),
    Component("FRR instance scripts", "src:scripts/frr-start.sh", "the BGP adapter (bgp/, scripts/frr-*.sh)"),
    Component("FRR instance scripts", "src:scripts/frr-stop.sh", "the BGP adapter (bgp/, scripts/frr-*.sh)"),
    Component("FRR zebra", "/usr/lib/frr/zebra", "Debian package frr"),
    Component("FRR bgpd", "/usr/lib/frr/bgpd", "Debian package frr"),
    Component("host-local IPAM plugin", "/usr/lib/cni/host-local", "Debian package containernetworking-plugins"),
]


def missing_components(build_dir: Path, source_dir: Path) -> list[tuple[Component, Path]]:
    """Every part that is not there (not built / not installed), with the path looked at."""
    out = []
    for c in COMPONENTS:
        p = c.resolve(build_dir, source_dir)
        if not (p.exists() and os.access(p, os.X_OK)):
            out.append((c, p))
    return out


def describe_missing(missing: list[tuple[Component, Path]]) -> tuple[str, str]:
    names = []
    for c, _ in missing:
        if c.name not in names:
            names.append(c.name)
    detail = "; ".join(f"{c.name} ({c.owner}) not found at {p}" for c, p in missing)
    return ", ".join(names), detail


class VxfedVariant(Variant):
    name = "ours"

    def __init__(self, plan: DemoPlan, build_dir: Path, source_dir: Path, up_timeout: float = 60,
                 **kw):
        if plan.nodes_per_cluster != 1:
            raise ValueError(f"the direct eBGP topology has one node per cluster, the plan {plan.nodes_per_cluster}")
        super().__init__(plan, **kw)
        self.build_dir = Path(build_dir)
        self.source_dir = Path(source_dir)
        self.up_timeout = up_timeout
        self.vx_nodes: dict[str, Node] = {}
        self.node_dirs: dict[str, Path] = {}
        self.runtimes: dict[str, Runtime] = {}
        self.cni_added: list[tuple[str, str, str, str]] = []   # (cluster, container id, netns path, ifname)

    def owned_paths(self) -> list[Path]:
        return super().owned_paths() + [n.dataplane.launch.runtime_dir() for n in self.vx_nodes.values()]

    # ------------------------------------------------------------------ bring-up
    def up(self) -> None:
        missing = missing_components(self.build_dir, self.source_dir)
        if missing:
            names, detail = describe_missing(missing)
            raise PartUnavailable(names, f"not built or not installed: {detail}")
        plan = self.plan
        self.progress(f"ours: creating node namespaces and the MTU {plan.underlay_mtu} underlay")
        lcores = os.environ.get("VXFED_DATAPLANE_LCORES") or None
        extra = os.environ.get("VXFED_DATAPLANE_EXTRA_ARGS", "").split()
        for index, c in enumerate(plan.clusters):
            n = Node(self.topo, c.node_short, c.underlay_ip, c.pod_cidr, asn=c.asn, node_name=c.node_short.lower(),
                     cluster=f"cluster-{c.name}", mtu=plan.underlay_mtu, lcores=lcores or node_lcores(index),
                     dataplane_extra=extra,
                     build_dir=self.build_dir)
            (n.dir / "cni").mkdir()
            self.vx_nodes[c.name] = n
            self.nodes[c.name] = n.ns
            self.node_dirs[c.name] = n.dir
            self.runtimes[c.name] = Runtime([str(self.build_dir / "cni"), "/usr/lib/cni"], n.dir / "cni-cache",
                                            prefix=n.ns.prefix())
        connect_underlay(self.topo, [self.vx_nodes[c.name] for c in plan.clusters])
        for c in plan.clusters:
            self.progress(f"ours: node {c.name.upper()}: starting FRR (zebra with dplane_fpm_nl, bgpd), AS {c.asn}")
            self.vx_nodes[c.name].start_frr()
        for c in plan.clusters:
            self.progress(f"ours: node {c.name.upper()}: starting vxfed-dataplane (af_packet uplink ul0, "
                          f"VTEP {c.underlay_ip})")
            self.vx_nodes[c.name].start_dataplane()
        for c in plan.clusters:
            peer = plan.peer_of(c)
            self.progress(f"ours: node {c.name.upper()}: starting vxfedd (network {NETWORK!r} {c.pod_cidr}, "
                          f"VNI {plan.vni}, eBGP to {peer.underlay_ip} AS {peer.asn})")
            self.vx_nodes[c.name].start_vxfedd(self.vxfedd_config(c))
        for c in plan.clusters:
            self._wait_daemon_ready(c)
        self._wait_bgp_routes()
        for c in plan.clusters:
            for p in c.pods:
                self._cni_add(c, p.short)
            self.progress(f"ours: cluster {c.name.upper()}: {len(c.pods)} pod(s) from the CNI plugin: "
                          f"{', '.join(p.ip for p in self.pods[c.name])}")

    def vxfedd_config(self, c: ClusterPlan) -> dict:
        """vxfedd's config (docs/control.md) with the `bgp:` section of docs/bgp.md: eBGP to the
        other cluster's node, accepting exactly its pod CIDR."""
        n, peer = self.vx_nodes[c.name], self.plan.peer_of(c)
        bgp = n.bgp_config(
            clusters={f"cluster-{peer.name}": [peer.pod_cidr]},
            # Short timers: the demo should not wait for BGP longer than it must.
            peers=[{"address": peer.underlay_ip, "remote_asn": peer.asn, "cluster": f"cluster-{peer.name}",
                    "network": NETWORK, "keepalive": 1, "hold": 3, "connect_retry": 1}],
            status_interval_ms=1000, frr={"apply": "reload"},
            fpm={"listen": "127.0.0.1", "port": 620})
        return n.vxfedd_config(networks=[{"name": NETWORK, "vni": self.plan.vni, "subnet": c.pod_cidr,
                                          "gateway": c.gateway}], bgp=bgp)

    def _wait_daemon_ready(self, c: ClusterPlan) -> None:
        self.progress(f"ours: node {c.name.upper()}: waiting for vxfedd to program the dataplane")
        n = self.vx_nodes[c.name]
        try:
            n.vxfedd.wait_ready(self.up_timeout)
        except TimeoutError as exc:
            raise PartUnavailable("vxfedd <-> vxfed-dataplane", f"{exc}; last status: {self._status(c)}") from None

    def _status(self, c: ClusterPlan) -> dict:
        try:
            return self.vx_nodes[c.name].vxfedd.status()
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
            return {"error": str(exc)}

    def _wait_bgp_routes(self) -> None:
        self.progress("ours: waiting for BGP: each node must learn the other cluster's pod CIDR")
        t0 = time.monotonic()
        for c in self.plan.clusters:
            peer, n = self.plan.peer_of(c), self.vx_nodes[c.name]
            try:
                n.wait_until(lambda: n.bgp_route(peer.pod_cidr) is not None, self.up_timeout,
                             f"node {c.name.upper()} to learn {peer.pod_cidr} over BGP")
            except TimeoutError as exc:
                raise PartUnavailable("BGP (FRR + vxfedd's BGP adapter)", f"{exc}; {self.bgp_summary(c)}") from None
        self.progress(f"ours: BGP up, routes learned in {time.monotonic() - t0:.1f}s: "
                      + "; ".join(f"{c.name.upper()} -> {self.plan.peer_of(c).pod_cidr} via "
                                  f"{','.join(self.learned_route(c, self.plan.peer_of(c).pod_cidr).get('vteps', []))}"
                                  for c in self.plan.clusters))

    def learned_route(self, c: ClusterPlan, prefix: str) -> dict | None:
        """The route to prefix that vxfedd holds with source "bgp", or None."""
        return self.vx_nodes[c.name].bgp_route(prefix)

    def bgp_summary(self, c: ClusterPlan) -> str:
        out = self.vx_nodes[c.name].vtysh("show bgp summary")
        return f"FRR on node {c.name.upper()} says: {out.strip()[-600:]}"

    def _cni_add(self, c: ClusterPlan, short: str) -> None:
        pod_ns = self.topo.netns(short)
        container_id = f"vxdemo-{self.topo.suffix}-{short.lower()}"
        result = self._cni(c, "ADD", container_id, pod_ns.path, "eth0", short)
        try:
            ip = result["ips"][0]["address"].split("/")[0]
        except (KeyError, IndexError, TypeError):
            raise PartUnavailable("vxfed CNI plugin", f"ADD for {short} printed no IP: {result}") from None
        self.cni_added.append((c.name, container_id, pod_ns.path, "eth0"))
        self.pods[c.name].append(Pod(name=short, cluster=c.name, ns=pod_ns, ip=ip, node=c.node_short))

    def cni_config(self, c: ClusterPlan) -> dict:
        """docs/cni.md: the network configuration a runtime hands the plugin on stdin."""
        d = self.node_dirs[c.name]
        first_pod = c.pods[0].ip if c.pods else c.gateway
        return {
            "cniVersion": "1.0.0",
            "name": NETWORK,
            "type": "vxfed",
            "socket": str(self.vx_nodes[c.name].vxfedd.socket),
            "stateDir": str(d / "cni"),
            "ipam": {"type": "host-local", "dataDir": str(d / "ipam"),
                     "ranges": [[{"subnet": c.pod_cidr, "rangeStart": first_pod, "gateway": c.gateway}]]},
        }

    def _cni(self, c: ClusterPlan, command: str, container_id: str, netns: str, ifname: str,
             pod_name: str) -> dict:
        """ADD or DEL through the harness's CNI runtime (run in the node's namespace, as a
        container runtime on the node runs the plugin)."""
        rt, conf = self.runtimes[c.name], self.cni_config(c)
        try:
            if command == "DEL":
                rt.delete(conf, container_id, netns, ifname)
                return {}
            return rt.add(conf, container_id, netns, ifname,
                          args={"IgnoreUnknown": 1, "K8S_POD_NAMESPACE": "demo", "K8S_POD_NAME": pod_name,
                                "K8S_POD_UID": container_id}) or {}
        except subprocess.TimeoutExpired:
            raise PartUnavailable("vxfed CNI plugin", f"{command} for {pod_name} did not return in time") from None
        except CniError as exc:
            raise PartUnavailable("vxfed CNI plugin", f"{command} for {pod_name} failed ({exc.rc}): {exc}") from None

    def counters(self) -> dict:
        out = {}
        for cname, n in self.vx_nodes.items():
            try:
                out[cname] = n.vxfedctl("stats")
            except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
                out[cname] = {"error": str(exc)}
        return out

    # ------------------------------------------------------------------ teardown
    def close(self) -> None:
        """As a runtime and an operator would: CNI DEL every pod, then each node (vxfedd, the
        dataplane, FRR), then the namespaces, DPDK's run files and the work dir (Topology.close)."""
        for cname, cid, netns, ifname in reversed(self.cni_added):
            c = self.plan.a if cname == "a" else self.plan.b
            try:
                self._cni(c, "DEL", cid, netns, ifname, cid)
            except (PartUnavailable, ValueError) as exc:
                self.progress(f"ours: CNI DEL {cid}: {exc}")
        self.cni_added.clear()
        for n in self.vx_nodes.values():
            n.close()
        super().close()
