#!/usr/bin/env python3
"""Global services' load balancing in the real forwarder (docs/conntrack.md, docs/services.md):
a service on VNI 100 with VIP 10.96.0.10 (UDP 53 -> 5353, TCP 80 -> 8080) and two backends,
pod B (remote, behind node B's kernel VTEP) and pod C (local to the dataplane's node). Pod A's
clients connect() their sockets to the VIP, so a reply from any other source than VIP:port is
never received: every answer counted proves the reply was translated back.

With one worker (--queues 1) and with two (--queues 2: the pod sockets' and the uplink's
fanout spread a flow's two directions over the workers, which hand packets to the worker of
the client pod, docs/conntrack.md "One table per worker"):
  - UDP from 40 source ports and TCP from 20 connections: all answered, both backends used;
  - the UDP flows again after a third backend is added (Delta): each keeps its backend, and
    12 TCP connections held open across that Delta still echo;
  - pod C and that third backend removed (Delta): their flows move to pod B;
  - no service_* drop;
  - the workers' service counters in `vxfed-dpctl counters` (WorkerStats.service_*) account
    for those flows and packets, and for hand-overs with two workers only.
"""

import json
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d

VIP = "10.96.0.10"
EXTRA_BACKEND = "10.245.1.99"  # no pod there: only the Maglev table changes

SERVER = r"""
import socket, sys, threading
name = sys.argv[1]
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("0.0.0.0", 5353))
def udp():
    while True:
        data, peer = u.recvfrom(2048)
        u.sendto(name.encode() + b" " + data, peer)
threading.Thread(target=udp, daemon=True).start()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8080))
s.listen(64)
def serve(c):
    c.sendall(name.encode())
    while True:  # then an echo, for connections held across table changes
        data = c.recv(2048)
        if not data:
            break
        c.sendall(data)
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

# Prints {"udp": {sport: backend or null}, "tcp": [backend or null, ...]}.
CLIENT = r"""
import json, socket, sys
vip, mode, first, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
out = {}
if mode == "udp":
    for sport in range(first, first + count):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", sport))
        s.connect((vip, 53))
        s.settimeout(1.0)
        got = None
        for attempt in range(3):
            s.send(b"q%d" % sport)
            try:
                got = s.recv(2048).split()[0].decode()
                break
            except socket.timeout:
                pass
        out[sport] = got
        s.close()
elif mode == "tcp":
    for i in range(count):
        try:
            c = socket.create_connection((vip, 80), timeout=2)
            out[i] = c.recv(64).decode() or None
            c.close()
        except OSError:
            out[i] = None
else:  # "hold": `count` connections held open; after the file argv[5] appears, each echoes once
    import os, time
    conns = []
    for i in range(count):
        c = socket.create_connection((vip, 80), timeout=2)
        conns.append((c, c.recv(64).decode()))
    print(json.dumps({i: name for i, (c, name) in enumerate(conns)}), flush=True)
    while not os.path.exists(sys.argv[5]):
        time.sleep(0.05)
    for i, (c, name) in enumerate(conns):
        try:
            c.sendall(b"still-%d" % i)
            out[i] = c.recv(64).decode() == "still-%d" % i
        except OSError:
            out[i] = False
    print(json.dumps(out), flush=True)
print(json.dumps(out))
"""


def service(backends: list[str]) -> dict:
    return {"id": "default/web", "vni": d.VNI, "vip": VIP,
            "ports": [{"protocol": 17, "port": 53, "target_port": 5353}, {"protocol": 6, "port": 80, "target_port": 8080}],
            "backends": [{"ip": b, "weight": 1} for b in backends]}


def snapshot() -> dict:
    s = d.tables(generation=1)
    s["tables"]["endpoints"].append(d.pod_c_endpoint())
    s["tables"]["services"] = [service([d.POD_B, d.POD_C])]
    return s


def client(f: d.ForwarderTopology, mode: str, first: int, count: int) -> dict:
    path = f.topo.workdir / "client.py"
    path.write_text(CLIENT)
    r = f.pod_a.run(["python3", str(path), VIP, mode, str(first), str(count)], timeout=60)
    return json.loads(r.stdout)


def run_bed(queues: int) -> None:
    with t.Topology(f"dpsvc{queues}") as topo:
        f = d.ForwarderTopology(topo, queues=queues)
        f.build()
        pod_c = d.add_pod_c(f)
        f.start()
        f.send_snapshot(snapshot())
        f.wait_reachable()
        server = topo.workdir / "server.py"
        server.write_text(SERVER)
        f.pod_b.spawn(["python3", str(server), "B"], name="server-B")
        pod_c.spawn(["python3", str(server), "C"], name="server-C")
        time.sleep(0.5)
        dump = f.call("dump")["tables"]["tables"]
        assert [s["vip"] for s in dump["services"]] == [VIP], dump.get("services")

        udp = client(f, "udp", 40000, 40)
        tcp = client(f, "tcp", 0, 20)
        t.log(f"UDP backends {sorted(udp.values(), key=str)}; TCP {sorted(tcp.values(), key=str)}")
        assert all(v in ("B", "C") for v in udp.values()), udp
        assert all(v in ("B", "C") for v in tcp.values()), tcp
        assert set(udp.values()) == {"B", "C"} and set(tcp.values()) == {"B", "C"}, (udp, tcp)

        # TCP connections held open across the Delta below.
        path = topo.workdir / "client.py"
        go = topo.workdir / "go"
        held = f.pod_a.spawn(["python3", str(path), VIP, "hold", "0", "12", str(go)], name="held-tcp")
        t.wait_for(lambda: topo.log_of_process(held).count("\n") >= 1, 10, "held TCP connections open")

        # A backend added: every established flow keeps its backend.
        d.send_delta(f, {"generation": 2, "upsert": {"services": [service([d.POD_B, d.POD_C, EXTRA_BACKEND])]}})
        again = client(f, "udp", 40000, 40)
        assert again == udp, f"flows moved when a backend was added: {udp} -> {again}"
        go.write_text("go")
        held.wait(timeout=20)
        lines = topo.log_of_process(held).strip().splitlines()
        echoed = json.loads(lines[1])
        t.log(f"held TCP connections on {json.loads(lines[0])}: echo after the Delta {echoed}")
        assert len(echoed) == 12 and all(echoed.values()), lines

        # Pod C (and the extra backend) removed from the service: their flows move to pod B.
        d.send_delta(f, {"generation": 3, "upsert": {"services": [service([d.POD_B])]}})
        moved = client(f, "udp", 40000, 40)
        assert all(v == "B" for v in moved.values()), moved
        drops = {k: v for k, v in d.drop_map(f.counters()).items() if v}
        t.log(f"after removal: all {len(moved)} flows answered by B; drops {drops}")
        assert not any(k.startswith("service_") for k in drops), drops
        if queues > 1:
            # Replies came in on both workers (the uplink's fanout), so those on the worker that
            # does not own pod A were answered only through the hand-over.
            per_queue = {int(p.get("queue", 0)): int(p.get("rx_packets", 0))
                         for p in f.counters().get("ports", []) if p["name"] == "uplink"}
            t.log(f"uplink rx per worker: {per_queue}")
            assert set(per_queue) == set(range(queues)) and min(per_queue.values()) > 0, per_queue
        check_service_counters(f.counters(), queues, udp_flows=len(udp), tcp_flows=len(tcp) + 12,
                               repicked_at_least=sum(1 for v in udp.values() if v == "C"))
        check_backend_counters(f, len(moved))


def check_backend_counters(f, udp_flows: int) -> None:
    """GetServiceCounters (vxfed-dpctl services): the new flows per backend add up to the
    workers' new service flows (both are counted where a backend is picked); every worker's
    census finished, and it finds the UDP flows (30 s) all on pod B now; pod C and the extra
    backend are out of the entry, C with the flows it was given."""
    report = f.call("services", "--json")["service_counters"]
    workers_new = sum(int(w.get("service_new_flows", 0)) for w in f.counters().get("workers", []))
    [svc] = report["services"]
    backends = {b["ip"]: b for b in svc["backends"]}
    t.log("per backend: " + ", ".join(f"{ip} new {b.get('new_flows', 0)} live {b.get('flows', 0)} "
                                       f"in entry {b.get('in_entry', False)}" for ip, b in backends.items()))
    assert report.get("flows_counted") and not report.get("flows_truncated"), report
    assert sum(int(b.get("new_flows", 0)) for b in backends.values()) == workers_new == int(svc["new_flows"]), report
    assert backends[d.POD_B].get("in_entry") and int(backends[d.POD_B].get("flows", 0)) >= udp_flows, report
    assert not backends[d.POD_C].get("in_entry") and int(backends[d.POD_C].get("new_flows", 0)) > 0, report
    assert not backends.get(EXTRA_BACKEND, {}).get("in_entry"), report


def check_service_counters(counters: dict, queues: int, udp_flows: int, tcp_flows: int,
                           repicked_at_least: int) -> None:
    """WorkerStats' service counters, summed over the workers, against what the clients did:
    every UDP flow sent 3 times (first run, after the added backend, after the removal), each
    answered; every TCP connection sent at least SYN, ACK and FIN, and got at least SYN-ACK and
    the server's name. The flows on pod C (UDP, still tracked: 30 s) were re-picked."""
    workers = counters.get("workers", [])
    assert len(workers) == queues, workers
    total = {k: sum(int(w.get(f"service_{k}", 0)) for w in workers)
             for k in ("new_flows", "translated", "replies_translated", "repicked", "handed_over")}
    t.log(f"service counters over {queues} worker(s): {total}")
    assert total["new_flows"] >= udp_flows + tcp_flows, total
    assert total["translated"] >= 3 * udp_flows + 3 * tcp_flows, total
    assert total["replies_translated"] >= 3 * udp_flows + 2 * tcp_flows, total
    assert total["repicked"] >= max(1, repicked_at_least), total
    if queues > 1:
        assert total["handed_over"] > 0, total
    else:
        assert total["handed_over"] == 0, total


def main() -> None:
    t.require_root()
    run_bed(1)
    run_bed(2)


if __name__ == "__main__":
    main()
