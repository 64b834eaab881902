"""The fault suite's probe, run inside a pod: a fixed-rate UDP stream to a peer pod with a
sequence number and a send timestamp in every datagram, and a receiver that sees every IPv4
frame arriving on the pod's interface (an AF_PACKET socket, so that a datagram meant for
another pod, which the pod's kernel would silently drop, is still seen and counted as
misdelivered).

    python3 -m vxfed_harness.faults.stream --name A0 --ip 10.244.0.10 --stream 0 \\
        --peer 10.245.0.10 --rate 500 --out DIR

Runs until SIGTERM or SIGINT, then writes DIR/NAME.sent (the send time of every sequence
number, float64 each) and DIR/NAME.recv (one record per datagram received, RECORD below);
while it runs, DIR/NAME.live holds "<unix time of the last datagram received> <count>".
Times are CLOCK_REALTIME, shared by every namespace of the machine.
"""

from __future__ import annotations

import argparse
import array
import ipaddress
import os
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

MAGIC = b"VXFT"
PORT = 47000
# magic, stream id, flags, sequence number, send time, the destination pod's address (u32)
PAYLOAD = struct.Struct("!4sHHQdI")
PAYLOAD_LEN = 64
# stream id, seq, send time, receive time, the IPv4 destination it arrived with, the pod it was meant for
RECORD = struct.Struct("<HQddII")
ETH_P_IP = 0x0800
PACKET_OUTGOING = 4


def ip_u32(ip: str) -> int:
    return int(ipaddress.IPv4Address(ip))


def encode(stream: int, seq: int, sent: float, dst: int) -> bytes:
    return PAYLOAD.pack(MAGIC, stream, 0, seq, sent, dst).ljust(PAYLOAD_LEN, b"\0")


def decode_ipv4_udp(frame: bytes, port: int = PORT):
    """(stream, seq, send time, IPv4 destination, intended destination) of one of our
    datagrams in an IPv4 packet, or None for anything else."""
    if len(frame) < 20 or frame[0] >> 4 != 4 or frame[9] != 17:
        return None
    ihl = (frame[0] & 0x0F) * 4
    if len(frame) < ihl + 8 + PAYLOAD.size:
        return None
    if struct.unpack_from("!H", frame, ihl + 2)[0] != port:
        return None
    magic, stream, _flags, seq, sent, dst = PAYLOAD.unpack_from(frame, ihl + 8)
    if magic != MAGIC:
        return None
    return stream, seq, sent, struct.unpack_from("!I", frame, 16)[0], dst


class Probe:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.out = Path(args.out)
        self.stop = threading.Event()
        self.sent = array.array("d")
        self.recv = bytearray()
        self.last_recv = 0.0
        self.count = 0

    def send_loop(self) -> None:
        a = self.args
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((a.ip, 0))
        s.setblocking(False)
        dst = ip_u32(a.peer)
        interval = 1.0 / a.rate
        start = time.time() + 0.05
        seq = 0
        while not self.stop.is_set():
            due = start + seq * interval
            now = time.time()
            if due > now:
                time.sleep(due - now)
                now = time.time()
            try:
                s.sendto(encode(a.stream, seq, now, dst), (a.peer, a.port))
            except (BlockingIOError, OSError):
                pass  # no route / no buffer at this instant: counted as lost at the receiver
            self.sent.append(now)
            seq += 1

    def recv_loop(self) -> None:
        a = self.args
        raw = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_IP))
        raw.bind((a.iface, ETH_P_IP))
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        raw.settimeout(0.2)
        live = self.out / f"{a.name}.live"
        last_live = 0.0
        while not self.stop.is_set():
            try:
                frame, addr = raw.recvfrom(2048)
            except socket.timeout:
                frame, addr = None, None
            now = time.time()
            if frame is not None and addr[2] != PACKET_OUTGOING:
                d = decode_ipv4_udp(frame, a.port)
                if d is not None:
                    stream, seq, sent, ip_dst, dst = d
                    self.recv += RECORD.pack(stream, seq, sent, now, ip_dst, dst)
                    self.last_recv = now
                    self.count += 1
            if now - last_live >= 0.1:
                tmp = live.with_suffix(".tmp")
                tmp.write_text(f"{self.last_recv:.6f} {self.count}\n")
                os.replace(tmp, live)
                last_live = now

    def run(self) -> int:
        a = self.args
        # The pod's own kernel receives the datagrams too: a bound socket that is never read
        # keeps it from answering ICMP port unreachable (a full buffer drops silently).
        sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sink.bind((a.ip, a.port))
        receiver = threading.Thread(target=self.recv_loop, daemon=True)
        receiver.start()
        sender = threading.Thread(target=self.send_loop, daemon=True)
        sender.start()
        signal.signal(signal.SIGTERM, lambda *_: self.stop.set())
        signal.signal(signal.SIGINT, lambda *_: self.stop.set())
        (self.out / f"{a.name}.started").write_text(f"{os.getpid()}\n")
        while not self.stop.is_set():
            self.stop.wait(0.5)
        sender.join(2)
        receiver.join(2)
        with open(self.out / f"{a.name}.sent", "wb") as f:
            self.sent.tofile(f)
        (self.out / f"{a.name}.recv").write_bytes(bytes(self.recv))
        sink.close()
        return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--name", required=True)
    p.add_argument("--ip", required=True, help="this pod's address")
    p.add_argument("--iface", default="eth0")
    p.add_argument("--stream", type=int, required=True, help="id carried in every datagram")
    p.add_argument("--peer", required=True, help="the pod this one sends to")
    p.add_argument("--port", type=int, default=PORT)
    p.add_argument("--rate", type=float, default=500.0, help="datagrams per second")
    p.add_argument("--out", required=True)
    return Probe(p.parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
