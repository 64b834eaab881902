"""Synthetic frames for the testpmd comparison, written as a pcap (no scapy needed).

decap: VXLAN from the remote VTEP to ours (outer 50 bytes + a 64-byte inner frame = 114 bytes,
       or a jumbo inner frame), 256 flows (inner UDP source ports; outer UDP source port too).
encap: frames a pod sends to its gateway toward a remote pod (64 bytes or jumbo), 256 flows.
"""

from __future__ import annotations

import socket
import struct

VNI = 100
VTEP_LOCAL = "198.18.0.1"
VTEP_REMOTE = "198.18.0.2"
POD_LOCAL = "10.244.1.2"
POD_LOCAL_MAC = bytes.fromhex("02000af40102")
POD_REMOTE = "10.245.1.2"
GATEWAY_MAC = bytes.fromhex("020000000101")
REMOTE_MAC = bytes.fromhex("020000000202")
# The uplink's own MAC: decapsulated frames must be addressed to it (the forwarder drops
# unicast to any other MAC as not_our_mac). In decap the uplink is net_pcap0, and DPDK's pcap
# PMD gives its devices the fixed address 02:70:63:61:70:NN ("\x02pcap", NN the device's
# index), checked with dpdk-testpmd ("Port 0: 02:70:63:61:70:00").
UPLINK_MAC = bytes.fromhex("027063617000")


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src: str, dst: str, proto: int, payload: bytes, df: bool = True) -> bytes:
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000 if df else 0, 64, proto, 0,
                      socket.inet_aton(src), socket.inet_aton(dst))
    hdr = hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:]
    return hdr + payload


def udp(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def ether(dst: bytes, src: bytes, payload: bytes) -> bytes:
    return dst + src + b"\x08\x00" + payload


def pod_frame(flow: int, frame_bytes: int) -> bytes:
    payload = bytes(max(0, frame_bytes - 14 - 20 - 8))
    return ether(GATEWAY_MAC, POD_LOCAL_MAC, ipv4(POD_LOCAL, POD_REMOTE, 17, udp(10000 + flow, 5001, payload)))


def vxlan_frame(flow: int, inner_bytes: int) -> bytes:
    inner_payload = bytes(max(0, inner_bytes - 14 - 20 - 8))
    inner = ether(GATEWAY_MAC, REMOTE_MAC, ipv4(POD_REMOTE, POD_LOCAL, 17, udp(10000 + flow, 5001, inner_payload)))
    vx = struct.pack("!BBHI", 0x08, 0, 0, VNI << 8) + inner
    return ether(UPLINK_MAC, REMOTE_MAC, ipv4(VTEP_REMOTE, VTEP_LOCAL, 17, udp(49152 + flow * 61 % 16384, 4789, vx)))


def write_pcap(path: str, frames: list[bytes]) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for fr in frames:
            f.write(struct.pack("<IIII", 0, 0, len(fr), len(fr)))
            f.write(fr)


def write(path: str, direction: str, frame_bytes: int, flows: int = 256) -> None:
    make = vxlan_frame if direction == "decap" else pod_frame
    write_pcap(path, [make(i, frame_bytes) for i in range(flows)])
