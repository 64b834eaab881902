#!/usr/bin/env python3
"""A node whose block of a network is full gets another one from the federation store, and
gives it back once it has stayed empty (issue 37, item 9: the 254th pod of a /24 used to get
host-local's "no IP addresses available").

One node (the real vxfedd and dataplane, the vxfed plugin and host-local without ranges, so
vxfed fills in the node's blocks) on a one-member etcd in the node's namespace. Network `fed`
is 10.244.0.0/27 cut into /29 blocks, so the test needs a dozen pods, not 254; another node
(`node-z`, written with etcdctl) owns two of the four blocks. Asserted:
  - the node's first block 10.244.0.0/29 holds 5 pods (its gateway is .1); the 6th ADD finds
    it full, vxfedd claims 10.244.0.8/29 (the store names the node as its owner,
    `vxfedctl networks` lists both blocks) and the ADD succeeds in it;
  - pods of both blocks are in the dataplane and reach each other (ping);
  - with the subnet's last free block taken, the next ADD fails with code 106 naming the
    subnet, and leaves no address held;
  - once the second block's pods are gone, the block is released within the grace period
    (2 s) plus a reconcile or two: gone from the store and from the node's blocks; the first
    block stays.
"""

from __future__ import annotations

import json
import time

import vxfed_harness as tl
from vxfed_harness.cni_bed import REFERENCE_PLUGINS, RealNodeCni
from vxfed_harness.cni_runtime import CniError
from vxfed_harness.etcd_cluster import EtcdCluster
from vxfed_harness.node import Node

NETWORK = "fed"
PREFIX = "/vxfed"
SUBNET = "10.244.0.0/27"
GRACE_S = 2


def main() -> None:
    tl.require_root()
    for b in ("control/vxfedd", "control/vxfedctl", "dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl",
              "cni/vxfed"):
        tl.require_binary(b)
    if not (REFERENCE_PLUGINS / "host-local").exists():
        tl.skip("containernetworking-plugins is not installed")
    with tl.Topology("fedblk") as topo:
        n = Node(topo, "node", "198.18.0.1", SUBNET, node_name="node-a", cluster="cluster-a")
        peer = topo.netns("ulpeer")
        topo.wire(n.ns, ["198.18.0.1/24"], peer, ["198.18.0.2/24"], ifname="ul0", b_ifname="ul1")
        etcd = EtcdCluster(topo, members=1, ns=n.ns)
        etcd.start()
        # Another node holds the two upper blocks: the node has 10.244.0.0/29 and 10.244.0.8/29 to use.
        for block in ("10.244.0.16_29", "10.244.0.24_29"):
            etcd.ctl("put", f"{PREFIX}/v1/blocks/{NETWORK}/{block}", "node-z")
        n.start_dataplane(timeout=60)
        n.start_vxfedd(n.vxfedd_config(
            networks=[{"name": NETWORK, "subnet": SUBNET, "gateway": "10.244.0.1", "block_prefix_len": 29}],
            federation={"endpoints": [etcd.endpoint(0)], "key_prefix": PREFIX, "reconcile_interval_seconds": 1,
                        "empty_block_release_seconds": GRACE_S},
            vni={"pools": [{"name": "federation", "ranges": ["1000-1999"]}]}))
        cni = RealNodeCni(topo, n, NETWORK, SUBNET, "10.244.0.1", "10.244.0.2", "10.244.0.6")
        rt, conf = cni.runtime, cni.conf
        del conf["ipam"]["ranges"]  # vxfed fills in this node's blocks
        cni.wait_ready()

        def blocks() -> list[str]:
            nets = {x["spec"]["name"]: x for x in n.vxfedctl("networks").get("networks", [])}
            return nets[NETWORK].get("node_blocks", [])

        def store_blocks() -> dict[str, str]:
            return {k.rsplit("/", 1)[1]: v for k, v in etcd.get_prefix(f"{PREFIX}/v1/blocks/{NETWORK}/").items()}

        assert blocks() == ["10.244.0.0/29"], blocks()
        pods = []

        def add(i: int) -> str:
            ns = topo.netns(f"p{i}")
            cid = f"blk{i}-{topo.suffix}"
            res = rt.add(conf, cid, f"/var/run/netns/{ns.name}", "eth0")
            ip = res["ips"][0]["address"].split("/")[0]
            pods.append((ns, cid, ip))
            return ip

        first = [add(i) for i in range(5)]
        assert first == [f"10.244.0.{i}" for i in range(2, 7)], first
        assert blocks() == ["10.244.0.0/29"], f"a block was claimed before the first was full: {blocks()}"
        t0 = time.monotonic()
        sixth = add(5)
        tl.log(f"6th ADD (first block full): {sixth} in {time.monotonic() - t0:.2f} s; blocks {blocks()}")
        assert sixth == "10.244.0.9", sixth
        assert blocks() == ["10.244.0.0/29", "10.244.0.8/29"], blocks()
        assert store_blocks().get("10.244.0.8_29") == "node-a", store_blocks()
        second = [add(i) for i in range(6, 11)]
        assert second == [f"10.244.0.{i}" for i in range(10, 15)], second

        dumped = {e["id"] for e in n.dataplane.dump().get("tables", {}).get("endpoints", [])}
        assert dumped == {f"{cid}/eth0" for _, cid, _ in pods}, dumped
        a, b = pods[0], pods[-1]
        r = a[0].ping(b[2], count=3)
        assert r.returncode == 0, f"{a[2]} (first block) does not reach {b[2]} (second block): {r.stdout} {r.stderr}"
        tl.log(f"{len(pods)} pods in two blocks, all in the dataplane; {a[2]} reaches {b[2]}")

        # Both blocks full and the subnet's other blocks node-z's: the limit is the subnet, and the error says so.
        held_before = sorted(p.name for p in (topo.workdir / "ipam" / NETWORK).iterdir())
        extra = topo.netns("extra")
        try:
            rt.add(conf, f"over-{topo.suffix}", f"/var/run/netns/{extra.name}", "eth0")
        except CniError as e:
            tl.log(f"ADD with the subnet exhausted: code {e.code}: {e.msg}")
            assert e.code == 106, f"code {e.code}, expected 106: {e}"
            assert SUBNET in e.msg and "taken" in e.msg, f"the error does not name the subnet as the limit: {e.msg}"
        else:
            raise AssertionError("an ADD beyond the subnet's free blocks succeeded")
        assert sorted(p.name for p in (topo.workdir / "ipam" / NETWORK).iterdir()) == held_before, \
            "the refused ADD kept an address"
        links = json.loads(extra.run(["ip", "-j", "link"]).stdout)
        assert [link["ifname"] for link in links] == ["lo"], f"the refused ADD left an interface: {links}"

        # The second block's pods leave: the block goes back after the grace period.
        for ns, cid, ip in pods[5:]:
            rt.delete(conf, cid, f"/var/run/netns/{ns.name}", "eth0")
        left_at = time.monotonic()
        tl.wait_for(lambda: "10.244.0.8_29" not in store_blocks(), GRACE_S + 15, "the empty block released in the store")
        released_s = time.monotonic() - left_at
        assert released_s >= GRACE_S, f"released {released_s:.1f} s after it emptied, before the {GRACE_S} s grace"
        assert blocks() == ["10.244.0.0/29"], blocks()
        assert store_blocks() == {"10.244.0.0_29": "node-a", "10.244.0.16_29": "node-z", "10.244.0.24_29": "node-z"}, \
            store_blocks()
        tl.log(f"the emptied block 10.244.0.8/29 was released {released_s:.1f} s after its last pod left")
        for ns, cid, ip in pods[:5]:
            rt.delete(conf, cid, f"/var/run/netns/{ns.name}", "eth0")
        assert n.vxfedd.endpoints() == [], n.vxfedd.endpoints()


if __name__ == "__main__":
    tl.main_wrapper(main)
