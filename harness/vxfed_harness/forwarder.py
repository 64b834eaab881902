"""The forwarder's interoperability topology: the dataplane integration tests
(tests/integration/dataplane) and the forwarder demo (scripts/forwarder-demo.sh,
forwarder_demo.py) run on it.

  podA netns                 nodeA netns (vxfed-dataplane)          nodeB netns (Linux kernel)        podB netns
  eth0 10.244.1.2/16 --veth-- hA (a pod socket port)
                             up0 (uplink sockets)   ====veth MTU 9000==== up1 198.18.0.2/24
                             VTEP 198.18.0.1                            vxlan0 (VNI 100, VTEP 198.18.0.2)
                                                                       hB 10.245.0.1/16 --veth-- eth0 10.245.1.2/16

Pod A reaches pod B through vxfed-dataplane (encap) and the kernel's vxlan device (decap), and
back. With `router_mtu`, the underlay is routed instead: a router namespace between the nodes
(r0 198.18.0.254/24 toward node A, r1 198.18.2.254/24 toward node B, that link's MTU
router_mtu), node B's VTEP 198.18.2.2, the dataplane sending through --underlay-gateway. Both pods have MTU 8950 (underlay 9000 - 50). Pod A's gateway 10.244.0.1 is answered by the
dataplane with GATEWAY_MAC; nodeB's vxlan0 carries that MAC so the inner frames the dataplane
sends (dst MAC = the pod's gateway) are for it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Optional

from .dataplane import Dataplane, DataplaneLaunch
from .env import require_binary, require_program
from .proc import wait_for
from .topology import Topology

VNI = 100
VTEP_A = "198.18.0.1"
VTEP_B = "198.18.0.2"
POD_A = "10.244.1.2"
POD_A_MAC = "02:00:0a:f4:01:02"
POD_B = "10.245.1.2"
GATEWAY_A = "10.244.0.1"
GATEWAY_B = "10.245.0.1"
GATEWAY_MAC = "02:00:00:00:01:01"
UNDERLAY_MTU = 9000
POD_MTU = UNDERLAY_MTU - 50


ROUTER_A_SIDE = "198.18.0.254"
ROUTER_B_SIDE = "198.18.2.254"
VTEP_B_ROUTED = "198.18.2.2"


def tables(generation: int = 1, extra_routes: Optional[list] = None, vtep_b: str = VTEP_B) -> dict:
    routes = [{"vni": VNI, "prefix": "10.245.0.0/16", "next_hops": [{"vtep": vtep_b}]}]
    routes += extra_routes or []
    return {
        "generation": generation,
        "tables": {
            "networks": [{"vni": VNI, "gateway_ip": GATEWAY_A, "gateway_mac": GATEWAY_MAC}],
            "endpoints": [{"id": "podA/eth0", "vni": VNI, "ip": POD_A, "mac": POD_A_MAC, "iface": "hA"}],
            "routes": routes,
        },
    }


class ForwarderTopology:
    def __init__(self, topo: Topology, queues: int = 1, build_dir: Optional[Path] = None,
                 mtu: int = UNDERLAY_MTU, peer_partial_checksums: bool = False,
                 router_mtu: Optional[int] = None):
        """mtu: the underlay's (pods get mtu - 50). peer_partial_checksums: node B's kernel
        leaves the inner checksums of the frames it sends to the dataplane pending (its uplink
        keeps TX checksum offload; segmentation stays off), as a peer dataplane does.
        router_mtu: a routed underlay whose link toward node B has this MTU (see above)."""
        self.topo = topo
        self.router_mtu = router_mtu
        self.vtep_b = VTEP_B_ROUTED if router_mtu else VTEP_B
        self.queues = queues
        self.mtu = mtu
        self.pod_mtu = mtu - 50
        self.peer_partial_checksums = peer_partial_checksums
        self.build_dir = build_dir
        require_binary("dataplane/vxfed-dataplane", build_dir)
        require_binary("dataplane/runtime/vxfed-dpctl", build_dir)
        for prog in ("ip", "ethtool", "ping", "iperf3"):
            require_program(prog)
        self.socket = str(topo.workdir / "dp.sock")
        self.dataplane: Optional[Dataplane] = None

    def build(self) -> None:
        topo = self.topo
        self.pod_a = topo.netns("podA")
        self.node_a = topo.netns("nodeA")
        self.node_b = topo.netns("nodeB")
        self.pod_b = topo.netns("podB")
        if self.router_mtu:
            self.router = topo.netns("router")
            topo.veth(self.node_a, "up0", self.router, "r0", mtu=self.mtu)
            # Only the router's own side is small, so node B's vxlan device keeps the pod MTU
            # (Linux caps a vxlan device at its lower device's MTU - 50).
            topo.veth(self.router, "r1", self.node_b, "up1", mtu=self.mtu)
            r = self.router
            r.run(f"ip link set r1 mtu {self.router_mtu}")
            r.run("sysctl -qw net.ipv4.ip_forward=1")
            r.run(f"ip addr add {ROUTER_A_SIDE}/24 dev r0")
            r.run(f"ip addr add {ROUTER_B_SIDE}/24 dev r1")
        else:
            topo.veth(self.node_a, "up0", self.node_b, "up1", mtu=self.mtu)
        topo.veth(self.pod_a, "eth0", self.node_a, "hA", mtu=self.mtu)
        topo.veth(self.pod_b, "eth0", self.node_b, "hB", mtu=self.mtu)

        # Pod A: ptp-style routing through its gateway, offloads on as the kernel sets them
        # (the dataplane takes its GSO super-packets and pending checksums with vnet headers).
        a = self.pod_a
        a.run(f"ip link set eth0 mtu {self.pod_mtu} address {POD_A_MAC}")
        a.run(f"ip addr add {POD_A}/16 dev eth0")
        a.run("ip route del 10.244.0.0/16 dev eth0")
        a.run(f"ip route add {GATEWAY_A}/32 dev eth0 scope link")
        a.run(f"ip route add default via {GATEWAY_A} dev eth0")
        self.node_a.run("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")

        # Node B: a plain Linux VXLAN endpoint routing for pod B.
        b = self.node_b
        b.run("sysctl -qw net.ipv4.ip_forward=1")
        b.run(f"ip addr add {self.vtep_b}/24 dev up1")
        if self.router_mtu:
            b.run(f"ip route add 198.18.0.0/24 via {ROUTER_B_SIDE}")
        # Underlay frames leave as segments, with finished inner checksums unless
        # peer_partial_checksums (then the dataplane carries the pending ones to the pod).
        b.run("ethtool -K up1 tso off gso off" + ("" if self.peer_partial_checksums else " tx off"))
        b.run(f"ip link add vxlan0 type vxlan id {VNI} local {self.vtep_b} dstport 4789 dev up1 nolearning")
        b.run(f"ip link set vxlan0 address {GATEWAY_MAC} mtu {self.pod_mtu} up")
        b.run(f"bridge fdb append 00:00:00:00:00:00 dev vxlan0 dst {VTEP_A}")
        b.run(f"ip route add 10.244.0.0/16 via {GATEWAY_A} dev vxlan0 onlink")
        b.run(f"ip neigh replace {GATEWAY_A} lladdr {GATEWAY_MAC} dev vxlan0 nud permanent")
        b.run(f"ip addr add {GATEWAY_B}/16 dev hB")
        b.run(f"ip link set hB mtu {self.pod_mtu}")
        p = self.pod_b
        p.run(f"ip link set eth0 mtu {self.pod_mtu}")
        p.run(f"ip addr add {POD_B}/16 dev eth0")
        p.run(f"ip route add default via {GATEWAY_B}")

    def start(self, tables_file: Optional[Path] = None, extra: Optional[list[str]] = None) -> subprocess.Popen:
        """vxfed-dataplane in node A: af_packet uplink on up0, VTEP A, `queues` workers."""
        launch = DataplaneLaunch(file_prefix=f"vxdp{self.topo.suffix}{self.topo.tag[:4]}",
                                 api_socket=Path(self.socket), vtep_ip=VTEP_A, uplink_iface="up0",
                                 queues=self.queues, mtu=self.mtu, tables_file=tables_file,
                                 extra=list(extra or []) + (
                                     ["--underlay-gateway", ROUTER_A_SIDE, "--underlay-subnet", "198.18.0.0/24"]
                                     if self.router_mtu else []))
        self.dataplane = Dataplane(self.node_a, launch, build_dir=self.build_dir)
        self.dataplane.start()
        return self.dataplane.proc

    def up(self) -> None:
        """The common start: namespaces and links, the dataplane, tables generation 1, and pod A
        reaching pod B through it."""
        self.build()
        self.start()
        self.send_snapshot(tables(generation=1, vtep_b=self.vtep_b))
        self.wait_reachable()

    @property
    def proc(self) -> subprocess.Popen:
        return self.dataplane.proc

    def dpctl_raw(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.dataplane.dpctl(*args, check=check)

    def call(self, *args: str) -> dict:
        return self.dataplane.call(*args)

    def send_snapshot(self, snapshot: dict, check: bool = True) -> subprocess.CompletedProcess:
        return self.dataplane.send_snapshot(snapshot, check=check)

    def counters(self) -> dict:
        return self.dataplane.counters()

    def status(self) -> dict:
        return self.dataplane.status()

    def wait_reachable(self, timeout: float = 20) -> None:
        wait_for(lambda: self.pod_a.ping(POD_B, count=1, timeout=5).returncode == 0, timeout,
                 f"{POD_A} -> {POD_B} through the dataplane")

    def stop(self, timeout: float = 15) -> tuple[int, str]:
        rc = self.dataplane.stop(timeout=timeout)
        return rc, self.dataplane.log()


def drop_map(counters: dict) -> dict:
    return {d["reason"]: int(d.get("packets", 0)) for d in counters.get("drops", [])}


def port_sum(counters: dict, name: str, field: str) -> int:
    return sum(int(p.get(field, 0)) for p in counters.get("ports", []) if p["name"] == name)


def vni_counters(counters: dict, vni: int = VNI) -> dict:
    for v in counters.get("vnis", []):
        if int(v["vni"]) == vni:
            return {k: int(x) for k, x in v.items()}
    return {}


# A second local pod on node A (the global services' test: a local backend beside pod B's remote
# one): pod C, 10.244.1.3, on hC, routed like pod A through its gateway.
POD_C = "10.244.1.3"
POD_C_MAC = "02:00:0a:f4:01:03"


def add_pod_c(f: ForwarderTopology):
    """Pod C's namespace and link into node A (call after f.build()); its endpoint entry is
    pod_c_endpoint()."""
    pod_c = f.topo.netns("podC")
    f.topo.veth(pod_c, "eth0", f.node_a, "hC", mtu=f.mtu)
    pod_c.run(f"ip link set eth0 mtu {f.pod_mtu} address {POD_C_MAC}")
    pod_c.run(f"ip addr add {POD_C}/16 dev eth0")
    pod_c.run("ip route del 10.244.0.0/16 dev eth0")
    pod_c.run(f"ip route add {GATEWAY_A}/32 dev eth0 scope link")
    pod_c.run(f"ip route add default via {GATEWAY_A} dev eth0")
    return pod_c


def pod_c_endpoint() -> dict:
    return {"id": "podC/eth0", "vni": VNI, "ip": POD_C, "mac": POD_C_MAC, "iface": "hC"}


def send_delta(f: ForwarderTopology, delta: dict) -> subprocess.CompletedProcess:
    """A Delta (protobuf JSON) through vxfed-dpctl; returns once the dataplane acknowledged it."""
    import json
    import time
    path = f.topo.workdir / f"delta-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(delta))
    return f.dpctl_raw("delta", str(path))
