#!/usr/bin/env python3
"""vxfedd with an etcd that has lost its quorum: the API keeps answering.

One vxfedd on a real three-member etcd (request_timeout_ms 2000, as the fault bed's). Two
members are SIGKILLed (the leader first), so the one left is up but has no leader: every
store call would wait. Asserted while it lasts:
  - `vxfedctl status` answers within 1 s, every time, sampled for several seconds (the
    keep-alive and reconcile run off the io thread), also while a new network's store call
    is on its way;
  - pod ADD and DEL on a network the node holds answer within 1 s (no store needed);
  - a new network (needs the store) is refused within 3 s with UNAVAILABLE naming the store,
    both right after the kills (before vxfedd has noticed) and once it knows;
then the two members are restarted with their data: vxfedd sees the store again by itself,
the refused network can be created, and nothing was reset: the network's VNI and block, the
endpoint, and the store's records of the node are as before.
"""

from __future__ import annotations

import json
import subprocess
import time

import vxfed_harness as t
from vxfed_harness.etcd_cluster import EtcdCluster
from vxfed_harness.vxfedd import EXIT_DATAPLANE_NOT_READY, Vxfedd, config

PREFIX = "/vxfed"
STATUS_WITHIN_S = 1.0
ENDPOINT_WITHIN_S = 1.0
REFUSED_WITHIN_S = 3.0


def networks(d: Vxfedd) -> dict[str, tuple[int, str]]:
    return {n["spec"]["name"]: (int(n["vni"]), n.get("node_block", "")) for n in d.ctl_json("networks").get("networks", [])}


def node_records(cluster: EtcdCluster) -> dict[str, str]:
    """The store's records of networks and memberships (not the leased alive key)."""
    out = {}
    for key, value in cluster.get_prefix(f"{PREFIX}/v1/").items():
        rel = key[len(PREFIX) + 1:]
        if rel.startswith(("v1/networks/", "v1/vnis/", "v1/node-networks/", "v1/blocks/", "v1/members/")):
            out[rel] = value
    return out


def timed(d: Vxfedd, *args: str) -> tuple[float, object]:
    started = time.monotonic()
    r = d.ctl(*args, timeout=15)
    return time.monotonic() - started, r


def test_main() -> None:
    t.require_root()
    with t.Topology("fedquorum") as topo:
        cluster = EtcdCluster(topo, members=3)
        cluster.start()
        w = topo.workdir / "node-a1"
        cfg = config("node-a1", "198.18.0.1", "cluster-a", ["10.244.0.0/16"], w / "dp.sock",
                     socket=w / "run" / "vxfedd.sock", state_dir=w / "state",
                     networks=[{"name": "red", "subnet": "10.244.0.0/16"}],
                     federation={"endpoints": cluster.endpoints.split(","), "key_prefix": PREFIX,
                                 "request_timeout_ms": 2000, "node_ttl_seconds": 6,
                                 "reconcile_interval_seconds": 2},
                     vni={"pools": [{"name": "federation", "ranges": ["1000-1999"]}]})
        d = Vxfedd(topo.host, w / "vxfedd.yaml", w / "run" / "vxfedd.sock", cfg, name="node-a1")
        try:
            d.start()
            red = networks(d)["red"]
            block_base = red[1].split("/")[0].rsplit(".", 1)[0]
            r = d.ctl("attach", "pod-1", "--network", "red", "--ip", block_base + ".10", "--mac", "02:00:00:00:01:01",
                      "--host-iface", "vxp1")
            assert r.returncode == 0, r.stderr
            t.wait_for(lambda: d.status().get("federation_available"), 10, "vxfedd to see the store")
            before = node_records(cluster)
            t.log(f"red: VNI {red[0]}, block {red[1]}; {len(before)} store records")

            # Quorum lost: the leader, then one more.
            leader = cluster.leader()
            assert leader is not None, "no etcd leader before the kills"
            second = (leader + 1) % 3
            cluster.kill(leader)
            cluster.kill(second)
            killed_at = time.monotonic()
            t.log(f"killed etcd members {leader} (leader) and {second}: member {3 - leader - second} is alone")

            # A store-needing request at once, before vxfedd has noticed; status asked while it waits.
            started = time.monotonic()
            blue = subprocess.Popen([str(d.ctl_program), "--socket", str(d.socket), "add-network", "blue",
                                     "--subnet", "10.144.0.0/16"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            during = []
            while blue.poll() is None:
                took, r = timed(d, "--json", "status")
                assert r.returncode in (0, EXIT_DATAPLANE_NOT_READY), f"status: exit {r.returncode}: {r.stderr}"
                during.append(took)
            _, err = blue.communicate(timeout=15)
            took = time.monotonic() - started
            assert blue.returncode != 0 and "UNAVAILABLE" in err and "etcd at" in err, \
                f"new network without quorum: exit {blue.returncode}: {err}"
            assert took < REFUSED_WITHIN_S, f"new network refused only after {took:.2f} s: {err}"
            assert during and max(during) < STATUS_WITHIN_S, f"status while the refusal was on its way: {during}"
            t.log(f"new network right after the kills: refused in {took:.2f} s (status meanwhile: {len(during)} "
                  f"answers, max {max(during):.3f} s): {err.strip()[:200]}")

            # Status, sampled while the keep-alive and reconcile keep failing in the background.
            latencies = []
            while time.monotonic() - killed_at < 10:
                took, r = timed(d, "--json", "status")
                assert r.returncode in (0, EXIT_DATAPLANE_NOT_READY), f"status without quorum: exit {r.returncode}: {r.stderr}"
                latencies.append(took)
                time.sleep(0.2)
            assert max(latencies) < STATUS_WITHIN_S, f"status latencies without quorum: {latencies}"
            t.log(f"status without quorum: {len(latencies)} samples, max {max(latencies):.3f} s")
            t.wait_for(lambda: not d.status()["federation_available"], 15, "vxfedd to notice the store is unavailable")

            # Pod ADD and DEL on a network the node holds.
            took_add, r = timed(d, "attach", "pod-2", "--network", "red", "--ip", block_base + ".11",
                                "--mac", "02:00:00:00:01:02", "--host-iface", "vxp2")
            assert r.returncode == 0 and took_add < ENDPOINT_WITHIN_S, f"pod ADD: {took_add:.2f} s, {r.stderr}"
            took_del, r = timed(d, "detach", "pod-1")
            assert r.returncode == 0 and took_del < ENDPOINT_WITHIN_S, f"pod DEL: {took_del:.2f} s, {r.stderr}"
            t.log(f"pod ADD {took_add:.3f} s, pod DEL {took_del:.3f} s without quorum")

            # Once vxfedd knows: refused again, quickly, naming the store.
            refusals = []
            for _ in range(3):
                took, r = timed(d, "add-network", "blue", "--subnet", "10.144.0.0/16")
                assert r.returncode != 0 and "UNAVAILABLE" in r.stderr and "etcd at" in r.stderr, r.stderr
                refusals.append(took)
            assert max(refusals) < REFUSED_WITHIN_S, f"refusals took {refusals}"
            t.log(f"new network once known down: refused in {', '.join(f'{x:.3f}' for x in refusals)} s")
            assert networks(d)["red"] == red

            # Quorum back: recovers by itself, nothing reset.
            cluster.restart(leader)
            cluster.restart(second)
            back_at = time.monotonic()
            t.wait_for(lambda: d.status().get("federation_available"), 30, "vxfedd to see the store again")
            t.wait_for(lambda: d.ctl("add-network", "blue", "--subnet", "10.144.0.0/16").returncode == 0, 30,
                       "add-network blue once quorum is back", interval=0.3)
            t.log(f"quorum back: store available and blue created {time.monotonic() - back_at:.2f} s after the restarts")
            assert networks(d)["red"] == red, networks(d)
            ids = {e["container_id"] for e in d.endpoints()}
            assert ids == {"pod-2"}, ids
            after = node_records(cluster)
            lost = {k: v for k, v in before.items() if after.get(k) != v}
            assert not lost, f"store records changed or lost: {lost}"
            blue = networks(d)["blue"]
            assert blue[0] != red[0], (blue, red)
        except Exception:
            topo.dump_logs()
            raise


if __name__ == "__main__":
    t.main_wrapper(test_main)
