#!/usr/bin/env python3
"""vxfedd with the federation store: three vxfedd (two clusters) on a real three-member etcd.

No dataplane is needed: VNIs, blocks and endpoints are vxfedd's (it keeps them while its
dataplane is away); forwarding never asks the store. Steps:
  1. network red in every node's config: the same VNI on all three, a block each (the two
     nodes of cluster-a in 10.244.0.0/16, the one of cluster-b in 10.245.0.0/16);
  2. network blue added on the three nodes at the same moment: one VNI, not red's;
  3. one etcd member killed: nothing changes, a new network still works;
  4. every member down (fail static): pod ADD/DEL on an existing network work; a new network
     is refused with UNAVAILABLE naming the store; vxfedd killed and restarted comes back with
     the same VNIs and blocks; a network added to a config and reloaded waits;
  5. etcd back: the new network is created, the waiting config network appears;
  6. etcd lost entirely (new, empty members): the nodes rebuild it from their local copies,
     every VNI and block unchanged; a new network then gets a VNI nobody has.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

import vxfed_harness as t
from vxfed_harness.etcd_cluster import EtcdCluster
from vxfed_harness.vxfedd import Vxfedd, config

PREFIX = "/vxfed"
NODES = [  # name, cluster, VTEP, this cluster's subnet of red
    ("node-a1", "cluster-a", "198.18.0.1", "10.244.0.0/16"),
    ("node-a2", "cluster-a", "198.18.0.2", "10.244.0.0/16"),
    ("node-b1", "cluster-b", "198.18.0.3", "10.245.0.0/16"),
]


def networks(d: Vxfedd) -> dict[str, tuple[int, str]]:
    """name -> (VNI, this node's block), from `vxfedctl networks --json`."""
    out = {}
    for n in d.ctl_json("networks").get("networks", []):
        out[n["spec"]["name"]] = (int(n["vni"]), n.get("node_block", ""))
    return out


def store_view(cluster: EtcdCluster) -> dict[str, str]:
    """What must survive a rebuild: each network's VNI and every node's block."""
    out = {}
    for key, value in cluster.get_prefix(f"{PREFIX}/v1/").items():
        rel = key[len(PREFIX) + 1:]
        if rel.startswith("v1/networks/"):
            out[rel] = str(json.loads(value)["vni"])
        elif rel.startswith(("v1/node-networks/", "v1/blocks/", "v1/members/")):
            out[rel] = value
    return out


def test_main() -> None:
    t.require_root()
    with t.Topology("fedvxd") as topo:
        cluster = EtcdCluster(topo, members=3)
        cluster.start()
        daemons: list[Vxfedd] = []
        cfgs: list[dict] = []
        for name, cl, vtep, subnet in NODES:
            w = topo.workdir / name
            cfg = config(name, vtep, cl, [subnet], w / "dp.sock", socket=w / "run" / "vxfedd.sock",
                         state_dir=w / "state", networks=[{"name": "red", "subnet": subnet}],
                         federation={"endpoints": cluster.endpoints.split(","), "key_prefix": PREFIX,
                                     "request_timeout_ms": 1000, "node_ttl_seconds": 3,
                                     "reconcile_interval_seconds": 2},
                         vni={"pools": [{"name": "federation", "ranges": ["1000-1999"]}]})
            cfgs.append(cfg)
            daemons.append(Vxfedd(topo.host, w / "vxfedd.yaml", w / "run" / "vxfedd.sock", cfg, name=name))
        a1, a2, b1 = daemons
        try:
            for d in daemons:
                d.start()

            # 1. the same VNI everywhere, a block each.
            red = [networks(d)["red"] for d in daemons]
            assert len({vni for vni, _ in red}) == 1, f"red has several VNIs: {red}"
            blocks = [b for _, b in red]
            assert blocks[0] != blocks[1] and all(b.startswith("10.244.") for b in blocks[:2]), blocks
            assert blocks[2].startswith("10.245."), blocks
            red_vni = red[0][0]
            t.log(f"red: VNI {red_vni} on all three nodes, blocks {blocks}")

            # 2. blue added on all three at the same moment.
            procs = [subprocess.Popen([str(d.ctl_program), "--socket", str(d.socket), "--json", "add-network", "blue",
                                       "--subnet", {"cluster-a": "10.144.0.0/16", "cluster-b": "10.145.0.0/16"}[NODES[i][1]]],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for i, d in enumerate(daemons)]
            answers = []
            for p in procs:
                out, err = p.communicate(timeout=30)
                assert p.returncode == 0, f"add-network blue failed: {err}"
                answers.append(json.loads(out))
            blue_vnis = {a["vni"] for a in answers}
            assert len(blue_vnis) == 1 and red_vni not in blue_vnis, f"blue VNIs {blue_vnis}, red {red_vni}"
            blue_vni = blue_vnis.pop()
            assert all(networks(d)["blue"][0] == blue_vni for d in daemons)
            t.log(f"blue added on 3 nodes at once: VNI {blue_vni} everywhere")

            # A pod on red (what the CNI plugin's ADD does).
            ip1 = blocks[0].split("/")[0].rsplit(".", 1)[0] + ".10"
            r = a1.ctl("attach", "pod-1", "--network", "red", "--ip", ip1, "--mac", "02:00:00:00:01:01", "--host-iface", "vxp1")
            assert r.returncode == 0, r.stderr

            # 3. one member killed.
            cluster.kill(0)
            assert networks(a1)["red"] == red[0]
            r = a1.ctl("--json", "add-network", "green", "--subnet", "10.246.0.0/16")
            assert r.returncode == 0, f"add-network with one member down: {r.stderr}"
            green_vni = json.loads(r.stdout)["vni"]
            t.log(f"one etcd member down: green got VNI {green_vni}")

            # 4. all members down: fail static.
            cluster.stop_all()
            before = {d.name: networks(d) for d in daemons}
            ip2 = ip1.rsplit(".", 1)[0] + ".11"
            r = a1.ctl("attach", "pod-2", "--network", "red", "--ip", ip2, "--mac", "02:00:00:00:01:02", "--host-iface", "vxp2")
            assert r.returncode == 0, f"pod ADD on an existing network with the store down: {r.stderr}"
            r = a1.ctl("detach", "pod-1")
            assert r.returncode == 0, f"pod DEL with the store down: {r.stderr}"
            started = time.monotonic()
            r = a1.ctl("add-network", "yellow", "--subnet", "10.247.0.0/16")
            took = time.monotonic() - started
            assert r.returncode == 1 and "UNAVAILABLE" in r.stderr and "etcd at" in r.stderr, \
                f"new network with the store down: exit {r.returncode}: {r.stderr}"
            t.log(f"store down: new network refused in {took:.2f} s: {r.stderr.strip()[:160]}")
            assert not a1.status()["federation_available"]
            a1.kill()
            a1.start()
            assert networks(a1) == before["node-a1"], f"after restart without the store: {networks(a1)}"
            cfgs[1]["networks"].append({"name": "cfgnew", "subnet": "10.248.0.0/16"})
            a2.write_config()
            a2.proc.send_signal(signal.SIGHUP)
            t.wait_for(lambda: "cfgnew' waits for the federation store" in a2.log(), 10, "a2 to park cfgnew")
            assert "cfgnew" not in networks(a2)

            # 5. back.
            started = time.monotonic()
            cluster.start_all()
            t.wait_for(lambda: a1.ctl("add-network", "yellow", "--subnet", "10.247.0.0/16").returncode == 0, 30,
                       "add-network yellow to succeed once etcd is back", interval=0.3)
            back_s = time.monotonic() - started
            t.wait_for(lambda: "cfgnew" in networks(a2), 15, "a2's waiting config network")
            yellow_vni = networks(a1)["yellow"][0]
            assert yellow_vni not in (red_vni, blue_vni, green_vni)
            t.log(f"etcd back: yellow created {back_s:.2f} s after the members were started; cfgnew on a2")

            # 6. etcd lost entirely: rebuilt from the nodes.
            t.wait_for(lambda: all(a.get("federation_available") for a in (d.status() for d in daemons)), 15,
                       "every node to see the store")
            want = store_view(cluster)
            views = {d.name: networks(d) for d in daemons}
            cluster.wipe()
            started = time.monotonic()
            t.wait_for(lambda: store_view(cluster) == want, 30, "the store rebuilt from the nodes' copies", interval=0.3)
            t.log(f"etcd wiped: rebuilt identically from the nodes in {time.monotonic() - started:.2f} s "
                  f"({len(want)} keys)")
            assert {d.name: networks(d) for d in daemons} == views
            r = b1.ctl("--json", "add-network", "violet", "--subnet", "10.249.0.0/16")
            assert r.returncode == 0, r.stderr
            violet = json.loads(r.stdout)["vni"]
            assert violet not in {red_vni, blue_vni, green_vni, yellow_vni}, violet
        except Exception:
            topo.dump_logs()
            raise


if __name__ == "__main__":
    t.main_wrapper(test_main)
