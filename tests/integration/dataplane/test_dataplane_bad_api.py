#!/usr/bin/env python3
"""Bad input on the table API is refused without harming the daemon: garbage bytes, a 1 GiB
length prefix, a frame that is not a DataplaneRequest, invalid entries (refused whole, with an
error naming the entry and field, tables unchanged), several clients at once, socket mode 0600."""

import os
import socket
import stat
import threading

import vxfed_harness as t
from vxfed_harness.protowire import varint
from vxfed_harness import forwarder as d


# DataplaneRequest{request_id=7, get_status{}}: field 1 varint, field 12 empty message.
GET_STATUS = bytes([0x08, 0x07, 0x62, 0x00])


def connect(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    return s


def read_until_closed(s: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, socket.timeout) as exc:
            if isinstance(exc, socket.timeout):
                raise AssertionError("the server kept the connection open")
            return data
        if not chunk:
            return data
        data += chunk


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    t.require_root()
    with t.Topology("dpbadapi") as topo:
        f = d.ForwarderTopology(topo)
        f.build()
        f.start()
        mode = stat.S_IMODE(os.stat(f.socket).st_mode)
        assert mode == 0o600, oct(mode)
        f.send_snapshot(d.tables(generation=5))
        f.wait_reachable()
        good_dump = f.call("dump")["tables"]

        # 1. A 1 GiB length prefix: refused before allocating, connection closed.
        rss_before = rss_kib(f.proc.pid)
        s = connect(f.socket)
        s.sendall(varint(1 << 30) + b"\x00" * 1000)
        assert read_until_closed(s) == b""
        s.close()
        assert rss_kib(f.proc.pid) < rss_before + 64 * 1024, "memory grew after a 1 GiB prefix"

        # 2. Garbage: an over-long varint closes the connection.
        s = connect(f.socket)
        s.sendall(b"\xff" * 16)
        assert read_until_closed(s) == b""
        s.close()

        # 3. A well-framed message that is not a DataplaneRequest: an error reply, and the
        #    connection stays usable.
        s = connect(f.socket)
        junk = b"\x0a\xff\xff\xff\xff\x0f"  # field 1 as length-delimited with absurd length
        s.sendall(varint(len(junk)) + junk + varint(len(GET_STATUS)) + GET_STATUS)
        data = b""
        while data.count(b"\x08\x07") < 1 or len(data) < 20:
            chunk = s.recv(65536)
            assert chunk, "connection closed after a malformed message"
            data += chunk
        assert b"malformed request" in data, data
        s.close()

        # 4. Invalid entries: refused whole, error names entry and field, tables unchanged.
        bad = d.tables(generation=6)
        bad["tables"]["routes"].append({"vni": d.VNI, "prefix": "10.250.0.0/33",
                                        "next_hops": [{"vtep": d.VTEP_B}]})
        r = f.send_snapshot(bad, check=False)
        assert r.returncode == 1 and "routes[1]" in r.stderr and "prefix" in r.stderr, r.stderr
        bad = d.tables(generation=6)
        bad["tables"]["endpoints"].append({"id": "ghost", "vni": d.VNI, "ip": "10.244.9.9",
                                           "mac": "02:00:00:00:09:09", "iface": "nosuchif0"})
        r = f.send_snapshot(bad, check=False)
        assert r.returncode == 1 and "endpoints[1]" in r.stderr and "iface" in r.stderr, r.stderr
        bad = d.tables(generation=6)
        bad["tables"]["endpoints"][0]["ip"] = "10.244.300.1"
        r = f.send_snapshot(bad, check=False)
        assert r.returncode == 1 and "endpoints[0]" in r.stderr and "ip" in r.stderr, r.stderr
        r = f.dpctl_raw("delta", str(write(topo, "d.json", '{"remove_endpoints": ["nope"]}')), check=False)
        assert r.returncode == 1 and "nope" in r.stderr, r.stderr
        assert f.call("dump")["tables"] == good_dump
        assert int(f.status()["generation"]) == 5

        # 5. Several clients at once, each answered.
        errors = []

        def client() -> None:
            try:
                for _ in range(20):
                    f.call("status")
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

        idle = [connect(f.socket) for _ in range(5)]  # idle connections must not block others
        threads = [threading.Thread(target=client) for _ in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=60)
        for s in idle:
            s.close()
        assert not errors, errors

        # The daemon is unharmed and still forwarding.
        assert f.proc.poll() is None
        f.wait_reachable(timeout=10)
        assert f.status()["ready"] is True
        rc, log = f.stop()
        assert rc == 0, log


def write(topo, name: str, text: str):
    path = topo.workdir / name
    path.write_text(text)
    return path


if __name__ == "__main__":
    t.main_wrapper(main)
