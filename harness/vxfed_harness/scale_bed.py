"""Many node blocks through a route reflector into one vxfed node: the path of docs/bgp.md
("Route reflection") at the scale of a federation of two clusters of N nodes each, with the
other nodes played by one BGP speaker (ExaBGP) instead of N machines.

    underlay switch, 198.18.0.0/15 (every VTEP of both clusters is in it)
      spk  198.18.0.12  ExaBGP, iBGP client of rr: cluster-a's other nodes (N blocks, N VTEPs)
           198.18.0.20  ExaBGP, eBGP AS 65002: cluster-b's reflector (N blocks, N VTEPs)
      rr   198.18.0.10  FRR bgpd (+zebra), frr.conf from vxfed-reflector, AS 65001 (bgpd a view on
                        the BMP path, bgp.view)
      node 198.18.0.11  FRR (bgpd as the view `vxfed` with its BMP feed to vxfedd, zebra, or with
                        feed="fpm" bgpd + zebra's FPM stream), vxfed-dataplane, vxfedd; iBGP to
                        rr; one CNI pod
      gw   198.18.0.1   the underlay router: the dataplane sends every remote VTEP's frames
                        to its MAC; captures there show what the node forwarded

Why one speaker with two sessions: the node's reflector receives both kinds of routes it
receives in a federation (its own cluster's nodes over iBGP, reflected with next hops kept;
the other cluster's over eBGP from that cluster's reflector, next hops unchanged) and the node
learns them all over its one session, as docs/bgp.md describes.

Addresses: cluster-a's pods are in 10.64.0.0/10, cluster-b's in 10.128.0.0/10, one /26 block
per node (65,536 per cluster). Block i of a cluster has VTEP base+256+i (cluster-a 198.18/16,
cluster-b 198.19/16); the node owns cluster-a's block 0 (10.64.0.0/26). The node's kernel
holds the whole /15 on its uplink so that FRR's next hops are connected and zebra hands the
VTEPs themselves to FPM (a next hop resolved through a route would reach FPM as the router's
address); the dataplane sees only 198.18.0.0/24 as on-link and every other VTEP behind gw, as
a node of a federation this size would (no ARP for 130,000 VTEPs).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .env import binary
from .exabgp import ExaBgp, Session
from .federation_bed import Pod, add_node_pod, node_runtime
from .frr import Frr
from .node import Node, prepare_node_namespace
from .proc import run, wait_until
from .topology import Topology

NETWORK = "fed"
VNI = 1001
ASN_A, ASN_B = 65001, 65002
UNDERLAY = "198.18.0.0/15"
GW_IP = "198.18.0.1"
RR_IP = "198.18.0.10"
NODE_IP = "198.18.0.11"
SPK_A_IP = "198.18.0.12"       # in the reflector's listen range: a client, as a node is
SPK_B_IP = "198.18.0.20"       # outside it: cluster-b's reflector
LISTEN_RANGE = "198.18.0.0/28"
CIDR = {"cluster-a": "10.64.0.0/10", "cluster-b": "10.128.0.0/10"}
VTEP_BASE = {"cluster-a": "198.18.0.0", "cluster-b": "198.19.0.0"}
BLOCK_LEN = 26
MAX_BLOCKS = 1 << (BLOCK_LEN - 10)          # /26 blocks in a /10
NODE_BLOCK = "10.64.0.0/26"


def block(cluster: str, i: int) -> str:
    base = int(ipaddress.IPv4Address(CIDR[cluster].split("/")[0]))
    return f"{ipaddress.IPv4Address(base + (i << (32 - BLOCK_LEN)))}/{BLOCK_LEN}"


def vtep(cluster: str, i: int) -> str:
    return str(ipaddress.IPv4Address(int(ipaddress.IPv4Address(VTEP_BASE[cluster])) + 256 + i))


def routes_of(cluster: str, first: int, count: int, vteps: int = 0) -> list[tuple[str, str]]:
    """Blocks first..first+count-1 of a cluster, each with its node's VTEP, or with vteps > 0
    spread over that many VTEPs (a comparison: routes that share next hops share UPDATEs)."""
    return [(block(cluster, i), vtep(cluster, i % vteps if vteps else i)) for i in range(first, first + count)]


@dataclass
class Rss:
    rss_mb: float
    hwm_mb: float


def rss_of(pid: int) -> Rss:
    """VmRSS and VmHWM (peak) of a process, in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            fields[k] = int(v.split()[0]) / 1024
    return Rss(round(fields["VmRSS"], 1), round(fields["VmHWM"], 1))


def frr_pid(frr: Frr, daemon: str) -> int:
    return int((frr.dir / f"{daemon}.pid").read_text().split()[0])


class ScaleBed:
    def __init__(self, topo: Topology, per_cluster: int, vteps: int = 0, build_dir: Optional[Path] = None,
                 mtu: int = 9000, feed: str = "bmp"):
        assert 1 <= per_cluster < MAX_BLOCKS - 1, f"at most {MAX_BLOCKS - 2} blocks per cluster"
        assert feed in ("bmp", "fpm"), feed
        self.topo = topo
        self.feed = feed        # how the node's vxfedd learns routes (bgp.feed)
        self.per_cluster = per_cluster
        self.build_dir = build_dir
        # cluster-a: blocks 1..N (0 is the node's); cluster-b: blocks 0..N-1; the new block is
        # cluster-b's N (a node joining after the others).
        self.routes_a = routes_of("cluster-a", 1, per_cluster, vteps)
        self.routes_b = routes_of("cluster-b", 0, per_cluster, vteps)
        self.new_block = (block("cluster-b", per_cluster), vtep("cluster-b", per_cluster))
        self.node = Node(topo, "n1", NODE_IP, CIDR["cluster-a"], asn=ASN_A, node_name="node-a1", cluster="cluster-a",
                         mtu=mtu, underlay_subnet="198.18.0.0/24", build_dir=build_dir,
                         dataplane_extra=["--underlay-gateway", GW_IP])
        self.rr_ns = topo.netns("rr")
        prepare_node_namespace(self.rr_ns, forwarding=False)
        self.rr = Frr(self.rr_ns, topo.workdir / "rr" / "frr")
        self.spk_ns = topo.netns("spk")
        self.gw_ns = topo.netns("gw")
        for ns in (self.spk_ns, self.gw_ns):
            prepare_node_namespace(ns, forwarding=False)
        plen = UNDERLAY.split("/")[1]
        self.switch = topo.switch("sw", [
            ("pn1", self.node.ns, "ul0", [f"{NODE_IP}/{plen}"]),
            ("prr", self.rr_ns, "ul0", [f"{RR_IP}/{plen}"]),
            ("pspk", self.spk_ns, "ul0", [f"{SPK_A_IP}/{plen}", f"{SPK_B_IP}/{plen}"]),
            ("pgw", self.gw_ns, "ul0", [f"{GW_IP}/{plen}"]),
        ], mtu=mtu)
        self.speaker = ExaBgp(self.spk_ns, topo.workdir / "exabgp")
        self.session_a = self.speaker.session(Session(RR_IP, SPK_A_IP, ASN_A, ASN_A, self.routes_a))
        self.session_b = self.speaker.session(Session(RR_IP, SPK_B_IP, ASN_B, ASN_A, self.routes_b))
        self.runtime = node_runtime(self.node, build_dir)
        self.pod: Optional[Pod] = None
        self.runs = 0           # scale_run.run_once() numbers its captures with it
        topo.on_failure("reflector", lambda: self.rr.dump("reflector"))

    @property
    def feed_port(self) -> int:
        """Where the node's feed reaches vxfedd on loopback (the defaults of bgp.bmp.port and
        bgp.fpm.port)."""
        return 621 if self.feed == "bmp" else 620

    @property
    def total(self) -> int:
        return len(self.routes_a) + len(self.routes_b)

    # ------------------------------------------------------------------ configs
    def reflector_yaml(self) -> dict:
        """vxfed-reflector's input (docs/bgp.md, "Route reflection"), with limits for this many
        blocks: the speaker's client session carries a whole cluster's."""
        limit = 2 * MAX_BLOCKS
        return {"bgp": {
            "role": "route-reflector", "asn": ASN_A, "router_id": RR_IP, "graceful_restart": False,
            # On the BMP path the reflector is a view as well: no next-hop tracking anywhere.
            "view": self.feed == "bmp",
            "clusters": {"cluster-b": [CIDR["cluster-b"]]},
            "nodes": {"listen_range": LISTEN_RANGE, "cidrs": [CIDR["cluster-a"]], "max_prefix": limit},
            "peers": [{"address": SPK_B_IP, "remote_asn": ASN_B, "cluster": "cluster-b", "connect_retry": 1,
                       "max_prefix": limit}],
            "frr": {"config_path": str(self.rr.dir / "frr.conf"), "vty_socket_dir": str(self.rr.dir)},
        }}

    def vxfedd_config(self) -> dict:
        n = self.node
        bgp = n.bgp_config(peers=[{"address": RR_IP, "remote_asn": ASN_A, "network": NETWORK, "connect_retry": 1}],
                           clusters={c: [cidr] for c, cidr in CIDR.items()}, graceful_restart=False,
                           feed=self.feed)
        return n.vxfedd_config(networks=[{"name": NETWORK, "subnet": CIDR["cluster-a"], "vni": VNI,
                                          "block_prefix_len": BLOCK_LEN, "block": NODE_BLOCK}], bgp=bgp)

    # ------------------------------------------------------------------ bring-up
    def up(self, timeout: float = 90) -> None:
        """The reflector, the node (FRR, dataplane, vxfedd) and its pod; the speaker is not
        started (start_speaker())."""
        path = self.rr.dir.parent / "reflector.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.reflector_yaml(), indent=1) + "\n")
        tool = str(binary("bgp/vxfed-reflector", self.build_dir))
        self.rr.write_conf(run([tool, "--config", str(path), "--print"]).stdout)
        self.rr.start()
        self.node.start_frr()
        self.node.start_dataplane(timeout=60)
        self.node.start_vxfedd(self.vxfedd_config(), wait=True, timeout=60)
        self.node.vxfedd.wait_ready(timeout)
        self.node.wait_until(self.node_session_up, timeout, "the node's session to its reflector")
        self.pod = add_node_pod(self.topo, self.runtime, self.node, "p0")

    def node_session_up(self) -> bool:
        return any(p.get("state") == "Established" for p in self.node.vxfedctl("peers").get("peers", []))

    def start_speaker(self) -> None:
        self.speaker.start()

    def stop_speaker(self) -> None:
        self.speaker.stop()

    def announce_new_block(self) -> None:
        self.speaker.announce(self.session_b, *self.new_block)

    # ------------------------------------------------------------------ observations
    def dataplane_routes(self) -> int:
        return int(self.node.dataplane.status().get("routes", 0))

    def check_alive(self) -> None:
        self.node.check_alive()
        self.speaker.check_alive()

    def memory(self) -> dict[str, Rss]:
        """RSS of every daemon on the path: the node's FRR, vxfedd and dataplane, the reflector."""
        return {"node_bgpd": rss_of(frr_pid(self.node.frr, "bgpd")),
                "node_zebra": rss_of(frr_pid(self.node.frr, "zebra")),
                "vxfedd": rss_of(self.node.vxfedd.proc.pid),
                "dataplane": rss_of(self.node.dataplane.proc.pid),
                "reflector_bgpd": rss_of(frr_pid(self.rr, "bgpd")),
                "reflector_zebra": rss_of(frr_pid(self.rr, "zebra"))}

    def reflector_received(self) -> int:
        """Prefixes the reflector holds from the speaker's two sessions."""
        out = json.loads(self.rr.vtysh("show bgp ipv4 unicast summary json") or "{}")
        peers = out.get("peers", {})
        return sum(int(peers.get(ip, {}).get("pfxRcd", 0)) for ip in (SPK_A_IP, SPK_B_IP))

    def wait_dataplane(self, count: int, timeout: float, what: str) -> float:
        return wait_until(lambda: self.dataplane_routes() == count, timeout, what, self.check_alive)
