"""Clusters of many nodes, federated: per cluster N vxfed nodes (vxfed_harness.node.Node: FRR
with bfdd, vxfed-dataplane, vxfedd) and a route reflector (plain FRR whose frr.conf is
vxfed-reflector's), a three-member etcd for the federation store, all on one underlay switch.
Nothing on the overlay is written by hand: the store gives VNIs and node blocks, each node's
FRR announces its blocks to its reflector, the reflectors exchange them over eBGP with the
next hops unchanged, zebra streams every node's blocks to vxfedd over FPM.

    bed = FederationBed(topo, clusters=2, nodes_per_cluster=3)
    bed.up()                         # etcd, reflectors, nodes; every node learns every block
    bed.nodes["a1"].vxfedctl("networks")
    pod = bed.add_pod(bed.nodes["b2"], "p0")

Experiments: $VXFED_DATAPLANE_EXTRA_ARGS adds vxfed-dataplane options on every node.

Underlay 198.18.0.0/24: cluster c (0-based) has its reflector at .(10c+10) (with
reflectors_per_cluster=2 a second one at .(10c+9): every node peers with both, every reflector
with both of the other cluster) and nodes at .(10c+11) ...; etcd listens on .250 in a
namespace of its own. Cluster c's pods are in
10.(244+c).0.0/16, one /24 block per node and network from the store.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .cni_runtime import Runtime
from .dataplane import node_lcores
from .env import binary, require_binary, require_program
from .etcd_cluster import EtcdCluster
from .frr import Frr, require_frr
from .node import Node, prepare_node_namespace
from .proc import PartUnavailable, run, wait_until
from .topology import Namespace, Topology

NETWORK = "fed"
ETCD_IP = "198.18.0.250"
UNDERLAY = "198.18.0.0/24"
KEY_PREFIX = "/vxfed"
# FRR 8.4 bgpd sends the restart state bit for this long after its instance is made (a timer of
# BGP_DEFAULT_RESTART_TIME started before the config is read), and a second more.
FRR_STARTUP_S = 121.0


def require_parts() -> None:
    """Skips (fails in CI) unless what a FederationBed starts is here: FRR with bfdd, etcd, and
    the binaries of this build."""
    require_frr(bfdd=True)
    for b in ("dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl", "control/vxfedd", "control/vxfedctl",
              "cni/vxfed", "bgp/vxfed-reflector"):
        require_binary(b)
    require_program("etcd")
    require_program("etcdctl")


def side_by_side(fn, items) -> None:
    """fn(item) for every item, each on its own thread; raises the first error once all are done."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        for f in [pool.submit(fn, i) for i in items]:
            f.result()


def cluster_name(c: int) -> str:
    return f"cluster-{chr(ord('a') + c)}"


@dataclass
class Pod:
    name: str
    node: Node
    ns: Namespace
    ip: str
    container_id: str


@dataclass
class Cluster:
    index: int
    name: str
    asn: int
    pod_cidr: str
    reflector_ip: str
    nodes: list[Node] = field(default_factory=list)
    reflector: Optional[Frr] = None
    reflector_ns: Optional[Namespace] = None
    # With reflectors_per_cluster=2, the second reflector: (address, namespace, FRR).
    second: Optional[tuple[str, Namespace, Frr]] = None

    def reflectors(self) -> list[tuple[str, Frr]]:
        """Every reflector of the cluster, the first one first: (address, FRR)."""
        out = [(self.reflector_ip, self.reflector)]
        if self.second:
            out.append((self.second[0], self.second[2]))
        return out

    @property
    def listen_range(self) -> str:
        """The /28 its nodes connect from (its reflector's address is in it too, the other's not)."""
        return f"198.18.0.{16 * self.index}/28"


def node_runtime(n: Node, build_dir: Optional[Path] = None) -> Runtime:
    """A CNI runtime for n: our plugin and the reference ones, run inside n's namespace (the
    node is the pods' host), with its cache under n's directory."""
    (n.dir / "cni").mkdir(exist_ok=True)
    return Runtime([str(binary("cni", build_dir)), "/usr/lib/cni"], n.dir / "cni-cache", prefix=n.ns.prefix())


def node_cni_config(n: Node, network: str = NETWORK) -> dict:
    """No ranges: the plugin hands host-local this node's block (docs/cni.md)."""
    return {"cniVersion": "1.0.0", "name": network, "type": "vxfed", "socket": str(n.vxfedd.socket),
            "stateDir": str(n.dir / "cni"),
            "ipam": {"type": "host-local", "dataDir": str(n.dir / "ipam"), "routes": [{"dst": "0.0.0.0/0"}]}}


def add_node_pod(topo: Topology, runtime: Runtime, n: Node, name: str, network: str = NETWORK) -> Pod:
    """A pod (its own namespace) on n through the CNI plugin: CNI ADD, as a runtime runs it."""
    ns = topo.netns(f"{n.short}{name}")
    cid = f"fedbed-{topo.suffix}-{n.short}-{name}"
    try:
        res = runtime.add(node_cni_config(n, network), cid, ns.path, "eth0",
                          args={"IgnoreUnknown": 1, "K8S_POD_NAMESPACE": "fed", "K8S_POD_NAME": f"{n.short}-{name}"})
    except subprocess.TimeoutExpired:
        raise PartUnavailable("vxfed CNI plugin", f"ADD {cid} did not return in time") from None
    ip = res["ips"][0]["address"].split("/")[0]
    return Pod(f"{n.short}-{name}", n, ns, ip, cid)


def ping(src: Pod, dst_ip: str, size: Optional[int] = None, df: bool = False) -> bool:
    """One echo from pod src to dst_ip (3 s to answer); size: ICMP payload bytes, df: don't fragment."""
    args = ["ping", "-n", "-q", "-c", "1", "-W", "3"]
    if size is not None:
        args += ["-s", str(size)]
    if df:
        args += ["-M", "do"]
    return src.ns.run(args + [dst_ip], check=False, timeout=30).returncode == 0


def ping_matrix(bed: "FederationBed", sources: list[Pod]) -> list[str]:
    """From each source pod to every other pod of the bed, one thread per source; the failures."""
    failures: list[str] = []
    lock = threading.Lock()

    def from_source(src: Pod) -> None:
        for dst in bed.pods:
            if dst is src:
                continue
            ok = ping(src, dst.ip) or ping(src, dst.ip)  # one retry: a first packet may wait for ARP
            if not ok:
                with lock:
                    failures.append(f"{src.name} ({src.ip}) -> {dst.name} ({dst.ip})")
    threads = [threading.Thread(target=from_source, args=(s,)) for s in sources]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return failures


def vnis(bed: "FederationBed", network: str) -> dict[str, int]:
    """Node short name -> the VNI its vxfedd gives network (nodes without it left out)."""
    out = {}
    for s, n in bed.nodes.items():
        for net in n.vxfedctl("networks").get("networks", []):
            if net["spec"]["name"] == network:
                out[s] = int(net["vni"])
    return out


class FederationBed:
    def __init__(self, topo: Topology, clusters: int = 2, nodes_per_cluster: int = 3, build_dir: Optional[Path] = None,
                 mtu: int = 9000, node_build_dirs: Optional[dict[str, Path]] = None, reflectors_per_cluster: int = 1,
                 dataplane_extra: tuple[str, ...] = ()):
        """node_build_dirs: short name -> the build whose vxfedd, dataplane, vxfedctl and CNI
        plugin that node runs (another release's, for a federation mid-roll); the others run
        build_dir's. dataplane_extra: options every node's vxfed-dataplane gets (before
        VXFED_DATAPLANE_EXTRA_ARGS's)."""
        assert clusters == 2, "the address plan has room for two clusters"
        assert 1 <= nodes_per_cluster <= 5
        assert reflectors_per_cluster in (1, 2)
        self.topo = topo
        self.mtu = mtu
        self.build_dir = build_dir
        self.node_build_dirs = dict(node_build_dirs or {})
        self.clusters: list[Cluster] = []
        self.nodes: dict[str, Node] = {}
        self.pods: list[Pod] = []
        self.runtimes: dict[str, Runtime] = {}
        self.bgp_started_at = time.time()   # set again once up() has every bgpd configured
        for c in range(clusters):
            cl = Cluster(c, cluster_name(c), 65001 + c, f"10.{244 + c}.0.0/16", f"198.18.0.{10 * c + 10}")
            self.clusters.append(cl)
            for i in range(nodes_per_cluster):
                short = f"{chr(ord('a') + c)}{i + 1}"
                node_build = (node_build_dirs or {}).get(short, build_dir)
                # Workers alternate CPUs across clusters first: a1 and b1 (the pair measured
                # across clusters) never share one.
                n = Node(topo, short, f"198.18.0.{10 * c + 11 + i}", cl.pod_cidr, asn=cl.asn, node_name=f"node-{short}",
                         cluster=cl.name, mtu=mtu, bfdd=True, build_dir=node_build,
                         lcores=node_lcores(i * clusters + c),
                         dataplane_extra=[*dataplane_extra,
                                          *os.environ.get("VXFED_DATAPLANE_EXTRA_ARGS", "").split()])
                cl.nodes.append(n)
                self.nodes[short] = n
                self.runtimes[short] = node_runtime(n, node_build)
            cl.reflector_ns = topo.netns(f"rr{c}")
            prepare_node_namespace(cl.reflector_ns, forwarding=False)
            cl.reflector = Frr(cl.reflector_ns, topo.workdir / f"rr{c}" / "frr", bfdd=True)
            if reflectors_per_cluster == 2:
                ns2 = topo.netns(f"rr{c}b")
                prepare_node_namespace(ns2, forwarding=False)
                cl.second = (f"198.18.0.{10 * c + 9}", ns2, Frr(ns2, topo.workdir / f"rr{c}b" / "frr", bfdd=True))
        self.etcd_ns = topo.netns("etcd")
        ports = [(f"p{n.short}", n.ns, n.uplink, [f"{n.ip}/24"]) for n in self.nodes.values()]
        ports += [(f"prr{c.index}", c.reflector_ns, "ul0", [f"{c.reflector_ip}/24"]) for c in self.clusters]
        ports += [(f"prr{c.index}b", c.second[1], "ul0", [f"{c.second[0]}/24"]) for c in self.clusters if c.second]
        ports.append(("petcd", self.etcd_ns, "ul0", [f"{ETCD_IP}/24"]))
        self.switch = topo.switch("sw", ports, mtu=mtu)
        self.etcd = EtcdCluster(topo, members=3, ns=self.etcd_ns, host=ETCD_IP)
        for cl in self.clusters:
            for ip, frr in cl.reflectors():
                topo.on_failure(f"reflector {ip} of {cl.name}", lambda frr=frr, ip=ip, cl=cl: frr.dump(
                    f"reflector {ip} of {cl.name}"))

    # ------------------------------------------------------------------ configs
    def cluster_cidrs(self) -> dict[str, list[str]]:
        return {c.name: [c.pod_cidr] for c in self.clusters}

    def reflector_yaml(self, cl: Cluster, ip: Optional[str] = None, frr: Optional[Frr] = None) -> dict:
        """docs/bgp.md, "Route reflection": role route-reflector, its nodes on a listen range,
        the other clusters' reflectors over eBGP. ip, frr: which of the cluster's reflectors
        (default its first)."""
        ip, frr = ip or cl.reflector_ip, frr or cl.reflector
        others = [c for c in self.clusters if c is not cl]
        return {"bgp": {
            # Graceful restart on, vxfed-reflector's default (docs/federation.md): a reflector's
            # restart keeps its routes on its nodes and on the other reflectors (reflector_kill).
            # A view (bgp.view): no next-hop tracking, whose answers a restarted reflector's
            # End-of-RIB to its nodes raced (docs/faults.md, "A route reflector killed").
            "role": "route-reflector", "asn": cl.asn, "router_id": ip, "graceful_restart": True,
            "view": True,
            "clusters": {c.name: [c.pod_cidr] for c in others},
            "nodes": {"listen_range": cl.listen_range, "cidrs": [cl.pod_cidr], "bfd": True,
                      "keepalive": 1, "hold": 3},
            "peers": [{"address": other_ip, "remote_asn": c.asn, "cluster": c.name, "keepalive": 1, "hold": 3,
                       "connect_retry": 1, "bfd": True} for c in others for other_ip, _ in c.reflectors()],
            "frr": {"config_path": str(frr.dir / "frr.conf"), "vty_socket_dir": str(frr.dir)},
        }}

    def vxfedd_config(self, n: Node, cl: Cluster, build_dir: Optional[Path] = None) -> dict:
        """n's vxfedd config, for the release in build_dir (default: the one n runs). A previous
        release's vxfedd knows only the FPM feed: it gets no `feed` (VXFED_BGP_FEED=bmp sets it
        for this release's nodes), so a federation mid-roll is mixed, as in production."""
        bgp = n.bgp_config(
            peers=[{"address": ip, "remote_asn": cl.asn, "network": NETWORK, "bfd": True,
                    "keepalive": 1, "hold": 3, "connect_retry": 1} for ip, _ in cl.reflectors()],
            clusters=self.cluster_cidrs(), graceful_restart=False,
            fpm={"resync_settle_ms": 1000, "resync_min_ms": 2000})
        release = build_dir if build_dir is not None else self.node_build_dirs.get(n.short, self.build_dir)
        if release in set(self.node_build_dirs.values()) - {self.build_dir}:
            bgp.pop("feed", None)
        return n.vxfedd_config(
            networks=[{"name": NETWORK, "subnet": cl.pod_cidr}], bgp=bgp,
            federation={"endpoints": self.etcd.endpoints.split(","), "key_prefix": KEY_PREFIX,
                        "request_timeout_ms": 2000, "node_ttl_seconds": 10, "reconcile_interval_seconds": 5},
            vni={"pools": [{"name": "federation", "ranges": ["1000-1999"]}]})

    # ------------------------------------------------------------------ bring-up
    def start_reflector(self, cl: Cluster, ip: Optional[str] = None) -> None:
        """Renders and starts one of the cluster's reflectors (ip; default: every one)."""
        for rip, frr in cl.reflectors():
            if ip is not None and rip != ip:
                continue
            path = frr.dir.parent / "reflector.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self.reflector_yaml(cl, rip, frr), indent=1) + "\n")
            tool = str(binary("bgp/vxfed-reflector", self.build_dir))
            run([tool, "--config", str(path), "--check"])
            frr.write_conf(run([tool, "--config", str(path), "--print"]).stdout)
            frr.start()

    def up(self, timeout: float = 120, progress=None) -> None:
        """etcd, the reflectors, every node's FRR, dataplane and vxfedd; returns once every node
        routes every other node's block. progress(line): what it is doing (the demo prints it)."""
        say = progress or (lambda _line: None)
        say(f"etcd: starting {len(self.etcd.dirs)} members at {ETCD_IP}")
        self.etcd.start()
        for cl in self.clusters:
            say(f"{cl.name}: starting its route reflector (FRR, config from vxfed-reflector) at {cl.reflector_ip}, "
                f"AS {cl.asn}")
            self.start_reflector(cl)
        # The nodes are independent: their daemons start side by side (the first error is raised).
        side_by_side(lambda n: n.start_frr(), self.nodes.values())
        say(f"nodes: FRR (zebra with dplane_fpm_nl, bgpd, bfdd) started on {', '.join(self.nodes)}")
        side_by_side(lambda n: n.start_dataplane(timeout=60), self.nodes.values())
        say(f"nodes: vxfed-dataplane (af_packet uplink ul0, VTEP = the node's address) started on "
            f"{', '.join(self.nodes)}")
        for cl in self.clusters:
            for n in cl.nodes:
                n.start_vxfedd(self.vxfedd_config(n, cl), wait=True, timeout=60)
        for n in self.nodes.values():
            n.vxfedd.wait_ready(timeout)
        # Every bgpd of the bed has its `router bgp` instance by now (the reflectors' from
        # frr.conf, the nodes' from vxfedd's first apply): see wait_past_bgp_startup().
        self.bgp_started_at = time.time()
        say(f"nodes: vxfedd ready on {', '.join(self.nodes)} (network {NETWORK!r}: VNI and node blocks from etcd, "
            f"iBGP to the cluster's reflector); waiting for every node to route every other node's block")
        took = self.wait_converged(timeout)
        say(f"converged in {took:.1f} s: every node routes every other node's block to that node's VTEP")

    def wait_past_bgp_startup(self, progress=None) -> float:
        """Until FRR_STARTUP_S have passed since every bgpd of the bed got its instance; returns
        the seconds waited. FRR 8.4's bgpd says it has just restarted (the R bit of its
        graceful-restart capability) for 120 s after its instance is made, whatever the
        restart-time, and a restarting bgpd does not wait (select deferral) for the End-of-RIB of
        a peer that says so: a reflector restarted within two minutes of the bed's start would
        not behave as one among peers that have run for long (faults: reflector_kill)."""
        left = self.bgp_started_at + FRR_STARTUP_S - time.time()
        if left > 0:
            if progress:
                progress(f"waiting {left:.0f} s until every bgpd has run for {FRR_STARTUP_S:.0f} s (FRR's restart "
                         f"state bit)")
            time.sleep(left)
        return max(0.0, left)

    def check_alive(self, except_node: Optional[Node] = None) -> None:
        """Raises (naming the part) if a daemon of a node has died (except_node: one being killed)."""
        for n in self.nodes.values():
            if n is not except_node:
                n.check_alive()

    def block_of(self, n: Node, network: str = NETWORK) -> str:
        for net in n.vxfedctl("networks").get("networks", []):
            if net["spec"]["name"] == network:
                return net.get("node_block", "")
        raise KeyError(f"{n.short}: no network {network}")

    def blocks(self) -> dict[str, str]:
        return {s: self.block_of(n) for s, n in self.nodes.items()}

    def learned(self, n: Node) -> dict[str, list[str]]:
        """prefix -> VTEPs of the BGP routes n's dataplane holds."""
        out = {}
        for r in n.dataplane.dump().get("tables", {}).get("routes", []):
            out[r["prefix"]] = sorted(h["vtep"] for h in r.get("next_hops", []))
        return out

    def wait_converged(self, timeout: float, nodes: Optional[list[Node]] = None) -> float:
        """Until every node's dataplane routes every other node's block to that node's VTEP."""
        blocks = self.blocks()
        assert len(set(blocks.values())) == len(blocks) and all(blocks.values()), f"blocks not distinct: {blocks}"
        nodes = nodes or list(self.nodes.values())

        def converged() -> bool:
            for n in nodes:
                have = self.learned(n)
                for s, b in blocks.items():
                    if s != n.short and have.get(b) != [self.nodes[s].ip]:
                        return False
            return True
        return wait_until(converged, timeout, "every node to route every other node's block to it", self.check_alive)

    # ------------------------------------------------------------------ pods
    def cni_config(self, n: Node) -> dict:
        return node_cni_config(n)

    def add_pod(self, n: Node, name: str) -> Pod:
        pod = add_node_pod(self.topo, self.runtimes[n.short], n, name)
        self.pods.append(pod)
        return pod

    def delete_pod(self, pod: Pod) -> None:
        """CNI DEL, as the runtime runs it at the pod's end (its ADD's result as prevResult)."""
        self.runtimes[pod.node.short].delete(self.cni_config(pod.node), pod.container_id, pod.ns.path, "eth0")
        self.pods.remove(pod)
