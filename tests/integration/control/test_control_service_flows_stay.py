#!/usr/bin/env python3
"""Flows that moved stay where they are when the local side returns, through the real forwarder
(docs/services.md, "Flows stay"; issue 36 item 3: "... and back when the local / primary side
returns (flows that moved stay where they are)").

The two-cluster bed of vxfed_harness.service_bed (the real dataplanes, vxfedd, FRR's bgpd, etcd):
nodes A of cluster-a and B of cluster-b in CI; VXFED_SERVICE_NODES_PER_CLUSTER=3 runs it on 2 x 3
with L on A2, R on B2 and the client alone on A. default/keep is LocalFirst with two ports: TCP 80 ->
5201 (iperf3) and TCP 81 -> 7000 (a server that answers a connection with its name and closes).
Backends: L (a pod on A, cluster-a: the client's own cluster) and R (a pod on B, cluster-b); both
run `iperf3 -s` (R's one-off, -1 -J, to count what it received) and the name server. The client
C is a pod on A.
  1. cluster-a's slice has L not ready: A's entry gives new flows to [R] and keeps none. The
     client starts `iperf3 -c VIP -p 80 -P 2 -t 15 -b 10M` (its control connection and 2 data
     streams: 3 flows, all on R); 10 new connections to VIP:81 are all answered by R.
  2. ~5 s into the stream, L marked ready (cluster-a's slice applied on A): A's entry gives new
     flows to [L] and keeps [R] at weight 0 (the time from the apply's return printed);
     `vxfedctl service get` on A says R is "kept"; 20 new connections to VIP:81 are all answered
     by L.
  3. The stream ends: iperf3 exit 0, bytes in every 1 s interval of every stream, R's server
     received what the client sent, no reset (TcpEstabResets, TcpOutRsts, TcpAttemptFails 0 in
     C's and R's namespaces; TcpOutRsts 0 in L's, whose iperf3 accepted nothing), A's forwarder
     counted 3 + 30 new service flows and 0 re-picked.
  4. R marked not ready in cluster-b's slice (applied on B): it leaves A's entry (kept no more).
Without R kept, step 2 re-picks the stream's flows onto L, whose iperf3 answers them with resets.
Prints `RESULTS {json}`.
"""
from __future__ import annotations

import json
import shutil
import time

import vxfed_harness as t
from vxfed_harness.service_bed import ServiceBed, bed_size, log_path, service_yaml

IPERF_PORT, IPERF_TARGET = 80, 5201
NAME_PORT, NAME_TARGET = 81, 7000
SECONDS = 15
STREAMS = 2
RATE = "10M"         # per stream: every interval visible, little CPU on a shared machine
RETURN_AT = 5.0      # s into the stream when L is marked ready
PROBES_BEFORE, PROBES_AFTER = 10, 20
ENTRY_BUDGET = 2.0   # s from the apply's return to A's entry changed (a watch, a compile, a Delta)
RESET_COUNTERS = ("TcpEstabResets", "TcpOutRsts", "TcpAttemptFails", "TcpInSegs")
CREATED = {"cluster-a": "2026-12-06T10:00:00Z", "cluster-b": "2026-12-06T09:00:00Z"}

# argv: name, port. Answers every TCP connection with its name, then closes.
NAME_SERVER = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[2])))
s.listen(64)
while True:
    c, _ = s.accept()
    c.sendall(sys.argv[1].encode())
    c.close()
"""

# argv: vip, port, n. n new TCP connections, each read to its end: {"<name>": count, errors by name}.
PROBE = r"""
import json, socket, sys
out = {}
for _ in range(int(sys.argv[3])):
    try:
        s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
        data = b""
        while True:
            chunk = s.recv(64)
            if not chunk:
                break
            data += chunk
        s.close()
        what = data.decode() or "empty"
    except OSError as e:
        what = type(e).__name__
    out[what] = out.get(what, 0) + 1
print(json.dumps(out))
"""


def keep(cluster: str, endpoints: list[tuple[str, bool]]) -> str:
    return service_yaml("keep", cluster, endpoints, [("TCP", IPERF_PORT, IPERF_TARGET), ("TCP", NAME_PORT, NAME_TARGET)],
                        {"vxfed.io/strategy": "LocalFirst"}, CREATED[cluster])


def main() -> None:
    if shutil.which("iperf3") is None:
        t.skip("iperf3 missing (apt-get install iperf3)")
    results: dict = {}
    with t.Topology("svcstay") as topo:
        bed = ServiceBed(topo, nodes=bed_size((1, 1)))
        pods = {name: bed.add_pod(short, name.lower(), host) for name, short, host in
                (("L", bed.backend_node("a", 0), 5), ("R", bed.backend_node("b", 0), 5), ("C", "a", 9))}
        results["bed"] = {"nodes_per_cluster": list(bed.size),
                          "pods_on": {name: bed.pod_node(name.lower()) for name in pods}}
        t.log(f"pods on nodes: {results['bed']['pods_on']}")
        addr = {name: ip for name, (_, ip) in pods.items()}
        ns = {name: n for name, (n, _) in pods.items()}
        server = ns["R"].spawn(["iperf3", "-s", "-1", "-J", "-p", str(IPERF_TARGET)], name="iperf3-server")
        ns["L"].spawn(["iperf3", "-s", "-p", str(IPERF_TARGET)], name="iperf3-server")
        for name in ("L", "R"):
            ns[name].spawn(["python3", "-c", NAME_SERVER, name, str(NAME_TARGET)], name="names")
            for port in (IPERF_TARGET, NAME_TARGET):
                t.wait_until(lambda: ns[name].run(["ss", "-Hltn", f"sport = :{port}"]).stdout.strip(), 10,
                             f"{name} listening on {port}", bed.check, interval=0.05)

        def entry() -> tuple:
            return bed.dataplane_backends("a", "default/keep"), bed.dataplane_backends("a", "default/keep", kept=True)

        # 1. No local backend ready: R takes every new flow.
        bed.apply("b", keep("cluster-b", [(addr["R"], True)]), "keep-b")
        bed.apply("a", keep("cluster-a", [(addr["L"], False)]), "keep-a-not-ready")
        t.wait_until(lambda: entry() == ([addr["R"]], []), 15, "A's entry: new flows to [R], none kept", bed.check)
        vip = bed.vip("a")
        t.log(f"VIP {vip}: L {addr['L']} (cluster-a, on A, not ready), R {addr['R']} (cluster-b, on B)")
        before = {name: ns[name].nstat(*RESET_COUNTERS) for name in ns}
        counters_before = bed.service_counters("a")

        client = ns["C"].spawn(["iperf3", "-c", vip, "-p", str(IPERF_PORT), "-P", str(STREAMS), "-t", str(SECONDS),
                                "-b", RATE, "-i", "1", "-J"], name="iperf3-client")
        started = time.time()

        def probe(n: int) -> dict:
            return json.loads(ns["C"].run(["python3", "-c", PROBE, vip, str(NAME_PORT), str(n)], timeout=60).stdout)

        results["probe_before"] = probe(PROBES_BEFORE)
        t.log(f"{PROBES_BEFORE} new connections before L's return: {results['probe_before']}")
        assert results["probe_before"] == {"R": PROBES_BEFORE}, results["probe_before"]

        # 2. L ready: new flows to L, R kept at weight 0 for the stream's flows.
        time.sleep(max(0.0, started + RETURN_AT - time.time()))
        assert client.poll() is None, f"iperf3 ended early: {topo.log_of_process(client)[-2000:]}"
        returned = bed.apply("a", keep("cluster-a", [(addr["L"], True)]), "keep-a-ready")
        t.wait_until(lambda: entry() == ([addr["L"]], [addr["R"]]), 10, "A's entry: new flows to [L], [R] kept",
                     bed.check, interval=0.02)
        results["entry_changed_after_apply_ms"] = round((time.time() - returned) * 1000)
        listing = bed.a.vxfedctl("service", "get")
        shown = {b["address"]: b for s in listing["services"] if s["name"] == "keep" for b in s["backends"]}
        results["service_get"] = {a: {k: shown[a].get(k) for k in ("state", "allowed", "weight", "kept")}
                                  for a in (addr["L"], addr["R"])}
        text = bed.a.vxfedd.ctl("service", "get").stdout
        t.log(f"L ready: A's entry changed {results['entry_changed_after_apply_ms']} ms after the apply returned; "
              f"`vxfedctl service get` on A:\n{text}")
        assert shown[addr["R"]].get("kept") is True and not shown[addr["R"]].get("allowed"), shown[addr["R"]]
        assert shown[addr["L"]].get("allowed") is True and not shown[addr["L"]].get("kept"), shown[addr["L"]]
        r_row = next(line for line in text.splitlines() if f" {addr['R']} " in f" {line} ")
        assert " kept " in f" {r_row} " and "kept for open flows" in text, text
        results["probe_after"] = probe(PROBES_AFTER)
        t.log(f"{PROBES_AFTER} new connections after L's return: {results['probe_after']}")
        assert results["probe_after"] == {"L": PROBES_AFTER}, results["probe_after"]
        assert results["entry_changed_after_apply_ms"] < ENTRY_BUDGET * 1000, results

        # 3. The stream ends where it began.
        rc = client.wait(timeout=SECONDS + 30)
        server_rc = server.wait(timeout=15)
        report = json.loads(topo.log_of_process(client))
        server_report = json.loads(topo.log_of_process(server))
        after = {name: ns[name].nstat(*RESET_COUNTERS) for name in ns}
        counters_after = bed.service_counters("a")
        forwarder = {k: counters_after.get(k, 0) - counters_before.get(k, 0)
                     for k in ("service_new_flows", "service_repicked")}
        kernel = {name: {k: after[name].get(k, 0) - before[name].get(k, 0) for k in RESET_COUNTERS} for name in ns}
        intervals = [iv for iv in report.get("intervals", []) if iv["sum"]["seconds"] >= 0.5]
        empty = [(round(iv["sum"]["start"]), s["socket"]) for iv in intervals for s in iv["streams"] if s["bytes"] == 0]
        sent = report["end"]["sum_sent"]["bytes"]
        received_by_r = server_report["end"]["sum_received"]["bytes"]
        results.update(iperf3_rc=rc, error=report.get("error"), intervals=len(intervals),
                       streams=len(report["end"].get("streams", [])), empty_stream_intervals=len(empty),
                       sent_bytes=sent, received_by_R_bytes=received_by_r,
                       retransmits=report["end"]["sum_sent"].get("retransmits"), forwarder=forwarder, kernel=kernel)
        t.log(f"iperf3: rc {rc}, {len(intervals)} intervals x {STREAMS} streams, {len(empty)} empty; sent {sent} B, "
              f"R's server received {received_by_r} B; retransmits {results['retransmits']}; A's forwarder "
              f"{forwarder}; kernel counters {kernel}")
        assert rc == 0 and "error" not in report, results
        assert server_rc == 0 and "error" not in server_report, server_report.get("error")
        assert len(intervals) >= SECONDS - 1 and results["streams"] == STREAMS, results
        assert not empty, f"intervals without bytes (start s, socket): {empty}"
        assert received_by_r == sent > 0, results
        for name in ("C", "R"):
            for k in ("TcpEstabResets", "TcpOutRsts", "TcpAttemptFails"):
                assert kernel[name][k] == 0, f"{name}: {k} {kernel[name][k]}"
        assert kernel["L"]["TcpOutRsts"] == 0, f"L sent resets: {kernel['L']}"
        l_log = log_path(topo, ns["L"], "iperf3-server").read_text()
        assert "Accepted connection" not in l_log, f"L's iperf3 accepted a connection: {l_log}"
        assert forwarder["service_new_flows"] == STREAMS + 1 + PROBES_BEFORE + PROBES_AFTER, forwarder
        assert forwarder["service_repicked"] == 0, forwarder

        # 4. A kept backend that goes away leaves the entry.
        gone = bed.apply("b", keep("cluster-b", [(addr["R"], False)]), "keep-b-not-ready")
        t.wait_until(lambda: entry() == ([addr["L"]], []), 10, "A's entry without R", bed.check, interval=0.02)
        results["not_ready_left_after_apply_ms"] = round((time.time() - gone) * 1000)
        listing = bed.a.vxfedctl("service", "get")
        r_now = next(b for s in listing["services"] if s["name"] == "keep" for b in s["backends"]
                     if b["address"] == addr["R"])
        t.log(f"R not ready: out of A's entry {results['not_ready_left_after_apply_ms']} ms after the apply returned; "
              f"service get says {r_now}")
        assert r_now.get("state") == "not-ready" and not r_now.get("kept"), r_now
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    t.main_wrapper(main)
