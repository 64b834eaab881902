"""Timestamps off the wire: tcpdump in a namespace writes a pcap (headers and the first bytes of
each payload only), and the reader here turns it into packets with the kernel's capture time
(CLOCK_REALTIME, comparable with time.time()). Benchmarks use it to time a burst where it
happens (a BGP UPDATE reaching the reflector, zebra's FPM frames reaching vxfedd, a VXLAN
packet leaving the node) instead of asking a daemon afterwards.

    cap = Capture(ns, "ul0", "tcp port 179", workdir / "rr.pcap")
    cap.start()
    ...
    packets = cap.stop()             # [Packet(ts, src, dst, sport, dport, length, head)]
"""

from __future__ import annotations

import re
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from .proc import PartUnavailable
from .topology import Namespace

LINKTYPE_ETHERNET = 1
LINKTYPE_LINUX_SLL = 113
BGP_HEADER = 19          # marker 16, length 2, type 1
BGP_UPDATE = 2


@dataclass
class Packet:
    ts: float            # capture time, seconds since the epoch
    src: str
    dst: str
    sport: int
    dport: int
    length: int          # transport payload bytes (from the IP header: whole, even if truncated here)
    head: bytes          # the captured start of that payload
    proto: int           # 6 TCP, 17 UDP


class Capture:
    def __init__(self, where: Namespace, iface: str, bpf_filter: str, path: Path, snaplen: int = 200):
        self.ns = where
        self.iface = iface
        self.filter = bpf_filter
        self.path = Path(path)
        self.snaplen = snaplen
        self.proc: Optional[subprocess.Popen] = None
        self.dropped = 0
        where.topo.on_close(f"tcpdump in {where}", self._kill)

    def start(self, timeout: float = 10) -> None:
        # -B: a large kernel buffer, a 130k-route burst must not be dropped; --immediate-mode
        # and -U: each packet read and written as it comes (by default the kernel hands
        # tcpdump a block of packets only once a second, and a stop before that lost them all).
        args = self.ns.prefix() + ["tcpdump", "-i", self.iface, "-n", "-s", str(self.snaplen), "-B", "65536",
                                   "--immediate-mode", "-U", "-w", str(self.path), self.filter]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout
        line = self.proc.stderr.readline()     # "listening on IFACE, ..." once the socket is open
        while "listening on" not in line:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise PartUnavailable("tcpdump", f"did not start on {self.iface} in {self.ns}: {line.strip()}")
            line = self.proc.stderr.readline()

    def stop(self) -> list[Packet]:
        """Stops tcpdump (SIGINT: it flushes) and returns what it captured; `dropped` is the
        kernel's count of packets it could not hand to tcpdump."""
        time.sleep(0.2)     # what the kernel just delivered is written before the signal
        self.proc.send_signal(2)
        _out, err = self.proc.communicate(timeout=30)
        m = re.search(r"(\d+) packets dropped by kernel", err or "")
        self.dropped = int(m.group(1)) if m else 0
        self.report = (err or "").strip()
        self.proc = None
        return list(read_pcap(self.path))

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)


def read_pcap(path: Path) -> Iterator[Packet]:
    """IPv4 TCP and UDP packets of a classic pcap file (microsecond timestamps, little-endian,
    as tcpdump writes it on this machine)."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        return
    magic, _vmaj, _vmin, _tz, _sig, _snap, link = struct.unpack_from("<IHHiIII", data, 0)
    if magic != 0xA1B2C3D4:
        raise ValueError(f"{path}: not a little-endian microsecond pcap (magic {magic:#x})")
    l2 = {LINKTYPE_ETHERNET: 14, LINKTYPE_LINUX_SLL: 16}.get(link)
    if l2 is None:
        raise ValueError(f"{path}: link type {link} not handled")
    off = 24
    while off + 16 <= len(data):
        sec, usec, incl, _orig = struct.unpack_from("<IIII", data, off)
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        pkt = _ipv4(frame, l2, sec + usec / 1e6)
        if pkt is not None:
            yield pkt


def _ipv4(frame: bytes, l2: int, ts: float) -> Optional[Packet]:
    if len(frame) < l2 + 20 or frame[l2 - 2:l2] != b"\x08\x00":
        return None
    ip = frame[l2:]
    ihl = (ip[0] & 0x0F) * 4
    total = struct.unpack_from("!H", ip, 2)[0]
    proto = ip[9]
    src = ".".join(str(b) for b in ip[12:16])
    dst = ".".join(str(b) for b in ip[16:20])
    l4 = ip[ihl:]
    if proto == 6 and len(l4) >= 20:
        hdr = (l4[12] >> 4) * 4
        sport, dport = struct.unpack_from("!HH", l4, 0)
        return Packet(ts, src, dst, sport, dport, total - ihl - hdr, l4[hdr:], proto)
    if proto == 17 and len(l4) >= 8:
        sport, dport = struct.unpack_from("!HH", l4, 0)
        return Packet(ts, src, dst, sport, dport, total - ihl - 8, l4[8:], proto)
    return None


def bgp_types(p: Packet) -> list[int]:
    """The types of the BGP messages that start in this segment's captured bytes, walking from
    its first byte. A segment that starts inside a message (the tail of a long one) yields
    nothing: the walk needs a marker at offset 0."""
    out = []
    off = 0
    while off + BGP_HEADER <= len(p.head) and p.head[off:off + 16] == b"\xff" * 16:
        length = struct.unpack_from("!H", p.head, off + 16)[0]
        out.append(p.head[off + 18])
        if length < BGP_HEADER:
            break
        off += length
    return out


def first_update(packets: list[Packet], src: str, after: float = 0.0) -> Optional[Packet]:
    """The first segment from src (after the time `after`) carrying the start of an UPDATE."""
    for p in packets:
        if p.src == src and p.ts >= after and p.proto == 6 and BGP_UPDATE in bgp_types(p):
            return p
    return None


def last_data(packets: list[Packet], src: str, more_than: int = BGP_HEADER, dst: Optional[str] = None,
              before: float = float("inf")) -> Optional[Packet]:
    """The last segment from src (to dst) with more than `more_than` payload bytes: a BGP
    speaker's last UPDATE bytes once its KEEPALIVEs (19 bytes) are left out."""
    last = None
    for p in packets:
        if p.src == src and (dst is None or p.dst == dst) and p.length > more_than and p.ts < before:
            last = p
    return last


def vxlan_vni(p: Packet) -> int:
    """The VNI of a VXLAN packet (its 8-byte header opens the UDP payload)."""
    return int.from_bytes(p.head[4:7], "big")


def vxlan_inner_dst(p: Packet) -> str:
    """The inner IPv4 destination (after the VXLAN header and the inner Ethernet header)."""
    inner = p.head[8 + 14:]
    return ".".join(str(b) for b in inner[16:20]) if len(inner) >= 20 else ""
