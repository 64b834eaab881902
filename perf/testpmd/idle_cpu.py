#!/usr/bin/python3
"""CPU used by an idle vxfed-dataplane (tables loaded, no packets), from /proc/<pid>/stat
(utime + stime of all threads) over a window; with --busy-poll for contrast. JSON to
perf/results/idle_cpu.json.

  sudo perf/testpmd/idle_cpu.py --build-dir build [--seconds 10] [--queues 1] [--ports null|af_packet]

--ports null (default): net_null ports, which cannot wake a worker: it naps (timed back-off).
--ports af_packet: an af_packet uplink and endpoint port on veths in a namespace of their own:
idle workers block on the sockets (--idle-wait auto).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import frames
from vxfed_harness import Topology, cpu_seconds
from vxfed_harness.dataplane import Dataplane, DataplaneLaunch, lcore_map
from vxfed_harness.env import SOURCE_DIR as ROOT

EXTRA = os.environ.get("VXFED_IDLE_EXTRA_ARGS", "").split()


def run_ns(pid: int) -> int:
    """CPU time of all threads in ns from the scheduler's own accounting (schedstat), which,
    unlike the tick-sampled utime/stime, does not charge a whole tick to a thread that wakes
    up on a timer."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            pass
    return total


def measure(build: Path, seconds: float, queues: int, busy: bool, workdir: Path, ports: str = "null") -> dict:
    tables = workdir / "tables.json"
    tables.write_text(json.dumps({"generation": 1, "tables": {
        "networks": [{"vni": frames.VNI, "gateway_ip": "10.244.0.1"}],
        "endpoints": [{"id": "e", "vni": frames.VNI, "ip": frames.POD_LOCAL, "mac": frames.POD_LOCAL_MAC.hex(":"),
                       "iface": "idle0"}],
        "routes": [{"vni": frames.VNI, "prefix": "10.245.0.0/16", "next_hops": [{"vtep": frames.VTEP_REMOTE}]}],
        "neighbors": [{"ip": frames.VTEP_REMOTE, "mac": frames.REMOTE_MAC.hex(":")}]}}))
    launch = DataplaneLaunch(file_prefix=f"vxidle{os.getpid()}{int(busy)}", api_socket=workdir / f"idle{int(busy)}.sock",
                             vtep_ip=frames.VTEP_LOCAL, queues=queues, lcores=lcore_map(queues), tables_file=tables,
                             eal_extra=["--log-level", "lib.eal:error"],
                             extra=["--log-level", "warn"] + (["--busy-poll"] if busy else []) + EXTRA)
    with Topology("idle") as topo:
        where = topo.host
        if ports == "af_packet":
            # A namespace of its own with two veth pairs for the uplink (idleup0) and the
            # endpoint (idle0); IPv6 off (no stray router solicitations).
            where = topo.netns("node")
            where.sysctl("net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
            topo.veth(where, "idleup0", where, "idleup1", mtu=1500)
            topo.veth(where, "idle0", where, "idle1", mtu=1500)
            launch.uplink_iface = "idleup0"
        else:
            launch.vdevs, launch.uplink = ["net_null0,no-rx=1", "net_null1,no-rx=1"], "net_null0"
            launch.endpoint_ports = {"idle0": "net_null1"}
        dp = Dataplane(where, launch, build_dir=build)
        pid = dp.start().pid
        time.sleep(1)
        c0, n0, t0 = cpu_seconds(pid), run_ns(pid), time.monotonic()
        time.sleep(seconds)
        c1, n1, t1 = cpu_seconds(pid), run_ns(pid), time.monotonic()
        dp.stop(timeout=30)
    return {"busy_poll": busy, "queues": queues, "ports": ports, "seconds": round(t1 - t0, 2),
            "cpu_seconds": round(c1 - c0, 3), "percent_of_one_core": round(100 * (c1 - c0) / (t1 - t0), 2),
            "schedstat_percent_of_one_core": round(100 * (n1 - n0) / 1e9 / (t1 - t0), 2),
            "extra_args": EXTRA}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--queues", type=int, default=1)
    ap.add_argument("--ports", choices=["null", "af_packet"], default="null")
    ap.add_argument("--no-busy-contrast", action="store_true", help="skip the --busy-poll run")
    ap.add_argument("--out", default=str(ROOT / "perf/results/idle_cpu.json"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("idle_cpu.py: run as root (DPDK)")
    with tempfile.TemporaryDirectory(prefix="vxfed-idle-") as tmp:
        results = [measure(Path(args.build_dir).resolve(), args.seconds, args.queues, False, Path(tmp), args.ports)]
        if not args.no_busy_contrast:
            results.append(measure(Path(args.build_dir).resolve(), min(args.seconds, 3), args.queues, True, Path(tmp),
                                   args.ports))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
