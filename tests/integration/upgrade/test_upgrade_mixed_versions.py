#!/usr/bin/env python3
"""Two releases in one federation, as during a rolling upgrade: the previous release (N-1,
deploy/previous-release, built from this clone's history by scripts/build-previous.sh) and
this build (N).

Two clusters of two nodes (harness/vxfed_harness/federation_bed.py: FRR + bfdd, dataplane and
vxfedd per node, a route reflector per cluster, a three-member etcd): a1 and b1 run N-1's
vxfedd, vxfed-dataplane, vxfedctl and CNI plugin, a2 and b2 run N's. Asserts:
  1. each node reports its own release (`vxfedctl status`, the dataplane's status); every node
     routes every other node's block (the etcd schema, FPM and the dataplane API across
     versions); `fed` has one VNI on all four;
  2. a network created on an N-1 node and an N node at the same moment: one VNI everywhere;
  3. a pod per node, each made by its node's CNI plugin: the full ping matrix, and an 8922-byte
     DF ping between an N-1 and an N node; N's vxfedctl reads an N-1 vxfedd;
  4. a1 upgraded in place, make-before-break on the same sockets and state dir: N's dataplane
     and vxfedd stand by, the old vxfedd stops first (N's vxfedd programs N-1's dataplane, the
     matrix checked then), then the old dataplane; b1 the other way round (N-1's vxfedd
     programs N's dataplane). Each node's outage, the longest gap of a 100 Hz ping to its pod
     from the other cluster, is printed and must stay under 1 s; the same VNIs, block and
     endpoint afterwards;
     Before each roll the node gets N's CNI plugin (the new pod's install-cni runs first) and a
     pod through it on the previous daemons; while the versions are mixed on the node a pod is
     added and deleted (Deltas from one release into the other);
  5. N's CNI plugin deletes the pods N-1's plugin made (their CNI state read by the next
     release); the matrix again.

Prints `RESULTS {json}`.
"""
from __future__ import annotations

import concurrent.futures
import json
import time

import vxfed_harness as t
from vxfed_harness.federation_bed import (NETWORK, FederationBed, node_runtime, ping, ping_matrix, require_parts,
                                          vnis)
from vxfed_harness.ping_stream import PingStream
from vxfed_harness.upgrade import hand_over, previous_release, release_version, stand_by

POD_MTU_PING = 8922     # 9000 underlay - 50 VXLAN - 28 IPv4+ICMP
OUTAGE_GOAL_S = 1.0     # issue: an upgrade's forwarding outage per node <= 1 s
OLD = ("a1", "b1")      # the nodes that start on the previous release



def versions(bed: FederationBed) -> dict[str, tuple[str, str]]:
    """Node -> (vxfedd's version, its dataplane's version), as each reports it."""
    return {s: (n.vxfedd.status().get("version", ""), n.dataplane.status().get("version", ""))
            for s, n in bed.nodes.items()}


def node_state(bed: FederationBed, short: str) -> dict:
    """What a roll must keep: the node's VNIs, its block, its endpoints (by id and address)."""
    n = bed.nodes[short]
    return {"vnis": {net["spec"]["name"]: int(net["vni"]) for net in n.vxfedctl("networks").get("networks", [])},
            "block": bed.block_of(n),
            "endpoints": sorted((e["container_id"], e["ifname"], e["network"], e["ip"], e["mac"], e["vni"])
                                for e in n.vxfedctl("endpoints").get("endpoints", []))}


def main() -> None:
    t.require_root()
    require_parts()
    t0 = time.monotonic()
    prev = previous_release()
    t.log(f"previous release {prev.version}: {prev.build_dir} ({time.monotonic() - t0:.0f} s)")
    now_version = release_version(t.BUILD_DIR)
    assert now_version != prev.version, f"this build reports {now_version}, as the previous release does"
    results: dict = {"previous": prev.version, "current": now_version}

    with t.Topology("upgr") as topo:
        bed = FederationBed(topo, clusters=2, nodes_per_cluster=2,
                            node_build_dirs={s: prev.build_dir for s in OLD})
        bed.up(timeout=180)
        # ---- 1. two releases, one federation ----
        seen = versions(bed)
        want = {s: ((prev.version,) * 2 if s in OLD else (now_version,) * 2) for s in bed.nodes}
        assert seen == want, f"versions reported {seen}, expected {want}"
        fed = vnis(bed, NETWORK)
        assert len(fed) == 4 and len(set(fed.values())) == 1, f"fed's VNIs differ: {fed}"
        t.log(f"versions {seen}; every node routes every other block; fed VNI {fed['a1']} everywhere")

        # ---- 2. one network, created by both releases at once ----
        subnets = {"cluster-a": "10.246.0.0/16", "cluster-b": "10.247.0.0/16"}
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            futs = {s: pool.submit(bed.nodes[s].vxfedd.ctl, "--json", "add-network", "blue", "--subnet",
                                   subnets[bed.nodes[s].cluster], timeout=60) for s in ("a1", "b2")}
            procs = {s: f.result() for s, f in futs.items()}
        for s, r in procs.items():
            assert r.returncode == 0, f"{s}: add-network blue: {r.stderr}"
        for s in ("a2", "b1"):
            bed.nodes[s].vxfedctl("add-network", "blue", "--subnet", subnets[bed.nodes[s].cluster])
        blue = vnis(bed, "blue")
        assert len(blue) == 4 and len(set(blue.values())) == 1 and fed["a1"] not in blue.values(), \
            f"blue's VNIs: {blue} (fed {fed['a1']})"
        results["vnis"] = {"fed": fed["a1"], "blue": blue["a1"]}

        # ---- 3. pods by each release's CNI plugin; the matrix ----
        for n in bed.nodes.values():
            bed.add_pod(n, "p0")
        failures = ping_matrix(bed, bed.pods)
        assert not failures, f"pings failed: {failures}"
        pod = {p.name: p for p in bed.pods}
        for src, dst in (("a1-p0", "b2-p0"), ("b1-p0", "a2-p0")):
            assert ping(pod[src], pod[dst].ip, size=POD_MTU_PING, df=True), \
                f"{POD_MTU_PING}-byte DF ping {src} -> {dst} failed"
        # The operator's CLI may be newer than the daemon it asks.
        newer_ctl = t.run([str(t.binary("control/vxfedctl")), "--socket", str(bed.nodes["a1"].vxfedd.socket),
                           "--json", "networks"]).stdout
        assert {n["spec"]["name"] for n in json.loads(newer_ctl)["networks"]} == {NETWORK, "blue"}, newer_ctl
        t.log(f"ping matrix across releases: {len(bed.pods) * (len(bed.pods) - 1)} pings, all answered; "
              f"{POD_MTU_PING}-byte DF pings between the releases")

        # ---- 4. the old nodes upgraded in place ----
        rolls = {}
        for short, first, watcher in (("a1", "vxfedd", "b2-p0"), ("b1", "dataplane", "a2-p0")):
            node = bed.nodes[short]
            # The new pod's install-cni init container runs first: the next plugin talks to the
            # previous vxfedd until the roll is over.
            bed.runtimes[short] = node_runtime(node)
            pod[f"{short}-cni"] = bed.add_pod(node, "cni")
            bad = ping_matrix(bed, [pod[f"{short}-cni"]])
            assert not bad, f"{short}: the next CNI plugin's pod on the previous daemons: {bad}"
            before = node_state(bed, short)
            # The next release's config: on VXFED_BGP_FEED=bmp the upgrade also moves the node
            # from zebra's FPM stream to bgpd's BMP feed (its bgpd becomes a view).
            cluster = next(cl for cl in bed.clusters if node in cl.nodes)
            nxt = stand_by(node, t.BUILD_DIR, "next", config=bed.vxfedd_config(node, cluster, build_dir=t.BUILD_DIR))
            stream = PingStream(pod[watcher].ns, pod[f"{short}-p0"].ip, name=f"ping-roll-{short}")
            time.sleep(0.5)

            def mixed(node=node, first=first) -> None:
                # One release's vxfedd with the other's dataplane on this node: a pod added and
                # deleted (Deltas across the versions) and the node's pods still forwarding.
                extra = bed.add_pod(node, "mixed")
                bad = ping_matrix(bed, [pod[f"{node.short}-p0"], extra])
                bed.delete_pod(extra)
                assert not bad, f"{node.short} with the next {first} and the previous other half: {bad}"
                node.wait_until(lambda: extra.ip not in str(node.dataplane.dump()["tables"]["endpoints"]), 30,
                                f"{node.short}: the mixed pod's endpoint to leave the dataplane")

            hand_over(node, nxt, first=first, between=mixed)
            time.sleep(0.5)
            gap, replies = stream.stop()
            after = node_state(bed, short)
            assert after == before, f"{short}: state changed across the upgrade: {before} -> {after}"
            v = versions(bed)[short]
            assert v == (now_version, now_version), f"{short} after the upgrade reports {v}"
            rolls[short] = {"first": first, "outage_s": round(gap, 3), "replies": replies}
            t.log(f"{short}: upgraded {prev.version} -> {now_version} ({first} first, a pod added and deleted "
                  f"while the versions were mixed): longest gap between echo replies {gap:.3f} s; same VNIs, "
                  f"block and endpoints")
            assert gap <= OUTAGE_GOAL_S, f"{short}: the upgrade's outage {gap:.3f} s > {OUTAGE_GOAL_S} s"
        results["upgrades"] = rolls
        failures = ping_matrix(bed, [p for p in bed.pods if p.name.endswith("-p0")])
        assert not failures, f"pings after both upgrades failed: {failures}"

        # ---- 5. the next CNI plugin deletes the pods the previous one made ----
        for short in OLD:
            node = bed.nodes[short]
            bed.delete_pod(pod[f"{short}-p0"])
            node.wait_until(lambda: pod[f"{short}-p0"].ip not in str(node.vxfedctl("endpoints")), 30,
                            f"{short}'s first pod's endpoint to go")
        failures = ping_matrix(bed, [pod["a1-cni"], pod["b1-cni"]])
        assert not failures, f"pings after the old pods' DEL failed: {failures}"
        t.log("the pods the previous plugin made deleted by the next one; the matrix again")

    results["seconds"] = round(time.monotonic() - t0, 1)
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    t.main_wrapper(main)
