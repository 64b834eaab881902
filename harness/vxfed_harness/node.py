"""A vxfed node: one network namespace with FRR, vxfed-dataplane and vxfedd, as on a real
node, everything under the Topology's workdir/<short>.

Nodes are independent: N of them in one Topology each get their own namespace, directories,
DPDK file prefix, sockets and FRR instance. `connect_underlay()` joins them: two with a veth,
more (or switch=True) through a bridge in a switch namespace. Observations go through the
real clients (vxfedctl, vxfed-dpctl, vtysh).

    with t.Topology("mytest") as topo:
        a = Node(topo, "a", "198.18.0.1", "10.244.0.0/16", asn=65001)
        b = Node(topo, "b", "198.18.0.2", "10.245.0.0/16", asn=65002)
        connect_underlay(topo, [a, b])
        for n in (a, b):
            n.start_frr(); n.start_dataplane()
        a.start_vxfedd(a.vxfedd_config(networks=[...], bgp=a.bgp_config(peers=[...], clusters={...})))
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Optional

from .dataplane import Dataplane, DataplaneLaunch
from .frr import Frr
from .proc import wait_until
from .topology import Namespace, Topology
from .vxfedd import Vxfedd, bgp_section, config

UNDERLAY_PREFIX_LEN = 24


def prepare_node_namespace(ns: Namespace, forwarding: bool) -> None:
    """`forwarding`: the kernel routes between pods and the overlay (a kernel VXLAN node);
    where vxfed-dataplane forwards the kernel must not. Strict reverse-path filtering off (pods'
    /32 addresses behind veths would trip it); IPv6 off, so that no router solicitations or ND
    wander over the underlay."""
    ns.sysctl(f"net.ipv4.ip_forward={int(forwarding)}", "net.ipv4.conf.all.rp_filter=0",
              "net.ipv4.conf.default.rp_filter=0", "net.ipv6.conf.all.disable_ipv6=1",
              "net.ipv6.conf.default.disable_ipv6=1")


class Node:
    def __init__(self, topo: Topology, short: str, ip: str, pod_cidr: str, *, asn: Optional[int] = None,
                 node_name: Optional[str] = None, cluster: Optional[str] = None, uplink: str = "ul0",
                 mtu: int = 9000, underlay_subnet: Optional[str] = "198.18.0.0/24", bfdd: bool = False,
                 queues: int = 1, lcores: Optional[str] = None, dataplane_extra: Iterable[str] = (),
                 build_dir: Optional[Path] = None):
        """ip: the node's underlay address = its VTEP = its BGP router id. node_name/cluster
        default to node-<short>/cluster-<short>. lcores, dataplane_extra: vxfed-dataplane's EAL
        lcore map and extra options (experiments)."""
        self.topo = topo
        self.short = short
        self.ip = ip
        self.pod_cidr = pod_cidr
        self.asn = asn
        self.node_name = node_name or f"node-{short}"
        self.cluster = cluster or f"cluster-{short}"
        self.uplink = uplink
        self.mtu = mtu
        self.ns = topo.netns(short)
        prepare_node_namespace(self.ns, forwarding=False)
        self.dir = topo.workdir / short
        for d in ("frr", "state", "bpf"):
            (self.dir / d).mkdir(parents=True, exist_ok=True)
        self.frr = Frr(self.ns, self.dir / "frr", bfdd=bfdd)
        self.dataplane = Dataplane(self.ns, DataplaneLaunch(
            file_prefix=f"vx{topo.tag[:6]}{topo.suffix}{short}", api_socket=self.dir / "dataplane.sock",
            vtep_ip=ip, uplink_iface=uplink, queues=queues, mtu=mtu, lcores=lcores,
            underlay_subnet=underlay_subnet, extra=list(dataplane_extra)), build_dir=build_dir)
        # Pins of the per-pod eBPF programs: our own directory, never the machine's.
        self.vxfedd = Vxfedd(self.ns, self.dir / "vxfedd.yaml", self.dir / "vxfedd.sock", build_dir=build_dir,
                             env={"VXFED_BPF_PIN_ROOT": str(self.dir / "bpf")})
        topo.on_close(f"node {short}", self.close)
        topo.on_failure(f"node {short}", self.dump)

    # -- FRR --
    def start_frr(self, only: str = "") -> float:
        return self.frr.start(only=only)

    def stop_frr(self, only: str = "", kill: bool = False) -> None:
        self.frr.stop(kill=kill, only=only)

    def vtysh(self, *commands: str) -> str:
        return self.frr.vtysh(*commands)

    # -- dataplane --
    def start_dataplane(self, timeout: float = 30) -> None:
        self.dataplane.start(timeout=timeout)

    def dataplane_route(self, prefix: str) -> Optional[dict]:
        return self.dataplane.route(prefix)

    # -- vxfedd --
    def vxfedd_config(self, networks: Iterable[dict] = (), bgp: Optional[dict] = None, **kw) -> dict:
        """This node's vxfedd config: node, cluster, daemon paths, its dataplane; kw as
        vxfedd.config() takes them (more sections, log_level ...)."""
        sections = {"bgp": bgp} if bgp is not None else {}
        return config(self.node_name, self.ip, self.cluster, [self.pod_cidr], self.dataplane.socket,
                      socket=self.vxfedd.socket, state_dir=self.dir / "state", uplink=self.uplink,
                      underlay_mtu=self.mtu, asn=self.asn, networks=networks, **sections, **kw)

    def bgp_config(self, peers: list[dict], clusters: dict[str, list[str]], status_interval_ms: int = 500,
                   frr: Optional[dict] = None, **options) -> dict:
        """The `bgp:` section for this node: its AS, router id = its address, its FRR
        instance (frr: more keys of `bgp.frr`)."""
        assert self.asn is not None, f"node {self.short} has no AS number"
        return bgp_section(self.asn, self.ip, peers, clusters,
                           self.frr.adapter_section(status_interval_ms, **(frr or {})), **options)

    def start_vxfedd(self, cfg: Optional[dict] = None, wait: bool = True, timeout: float = 30) -> None:
        """Starts vxfedd with cfg (or the config it was last started with)."""
        if cfg is not None:
            self.vxfedd.config = cfg
        self.vxfedd.start(wait=wait, timeout=timeout)

    def stop_vxfedd(self) -> None:
        self.vxfedd.stop()

    def vxfedctl(self, *args: str):
        """vxfedctl --json ARGS, parsed (RuntimeError on a non-zero exit)."""
        return self.vxfedd.ctl_json(*args)

    def bgp_route(self, prefix: str) -> Optional[dict]:
        return self.vxfedd.bgp_route(prefix)

    def vni_of(self, network: str) -> int:
        return self.vxfedd.vni_of(network)

    # -- the whole node --
    def check_alive(self) -> None:
        """Raises (naming the part, with its log) if a daemon started here has died."""
        self.dataplane.check_alive()
        self.vxfedd.check_alive()

    def wait_until(self, predicate: Callable[[], object], timeout: float, what: str) -> float:
        return wait_until(predicate, timeout, what, self.check_alive)

    def close(self) -> None:
        """vxfedd, then the dataplane, then FRR (Topology.close() calls it too)."""
        self.vxfedd.stop()
        self.dataplane.stop()
        self.frr.stop()

    def dump(self) -> None:
        """On failure (Topology runs it): what FRR thinks, and its logs."""
        if self.frr.started:
            self.frr.dump(self.short)


def check_all(nodes: Iterable[Node]) -> Callable[[], None]:
    """A check_alive for wait_until() over several nodes."""
    nodes = list(nodes)

    def check() -> None:
        for n in nodes:
            n.check_alive()
    return check


def connect_underlay(topo: Topology, nodes: list[Node], switch: bool = False,
                     prefix_len: int = UNDERLAY_PREFIX_LEN) -> Optional[Namespace]:
    """The underlay on each node's uplink interface, each with its address: a veth for two
    nodes; for more (or switch=True) a switch namespace "sw" whose ports are p<short>.
    Returns the switch namespace, or None."""
    if len(nodes) == 2 and not switch:
        a, b = nodes
        topo.wire(a.ns, [f"{a.ip}/{prefix_len}"], b.ns, [f"{b.ip}/{prefix_len}"], ifname=a.uplink,
                  b_ifname=b.uplink, mtu=min(a.mtu, b.mtu))
        return None
    return topo.switch("sw", [(f"p{n.short}", n.ns, n.uplink, [f"{n.ip}/{prefix_len}"]) for n in nodes],
                       mtu=min(n.mtu for n in nodes))
