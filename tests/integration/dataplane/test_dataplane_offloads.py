#!/usr/bin/env python3
"""Pods with their offloads on (docs/pod-ports.md: vnet headers): on the forwarder topology at
underlay MTU 9000 and 1500, with node B's kernel leaving the inner checksums of what it sends
pending, TCP and UDP iperf3 runs in both directions get through, the pods' kernels (which verify
every checksum they receive) count no checksum error, the dataplane refuses no vnet header, and
the frames crossing the pod's port are super-packets: pod A's TCP arrives whole (average frame
above the pod MTU), leaves on the uplink as UDP super-packets (--uplink-gso: average packet on the
uplink veth above the MTU, the peer's kernel VXLAN taking them apart), and what the dataplane
hands pod A is coalesced. At MTU 9000, pod B advertises MSS 88 (a route's advmss): pod A's
super-packets then carry hundreds of segments, more than one UDP super-packet may (the kernel
refuses more than 128), and a 4 MiB upload still goes through with no drop on the uplink and
every segment counted as an uplink frame (issue 37, item 12)."""

import json
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d


def csum_errors(ns) -> int:
    """InCsumErrors of TCP and UDP in the namespace (/proc/net/snmp: a header line, then values)."""
    lines = ns.run("cat /proc/net/snmp").stdout.splitlines()
    total = 0
    for head, values in zip(lines, lines[1:]):
        name = head.split(":")[0]
        if name in ("Tcp", "Udp") and values.startswith(name + ":"):
            fields = dict(zip(head.split()[1:], values.split()[1:]))
            total += int(fields["InCsumErrors"])
    return total


def iperf(f, udp: bool, reverse: bool, pod_mtu: int) -> dict:
    srv = f.pod_b.spawn("iperf3 -s -1", name="iperf3-server")
    time.sleep(0.5)
    opts = f"-u -b 40M -l {pod_mtu - 28} -t 1" if udp else "-t 2"
    r = f.pod_a.run(f"iperf3 -c {d.POD_B} {opts} -J" + (" -R" if reverse else ""), timeout=60)
    srv.wait(timeout=10)
    end = json.loads(r.stdout)["end"]
    return end["sum"] if udp else end["sum_received"]


def port(counters: dict, field: str) -> int:
    return d.port_sum(counters, "hA", field)


def uplink_tx(f) -> tuple[int, int]:
    """Packets and bytes node A's kernel sent on the uplink veth (a UDP super-packet counts once)."""
    def read(what: str) -> int:
        return int(f.node_a.run(f"cat /sys/class/net/up0/statistics/tx_{what}").stdout)
    return read("packets"), read("bytes")


# Reads a connection on port 5301 to its end and answers how many bytes came.
MSS_SINK = ("import socket; s = socket.create_server(('', 5301)); c, _ = s.accept(); "
            "c.sendall(str(sum(len(b) for b in iter(lambda: c.recv(1 << 16), b''))).encode())")
# Sends `size` bytes to the sink, ends its side and prints the sink's count: it returns once
# every byte has arrived.
MSS_SOURCE = ("import socket, sys; c = socket.create_connection((sys.argv[1], 5301)); "
              "c.sendall(bytes(int(sys.argv[2]))); c.shutdown(socket.SHUT_WR); print(c.recv(64).decode())")


def small_mss_upload(f) -> None:
    """4 MiB from pod A to pod B, which advertises MSS 88: all of it arrives, nothing is dropped
    on the uplink, and the uplink's tx_packets counts the frames (one per 76 bytes of payload,
    88 less the timestamps), not the super-packets."""
    size = 4 << 20
    f.pod_b.run(f"ip route add {d.POD_A}/32 via {d.GATEWAY_B} dev eth0 advmss 88")
    c0 = f.counters()
    sink = f.pod_b.spawn(["python3", "-c", MSS_SINK], name="mss-sink")
    time.sleep(0.5)
    start = time.monotonic()
    r = f.pod_a.run(["python3", "-c", MSS_SOURCE, d.POD_B, str(size)], timeout=120)
    took = time.monotonic() - start
    sink.wait(timeout=10)
    f.pod_b.run(f"ip route del {d.POD_A}/32")
    c1 = f.counters()
    drops = {k: v - d.drop_map(c0).get(k, 0) for k, v in d.drop_map(c1).items()}
    frames = d.port_sum(c1, "uplink", "tx_packets") - d.port_sum(c0, "uplink", "tx_packets")
    uplink_drops = d.port_sum(c1, "uplink", "drops") - d.port_sum(c0, "uplink", "drops")
    t.log(f"MSS 88: 4 MiB upload arrived in {took:.2f} s; uplink {frames} frames sent, {uplink_drops} dropped "
          f"(tx_full {drops.get('tx_full', 0)}, tx_refused {drops.get('tx_refused', 0)})")
    assert int(r.stdout.strip()) == size, r.stdout
    assert uplink_drops == 0 and drops.get("tx_full", 0) == 0 and drops.get("tx_refused", 0) == 0, drops
    assert frames >= size // 76, (frames, size // 76)


def one_mtu(mtu: int) -> None:
    with t.Topology(f"dpoff{mtu}") as topo:
        f = d.ForwarderTopology(topo, mtu=mtu, peer_partial_checksums=True)
        f.build()
        f.start()
        f.send_snapshot(d.tables())
        f.wait_reachable()
        feats = f.pod_a.run("ethtool -k eth0").stdout
        assert "tcp-segmentation-offload: on" in feats and "tx-checksumming: on" in feats, feats
        errors0 = csum_errors(f.pod_a) + csum_errors(f.pod_b)
        for udp in (False, True):
            for reverse in (False, True):
                c0, u0 = f.counters(), uplink_tx(f)
                s = iperf(f, udp, reverse, f.pod_mtu)
                c1, u1 = f.counters(), uplink_tx(f)
                way = "B -> A" if reverse else "A -> B"
                rx = port(c1, "rx_packets") - port(c0, "rx_packets")
                tx = port(c1, "tx_packets") - port(c0, "tx_packets")
                rx_avg = (port(c1, "rx_bytes") - port(c0, "rx_bytes")) / max(rx, 1)
                tx_avg = (port(c1, "tx_bytes") - port(c0, "tx_bytes")) / max(tx, 1)
                if udp:
                    t.log(f"MTU {mtu} UDP {way}: {s['lost_packets']}/{s['packets']} lost")
                    assert s["packets"] > 100 and s["lost_percent"] < 10, s  # a loaded machine loses some
                else:
                    gbps = s["bits_per_second"] / 1e9
                    t.log(f"MTU {mtu} TCP {way}: {gbps:.2f} Gbit/s; pod A's port: {rx} frames in (average "
                          f"{rx_avg:.0f} B), {tx} out (average {tx_avg:.0f} B)")
                    assert s["bytes"] > 1_000_000, s
                    # Super-packets both ways: the pod's TCP whole, the peer's segments coalesced.
                    if reverse:
                        assert tx_avg > f.pod_mtu + 14, (tx, tx_avg)
                    else:
                        assert rx_avg > f.pod_mtu + 14, (rx, rx_avg)
                        # ... and on to the uplink as UDP super-packets (--uplink-gso), which the
                        # peer's kernel VXLAN takes apart: more than one frame's bytes per packet.
                        up_pkts, up_bytes = u1[0] - u0[0], u1[1] - u0[1]
                        t.log(f"MTU {mtu} TCP A -> B: uplink veth sent {up_pkts} packets, average "
                              f"{up_bytes / max(up_pkts, 1):.0f} B")
                        assert up_bytes / max(up_pkts, 1) > mtu + 14, (up_pkts, up_bytes)
        if mtu == 9000:
            small_mss_upload(f)
        errors = csum_errors(f.pod_a) + csum_errors(f.pod_b) - errors0
        assert errors == 0, f"{errors} checksum errors in the pods"
        drops = d.drop_map(f.counters())
        for bad in ("bad_vnet_header", "unreadable_frame", "frame_too_big", "pod_frame_too_big"):
            assert drops[bad] == 0, (bad, drops)
        rc, log = f.stop()
        assert rc == 0, log


def main() -> None:
    t.require_root()
    for mtu in (9000, 1500):
        one_mtu(mtu)


if __name__ == "__main__":
    t.main_wrapper(main)
