#!/usr/bin/env python3
"""A pod's reachability agent (run inside the pod's network namespace; harness/vxfed_harness/
policy_bed.py starts one per pod): it serves TCP and UDP echo on the given ports, and probes
other pods on request, every probe of a request at once.

    python3 probe_agent.py --tcp 80,81 --udp 53,80

Requests are JSON lines on stdin, answers JSON lines on stdout:

    {"id": 7, "timeout": 0.5, "probes": [["10.244.1.3", "tcp", 80], ["10.245.0.2", "udp", 53, 0.02]]}
    {"id": 7, "ok": [true, false], "ms": [1.2, null], "sent": [5012.113, 5012.134]}

A probe's optional fourth element delays it by that many seconds (a series of probes spaced in
time, in one request); `sent` is each probe's send time on CLOCK_MONOTONIC (time.monotonic(),
the same clock in every process of the machine).

A TCP probe is a connect (the handshake's SYN-ACK came back within the timeout); a UDP probe
sends a datagram with a nonce and waits for the echo of that nonce. A probe that gets no answer
in time is `false`, and so is one refused (RST, ICMP unreachable): each means the packet or its
reply did not get through. `ms` is the time to the answer for the probes that succeeded.
Standard library only: it runs in a bare namespace with the system's python3.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import time


class UdpEcho(asyncio.DatagramProtocol):
    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.transport.sendto(data, addr)


class UdpProbe(asyncio.DatagramProtocol):
    def __init__(self, nonce: bytes, done: asyncio.Future):
        self.nonce = nonce
        self.done = done

    def datagram_received(self, data, addr):
        if data == self.nonce and not self.done.done():
            self.done.set_result(True)

    def error_received(self, exc):
        # ICMP port/host unreachable: no echo will come.
        if not self.done.done():
            self.done.set_result(False)


async def tcp_echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        data = await asyncio.wait_for(reader.read(512), 5)
        if data:
            writer.write(data)
            await writer.drain()
    except (asyncio.TimeoutError, ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def probe_tcp(ip: str, port: int, timeout: float) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), timeout)
    except (asyncio.TimeoutError, OSError):
        return False
    writer.close()
    return True


async def probe_udp(ip: str, port: int, timeout: float, seq: int) -> bool:
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()
    nonce = f"probe {os.getpid()} {seq} {time.monotonic_ns()}".encode()
    try:
        transport, _ = await loop.create_datagram_endpoint(lambda: UdpProbe(nonce, done), remote_addr=(ip, port))
    except OSError:
        return False
    try:
        transport.sendto(nonce)
        return await asyncio.wait_for(done, timeout)
    except (asyncio.TimeoutError, OSError):
        return False
    finally:
        transport.close()


async def one_probe(probe: list, timeout: float, seq: int) -> tuple[bool, float | None, float]:
    ip, proto, port = probe[:3]
    if len(probe) > 3 and probe[3] > 0:
        await asyncio.sleep(probe[3])
    t0 = time.monotonic()
    ok = await (probe_tcp(ip, int(port), timeout) if proto == "tcp" else probe_udp(ip, int(port), timeout, seq))
    return ok, (round((time.monotonic() - t0) * 1000, 2) if ok else None), t0


async def serve(tcp_ports: list[int], udp_ports: list[int]) -> None:
    loop = asyncio.get_running_loop()
    for port in tcp_ports:
        await asyncio.start_server(tcp_echo, "0.0.0.0", port, reuse_address=True, backlog=256)
    for port in udp_ports:
        await loop.create_datagram_endpoint(UdpEcho, local_addr=("0.0.0.0", port), family=socket.AF_INET)
    reader = asyncio.StreamReader(limit=16 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    print(json.dumps({"ready": True}), flush=True)
    seq = 0
    while True:
        line = await reader.readline()
        if not line:
            return
        req = json.loads(line)
        timeout = float(req.get("timeout", 0.5))
        tasks = []
        for p in req["probes"]:
            seq += 1
            tasks.append(one_probe(p, timeout, seq))
        results = await asyncio.gather(*tasks)
        print(json.dumps({"id": req.get("id"), "ok": [r[0] for r in results], "ms": [r[1] for r in results],
                          "sent": [r[2] for r in results]}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tcp", default="", help="TCP ports to echo on, comma-separated")
    ap.add_argument("--udp", default="", help="UDP ports to echo on, comma-separated")
    a = ap.parse_args()
    ports = lambda s: [int(p) for p in s.split(",") if p]  # noqa: E731
    asyncio.run(serve(ports(a.tcp), ports(a.udp)))


if __name__ == "__main__":
    main()
