"""Runs the real tools between two pods: iperf3 (TCP, UDP) and sockperf ping-pong (UDP, TCP).

The server runs in the pod of cluster B, the client in the pod of cluster A. Each call starts
its own server, waits until it listens, runs the client under a timeout, and stops the server,
so that one failed measurement cannot poison the next one.
"""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..twocluster.variant import Pod
from . import cpu_use, parsers


class MeasurementError(RuntimeError):
    """A tool failed, timed out or printed no results; the message says which and why."""


@dataclass
class SuiteOptions:
    duration: float = 5.0          # seconds of each measurement
    tcp_omit: int = 1              # iperf3 -O: leave out TCP slow start
    udp_rate: str = "200M"         # iperf3 -b: the fixed offered rate for the loss SLO
    udp_len: int = 1400            # iperf3 -l: datagram payload, fits both MTUs
    # iperf3 -w for UDP: the default 208 KiB receive buffer overflows whenever the receiving
    # iperf3 is descheduled on a shared 2-core machine (counted as UdpRcvbufErrors in the pod,
    # i.e. loss in the application, not in the path). Same setting for both variants.
    udp_socket_buffer: str = "4M"
    pp_msg_size: int = 64          # sockperf -m
    iperf_port: int = 5201
    sockperf_port: int = 11111


def _wait_listening(server: Pod, port: int, proto: str, proc: subprocess.Popen, what: str) -> None:
    flag = "-Hltn" if proto == "tcp" else "-Hlun"

    def listening() -> bool:
        if proc.poll() is not None:
            raise MeasurementError(f"{what} server exited with status {proc.returncode} before listening")
        out = server.ns.run(["ss", flag, "sport", "=", f":{port}"], check=False).stdout
        return bool(out.strip())

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if listening():
            return
        time.sleep(0.05)
    raise MeasurementError(f"{what} server in {server.name} did not listen on {proto}/{port} within 10s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _socket_drops(pod: Pod) -> int:
    """UdpRcvbufErrors of the pod's namespace (Namespace.nstat)."""
    return pod.ns.nstat("UdpRcvbufErrors", check=False).get("UdpRcvbufErrors", 0)


def _client(client: Pod, args: list[str], timeout: float, what: str) -> subprocess.CompletedProcess:
    try:
        return client.ns.run(args, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise MeasurementError(f"{what} from {client.name} did not finish within {timeout:.0f}s "
                               f"(the path may be dropping everything)") from None


def iperf3(client: Pod, server: Pod, opts: SuiteOptions, *, streams: int = 1,
           udp: bool = False) -> dict:
    what = f"iperf3 {'UDP ' + opts.udp_rate + 'bit/s' if udp else f'TCP x{streams}'}"
    srv = server.ns.spawn(["iperf3", "-s", "-1", "-B", server.ip, "-p", str(opts.iperf_port)],
                          name=f"iperf3-{'udp' if udp else f'tcp{streams}'}")
    try:
        _wait_listening(server, opts.iperf_port, "tcp", srv, "iperf3")
        drops_before = _socket_drops(server) if udp else 0
        args = ["iperf3", "-c", server.ip, "-p", str(opts.iperf_port), "-J",
                "-t", str(opts.duration), "--connect-timeout", "5000"]
        if udp:
            args += ["-u", "-b", opts.udp_rate, "-l", str(opts.udp_len), "-w", opts.udp_socket_buffer]
        else:
            args += ["-P", str(streams), "-O", str(opts.tcp_omit)]
        # The CPUs busy while TCP runs at speed: from just after the omitted slow start to the
        # client's end (cpu_use.py says why machine-wide).
        cpu_start: list[cpu_use.CpuSnapshot] = []
        timer = threading.Timer(opts.tcp_omit + 0.5, lambda: cpu_start.append(cpu_use.snapshot()))
        if not udp:
            timer.start()
        try:
            res = _client(client, args, opts.duration + opts.tcp_omit + 30, what)
        finally:
            timer.cancel()
        cpu_end = cpu_use.snapshot()
    finally:
        _stop(srv)
    try:
        result = parsers.parse_iperf3_udp(res.stdout) if udp else parsers.parse_iperf3_tcp(res.stdout)
    except ValueError as exc:
        raise MeasurementError(f"{what}: {exc} (exit {res.returncode}; stderr: {res.stderr.strip()[:300]})") from None
    if not udp and cpu_start:
        result["busy_cpus"] = cpu_use.busy_cpus(cpu_start[0], cpu_end)
    if udp:
        # Where the loss happened: the receiving socket (the app was too slow) or the path.
        result["receiver_socket_drops"] = _socket_drops(server) - drops_before
    return result


# sockperf times its run with its own clock. When that clock jumps (a VM paused or moved
# between hosts; seen once in CI: "RunTime=4246.930 sec" for a 5 s run) sockperf throws every
# sample away and prints "No valid observations found". That says nothing about the path, so
# such a run is taken again, once, and the result records that it was.
_SOCKPERF_CLOCK_ANOMALY = "No valid observations found"


def sockperf_pingpong(client: Pod, server: Pod, opts: SuiteOptions, workdir: Path, *,
                      tcp: bool) -> dict:
    """Ping-pong latency; returns sockperf's own summary plus every sample from --full-log."""
    try:
        return _sockperf_pingpong_once(client, server, opts, workdir, tcp=tcp)
    except MeasurementError as exc:
        if _SOCKPERF_CLOCK_ANOMALY not in str(exc):
            raise
        first_error = str(exc)
    result = _sockperf_pingpong_once(client, server, opts, workdir, tcp=tcp)
    result["retried_after"] = first_error
    return result


def _sockperf_pingpong_once(client: Pod, server: Pod, opts: SuiteOptions, workdir: Path, *,
                            tcp: bool) -> dict:
    proto = "TCP" if tcp else "UDP"
    what = f"sockperf ping-pong {proto}"
    port = opts.sockperf_port + (1 if tcp else 0)
    extra = ["--tcp"] if tcp else []
    srv = server.ns.spawn(["sockperf", "sr", "-i", server.ip, "-p", str(port)] + extra,
                          name=f"sockperf-{proto.lower()}")
    log_path = workdir / f"sockperf-{proto.lower()}-{time.monotonic_ns()}.csv"
    try:
        _wait_listening(server, port, "tcp" if tcp else "udp", srv, "sockperf")
        args = ["sockperf", "pp", "-i", server.ip, "-p", str(port), "-t", str(int(max(1, opts.duration))),
                "-m", str(opts.pp_msg_size), "--full-log", str(log_path)] + extra
        res = _client(client, args, opts.duration + 30, what)
    finally:
        _stop(srv)
    output = res.stdout + res.stderr
    try:
        summary = parsers.parse_sockperf_summary(output)
        samples = parsers.parse_sockperf_full_log(log_path.read_text()) if log_path.exists() else []
    except ValueError as exc:
        anomaly = f" ({_SOCKPERF_CLOCK_ANOMALY})" if _SOCKPERF_CLOCK_ANOMALY in output else ""
        raise MeasurementError(f"{what}: {exc} (exit {res.returncode}){anomaly}") from None
    finally:
        log_path.unlink(missing_ok=True)
    if not samples:
        raise MeasurementError(f"{what}: sockperf wrote no --full-log samples")
    return {"summary": summary, "samples": samples}


def reachable(client: Pod, server: Pod, timeout: float = 20) -> bool:
    """True once one ping gets through (ARP, routes and tables may still be settling)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.ns.ping(server.ip, count=1).returncode == 0:
            return True
        time.sleep(0.2)
    return False


def df_ping(client: Pod, server: Pod, ip_packet_bytes: int) -> subprocess.CompletedProcess:
    """Pings with the DF bit set and an IPv4 packet of exactly ip_packet_bytes."""
    return client.ns.ping(server.ip, count=2, size=ip_packet_bytes - 28, df=True)


__all__ = ["MeasurementError", "SuiteOptions", "iperf3", "sockperf_pingpong", "reachable", "df_ping"]
