"""Many node blocks through a route reflector into one vxfed node: the path of docs/bgp.md
("Route reflection") at the scale of a federation of two clusters of N nodes each, with the
other nodes played by one BGP speaker instead of N machines: vxfed-scale-speaker
(perf/federation/speaker/, native_speaker.py; speaker="native", the default) or ExaBGP
(exabgp.py; speaker="exabgp"), the same sessions, routes and UPDATEs either way. ExaBGP
(Python) spends longer sending 2 x 65,000 UPDATEs than FRR and vxfed take to pass them on, on
the same 2 cores (docs/federation.md, "Scale"); the native one writes them in large writes.

    underlay switch, 198.18.0.0/15 (every VTEP of both clusters is in it)
      spk  198.18.0.12  the speaker, iBGP client of rr: cluster-a's other nodes (N blocks, N VTEPs)
           198.18.0.20  the speaker, eBGP AS 65002: cluster-b's reflector (N blocks, N VTEPs)
      rr   198.18.0.10  FRR bgpd (+zebra), frr.conf from vxfed-reflector, AS 65001 (bgpd a view on
                        the BMP path, bgp.view)
      rr2  198.18.0.9   with reflectors=2: cluster-a's second reflector, rendered the same way
                        (its own router id, hence its own cluster id; the two do not peer),
                        as deploy/vxfed-reflector.yaml and federation_bed.py run two
      node 198.18.0.11  FRR (bgpd as the view `vxfed` with its BMP feed to vxfedd, zebra, or with
                        feed="fpm" bgpd + zebra's FPM stream), vxfed-dataplane, vxfedd; iBGP to
                        rr (and rr2); one CNI pod
      gw   198.18.0.1   the underlay router: the dataplane sends every remote VTEP's frames
                        to its MAC; captures there show what the node forwarded

Why one speaker with two sessions: the node's reflector receives both kinds of routes it
receives in a federation (its own cluster's nodes over iBGP, reflected with next hops kept;
the other cluster's over eBGP from that cluster's reflector, next hops unchanged) and the node
learns them all over its one session, as docs/bgp.md describes.

With reflectors=2 every node of both clusters sends its block to both of cluster-a's
reflectors, and the node peers with both (as deploy/vxfed-daemonset.yaml's `bgp.peers` lists
its cluster's two reflectors): the node's bgpd, with no Loc-RIB monitoring in FRR 8.4's BMP, sends
vxfedd every route once per reflector. The speaker then has the same two sessions to rr2 too,
by default in a speaker process of its own (speakers=2: the reflectors get their copies in
parallel, as from real nodes; speakers=1 puts all four sessions in one process, which
interleaves them: measured at 130,000, the first copy of the last block then arrives with the
second, docs/federation.md "Two reflectors per cluster").

Addresses: cluster-a's pods are in 10.64.0.0/10, cluster-b's in 10.128.0.0/10, one /26 block
per node (65,536 per cluster). Block i of a cluster has VTEP base+256+i (cluster-a 198.18/16,
cluster-b 198.19/16); the node owns cluster-a's block 0 (10.64.0.0/26). The node's kernel
holds the whole /15 on its uplink so that FRR's next hops are connected and zebra hands the
VTEPs themselves to FPM (a next hop resolved through a route would reach FPM as the router's
address); the dataplane sees only 198.18.0.0/24 as on-link and every other VTEP behind gw, as
a node of a federation this size would (no ARP for 130,000 VTEPs).
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .env import binary
from .exabgp import ExaBgp, Session
from .native_speaker import NativeSpeaker
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
RR2_IP = "198.18.0.9"          # cluster-a's second reflector (deploy/vxfed-reflector.yaml's .9)
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
                 mtu: int = 9000, feed: str = "bmp", reflectors: int = 1, speakers: Optional[int] = None,
                 speaker: str = "native"):
        assert 1 <= per_cluster < MAX_BLOCKS - 1, f"at most {MAX_BLOCKS - 2} blocks per cluster"
        assert feed in ("bmp", "fpm"), feed
        assert reflectors in (1, 2), reflectors
        assert speaker in ("native", "exabgp"), speaker
        self.speaker_kind = speaker
        speakers = reflectors if speakers is None else speakers
        assert 1 <= speakers <= reflectors, speakers
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
        # (address, namespace, FRR) of every reflector of cluster-a, rr first.
        self.reflectors = [(RR_IP, self.rr_ns, self.rr)]
        if reflectors == 2:
            ns2 = topo.netns("rr2")
            prepare_node_namespace(ns2, forwarding=False)
            self.reflectors.append((RR2_IP, ns2, Frr(ns2, topo.workdir / "rr2" / "frr")))
        self.spk_ns = topo.netns("spk")
        self.gw_ns = topo.netns("gw")
        for ns in (self.spk_ns, self.gw_ns):
            prepare_node_namespace(ns, forwarding=False)
        plen = UNDERLAY.split("/")[1]
        self.switch = topo.switch("sw", [
            ("pn1", self.node.ns, "ul0", [f"{NODE_IP}/{plen}"]),
            *[("prr" if i == 0 else f"prr{i + 1}", ns, "ul0", [f"{ip}/{plen}"])
              for i, (ip, ns, _) in enumerate(self.reflectors)],
            ("pspk", self.spk_ns, "ul0", [f"{SPK_A_IP}/{plen}", f"{SPK_B_IP}/{plen}"]),
            ("pgw", self.gw_ns, "ul0", [f"{GW_IP}/{plen}"]),
        ], mtu=mtu)
        # One speaker process each; reflector i's two sessions go to speaker i % speakers.
        def make(i: int):
            name = f"{speaker}{'' if i == 0 else i + 1}"
            if speaker == "native":
                return NativeSpeaker(self.spk_ns, topo.workdir / name, build_dir)
            return ExaBgp(self.spk_ns, topo.workdir / name)
        self.speakers = [make(i) for i in range(speakers)]
        self.new_block_sessions: list[tuple[ExaBgp | NativeSpeaker, Session]] = []
        for i, (ip, _, _) in enumerate(self.reflectors):
            spk = self.speakers[i % speakers]
            spk.session(Session(ip, SPK_A_IP, ASN_A, ASN_A, self.routes_a))
            self.new_block_sessions.append((spk, spk.session(Session(ip, SPK_B_IP, ASN_B, ASN_A, self.routes_b))))
        self.speaker = self.speakers[0]
        self.runtime = node_runtime(self.node, build_dir)
        self.pod: Optional[Pod] = None
        self.runs = 0           # scale_run.run_once() numbers its captures with it
        for ip, _, frr in self.reflectors:
            topo.on_failure(f"reflector {ip}", lambda frr=frr, ip=ip: frr.dump(f"reflector {ip}"))

    @property
    def feed_port(self) -> int:
        """Where the node's feed reaches vxfedd on loopback (the defaults of bgp.bmp.port and
        bgp.fpm.port)."""
        return 621 if self.feed == "bmp" else 620

    @property
    def total(self) -> int:
        return len(self.routes_a) + len(self.routes_b)

    # ------------------------------------------------------------------ configs
    def reflector_yaml(self, ip: str = RR_IP, frr: Optional[Frr] = None) -> dict:
        """vxfed-reflector's input (docs/bgp.md, "Route reflection") for the reflector at ip, with
        limits for this many blocks: the speaker's client session carries a whole cluster's. A
        second reflector differs only in its address and router id (deploy/vxfed-reflector.yaml)."""
        frr = frr or self.rr
        limit = 2 * MAX_BLOCKS
        return {"bgp": {
            "role": "route-reflector", "asn": ASN_A, "router_id": ip, "graceful_restart": False,
            # On the BMP path the reflector is a view as well: no next-hop tracking anywhere.
            "view": self.feed == "bmp",
            "clusters": {"cluster-b": [CIDR["cluster-b"]]},
            "nodes": {"listen_range": LISTEN_RANGE, "cidrs": [CIDR["cluster-a"]], "max_prefix": limit},
            "peers": [{"address": SPK_B_IP, "remote_asn": ASN_B, "cluster": "cluster-b", "connect_retry": 1,
                       "max_prefix": limit}],
            "frr": {"config_path": str(frr.dir / "frr.conf"), "vty_socket_dir": str(frr.dir)},
        }}

    def vxfedd_config(self) -> dict:
        n = self.node
        bgp = n.bgp_config(peers=[{"address": ip, "remote_asn": ASN_A, "network": NETWORK, "connect_retry": 1}
                                  for ip, _, _ in self.reflectors],
                           clusters={c: [cidr] for c, cidr in CIDR.items()}, graceful_restart=False,
                           feed=self.feed)
        return n.vxfedd_config(networks=[{"name": NETWORK, "subnet": CIDR["cluster-a"], "vni": VNI,
                                          "block_prefix_len": BLOCK_LEN, "block": NODE_BLOCK}], bgp=bgp)

    # ------------------------------------------------------------------ bring-up
    def up(self, timeout: float = 90) -> None:
        """The reflectors, the node (FRR, dataplane, vxfedd) and its pod; the speaker is not
        started (start_speaker())."""
        tool = str(binary("bgp/vxfed-reflector", self.build_dir))
        for ip, _, frr in self.reflectors:
            path = frr.dir.parent / "reflector.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self.reflector_yaml(ip, frr), indent=1) + "\n")
            frr.write_conf(run([tool, "--config", str(path), "--print"]).stdout)
            frr.start()
        self.node.start_frr()
        self.node.start_dataplane(timeout=60)
        self.node.start_vxfedd(self.vxfedd_config(), wait=True, timeout=60)
        self.node.vxfedd.wait_ready(timeout)
        self.node.wait_until(self.node_sessions_up, timeout, "the node's sessions to its reflectors")
        self.pod = add_node_pod(self.topo, self.runtime, self.node, "p0")

    def node_sessions_up(self) -> bool:
        up = {p.get("address") for p in self.node.vxfedctl("peers").get("peers", []) if p.get("state") == "Established"}
        return all(ip in up for ip, _, _ in self.reflectors)

    def start_speaker(self) -> None:
        """Every speaker process at once: ExaBGP reads its whole route list before it connects
        (ExaBGP: seconds at 130,000; the native speaker its JSON in ~0.3 s), and one started after the other would reach its reflector only
        when the first had sent everything, the node then full from one reflector alone."""
        if len(self.speakers) == 1:
            self.speaker.start()
            return
        with concurrent.futures.ThreadPoolExecutor(len(self.speakers)) as pool:
            for f in [pool.submit(spk.start) for spk in self.speakers]:
                f.result()

    def stop_speaker(self) -> None:
        for spk in self.speakers:
            spk.stop()

    def announce_new_block(self) -> None:
        """To every reflector (cluster-b's reflector sends it to both of cluster-a's)."""
        for spk, session in self.new_block_sessions:
            spk.announce(session, *self.new_block)

    # ------------------------------------------------------------------ observations
    def dataplane_routes(self) -> int:
        return int(self.node.dataplane.status().get("routes", 0))

    def check_alive(self) -> None:
        self.node.check_alive()
        for spk in self.speakers:
            spk.check_alive()

    def memory(self) -> dict[str, Rss]:
        """RSS of every daemon on the path: the node's FRR, vxfedd and dataplane, the reflectors
        (the second one's keys reflector2_*)."""
        out = {"node_bgpd": rss_of(frr_pid(self.node.frr, "bgpd")),
               "node_zebra": rss_of(frr_pid(self.node.frr, "zebra")),
               "vxfedd": rss_of(self.node.vxfedd.proc.pid),
               "dataplane": rss_of(self.node.dataplane.proc.pid)}
        for i, (_, _, frr) in enumerate(self.reflectors):
            name = "reflector" if i == 0 else f"reflector{i + 1}"
            out[f"{name}_bgpd"] = rss_of(frr_pid(frr, "bgpd"))
            out[f"{name}_zebra"] = rss_of(frr_pid(frr, "zebra"))
        return out

    def reflector_received(self) -> int:
        """Prefixes the reflectors hold from the speaker's sessions, all reflectors together."""
        total = 0
        for _, _, frr in self.reflectors:
            out = json.loads(frr.vtysh("show bgp ipv4 unicast summary json") or "{}")
            peers = out.get("peers", {})
            total += sum(int(peers.get(ip, {}).get("pfxRcd", 0)) for ip in (SPK_A_IP, SPK_B_IP))
        return total

    def node_received(self) -> list[int]:
        """Prefixes the node's bgpd holds from each of its reflectors (its pfxRcd)."""
        out = json.loads(self.node.frr.vtysh("show bgp ipv4 unicast summary json") or "{}")
        peers = out.get("peers", {})
        return [int(peers.get(ip, {}).get("pfxRcd", 0)) for ip, _, _ in self.reflectors]

    def wait_dataplane(self, count: int, timeout: float, what: str) -> float:
        return wait_until(lambda: self.dataplane_routes() == count, timeout, what, self.check_alive)
