#!/usr/bin/env python3
"""Network policy enforced by the real forwarder (docs/policy.md, "Enforcement in the
forwarder"), with a hand-written NetworkPolicy sent through the table API. Node A runs the
forwarder with pods A (identity 10, LocalIndex 0) and C (identity 30, LocalIndex 1); node B is a
Linux vxlan device with `gbp` whose mangle rule sets the Group Policy ID of what pod B sends.

The policy on VNI 100: pod A's ingress takes TCP 8080 from identity 100 only; pod A's egress
lets TCP 8080 to pod B's address through (an ipBlock) and nothing else; pod C is selected by
nothing. With one worker and with two (--queues 2: a flow's directions arrive on both workers,
which hand them to the owner of the local pod):
  1. pod B (GBP identity 100) connects to pod A:8080: accepted; as identity 200, or without a
     GBP header (identity 0): refused (policy_denied_ingress counted); identity 300, which pod A
     takes but whose own egress allows nothing, refused with the A bit clear
     (policy_denied_remote_egress) and accepted with it; identity 500, which pod A takes but
     which the entry's clusters say is cluster c's while node B is routed cluster b's addresses,
     refused as a forged claim (policy_forged_identity; docs/policy.md "Trusting the identity");
  2. pod A connects to pod B:8080 and the replies pass (pod A's ingress has no rule for them:
     connection tracking); the unsolicited connection the other way (pod B as 200) is refused;
     pod C -> pod A (local, identity 30) refused by pod A's ingress;
  3. pod A -> pod B:9090 and pod A -> pod C:8080: refused at the source (policy_denied_egress);
  4. a connection pod A -> pod B:8080 held open echoes; the policy replaced by one that still
     allows it (one more ingress peer, Delta: a new generation, so the flow is decided again):
     its next echo comes back; replaced by one whose egress no longer allows it (Delta): its
     next echo gets no answer, a new connection is refused;
     the policy removed (Delta): everything passes again;
  5. the workers' policy counters (WorkerStats.policy_*) account for the decisions, and the
     refusals per local pod (Counters.policy_drops) for each refused reason, all at pod A;
and `vxfed-dpctl dump` summarises the policy (local and remote tables, endpoints mapped, bytes).
"""

import ipaddress
import json
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d

IDENTITY_A, IDENTITY_C = 10, 30
ALLOWED, OTHER = 100, 200
EGRESS_ISOLATED = 300  # allowed in by pod A, but its own egress (checked here when A is clear) allows nothing
FORGED = 500           # allowed in by pod A, but an identity of cluster c: node B (cluster b) cannot claim it
A_BIT = 0x80000        # the mark bit Linux's vxlan driver sends as the GBP A bit
MARK_RULE = "FORWARD -o vxlan0 -j MARK --set-mark {mark}"
# Counters.policy_drops' fields and the drop reason each is a part of.
POD_DROPS = {"denied_egress": "policy_denied_egress", "denied_ingress": "policy_denied_ingress",
             "denied_remote_egress": "policy_denied_remote_egress", "forged_identity": "policy_forged_identity"}

SERVER = r"""
import socket, sys, threading
def serve(c):
    while True:
        data = c.recv(2048)
        if not data:
            break
        c.sendall(data)
    c.close()
def listen(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
for port in (8080, 9090):
    threading.Thread(target=listen, args=(port,), daemon=True).start()
threading.Event().wait()
"""

# connect HOST PORT: prints true when a connection echoed within 1.5 s.
# hold HOST PORT GO: one connection; prints true once it echoed, then for every file GO.N that
# appears, whether an echo came back within 1.5 s.
CLIENT = r"""
import json, os, socket, sys, time
mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
def echo(c, msg):
    try:
        c.sendall(msg)
        return c.recv(64) == msg
    except OSError:
        return False
if mode == "connect":
    try:
        c = socket.create_connection((host, port), timeout=1.5)
        print(json.dumps(echo(c, b"hello")))
    except OSError:
        print("false")
else:
    c = socket.create_connection((host, port), timeout=1.5)
    print(json.dumps(echo(c, b"first")), flush=True)
    n = 0
    while n < 3:
        if os.path.exists(sys.argv[4] + "." + str(n)):
            print(json.dumps(echo(c, b"again%d" % n)), flush=True)
            n += 1
        time.sleep(0.05)
"""


def ip_number(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


def policy(egress_to_b: bool = True, one_more_peer: bool = False) -> dict:
    """Port sets: [0] nothing, [1] everything, [2] TCP 8080. one_more_peer: pod A's ingress also
    takes identity 400 (a change that allows everything it allowed before)."""
    egress_a = {"isolated": True}
    if egress_to_b:
        egress_a["addresses"] = [{"first": ip_number(d.POD_B), "last": ip_number(d.POD_B), "ports": 2}]
    return {
        "vni": d.VNI,
        "port_sets": [{}, {"every_protocol": True}, {"spans": [{"protocol": 6, "first": 8080, "last": 8080}]}],
        "local_ingress": [{"isolated": True, "peers": [{"identity": ALLOWED, "ports": 2},
                                                       {"identity": EGRESS_ISOLATED, "ports": 2}]
                           + ([{"identity": 400, "ports": 2}] if one_more_peer else [])
                           + [{"identity": FORGED, "ports": 2}],
                           "some_selector": 2}, {}],
        "local_egress": [egress_a, {}],
        "remote_egress": [{"identities": [EGRESS_ISOLATED], "table": {"isolated": True}}],
        "endpoints": [{"endpoint_id": "podA/eth0", "local": 0}, {"endpoint_id": "podC/eth0", "local": 1}],
        # The GBP trust check (docs/policy.md, "Trusting the identity"): pod B's addresses are
        # cluster b's, FORGED is cluster c's.
        "clusters": [{"name": "a", "cidrs": ["10.244.0.0/16"], "identities": [IDENTITY_A, IDENTITY_C]},
                     {"name": "b", "cidrs": ["10.245.0.0/16"], "identities": [ALLOWED, OTHER, EGRESS_ISOLATED]},
                     {"name": "c", "cidrs": ["10.246.0.0/16"], "identities": [FORGED]}],
    }


def snapshot() -> dict:
    s = d.tables(generation=1)
    s["tables"]["endpoints"][0]["identity"] = IDENTITY_A
    pod_c = d.pod_c_endpoint()
    pod_c["identity"] = IDENTITY_C
    s["tables"]["endpoints"].append(pod_c)
    s["tables"]["policies"] = [policy()]
    return s


def use_gbp_device(f: d.ForwarderTopology) -> None:
    """Node B's vxlan0 with `gbp` (Linux cannot switch it on an existing device)."""
    b = f.node_b
    b.run("ip link del vxlan0")
    b.run(f"ip link add vxlan0 type vxlan id {d.VNI} local {f.vtep_b} dstport 4789 dev up1 nolearning gbp")
    b.run(f"ip link set vxlan0 address {d.GATEWAY_MAC} mtu {f.pod_mtu} up")
    b.run(f"bridge fdb append 00:00:00:00:00:00 dev vxlan0 dst {d.VTEP_A}")
    b.run(f"ip route add 10.244.0.0/16 via {d.GATEWAY_A} dev vxlan0 onlink")
    b.run(f"ip neigh replace {d.GATEWAY_A} lladdr {d.GATEWAY_MAC} dev vxlan0 nud permanent")


def set_mark(f: d.ForwarderTopology, mark: int) -> None:
    """Pod B's packets leave node B with Group Policy ID `mark` (0: plain VXLAN)."""
    f.node_b.run("iptables -t mangle -F FORWARD")
    if mark:
        f.node_b.run("iptables -t mangle -A " + MARK_RULE.format(mark=hex(mark)))


def connects(f: d.ForwarderTopology, pod, host: str, port: int) -> bool:
    path = f.topo.workdir / "client.py"
    r = pod.run(["python3", str(path), "connect", host, str(port)], timeout=30)
    return json.loads(r.stdout.strip().splitlines()[-1])


def denied(f: d.ForwarderTopology) -> dict:
    drops = d.drop_map(f.counters())
    return {k: drops.get(k, 0) for k in ("policy_denied_egress", "policy_denied_ingress",
                                         "policy_denied_remote_egress", "policy_conntrack_full",
                                         "policy_forged_identity")}


def grew(before: dict, after: dict, reason: str) -> bool:
    return after[reason] > before[reason]


def run_bed(queues: int) -> None:
    with t.Topology(f"dppol{queues}") as topo:
        f = d.ForwarderTopology(topo, queues=queues)
        f.build()
        pod_c = d.add_pod_c(f)
        use_gbp_device(f)
        f.start()
        f.send_snapshot(snapshot())
        (topo.workdir / "server.py").write_text(SERVER)
        (topo.workdir / "client.py").write_text(CLIENT)
        for pod, name in ((f.pod_a, "A"), (f.pod_b, "B"), (pod_c, "C")):
            pod.spawn(["python3", str(topo.workdir / "server.py")], name=f"server-{name}")
        dumped = f.call("dump")
        assert [p["vni"] for p in dumped["tables"]["tables"]["policies"]] == [d.VNI], dumped["tables"]
        summary = dumped["policySummary"]
        t.log(f"vxfed-dpctl dump's policy summary: {summary}")
        assert len(summary) == 1 and summary[0]["vni"] == d.VNI, summary
        assert (summary[0]["localTables"], summary[0]["remoteTables"], summary[0]["endpointsMapped"]) == (2, 1, 2), summary
        assert summary[0]["bytes"] > 65536 * 4, summary  # the identity -> remote table map
        # The first connection also waits for pod B's side to answer ARP and the like.
        t.wait_for(lambda: connects(f, f.pod_a, d.POD_B, 8080), 20, "pod A -> pod B:8080 through the policy")

        # 1. Ingress from the remote VTEP by GBP identity.
        set_mark(f, ALLOWED)
        assert connects(f, f.pod_b, d.POD_A, 8080), "identity 100 is allowed to pod A:8080"
        assert not connects(f, f.pod_b, d.POD_A, 9090), "identity 100 is allowed port 8080 only"
        for mark in (OTHER, 0):
            before = denied(f)
            set_mark(f, mark)
            assert not connects(f, f.pod_b, d.POD_A, 8080), f"identity {mark} must be refused"
            after = denied(f)
            t.log(f"pod B as identity {mark} -> pod A:8080 refused; drops {before} -> {after}")
            assert grew(before, after, "policy_denied_ingress"), (before, after)

        # Identity 300 asked the destination (A clear): its own egress refuses; with A set (its
        # node applied its egress) only pod A's ingress is checked.
        before = denied(f)
        set_mark(f, EGRESS_ISOLATED)
        assert not connects(f, f.pod_b, d.POD_A, 8080), "identity 300's egress allows nothing"
        after = denied(f)
        t.log(f"pod B as identity 300, A clear -> pod A:8080 refused; drops {before} -> {after}")
        assert grew(before, after, "policy_denied_remote_egress"), (before, after)
        set_mark(f, EGRESS_ISOLATED | A_BIT)
        assert connects(f, f.pod_b, d.POD_A, 8080), "identity 300 with A set"
        # A forged header: node B (routed cluster b's 10.245.0.0/16) claims cluster c's identity,
        # which pod A's ingress takes: refused by the trust check, not by the tables.
        before = denied(f)
        set_mark(f, FORGED | A_BIT)
        assert not connects(f, f.pod_b, d.POD_A, 8080), "identity 500 is cluster c's: forged from node B"
        after = denied(f)
        t.log(f"pod B claiming cluster c's identity 500 -> pod A:8080 refused; drops {before} -> {after}")
        assert grew(before, after, "policy_forged_identity"), (before, after)
        assert after["policy_denied_ingress"] == before["policy_denied_ingress"], (before, after)

        # 2. Replies of an allowed connection pass; the unsolicited direction does not.
        set_mark(f, OTHER)
        assert connects(f, f.pod_a, d.POD_B, 8080), "pod A -> pod B:8080 and its replies (from identity 200)"
        assert not connects(f, f.pod_b, d.POD_A, 8080), "unsolicited pod B -> pod A"
        before = denied(f)
        assert not connects(f, pod_c, d.POD_A, 8080), "pod C (identity 30) -> pod A: pod A's ingress"
        assert grew(before, denied(f), "policy_denied_ingress")
        assert connects(f, pod_c, d.POD_B, 8080), "pod C is selected by nothing"

        # 3. Egress denied at the source, counted.
        before = denied(f)
        assert not connects(f, f.pod_a, d.POD_B, 9090), "pod A's egress allows pod B:8080 only"
        mid = denied(f)
        assert grew(before, mid, "policy_denied_egress"), (before, mid)
        assert not connects(f, f.pod_a, d.POD_C, 8080), "pod A's egress has no rule for pod C"
        after = denied(f)
        t.log(f"egress refused at the source: {before} -> {after}")
        assert grew(mid, after, "policy_denied_egress"), (mid, after)

        # 4. A held connection stops when the policy no longer allows it; then the policy goes.
        go = topo.workdir / "go"
        held = f.pod_a.spawn(["python3", str(topo.workdir / "client.py"), "hold", d.POD_B, "8080", str(go)],
                             name="held")
        t.wait_for(lambda: topo.log_of_process(held).count("\n") >= 1, 10, "held connection echoed")
        d.send_delta(f, {"generation": 2, "upsert": {"policies": [policy(one_more_peer=True)]}})
        (topo.workdir / "go.0").write_text("go")
        t.wait_for(lambda: topo.log_of_process(held).count("\n") >= 2, 10, "held connection tried again")
        d.send_delta(f, {"generation": 3, "upsert": {"policies": [policy(egress_to_b=False)]}})
        (topo.workdir / "go.1").write_text("go")
        t.wait_for(lambda: topo.log_of_process(held).count("\n") >= 3, 10, "held connection tried a third time")
        lines = topo.log_of_process(held).strip().splitlines()
        t.log(f"held connection: echo before the replacements {lines[0]}, after one that still allows it "
              f"{lines[1]}, after one that does not {lines[2]}")
        assert lines[:3] == ["true", "true", "false"], lines
        assert not connects(f, f.pod_a, d.POD_B, 8080), "a new connection under the replaced policy"
        d.send_delta(f, {"generation": 4, "remove_policies": [d.VNI]})
        assert connects(f, f.pod_b, d.POD_A, 9090), "no policy: everything passes"
        assert connects(f, f.pod_a, d.POD_C, 8080), "no policy: everything passes"
        (topo.workdir / "go.2").write_text("go")
        held.wait(timeout=20)

        # 5. The workers' counters.
        counters = f.counters()
        workers = counters.get("workers", [])
        assert len(workers) == queues, workers
        total = {k: sum(int(w.get(f"policy_{k}", 0)) for w in workers) for k in ("new_flows", "allowed", "denied")}
        drops = denied(f)
        t.log(f"policy counters over {queues} worker(s): {total}; drops {drops}")
        assert total["new_flows"] == total["allowed"] + total["denied"], total
        # Allowed: A->B:8080 (twice), B(100)->A:8080, B(300, A)->A:8080, C->B:8080, the held one;
        # denied: each refused SYN (and its retransmissions: a refused flow gets no entry) of the
        # 11 refused connections.
        assert total["allowed"] >= 6 and total["denied"] >= 10, total
        assert total["denied"] == sum(v for k, v in drops.items()
                                      if k.startswith("policy_denied") or k == "policy_forged_identity"), (total, drops)
        assert drops["policy_conntrack_full"] == 0, drops
        # Per local pod (docs/policy.md, "Drops per policy"): every refusal counted for the pod it
        # was decided for, pod A's port, in its reason; pod C (selected by nothing; A -> C was
        # refused by A's egress) none.
        per_pod = {e["endpoint_id"]: {k: int(e.get(k, 0)) for k in POD_DROPS} for e in counters.get("policy_drops", [])}
        t.log(f"policy drops per pod: {per_pod}")
        assert set(per_pod) >= {"podA/eth0", "podC/eth0"}, per_pod
        assert all(v == 0 for v in per_pod["podC/eth0"].values()), per_pod
        for field, reason in POD_DROPS.items():
            assert per_pod["podA/eth0"][field] > 0, (field, per_pod)
            assert sum(p[field] for p in per_pod.values()) == drops[reason], (field, per_pod, drops)
        if queues > 1:
            handed = sum(int(w.get("service_handed_over", 0)) for w in workers)
            t.log(f"packets handed to the owner worker: {handed}")
        rc, log = f.stop()
        assert rc == 0, log


def main() -> None:
    t.require_root()
    run_bed(1)
    run_bed(2)


if __name__ == "__main__":
    t.main_wrapper(main)
