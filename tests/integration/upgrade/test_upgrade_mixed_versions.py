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
     policy on (harness/vxfed_harness/upgrade_policy.py; docs/policy.md, "Mixed releases"):
     `vxfedctl policy apply -f` on a2 and b2 of the pods' labels and `db-from-web` (role=db pods
     take only app=web pods; cluster-b's also a1's pod block by address), a role=db pod per node.
     Checked now and after each roll: only the current nodes' registrations say gbp and their
     forwarders send GBP to exactly each other; no node drops a packet for its VXLAN flags;
     the p0 pods of the two releases reach each other both ways; into a role=db pod on a
     current node an app=web pod on a current node is let in, any other pod refused there
     (its policy_denied_ingress counted), an app=web pod on an N-1 node included (no identity
     on the wire) unless its address is let in; a role=db pod on an N-1 node takes anything
     (N-1 enforces nothing); a2-eg, whose egress a selector limits to role=db pods, reaches
     those of current nodes and no p0 pod on a current node (refused at a2 or at the
     destination, counted), and no pod of an N-1 node (refused at a2: a VTEP without GBP
     cannot be asked); the current nodes take GBP;
  4. a1 upgraded in place, make-before-break on the same sockets and state dir: N's dataplane
     and vxfedd stand by, the old vxfedd stops first (N's vxfedd programs N-1's dataplane, the
     matrix checked then), then the old dataplane; b1 the other way round (N-1's vxfedd
     programs N's dataplane). Each node's outage, the longest gap of a 100 Hz ping to its pod
     from the other cluster, is printed and must stay under 1 s; the same VNIs, block and
     endpoint afterwards;
     Before each roll the node gets N's CNI plugin (the new pod's install-cni runs first) and a
     pod through it on the previous daemons; while the versions are mixed on the node a pod is
     added and deleted (Deltas from one release into the other) and no packet is dropped for its
     VXLAN flags. A 100 Hz ping from a2-p0 to the node's role=db pod (allowed by podSelector
     only) prints its longest gap, the roll plus the time until the others send the node GBP,
     which must stay under 1 s as well;
  5. N's CNI plugin deletes the pods N-1's plugin made (their CNI state read by the next
     release); the matrix again.

Prints `RESULTS {json}`.
"""
from __future__ import annotations

import concurrent.futures
import json
import time

import vxfed_harness as t
from vxfed_harness.federation_bed import (KEY_PREFIX, NETWORK, FederationBed, add_node_pod, node_runtime, ping, ping_matrix,
                                          require_parts, vnis)
from vxfed_harness.ping_stream import PingStream
from vxfed_harness.upgrade import hand_over, previous_release, release_version, stand_by
from vxfed_harness.upgrade_policy import (Flow, apply, check_flows, drops, endpoint_identity, gbp_received,
                                          egress_to_pods, gbp_vteps, ingress_from_pods, namespace_obj, pod_obj,
                                          registered_gbp)

POD_MTU_PING = 8922     # 9000 underlay - 50 VXLAN - 28 IPv4+ICMP
OUTAGE_GOAL_S = 1.0     # issue: an upgrade's forwarding outage per node <= 1 s
SELECTOR_GAP_GOAL_S = 1.0  # issue 34: a selector-allowed flow into the rolled node's pod, the same bound
OLD = ("a1", "b1")      # the nodes that start on the previous release
CURRENT = ("a2", "b2")  # this release from the start: where each cluster's policy is applied
WEB = {"app": "web"}    # the label the policy lets in
DB = {"role": "db"}     # the label of the pods the policy isolates
# Every pod of the namespace has its record, as under Kubernetes: a pod without one is unlabelled,
# which a policy with a podSelector might select, so it is isolated with no rule until its labels
# arrive (docs/policy.md, "Before a pod's labels arrive"). The cni and mixed pods come later.
EGRESS_LIMITED = {"egress": "db-only"}   # the label of the pod whose egress the policy limits to role=db pods
LABELS = {"a1-p0": WEB, "a2-p0": WEB, "b1-p0": WEB, "b2-p0": {"app": "other"},
          "a1-db": DB, "a2-db": DB, "b1-db": DB, "b2-db": DB, "a2-eg": {**WEB, **EGRESS_LIMITED},
          **{f"{s}-{kind}": {"app": kind} for s in ("a1", "b1") for kind in ("cni", "mixed")}}
# cluster-b's policy also lets in a1's pod block by address (an ipBlock peer): what an operator can
# add to keep a previous-release node's pods in while it has no identity on the wire.
BY_ADDRESS = {"cluster-b": "a1"}
POLICY_WAIT_S = 15      # for a change to reach the forwarders: identities, tables, the GBP mark


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


# ---------------------------------------------------------------------- policy in a mixed federation
def policy_objects(bed: FederationBed, cluster: str) -> list[dict]:
    """cluster's objects: the namespace `fed` (the bed's pods' K8S_POD_NAMESPACE), its pods'
    labels and `db-from-web` (role=db pods take anything from app=web pods of `fed` in either
    cluster, and in cluster-b from a1's pod block, nothing else); in cluster-a also
    `egress-db-only` (egress=db-only pods send to role=db pods only)."""
    pods = [pod_obj(NETWORK, name, labels) for name, labels in LABELS.items()
            if bed.nodes[name.split("-")[0]].cluster == cluster]
    cidrs = (bed.block_of(bed.nodes[BY_ADDRESS[cluster]]),) if cluster in BY_ADDRESS else ()
    egress = [egress_to_pods(NETWORK, "egress-db-only", NETWORK, EGRESS_LIMITED, DB)] if cluster == "cluster-a" else []
    return [namespace_obj(NETWORK, {}), *pods, ingress_from_pods(NETWORK, "db-from-web", NETWORK, DB, WEB, cidrs),
            *egress]


def expected_flows(bed: FederationBed, pod: dict, current: set[str]) -> list[Flow]:
    """What docs/policy.md ("Mixed releases") promises while the nodes in `current` run this
    release and the others the previous one:
      - into a role=db pod on a current node: allowed from an app=web pod on a current node (its
        identity in the GBP header, or its endpoint's on the same node), refused there from any
        other pod, an app=web pod on a previous-release node included (no identity on the wire:
        unknown, which no podSelector matches) unless an ipBlock peer takes its address
        (BY_ADDRESS);
      - into a role=db pod on a previous-release node: allowed (that release enforces nothing);
      - from a2-eg (app=web, its egress limited to role=db pods by a selector): into the role=db
        pods of current nodes allowed; into a p0 pod refused at a2 (local: policy_denied_egress)
        or at a current destination (which checks the source's egress by the identity it sent
        and the A bit clear: policy_denied_remote_egress); into any pod of a previous-release
        node refused at a2 (policy_denied_egress): the source could only ask the destination,
        and a VTEP without GBP cannot be asked;
      - between the unselected p0 pods of the two releases: allowed both ways."""
    out = []
    sources = [pod[f"{s}-p0"] for s in ("a1", "a2", "b1", "b2")]
    for dst_node in ("a1", "a2", "b1", "b2"):
        node = bed.nodes[dst_node]
        for src in sources:
            ok = (dst_node not in current or (LABELS[src.name] == WEB and src.node.short in current)
                  or BY_ADDRESS.get(node.cluster) == src.node.short)
            out.append(Flow(src, pod[f"{dst_node}-db"], ok, None if ok else node))
    eg = pod["a2-eg"]
    for dst_node in ("a1", "a2", "b1", "b2"):
        node = bed.nodes[dst_node]
        if dst_node not in current:  # the destination cannot be asked: refused at the source
            out.append(Flow(eg, pod[f"{dst_node}-db"], False, eg.node, "policy_denied_egress"))
            out.append(Flow(eg, pod[f"{dst_node}-p0"], False, eg.node, "policy_denied_egress"))
            continue
        out.append(Flow(eg, pod[f"{dst_node}-db"], True))
        if dst_node == "a2":
            out.append(Flow(eg, pod["a2-p0"], False, node, "policy_denied_egress"))
        else:
            out.append(Flow(eg, pod[f"{dst_node}-p0"], False, node, "policy_denied_remote_egress"))
    for old in set(bed.nodes) - current:
        for new in current:
            out += [Flow(pod[f"{old}-p0"], pod[f"{new}-p0"], True), Flow(pod[f"{new}-p0"], pod[f"{old}-p0"], True)]
    return out


def check_policy(bed: FederationBed, pod: dict, numbers: dict, current: set[str], stage: str) -> dict:
    """Waits until every labelled pod on a current node has its identity in its forwarder and each
    current forwarder sends GBP to exactly the other current nodes' VTEPs, then checks the flows of
    expected_flows() (again until POLICY_WAIT_S: a table may be on its way), that no node dropped a
    packet for its VXLAN flags (a previous-release parser drops any flags but 0x08), and that the
    current nodes that received from another current node took GBP. Returns the stage's figures."""
    t0 = time.monotonic()
    want_ids = {p: numbers[(NETWORK, p)] for p in LABELS if p.split("-")[0] in current and p in pod}
    bed.nodes["a2"].wait_until(
        lambda: all(endpoint_identity(pod[p].node, pod[p].container_id) == n for p, n in want_ids.items()),
        POLICY_WAIT_S, f"{stage}: the labelled pods' identities in their current nodes' forwarders")
    # The nodes whose registration says they take GBP are the current ones, and GBP goes to them only.
    registered = registered_gbp(bed, KEY_PREFIX)
    assert registered == {s: s in current for s in bed.nodes}, f"{stage}: registrations say gbp {registered}"
    want_vteps = {s: sorted(bed.nodes[o].ip for o in current if o != s) for s in current}
    bed.nodes["a2"].wait_until(lambda: all(gbp_vteps(bed.nodes[s]) == v for s, v in want_vteps.items()),
                               POLICY_WAIT_S, f"{stage}: GBP toward exactly the current nodes' VTEPs {want_vteps}")
    waited = time.monotonic() - t0
    gbp_before = {s: gbp_received(bed.nodes[s]) for s in current}
    flows = expected_flows(bed, pod, current)
    deadline = time.monotonic() + POLICY_WAIT_S
    while (bad := check_flows(flows)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not bad, f"{stage}: flows not as docs/policy.md 'Mixed releases' says: {bad}"
    flags = {s: drops(n).get("bad_vxlan_flags", 0) for s, n in bed.nodes.items()}
    assert not any(flags.values()), f"{stage}: packets dropped for their VXLAN flags (GBP toward a node " \
                                    f"that does not take it?): {flags}"
    gbp = {s: gbp_received(bed.nodes[s]) - gbp_before[s] for s in current}
    assert len(current) < 2 or all(gbp.values()), f"{stage}: current nodes that took no GBP: {gbp}"
    refused = sum(1 for f in flows if not f.allowed)
    t.log(f"{stage}: {len(flows)} flows as promised ({refused} refused at current nodes, the others answered); "
          f"GBP toward {want_vteps}; GBP packets taken {gbp}; bad_vxlan_flags {flags}; "
          f"{waited:.1f} s for the identities and GBP entries, {time.monotonic() - t0:.1f} s in all")
    return {"flows": len(flows), "refused": refused, "gbp_vteps": want_vteps, "gbp_rx": gbp,
            "wait_s": round(waited, 1), "seconds": round(time.monotonic() - t0, 1)}


def finish_stage(bed: FederationBed, pod: dict, numbers: dict, current: set[str], stage: str,
                 selector_stream: PingStream, results: dict) -> None:
    """check_policy() after a roll, then the selector-allowed stream stopped: its longest gap is
    the roll's outage plus the time until the other nodes send the upgraded node GBP."""
    results[stage.replace(" ", "_")] = fig = check_policy(bed, pod, numbers, current, stage)
    gap, replies = selector_stream.stop()
    fig["selector_allowed_gap_s"] = round(gap, 2)
    t.log(f"{stage}: a2-p0 -> its role=db pod (allowed by podSelector only): longest gap between echo "
          f"replies {gap:.2f} s ({replies} replies)")
    # The mark is set in bgpd in place and sent at once (bgp/gbp_mark_commands.hpp): 0.19-0.22 s
    # measured, where the frr-reload and bgpd's route-map delay timer took 4.6-6.4 s.
    assert gap <= SELECTOR_GAP_GOAL_S, (f"{stage}: the selector-allowed flow stopped {gap:.2f} s > "
                                        f"{SELECTOR_GAP_GOAL_S} s (the others sent the node GBP late)")


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

        # ---- 3b. policy on, applied on the current nodes while a1 and b1 run the previous release ----
        # A role=db pod per node, made by its node's CNI plugin, outside the ping matrix (which
        # the policy leaves alone: it selects no other pod).
        for s, n in bed.nodes.items():
            pod[f"{s}-db"] = add_node_pod(bed.topo, bed.runtimes[s], n, "db")
        pod["a2-eg"] = add_node_pod(bed.topo, bed.runtimes["a2"], bed.nodes["a2"], "eg")
        numbers = {}
        for s in CURRENT:
            numbers.update(apply(bed.nodes[s], policy_objects(bed, bed.nodes[s].cluster), bed.topo.workdir, s))
        assert set(numbers) == {(NETWORK, p) for p in LABELS}, f"identities printed: {numbers}"
        results["policy"] = {"mixed": check_policy(bed, pod, numbers, set(CURRENT), "mixed releases")}

        # ---- 4. the old nodes upgraded in place ----
        rolls = {}
        # The policy check after a roll waits for the node's GBP mark to cross BGP (seconds); it
        # runs once the next node's daemons stand by (they serve nothing yet), so the two overlap.
        pending: list[tuple[set[str], str, PingStream]] = []
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
            for current, stage, sel in pending:
                finish_stage(bed, pod, numbers, current, stage, sel, results["policy"])
            pending.clear()
            stream = PingStream(pod[watcher].ns, pod[f"{short}-p0"].ip, name=f"ping-roll-{short}")
            # A flow only a podSelector lets in, into the node's role=db pod: open while its node
            # enforces nothing, refused from the roll until the others send the node GBP.
            selector_stream = PingStream(pod["a2-p0"].ns, pod[f"{short}-db"].ip, name=f"ping-policy-{short}")
            time.sleep(0.5)

            def mixed(node=node, first=first) -> None:
                # One release's vxfedd with the other's dataplane on this node: a pod added and
                # deleted (Deltas across the versions) and the node's pods still forwarding.
                extra = bed.add_pod(node, "mixed")
                bad = ping_matrix(bed, [pod[f"{node.short}-p0"], extra])
                bed.delete_pod(extra)
                assert not bad, f"{node.short} with the next {first} and the previous other half: {bad}"
                # Nobody sends GBP to a node while either half is the previous release's.
                flags = drops(node).get("bad_vxlan_flags", 0)
                assert flags == 0, f"{node.short} mixed: {flags} packets dropped for their VXLAN flags"
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
            pending.append(({s for s in bed.nodes if s not in OLD or s in rolls}, f"{short} upgraded", selector_stream))
        for current, stage, sel in pending:
            finish_stage(bed, pod, numbers, current, stage, sel, results["policy"])
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
