"""What test_bgp_vxfedd and test_bgp_bfd share on top of the harness's Node (FRR +
vxfed-dataplane + vxfedd in one namespace, vxfed_harness/node.py): the `bgp:` config of a
node peering with one other node over eBGP in the network "fed", and the checks of a route it
learned. Observations go through the real clients (vxfedctl, vxfed-dpctl, vtysh).
"""
from __future__ import annotations

import json

import vxfed_harness as t
from vxfed_harness.frr import require_frr
from vxfed_harness.node import Node, check_all

NETWORK = "fed"
MTU = 9000


def vxfedd_config(node: Node, peer: Node, peer_options: dict, network_in_yaml: bool = True) -> dict:
    """peer_options: the `bgp.peers[0]` keys besides address/ASN/cluster/network (timers,
    bfd, ...). network_in_yaml: False leaves the network out of the config (the test adds it
    with add_network())."""
    bgp = node.bgp_config(
        peers=[{"address": peer.ip, "remote_asn": peer.asn, "cluster": peer.cluster, "network": NETWORK,
                **peer_options}],
        clusters={peer.cluster: [peer.pod_cidr]},
        # Off so that a stopped peer's routes are withdrawn at once instead of being kept
        # as stale for restart_time (bgp_graceful_restart tests that behaviour).
        graceful_restart=False,
        fpm={"resync_settle_ms": 1000, "resync_min_ms": 2000})
    networks = [{"name": NETWORK, "subnet": node.pod_cidr}] if network_in_yaml else []
    return node.vxfedd_config(networks=networks, bgp=bgp)


def add_network(node: Node) -> None:
    """The network at run time, as an operator would: vxfedctl add-network."""
    t.wait_path(node.vxfedd.socket, node.vxfedd.proc, f"vxfedd on {node.short}", 30, node.vxfedd.log)
    node.vxfedctl("add-network", NETWORK, "--subnet", node.pod_cidr)


def remove_network(node: Node) -> None:
    node.vxfedctl("remove-network", NETWORK)


def frr_has_route(node: Node, prefix: str) -> bool:
    """Whether FRR holds a best path to `prefix`: bgpd's RIB (its view's, on the BMP feed,
    where zebra has nothing), the table both feeds carry to vxfedd."""
    doc = json.loads(node.vtysh(f"show bgp ipv4 unicast {prefix} json") or "{}")
    return any(p.get("bestpath", {}).get("overall") for p in doc.get("paths", []))


def wait_until(pred, timeout: float, what: str, nodes) -> float:
    """Polls pred (a node's process dying fails at once); returns the seconds it took."""
    return t.wait_until(pred, timeout, what, check_all(nodes))


def require() -> None:
    require_frr()
    for b in ("dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl", "control/vxfedd", "control/vxfedctl"):
        t.require_binary(b)


def check_route(node: Node, peer: Node, vni: int) -> dict:
    r = node.bgp_route(peer.pod_cidr)
    assert r is not None, f"{node.short}: no BGP route to {peer.pod_cidr}"
    assert r["vteps"] == [peer.ip], f"{node.short}: {peer.pod_cidr} must go to {peer.short}'s VTEP {peer.ip}: {r}"
    assert int(r["vni"]) == vni, f"{node.short}: {peer.pod_cidr} must be in VNI {vni}: {r}"
    assert r["network"] == NETWORK and r["peer"] == peer.ip, r
    d = node.dataplane_route(peer.pod_cidr)
    assert d is not None, f"{node.short}: {peer.pod_cidr} is not in the dataplane's tables"
    assert int(d["vni"]) == vni and [h["vtep"] for h in d["next_hops"]] == [peer.ip], \
        f"{node.short}: dataplane route {d}"
    return r
