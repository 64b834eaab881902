#!/usr/bin/env python3
"""vxfedd's view of the dataplane against the dataplane's own (DumpTables), under random
refusals and kills: the REAL vxfedd and vxfed-dataplane --max-pod-ports 3, endpoints on veth
interfaces attached and detached with vxfedctl (no waiting), more of them than the dataplane
serves (its deltas and snapshots refused for one endpoint), interfaces deleted under attached
endpoints (refused at the next snapshot), and the dataplane killed with SIGKILL and restarted,
in a random order (seed logged; VXFED_SEED repeats a run).

After every step: every endpoint vxfedd reports in the dataplane ("in_dataplane") is in the
dataplane's tables, exactly as vxfedd has it (never reported from what was merely sent). Once
settled: the two agree exactly, every other endpoint is "refused" with the dataplane's reason,
and the dataplane holds at most 3."""

import os
import random
import signal

import vxfed_harness as tl
from vxfed_harness.node import Node

NETWORK = "fed-a"
CAPACITY = 3
CANDIDATES = 7
STEPS = 40


def main():
    tl.require_root()
    for b in ("control/vxfedd", "control/vxfedctl", "dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl"):
        tl.require_binary(b)
    seed = int(os.environ.get("VXFED_SEED", random.randrange(1 << 30)))
    tl.log(f"seed {seed} (VXFED_SEED={seed} repeats this run)")
    rng = random.Random(seed)
    with tl.Topology("dpview") as topo:
        n = Node(topo, "node", "198.18.0.1", "10.244.0.0/16", node_name="node-a", cluster="cluster-a",
                 dataplane_extra=["--max-pod-ports", str(CAPACITY)])
        node = n.ns
        peer = topo.netns("ulpeer")
        topo.wire(node, ["198.18.0.1/24"], peer, ["198.18.0.2/24"], ifname="ul0", b_ifname="ul1")
        n.start_dataplane(timeout=60)
        n.start_vxfedd(n.vxfedd_config(networks=[{"name": NETWORK, "vni": 1001, "subnet": "10.244.0.0/16",
                                                  "gateway": "10.244.0.1"}],
                                       dataplane={"reconnect_min_ms": 50, "reconnect_max_ms": 200}))
        n.vxfedd.wait_ready()

        def iface(i):
            return f"dpv{i}"

        def make_iface(i):
            # A veth pair in the node (no dummy module on these kernels); the pod end stays here.
            node.run(["ip", "link", "add", iface(i), "type", "veth", "peer", "name", f"{iface(i)}p"])
            node.run(["ip", "link", "set", iface(i), "up"])
            node.run(["ip", "link", "set", f"{iface(i)}p", "up"])

        for i in range(CANDIDATES):
            make_iface(i)
        attached, ifaces = set(), set(range(CANDIDATES))

        def vxfedd_view():
            return {e["container_id"]: e for e in n.vxfedd.endpoints()}

        def dataplane_view():
            return {e["id"].split("/")[0]: e for e in n.dataplane.dump().get("tables", {}).get("endpoints", [])}

        def same(ours, theirs):
            return (theirs.get("iface") == ours["host_iface"] and theirs.get("ip") == ours["ip"]
                    and theirs.get("mac") == ours["mac"])

        def check_claims(step):
            ours = vxfedd_view()
            theirs = dataplane_view() if n.dataplane.running() else {}
            for cid, e in ours.items():
                if e["in_dataplane"]:
                    assert e["dataplane"] == "yes", e
                    assert cid in theirs and same(e, theirs[cid]), \
                        f"step {step}: vxfedd says the dataplane carries {cid}, DumpTables has {theirs.get(cid)}"
            assert set(ours) == {f"c{i}" for i in attached}, (step, sorted(ours), sorted(attached))

        def settled():
            ours = vxfedd_view()
            if any(e["dataplane"] in ("pending", "not-connected") for e in ours.values()):
                return None
            return ours

        def check_settled(step):
            seen = []
            n.wait_until(lambda: seen.append(settled()) or seen[-1] is not None, 30,
                         f"step {step}: every endpoint carried or refused")
            ours = seen[-1]
            theirs = dataplane_view()
            carried = {c for c, e in ours.items() if e["dataplane"] == "yes"}
            assert carried == set(theirs), f"step {step}: vxfedd carries {sorted(carried)}, DumpTables {sorted(theirs)}"
            for c in carried:
                assert same(ours[c], theirs[c]), (ours[c], theirs[c])
            assert len(theirs) <= CAPACITY, theirs
            for c, e in ours.items():
                if c not in carried:
                    assert e["dataplane"] == "refused" and e.get("dataplane_error"), e
            return len(carried), len(ours) - len(carried)

        # Five attaches first (two beyond the capacity: refused), a kill in the middle, the
        # rest random.
        script = ["attach"] * 5 + [rng.choice(["attach"] * 5 + ["detach"] * 3 + ["unplug", "plug"] + ["kill"] * 2)
                                   for _ in range(STEPS - 5)]
        script[STEPS // 2] = "kill"
        kills = refusals = 0
        for step, op in enumerate(script):
            if op == "attach" and len(attached) < CANDIDATES:
                i = rng.choice(sorted(set(range(CANDIDATES)) - attached))
                r = n.vxfedd.ctl("attach", f"c{i}", "--network", NETWORK, "--ip", f"10.244.3.{10 + i}",
                                 "--mac", f"0a:58:0a:f4:03:{10 + i:02x}", "--host-iface", iface(i))
                assert r.returncode == 0, r.stdout + r.stderr
                attached.add(i)
            elif op == "detach" and attached:
                i = rng.choice(sorted(attached))
                r = n.vxfedd.ctl("detach", f"c{i}")
                assert r.returncode == 0, r.stdout + r.stderr
                attached.discard(i)
            elif op == "unplug" and ifaces:
                # The interface vanishes under its endpoint (a pod deleted behind vxfedd's back).
                i = rng.choice(sorted(ifaces))
                node.run(["ip", "link", "del", iface(i)])
                ifaces.discard(i)
            elif op == "plug" and len(ifaces) < CANDIDATES:
                i = rng.choice(sorted(set(range(CANDIDATES)) - ifaces))
                make_iface(i)
                ifaces.add(i)
            elif op == "kill":
                kills += 1
                n.dataplane.proc.send_signal(signal.SIGKILL)
                n.dataplane.proc.wait(timeout=10)
                n.dataplane.stop()
                # The dataplane is gone: once vxfedd saw its connection close, it claims nothing.
                n.wait_until(lambda: not any(e["in_dataplane"] for e in n.vxfedd.endpoints()), 5,
                             "vxfedd to stop claiming endpoints of a killed dataplane")
                n.start_dataplane(timeout=60)
            else:
                continue
            check_claims(step)
            if rng.random() < 0.4 or op == "kill" or step == 4:
                carried, refused = check_settled(step)
                refusals += refused
                tl.log(f"step {step} {op}: settled, {carried} carried, {refused} refused")
        carried, refused = check_settled(STEPS)
        tl.log(f"{STEPS} random steps, {kills} dataplane kills, {refusals} refusals seen while settled: "
               f"vxfedd's view matched DumpTables after every step")
        assert kills > 0 and refusals > 0, f"the run exercised too little (kills {kills}, refusals {refusals}); seed {seed}"


if __name__ == "__main__":
    tl.main_wrapper(main)
