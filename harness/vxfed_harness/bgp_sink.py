"""A BGP client that costs less than the reflector it measures: it opens iBGP sessions from
many source addresses, answers the OPEN and the keepalives, and reads whatever the reflector
sends without keeping it: it frames the messages (to find the End-of-RIB) and counts them.
perf/federation/fanout.py runs it inside a namespace that holds the source addresses:

    python3 -m vxfed_harness.bgp_sink --peer 198.18.0.10 --asn 65001 --sources 198.18.0.100,... \\
        --timeout 300

Prints one JSON object: per session the times (CLOCK_REALTIME) of the connect, of the
reflector's OPEN, of its first UPDATE, of its End-of-RIB for IPv4 unicast (an UPDATE with
nothing in it, RFC 4724) and of the moment the whole table was in (--expect-nlri-bytes: the
NLRI bytes of every route, e.g. 5 per /26 block), and the UPDATEs and bytes read; and the
sink's own CPU seconds. The End-of-RIB alone does not say the table is whole: FRR 8.4 sent it
to clients that joined a reflector's existing update group after 40–260 UPDATEs of 130,000.
Exit status 0 when every session got the whole table (or, without --expect-nlri-bytes, its
End-of-RIB), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import resource
import socket
import struct
import sys
import time

MARKER = b"\xff" * 16
OPEN, UPDATE, NOTIFICATION, KEEPALIVE = 1, 2, 3, 4
HOLD_S = 180


def open_message(asn: int, router_id: str) -> bytes:
    """OPEN with the capabilities FRR needs: multiprotocol IPv4 unicast (RFC 4760), 4-octet AS
    numbers (RFC 6793), and graceful restart for IPv4 unicast (RFC 4724; restart time 0) — FRR
    sends the End-of-RIB only to a peer that announced it."""
    caps = (bytes([1, 4, 0, 1, 0, 1]) + bytes([65, 4]) + struct.pack("!I", asn)
            + bytes([64, 6, 0x00, 0x00, 0, 1, 1, 0]))
    params = bytes([2, len(caps)]) + caps
    my_as = asn if asn < 65536 else 23456
    body = struct.pack("!BHH4sB", 4, my_as, HOLD_S, socket.inet_aton(router_id), len(params)) + params
    return MARKER + struct.pack("!HB", 19 + len(body), OPEN) + body


KEEPALIVE_MESSAGE = MARKER + struct.pack("!HB", 19, KEEPALIVE)


async def session(peer: str, source: str, asn: int, out: dict, deadline: float, expect_nlri: int) -> None:
    out.update(source=source, connected=None, open=None, first_update=None, end_of_rib=None, whole=None,
               updates=0, nlri_bytes=0, bytes=0, error=None)
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(peer, 179, local_addr=(source, 0)), timeout=max(1.0, deadline - time.time()))
    except (OSError, asyncio.TimeoutError) as exc:
        out["error"] = f"connect: {exc!r}"
        return
    out["connected"] = time.time()
    writer.write(open_message(asn, source))
    await writer.drain()
    buffer = bytearray()
    last_keepalive = time.time()
    hold = HOLD_S      # the negotiated hold time: the smaller of the two OPENs'
    try:
        while time.time() < deadline:
            try:
                chunk = await asyncio.wait_for(reader.read(1 << 20),
                                               timeout=max(0.1, min(deadline - time.time(), hold / 3)))
            except asyncio.TimeoutError:
                chunk = None           # quiet: only the keepalive below is due
            if chunk == b"":
                out["error"] = "closed by the peer"
                return
            chunk = chunk or b""
            out["bytes"] += len(chunk)
            buffer += chunk
            offset = 0
            while len(buffer) - offset >= 19:
                length, kind = struct.unpack_from("!HB", buffer, offset + 16)
                if length < 19 or len(buffer) - offset < length:
                    break
                if kind == OPEN:
                    out["open"] = time.time()
                    peer_hold = struct.unpack_from("!H", buffer, offset + 22)[0]
                    hold = min(HOLD_S, peer_hold) if peer_hold else HOLD_S
                    writer.write(KEEPALIVE_MESSAGE)
                elif kind == UPDATE:
                    out["updates"] += 1
                    if out["first_update"] is None:
                        out["first_update"] = time.time()
                    # End-of-RIB for IPv4 unicast: no withdrawn routes, no attributes, no NLRI.
                    if length == 23 and out["end_of_rib"] is None:
                        out["end_of_rib"] = time.time()
                    # The NLRI is what is left after the withdrawn routes and the attributes.
                    withdrawn = struct.unpack_from("!H", buffer, offset + 19)[0]
                    attrs = struct.unpack_from("!H", buffer, offset + 21 + withdrawn)[0]
                    out["nlri_bytes"] += length - 23 - withdrawn - attrs
                    if expect_nlri and out["whole"] is None and out["nlri_bytes"] >= expect_nlri:
                        out["whole"] = time.time()
                elif kind == NOTIFICATION:
                    out["error"] = f"NOTIFICATION {bytes(buffer[offset + 19:offset + 21]).hex()}"
                    return
                offset += length
            del buffer[:offset]
            now = time.time()
            if now - last_keepalive > hold / 3:
                writer.write(KEEPALIVE_MESSAGE)
                last_keepalive = now
            await writer.drain()
            done = out["whole"] is not None if expect_nlri else out["end_of_rib"] is not None
            if done and hold_open is False:
                return
    finally:
        if expect_nlri and out["whole"] is None and out["error"] is None:
            out["error"] = "not the whole table before the timeout"
        elif not expect_nlri and out["end_of_rib"] is None and out["error"] is None:
            out["error"] = "no End-of-RIB before the timeout"
        writer.close()


hold_open = False   # --hold: keep the sessions after the End-of-RIB until the timeout


async def run(peer: str, sources: list[str], asn: int, timeout: float, expect_nlri: int) -> list[dict]:
    deadline = time.time() + timeout
    results = [{} for _ in sources]
    await asyncio.gather(*(session(peer, s, asn, r, deadline, expect_nlri) for s, r in zip(sources, results)))
    return results


def main(argv: list[str]) -> int:
    global hold_open
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--peer", required=True)
    p.add_argument("--asn", type=int, required=True)
    p.add_argument("--sources", required=True, help="comma-separated source addresses, one session each")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--hold", action="store_true", help="keep the sessions open until the timeout")
    p.add_argument("--expect-nlri-bytes", type=int, default=0,
                   help="NLRI bytes of the whole table (5 per /26 route): a session is done when it has them")
    args = p.parse_args(argv)
    hold_open = args.hold
    sources = [str(ipaddress.IPv4Address(s)) for s in args.sources.split(",") if s]
    started = time.time()
    results = asyncio.run(run(args.peer, sources, args.asn, args.timeout, args.expect_nlri_bytes))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"started": started, "sessions": results, "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)}))
    key = "whole" if args.expect_nlri_bytes else "end_of_rib"
    return 0 if all(r.get(key) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
