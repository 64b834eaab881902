#!/usr/bin/env python3
"""LocalFirst through the real forwarder (docs/services.md, "Tests"; issue 36's LocalFirst goal).

The two-cluster bed of vxfed_harness.service_bed (the real dataplanes, vxfedd, FRR's bgpd, etcd):
nodes A of cluster-a and B of cluster-b in CI; VXFED_SERVICE_NODES_PER_CLUSTER=3 runs it on
2 x 3 (A, A2, A3; B, B2, B3). default/infer (UDP 9000 -> target 9000) is LocalFirst with
cluster-a's backends L1 and L2 and cluster-b's R1 (pods on A and B in CI; on 2 x 3 L1 on A2, L2
on A3, R1 on B2), applied with `vxfedctl service apply -f` on each cluster's first node; the
client is a pod on A (on 2 x 3 no backend's node: its flows to L1 and L2 cross the underlay). Each backend is
a UDP echo that answers with its name and logs the source port of every request it receives.
  1. 10,000 new flows (one datagram each from source ports 20000..29999 of the client, so no
     two share a tuple; up to 4 resends of the same flow for an unanswered one): every flow answered,
     100 % of them by L1 or L2 (the replies' names and the backends' own logs: R1 received none
     of them), both local backends used, and A's forwarder counted >= 10,000 new service flows;
     per backend (vxfed-dpctl services) the new flows it gave L1 and L2 and the flows live on each
     are the answers each gave, R1 none; `vxfedctl service get` on A shows L1's at step 4's end.
  2. L2's pod deleted (its echo stopped, CNI DEL = `vxfedctl detach`, cluster-a's slice
     without it): A's forwarder entry is [L1] (R1 still not in it).
  3. A 100 Hz request stream (a new socket per request, so a new flow each) answered by L1 only;
     then L1, the last local backend, deleted the same way: the stream answered by R1, the gap
     between the last L1 answer and the first R1 answer < 1 s (and from the slice apply's
     return < 1 s), printed. The entry falls over at the CNI DEL already (a detached pod is no
     longer reached: docs/services.md, "Serving a VIP"), before the slice is applied.
  4. L1 back (echo, CNI ADD, the slice with it): the stream answered by L1 again, only by L1,
     within 1 s of the apply's return.
  5. L1 deleted again, the slice first (its endpoint removed while the pod still answers), then
     its echo and CNI DEL: the stream answered by R1 within 1 s of the apply's return.
Prints `RESULTS {json}`.
"""
from __future__ import annotations

import json
import time

import vxfed_harness as t
from vxfed_harness.service_bed import (BURST, STREAM, ServiceBed, answers, bed_size, log_path,
                                       received_ports, service_yaml)

PORT = 9000
FLOWS = 10_000
FIRST_SOURCE_PORT = 20_000
GAP_BUDGET = 1.0  # s: the pod-deletion goal

def infer(cluster: str, endpoints: list[str], created: str) -> str:
    return service_yaml("infer", cluster, [(e, True) for e in endpoints], [("UDP", PORT, PORT)],
                        {"vxfed.io/strategy": "LocalFirst"}, created)


def forwarder_backends(bed: ServiceBed, short: str, service: str) -> tuple[dict[str, tuple[int, int]], dict]:
    """The forwarder's view of `service` on node `short` (`vxfed-dpctl services --json`):
    backend address -> (new flows, live flows), and the whole report."""
    response = bed.node(short).dataplane.call("services", "--json")
    report = response.get("service_counters", {})
    report["handled_ns"] = int(response.get("handled_ns", 0))  # the census included
    for s in report.get("services", []):
        if s["id"] == service:
            return ({b["ip"]: (int(b.get("new_flows", 0)), int(b.get("flows", 0))) for b in s.get("backends", [])},
                    report)
    return {}, report


def main() -> None:
    results: dict = {}
    with t.Topology("svclf") as topo:
        bed = ServiceBed(topo, nodes=bed_size((1, 1)))
        pods = {}
        for name, short, host in (("L1", bed.backend_node("a", 0), 5), ("L2", bed.backend_node("a", 1), 6),
                                  ("R1", bed.backend_node("b", 0), 5), ("C", "a", 9)):
            pods[name] = bed.add_pod(short, name.lower(), host)
        servers = {}
        for name in ("L1", "L2", "R1"):
            ns, _ = pods[name]
            servers[name] = bed.start_echo(ns, name, PORT)
        echo_log = {name: log_path(topo, pods[name][0], "echo") for name in servers}
        addr = {name: pods[name][1] for name in pods}
        bed.apply("a", infer("cluster-a", [addr["L1"], addr["L2"]], "2026-12-06T10:00:00Z"), "infer-a")
        bed.apply("b", infer("cluster-b", [addr["R1"]], "2026-12-06T09:00:00Z"), "infer-b")
        t.wait_until(lambda: bed.dataplane_backends("a", "default/infer") == sorted([addr["L1"], addr["L2"]]), 15,
                     "A's forwarder entry [L1, L2]", bed.check)
        t.wait_until(lambda: bed.dataplane_backends("b", "default/infer") == [addr["R1"]], 15,
                     "B's forwarder entry [R1]", bed.check)
        vip = bed.vip("a")
        on = {name: bed.pod_node(name.lower()) for name in pods}
        results["bed"] = {"nodes_per_cluster": list(bed.size), "pods_on": on}
        t.log(f"VIP {vip}; L1 {addr['L1']} on {on['L1']}, L2 {addr['L2']} on {on['L2']} (cluster-a), "
              f"R1 {addr['R1']} on {on['R1']} (cluster-b); the client on {on['C']}")

        # 1. 10,000 new flows while cluster-a has ready backends.
        before = bed.service_counters("a")
        backends_before, _ = forwarder_backends(bed, "a", "default/infer")
        t0 = time.time()
        r = pods["C"][0].run(["python3", "-c", BURST, vip, str(PORT), str(FIRST_SOURCE_PORT), str(FLOWS)], timeout=120)
        took = time.time() - t0
        burst = json.loads(r.stdout.strip().splitlines()[-1])
        after = bed.service_counters("a")
        new_flows = after.get("service_new_flows", 0) - before.get("service_new_flows", 0)
        got = {name: len(received_ports(echo_log[name], FIRST_SOURCE_PORT, FLOWS)) for name in servers}
        distinct = {name: len(set(received_ports(echo_log[name], FIRST_SOURCE_PORT, FLOWS))) for name in servers}
        results["flows"] = {"sent": FLOWS, "seconds": round(took, 1), **burst, "received_by_backend": got,
                            "distinct_source_ports_by_backend": distinct, "forwarder_new_flows": new_flows}
        t.log(f"{FLOWS} new flows in {took:.1f} s: answered {burst['answered']} ({burst['resent']} datagrams resent), "
              f"by {burst['by']}; the backends' own logs: {got} requests, {distinct} source ports; "
              f"A's forwarder: {new_flows} new service flows")
        assert burst["answered"] == FLOWS, results["flows"]
        assert set(burst["by"]) <= {"L1", "L2"}, f"a flow answered by another cluster's backend: {burst['by']}"
        assert got["R1"] == 0, f"R1 (cluster-b) received {got['R1']} of the flows while cluster-a had ready backends"
        assert distinct["L1"] + distinct["L2"] == FLOWS, distinct
        assert min(burst["by"].get("L1", 0), burst["by"].get("L2", 0)) > FLOWS // 4, \
            f"the flows not spread over both local backends: {burst['by']}"
        assert new_flows >= FLOWS, f"A's forwarder counted {new_flows} new service flows for {FLOWS}"
        # The forwarder's counters per backend (GetServiceCounters): the new flows it gave each
        # backend, and the flows live on each now (UDP: 30 s), are the answers each gave.
        backends_after, report = forwarder_backends(bed, "a", "default/infer")
        t.log(f"A's forwarder per backend (vxfed-dpctl services; answered in {report['handled_ns'] / 1e6:.1f} ms):\n" +
              bed.node("a").dataplane.dpctl("services").stdout)
        per_backend = {name: (backends_after.get(addr[name], (0, 0))[0] - backends_before.get(addr[name], (0, 0))[0],
                              backends_after.get(addr[name], (0, 0))[1]) for name in servers}
        results["flows"]["forwarder_by_backend"] = per_backend
        assert report.get("flows_counted"), report
        for name in ("L1", "L2"):
            assert per_backend[name] == (burst["by"][name], burst["by"][name]), \
                f"{name}: the forwarder's (new flows, live flows) {per_backend[name]}, answers {burst['by'][name]}"
        assert per_backend["R1"] == (0, 0), per_backend

        # 2. L2's pod deleted: its echo stops, CNI DEL, the slice without it.
        servers["L2"].kill()
        bed.detach_pod("l2")
        bed.apply("a", infer("cluster-a", [addr["L1"]], "2026-12-06T10:00:00Z"), "infer-a-l1")
        t.wait_until(lambda: bed.dataplane_backends("a", "default/infer") == [addr["L1"]], 10,
                     "A's forwarder entry [L1]", bed.check)

        # 3. The 100 Hz stream; then L1, the last local backend, deleted.
        ns_c = pods["C"][0]
        ns_c.spawn(["python3", "-c", STREAM, vip, str(PORT)], name="stream")
        stream_log = log_path(topo, ns_c, "stream")
        t.wait_until(lambda: len(answers(stream_log)) >= 100, 20, "100 answers of the 100 Hz stream", bed.check)
        local_only = {who for _, who in answers(stream_log)}
        assert local_only == {"L1"}, f"the stream answered by {local_only} while L1 was ready"
        t_delete = time.time()
        servers["L1"].kill()
        bed.detach_pod("l1")
        t_returned = bed.apply("a", infer("cluster-a", [], "2026-12-06T10:00:00Z"), "infer-a-none")
        t.wait_until(lambda: any(w > t_delete and who == "R1" for w, who in answers(stream_log)), 10,
                     "the stream answered by R1", bed.check, interval=0.05)
        time.sleep(0.5)
        got_stream = answers(stream_log)
        last_l = max(w for w, who in got_stream if who == "L1")
        first_r = min(w for w, who in got_stream if who == "R1")
        after_r = [who for w, who in got_stream if w >= first_r]
        results["last_local_deleted"] = {
            "gap_ms": round((first_r - last_l) * 1000), "from_delete_ms": round((first_r - t_delete) * 1000),
            "from_apply_return_ms": round((first_r - t_returned) * 1000),
            "delete_steps_ms": round((t_returned - t_delete) * 1000),
            "answers_before": sum(1 for w, _ in got_stream if w < t_delete)}
        t.log(f"L1 deleted (echo killed, detached, slice applied in {t_returned - t_delete:.3f} s): the stream "
              f"answered by R1 {first_r - t_delete:.3f} s after the deletion began, {first_r - t_returned:.3f} s "
              f"after the apply returned; gap between the last L1 and the first R1 answer {first_r - last_l:.3f} s")
        assert set(after_r) == {"R1"}, f"answers after R1's first: {set(after_r)}"
        assert first_r - last_l < GAP_BUDGET, results["last_local_deleted"]
        assert first_r - t_returned < GAP_BUDGET, results["last_local_deleted"]
        assert bed.dataplane_backends("a", "default/infer") == [addr["R1"]], "A's entry after the deletion"

        # 4. L1 back (a new pod at its address: echo, CNI ADD, the slice with it): new flows local again.
        ns_l1 = pods["L1"][0]
        servers["L1"] = bed.start_echo(ns_l1, "L1", PORT, "echo-again")
        bed.attach_pod("l1")
        t_back = bed.apply("a", infer("cluster-a", [addr["L1"]], "2026-12-06T10:00:00Z"), "infer-a-back")
        t.wait_until(lambda: any(w > t_back and who == "L1" for w, who in answers(stream_log)), 10,
                     "the stream answered by L1 again", bed.check, interval=0.05)
        time.sleep(0.5)
        got_stream = answers(stream_log)
        first_back = min(w for w, who in got_stream if who == "L1" and w > t_back)
        results["local_back_ms"] = round((first_back - t_back) * 1000)
        t.log(f"L1 back: the stream answered by L1 {first_back - t_back:.3f} s after the slice's apply returned")
        assert {who for w, who in got_stream if w > first_back} == {"L1"}, "new flows not all local once L1 is back"
        assert first_back - t_back < GAP_BUDGET, results["local_back_ms"]
        # vxfedd's view of the forwarder's figures (polled with its counters every 2 s; more than
        # 2 s passed since the burst, so no wait here): `vxfedctl service get` on A, L1's new
        # flows at least the burst's (its count survived its leaving the entry and coming back)
        # and its burst flows still live (UDP: 30 s).
        def l1_in_service_get() -> bool:
            for s in bed.node("a").vxfedctl("service", "get")["services"]:
                for b in s.get("backends", []):
                    if b["address"] == addr["L1"] and b.get("flows_known"):
                        return (int(b.get("new_flows", 0)) >= per_backend["L1"][0] and
                                int(b.get("flows", 0)) >= per_backend["L1"][1])
            return False
        t.wait_until(l1_in_service_get, 10, "vxfedctl service get: L1's flows as the forwarder counted", bed.check)
        t.log("vxfedctl service get on A:\n" + bed.node("a").vxfedd.ctl("service", "get").stdout)

        # 5. L1 deleted again, the EndpointSlice first (the endpoint removed while the pod still
        # answers, as Kubernetes marks a terminating pod), then its echo and CNI DEL.
        t_before = time.time()
        t_returned = bed.apply("a", infer("cluster-a", [], "2026-12-06T10:00:00Z"), "infer-a-none-again")
        t.wait_until(lambda: any(w > t_before and who == "R1" for w, who in answers(stream_log)), 10,
                     "the stream answered by R1 after L1's endpoint removed", bed.check, interval=0.05)
        servers["L1"].kill()
        bed.detach_pod("l1")
        time.sleep(0.5)
        got_stream = answers(stream_log)
        first_r = min(w for w, who in got_stream if who == "R1" and w > t_before)
        last_l = max(w for w, who in got_stream if who == "L1")
        results["slice_first"] = {"from_apply_return_ms": round((first_r - t_returned) * 1000),
                                  "gap_ms": round(max(0.0, first_r - last_l) * 1000)}
        t.log(f"L1's endpoint removed from the slice: the stream answered by R1 {first_r - t_returned:.3f} s after "
              f"the apply returned (apply {t_returned - t_before:.3f} s)")
        assert {who for w, who in got_stream if w > first_r} == {"R1"}, "new flows not all remote after the removal"
        assert first_r - t_returned < GAP_BUDGET, results["slice_first"]
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    t.main_wrapper(main)
