#!/usr/bin/env python3
"""The fault suite's figures (harness/vxfed_harness/faults/analysis.py, stream.py's wire
format) on made-up streams: loss and the longest gap, duplicates, reordering, misdelivery,
when traffic flowed again. No root, no network."""

from __future__ import annotations

import struct

from vxfed_harness.faults import analysis, stream

A, B, C = 0x0AF4000A, 0x0AF5000A, 0x0AF5000B   # 10.244.0.10, 10.245.0.10, 10.245.0.11


def rec(sid: int, seq: int, sent: list[float], at: int, dst: int = B, ip_dst: int | None = None) -> analysis.Reception:
    return analysis.Reception(sid, seq, sent[seq], sent[seq] + 0.0005, ip_dst if ip_dst is not None else dst, dst, at)


def test_wire_format() -> None:
    payload = stream.encode(3, 77, 1234.5, B)
    udp = struct.pack("!HHHH", 40000, stream.PORT, 8 + len(payload), 0)
    ip = bytes([0x45, 0]) + struct.pack("!H", 20 + len(udp) + len(payload)) + bytes(5) + bytes([17]) + bytes(2) \
        + struct.pack("!II", A, B)
    assert stream.decode_ipv4_udp(ip + udp + payload) == (3, 77, 1234.5, B, B)
    assert stream.decode_ipv4_udp(ip + udp[:2] + b"\x00\x01" + udp[4:] + payload) is None, "other port"
    assert stream.decode_ipv4_udp(ip + udp + b"XXXX" + payload[4:]) is None, "other magic"
    assert stream.ip_u32("10.245.0.11") == C


def test_window_figures() -> None:
    sent = [100.0 + i * 0.002 for i in range(1000)]        # 500/s for 2 s
    s = analysis.Stream(0, "A0->B0", B, sent)
    got = [q for q in range(1000) if not 400 <= q < 450]   # 50 lost: a 100 ms hole
    recs = [rec(0, q, sent, B) for q in got]
    recs.insert(10, rec(0, 5, sent, B))                    # a duplicate
    recs[20], recs[21] = recs[21], recs[20]                # one pair swapped
    recs.append(rec(0, 600, sent, C))                      # arrived at the wrong pod
    recs.append(rec(0, 601, sent, B, ip_dst=C))            # carried another pod's address
    streams = {0: s}
    wrong = analysis.assign(streams, recs)
    assert len(wrong) == 2
    w = analysis.window(streams, wrong, 100.0, 102.0)
    assert w.sent == 1000 and w.lost == 50, w
    assert w.duplicates == 1 and w.reordered == 1 and w.misdelivered == 2, w
    assert abs(w.longest_gap_ms - 102.0) < 0.01, w.longest_gap_ms          # seq 399 -> 450: 51 intervals
    assert w.flowing_at == sent[450]
    # A window around the hole only, and one before it: no loss, the sender's spacing.
    assert analysis.window(streams, wrong, sent[420], sent[430]).lost == 10
    quiet = analysis.window(streams, wrong, 100.0, sent[300])
    assert quiet.lost == 0 and quiet.flowing_at is None and abs(quiet.longest_gap_ms - 2.0) < 0.01, quiet


def test_loss_until_the_end() -> None:
    sent = [200.0 + i * 0.01 for i in range(100)]
    s = analysis.Stream(1, "B0->A0", A, sent)
    streams = {1: s}
    analysis.assign(streams, [rec(1, q, sent, A, dst=A) for q in range(60)])
    w = analysis.window(streams, [], 200.0, 201.0)
    assert w.lost == 40 and w.flowing_at is None, w
    assert w.longest_gap_ms >= 390, w.longest_gap_ms


def test_ping_probe() -> None:
    from vxfed_harness.faults import ping_probe
    log = "\n".join(f"[{100 + i * 0.01 + rtt / 1000:.6f}] 64 bytes from 10.245.0.10: icmp_seq={i % 65536} ttl=64 time={rtt} ms"
                    for i, rtt in ((i, 0.5 if i < 65540 else 2.0) for i in range(65530, 65560)) if not 65540 <= i < 65550)
    replies = ping_probe.parse("PING 10.245.0.10 56(84) bytes of data.\n" + log + "\n--- statistics ---")
    assert [r[0] for r in replies][:3] == [65530, 65531, 65532] and replies[-1][0] == 65559, replies[-3:]
    w = ping_probe.window(replies, 100 + 65535 * 0.01, 100 + 65560 * 0.01)
    assert w["lost"] == 10 and w["replies"] == 15, w      # 65540..65549 unanswered, across the wrap
    assert w["rtt_ms"]["max"] == 2.0 and w["rtt_ms"]["p50"] == 2.0, w
    assert ping_probe.window(replies, 0, 1)["replies"] == 0


def test_tcp_probe() -> None:
    from vxfed_harness.faults import tcp_probe
    doc = {"start": {}, "intervals": [{"sum": {"start": i * 0.1, "end": (i + 1) * 0.1,
                                               "bits_per_second": 0.0 if 10 <= i < 15 else 50e6,
                                               "retransmits": 3 if i == 15 else 0}} for i in range(30)]}
    ivs = tcp_probe.parse("iperf3 log\n" + __import__("json").dumps(doc), started=1000.0)
    assert len(ivs) == 30 and ivs[0][0] == 1000.1, ivs[:2]
    w = tcp_probe.window(ivs, 1000.95, 1002.0)
    assert w["intervals"] == 11 and w["mbps_min"] == 0.0 and w["retransmits"] == 3, w
    assert tcp_probe.parse("no json", 0.0) == []


if __name__ == "__main__":
    test_wire_format()
    test_window_figures()
    test_loss_until_the_end()
    test_ping_probe()
    test_tcp_probe()
    print("PASS")
