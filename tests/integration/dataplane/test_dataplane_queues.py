#!/usr/bin/env python3
"""Multi-queue: vxfed-dataplane with --queues 2 (two workers; the af_packet uplink with two
queue pairs and the two pod sockets each in a PACKET_FANOUT_HASH group, docs/pod-ports.md).
Sixteen UDP flows each way between pod A and pod B; asserts that no datagram of any flow
arrived out of order (iperf3's receiver counts them per stream), that little was lost, and
that both workers carried traffic on the pod side and on the uplink."""

import json
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d

FLOWS = 16


def queue_rx(counters: dict, name: str) -> dict:
    return {int(p.get("queue", 0)): int(p.get("rx_packets", 0)) for p in counters.get("ports", []) if p["name"] == name}


def received_in_order(sender: t.Namespace, sender_ip: str, receiver: t.Namespace, what: str) -> None:
    """iperf3 server in `sender`, client in `receiver` with -R: the client is the receiving
    end and reports each stream's out-of-order count."""
    srv = sender.spawn("iperf3 -s -1", name=f"iperf3-{what}")
    time.sleep(0.5)
    r = receiver.run(f"iperf3 -c {sender_ip} -R -u -b 5M -l 1400 -w 4M -P {FLOWS} -t 3 -J", timeout=60)
    srv.wait(timeout=10)
    end = json.loads(r.stdout)["end"]
    streams = [s["udp"] for s in end["streams"]]
    assert len(streams) == FLOWS and all("out_of_order" in s for s in streams), end
    ooo = sum(int(s["out_of_order"]) for s in streams)
    packets = sum(int(s["packets"]) for s in streams)
    lost = sum(int(s["lost_packets"]) for s in streams)
    t.log(f"{what}: {FLOWS} flows, {packets} datagrams, {ooo} out of order, {lost} lost")
    assert packets > 1000, end["sum"]
    assert ooo == 0, streams
    assert lost * 100 < packets * 2, end["sum"]


def main() -> None:
    t.require_root()
    with t.Topology("dpqueues") as topo:
        f = d.ForwarderTopology(topo, queues=2)
        f.build()
        f.start()
        f.send_snapshot(d.tables(generation=1))
        assert int(f.status()["workers"]) == 2, f.status()
        f.wait_reachable()
        received_in_order(f.pod_a, d.POD_A, f.pod_b, "pod A -> pod B (encap)")
        received_in_order(f.pod_b, d.POD_B, f.pod_a, "pod B -> pod A (decap)")
        c = f.counters()
        pods, uplink = queue_rx(c, "hA"), queue_rx(c, "uplink")
        t.log(f"rx per worker: pod port {pods}, uplink {uplink}")
        for name, per in (("pod port hA", pods), ("uplink", uplink)):
            assert set(per) == {0, 1} and min(per.values()) > 100, (name, per)


if __name__ == "__main__":
    main()
