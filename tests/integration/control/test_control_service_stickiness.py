#!/usr/bin/env python3
"""Stickiness through the real forwarder (docs/services.md, "Tests"; issue 36's Stickiness goal):
a long TCP stream keeps its backend while the service's other backends come and go.

The two-cluster bed of vxfed_harness.service_bed (the real dataplanes, vxfedd, FRR's bgpd, etcd):
nodes A of cluster-a and B of cluster-b in CI; VXFED_SERVICE_NODES_PER_CLUSTER=3 runs it on 2 x 3
with S on B2, X1 on A2, X2 on B3 and the client alone on A. default/stream (TCP 80 -> target
5201) is WeightedRoundRobin without weights (every ready backend alike), first with one backend,
S, a pod on B running `iperf3 -s -1 -J` on 5201; X1 (a pod on A) and X2 (a pod on B) run `iperf3 -s` too,
so a segment of the stream that reached them would be answered with a reset. The client, a pod
on A, runs `iperf3 -c VIP -p 80 -P 4 -t 30 -J` (its control connection and 4 data streams: 5
flows, all picked while S is the only backend). Meanwhile, every 3 s, cluster-a's slice gets X1
or loses it (applied on A) and cluster-b's gets X2 or loses it (applied on B), 8 changes, each
waited for in A's forwarder dump (the entry with 1, 2 or 3 backends). Asserted:
  - iperf3 exits 0 without an error, and every 1 s interval of every stream carried bytes;
  - no reset: TcpEstabResets, TcpOutRsts and TcpAttemptFails stay 0 in the client's and S's
    namespaces, X1 and X2 received no TCP segment (TcpInSegs 0) and accepted no connection;
  - the flows stayed on S: S's iperf3 server received what the client reports sent;
  - A's forwarder: 5 new service flows during the stream (its 5 connections) and 0 re-picked.
Then, to show the changes did move new flows, the entry [S, X1, X2] again and 30 new
connections: some accepted (X1, X2), some refused (S, whose one-off server has exited).
Prints `RESULTS {json}`.
"""
from __future__ import annotations

import json
import shutil
import time

import vxfed_harness as t
from vxfed_harness.service_bed import ServiceBed, bed_size, log_path, service_yaml

PORT = 80
TARGET = 5201
SECONDS = 30
STREAMS = 4
CHANGE_EVERY = 3.0   # s between two changes of the other backends
RATE = "10M"         # per stream: enough to see every interval, little CPU on a shared machine
# N new TCP connections to VIP:PORT: {"accepted": n, "refused": n, other errors by name}.
PROBE = r"""
import json, socket, sys
out = {}
for _ in range(int(sys.argv[3])):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((sys.argv[1], int(sys.argv[2])))
        what = "accepted"
    except ConnectionRefusedError:
        what = "refused"
    except OSError as e:
        what = type(e).__name__
    s.close()
    out[what] = out.get(what, 0) + 1
print(json.dumps(out))
"""
RESET_COUNTERS = ("TcpEstabResets", "TcpOutRsts", "TcpAttemptFails", "TcpInSegs")


def stream(cluster: str, endpoints: list[str], created: str) -> str:
    return service_yaml("stream", cluster, [(e, True) for e in endpoints], [("TCP", PORT, TARGET)], None, created)


def main() -> None:
    if shutil.which("iperf3") is None:
        t.skip("iperf3 missing (apt-get install iperf3)")
    results: dict = {}
    with t.Topology("svcstick") as topo:
        bed = ServiceBed(topo, nodes=bed_size((1, 1)))
        pods = {}
        for name, short, host in (("S", bed.backend_node("b", 0), 5), ("X1", bed.backend_node("a", 0), 6),
                                  ("X2", bed.backend_node("b", 1), 7), ("C", "a", 9)):
            pods[name] = bed.add_pod(short, name.lower(), host)
        on = {name: bed.pod_node(name.lower()) for name in pods}
        results["bed"] = {"nodes_per_cluster": list(bed.size), "pods_on": on}
        addr = {name: pods[name][1] for name in pods}
        ns = {name: pods[name][0] for name in pods}
        server = ns["S"].spawn(["iperf3", "-s", "-1", "-J", "-p", str(TARGET)], name="iperf3-server")
        for name in ("X1", "X2"):
            ns[name].spawn(["iperf3", "-s", "-p", str(TARGET)], name="iperf3-server")
        b_created, a_created = "2026-12-06T09:00:00Z", "2026-12-06T10:00:00Z"
        bed.apply("b", stream("cluster-b", [addr["S"]], b_created), "stream-b-0")
        t.wait_until(lambda: bed.dataplane_backends("a", "default/stream") == [addr["S"]], 15,
                     "A's forwarder entry [S]", bed.check)
        vip = bed.vip("a")
        t.log(f"VIP {vip}:{PORT}; S {addr['S']} (cluster-b, on {on['S']}), X1 {addr['X1']} (on {on['X1']}), "
              f"X2 {addr['X2']} (on {on['X2']}); the client on {on['C']}")
        before = {name: ns[name].nstat(*RESET_COUNTERS) for name in ("C", "S", "X1", "X2")}
        counters_before = bed.service_counters("a")

        client = ns["C"].spawn(["iperf3", "-c", vip, "-p", str(PORT), "-P", str(STREAMS), "-t", str(SECONDS),
                                "-b", RATE, "-i", "1", "-J"], name="iperf3-client")
        started = time.time()
        # The other backends come and go: (the node applying, its cluster's slice, A's entry then).
        steps = [("a", [addr["X1"]], [addr["S"], addr["X1"]]),
                 ("b", [addr["S"], addr["X2"]], [addr["S"], addr["X1"], addr["X2"]]),
                 ("a", [], [addr["S"], addr["X2"]]),
                 ("b", [addr["S"]], [addr["S"]])] * 2
        changes = []
        for i, (short, endpoints, entry) in enumerate(steps):
            time.sleep(max(0.0, started + CHANGE_EVERY * (i + 1) - time.time()))
            cluster, created = ("cluster-a", a_created) if short == "a" else ("cluster-b", b_created)
            bed.apply(short, stream(cluster, endpoints, created), f"stream-{short}-{i + 1}")
            t.wait_until(lambda: bed.dataplane_backends("a", "default/stream") == sorted(entry), 5,
                         f"A's forwarder entry {entry} (change {i + 1})", bed.check, interval=0.05)
            changes.append({"at_s": round(time.time() - started, 1), "backends": len(entry)})
            assert client.poll() is None, f"iperf3 ended after change {i + 1}: {topo.log_of_process(client)[-2000:]}"
        t.log(f"{len(changes)} changes of the other backends in A's forwarder during the stream: {changes}")
        rc = client.wait(timeout=SECONDS + 30)
        server_rc = server.wait(timeout=15)
        report = json.loads(topo.log_of_process(client))
        server_report = json.loads(topo.log_of_process(server))
        after = {name: ns[name].nstat(*RESET_COUNTERS) for name in ("C", "S", "X1", "X2")}
        counters_after = bed.service_counters("a")
        delta = {k: counters_after.get(k, 0) - counters_before.get(k, 0)
                 for k in ("service_new_flows", "service_repicked")}
        kernel = {name: {k: after[name].get(k, 0) - before[name].get(k, 0) for k in RESET_COUNTERS} for name in after}

        intervals = [iv for iv in report.get("intervals", []) if iv["sum"]["seconds"] >= 0.5]
        empty = [(round(iv["sum"]["start"]), s["socket"]) for iv in intervals for s in iv["streams"] if s["bytes"] == 0]
        sent = report["end"]["sum_sent"]["bytes"]
        received_by_s = server_report["end"]["sum_received"]["bytes"]
        results.update({"iperf3_rc": rc, "error": report.get("error"), "intervals": len(intervals),
                        "streams": len(report["end"].get("streams", [])), "empty_stream_intervals": len(empty),
                        "sent_bytes": sent, "received_by_S_bytes": received_by_s,
                        "retransmits": report["end"]["sum_sent"].get("retransmits"), "changes": len(changes),
                        "forwarder": delta, "kernel": kernel})
        t.log(f"iperf3: rc {rc}, {len(intervals)} intervals x {STREAMS} streams, {len(empty)} empty; sent "
              f"{sent} B, S's server received {received_by_s} B; retransmits "
              f"{results['retransmits']}; A's forwarder {delta}; kernel counters {kernel}")
        assert rc == 0 and "error" not in report, results
        assert server_rc == 0 and "error" not in server_report, server_report.get("error")
        assert len(intervals) >= SECONDS - 1 and results["streams"] == STREAMS, results
        assert not empty, f"intervals without bytes (start s, socket): {empty}"
        assert received_by_s == sent > 0, results
        for name in ("C", "S"):
            for k in ("TcpEstabResets", "TcpOutRsts", "TcpAttemptFails"):
                assert kernel[name][k] == 0, f"{name}: {k} {kernel[name][k]}"
        for name in ("X1", "X2"):
            assert kernel[name]["TcpInSegs"] == 0, f"{name} received TCP segments: {kernel[name]}"
            log = log_path(topo, ns[name], "iperf3-server").read_text()
            assert "Accepted connection" not in log, f"{name}'s iperf3 accepted a connection: {log}"
        assert delta["service_new_flows"] == STREAMS + 1, delta
        assert delta["service_repicked"] == 0, delta

        # The changes did move new flows: with [S, X1, X2] again, 30 new connections to the VIP
        # land on X1 and X2 (accepted) and on S (refused: its one-off server has exited).
        bed.apply("a", stream("cluster-a", [addr["X1"]], a_created), "stream-a-probe")
        bed.apply("b", stream("cluster-b", [addr["S"], addr["X2"]], b_created), "stream-b-probe")
        t.wait_until(lambda: bed.dataplane_backends("a", "default/stream") == sorted([addr["S"], addr["X1"], addr["X2"]]),
                     5, "A's forwarder entry [S, X1, X2]", bed.check)
        r = ns["C"].run(["python3", "-c", PROBE, vip, str(PORT), "30"])
        probe = json.loads(r.stdout)
        results["probe_new_connections"] = probe
        t.log(f"30 new connections with [S, X1, X2]: {probe}")
        assert probe.get("accepted", 0) > 0 and probe.get("refused", 0) > 0, probe
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    t.main_wrapper(main)
