"""vxfed-dataplane: the one description of how it is launched, the process, its API client.

`DataplaneLaunch` holds what varies between launches (namespace-level names, queues, MTU,
devices); `DataplaneLaunch.argv()` is the only place the EAL and forwarder options are
written (docs/dataplane.md, "Running it"; docs/conventions.md: DPDK without hugepages).
`eal_args()` and `af_packet_vdev()` are its pieces, for callers that start another DPDK
program on the same devices (perf/testpmd/compare.py runs dpdk-testpmd with them).

`Dataplane` runs one launch in a namespace of a Topology: start (waiting for the API socket),
stop (removing DPDK's run directory), restart, and vxfed-dpctl calls.

Shell scripts get the same command line from this module's entry point:

    PYTHONPATH=harness python3 -m vxfed_harness.dataplane --file-prefix P --uplink-iface up0 \\
        --vtep-ip 198.18.0.1 --api-socket /tmp/dp.sock          # one argument per line
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .env import binary
from .proc import PartUnavailable, run, wait_path
from .topology import Namespace

DATAPLANE = "dataplane/vxfed-dataplane"
DPCTL = "dataplane/runtime/vxfed-dpctl"
UPLINK_PORT = "net_af_packet0"
MEMORY_MB = 1024                 # --no-huge -m: DPDK's heap (mbuf pools, tables)
RUNTIME_ROOT = Path("/var/run/dpdk")   # EAL's per-file-prefix run directories
AF_PACKET_FRAMES = 512           # af_packet ring frames per queue and direction


def lcore_map(workers: int, first_cpu: int = 1) -> str:
    """The control lcore on CPU 0 and the workers spread over the CPUs from `first_cpu` on
    (more lcores than CPUs must be mapped): 1 worker -> "0@0,1@1", 3 workers on 2 CPUs ->
    "0@0,1@1,2@0,3@1". Beds of several nodes on one machine give each node another
    first_cpu (node_lcores), as separate machines would not share a worker's CPU."""
    cpus = os.cpu_count() or 1
    return "0@0," + ",".join(f"{i + 1}@{(first_cpu + i) % cpus}" for i in range(workers))


def node_lcores(node_index: int, workers: int = 1) -> str:
    """lcore_map for the node_index-th node of a bed: its workers start on the CPU after the
    previous node's, so two nodes' workers do not take turns on one CPU while the other is
    free (measured on 2 CPUs, sockperf UDP ping-pong one-way p50: ~80 us with both workers on
    CPU 1 — a woken worker waited for the other to stop spinning — ~50 us spread; docs/pod-ports.md)."""
    return lcore_map(workers, first_cpu=1 + node_index * workers)


def af_packet_vdev(iface: str, queues: int = 1, mtu: int = 9000, name: str = UPLINK_PORT,
                   frames: int = AF_PACKET_FRAMES) -> str:
    """An af_packet device on a kernel interface. Its frames must hold the MTU's packets and
    fit the dataplane's mbuf data room (9344 at MTU 9000): the values of vxfed-dataplane --help."""
    framesz = 9216 if mtu > 1500 else 2048
    return f"{name},iface={iface},qpairs={queues},framesz={framesz},blocksz={framesz * 4},framecnt={frames}"


def eal_args(file_prefix: str, vdevs: list[str], lcores: str, memory_mb: int = MEMORY_MB,
             extra: tuple[str, ...] | list[str] = ()) -> list[str]:
    """EAL options: no hugepages, no PCI, a file prefix of our own (several DPDK processes on
    one machine), the given virtual devices."""
    args = ["--lcores", lcores, "--no-huge", "-m", str(memory_mb), "--no-pci", "--file-prefix", file_prefix]
    for v in vdevs:
        args += ["--vdev", v]
    return args + list(extra)


def canonical_tables(dump: dict) -> dict:
    """The dataplane's tables (vxfed-dpctl dump) without the generation, order-independent: two
    dumps of the same forwarding state compare equal."""
    tables = dump.get("tables", {})
    out = {}
    for key, id_of in (("networks", lambda e: str(e["vni"])), ("endpoints", lambda e: e["id"]),
                       ("routes", lambda e: f'{e["vni"]}/{e["prefix"]}'),
                       ("vteps", lambda e: e["ip"]), ("neighbors", lambda e: e["ip"])):
        out[key] = {id_of(e): json.dumps(e, sort_keys=True) for e in tables.get(key, [])}
    return out


@dataclass
class DataplaneLaunch:
    file_prefix: str                          # unique on the machine: EAL's run directory name
    api_socket: Path
    vtep_ip: str
    uplink_iface: Optional[str] = None        # the uplink on this kernel interface ...
    vdevs: list[str] = field(default_factory=list)   # ... and/or these EAL devices (pcap, null)
    uplink: str = UPLINK_PORT                 # the uplink's DPDK port name (without uplink_iface, or with uplink_pmd)
    uplink_pmd: bool = False                  # uplink_iface through DPDK's net_af_packet instead of --uplink-iface
    queues: int = 1                           # uplink RX queues = workers
    mtu: int = 9000                           # underlay MTU
    lcores: Optional[str] = None              # default: lcore_map(queues)
    memory_mb: int = MEMORY_MB
    underlay_subnet: Optional[str] = None
    tables_file: Optional[Path] = None
    endpoint_ports: dict[str, str] = field(default_factory=dict)   # IFACE -> existing DPDK port
    eal_extra: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)                 # more vxfed-dataplane options

    def eal(self) -> list[str]:
        vdevs = ([af_packet_vdev(self.uplink_iface, self.queues, self.mtu, self.uplink)]
                 if self.uplink_iface and self.uplink_pmd else []) + self.vdevs
        return eal_args(self.file_prefix, vdevs, self.lcores or lcore_map(self.queues), self.memory_mb,
                        self.eal_extra)

    def options(self) -> list[str]:
        # The dataplane's own sockets on the interface (docs/dataplane.md: port model), or a
        # DPDK port.
        uplink = (["--uplink-iface", self.uplink_iface] if self.uplink_iface and not self.uplink_pmd
                  else ["--uplink", self.uplink])
        args = uplink + ["--vtep-ip", self.vtep_ip, "--mtu", str(self.mtu),
                "--queues", str(self.queues), "--api-socket", str(self.api_socket)]
        if self.underlay_subnet:
            args += ["--underlay-subnet", self.underlay_subnet]
        if self.tables_file:
            args += ["--tables-file", str(self.tables_file)]
        for iface, port in self.endpoint_ports.items():
            args += ["--endpoint-port", f"{iface}={port}"]
        return args + self.extra

    def argv(self, program: Path | str) -> list[str]:
        return [str(program)] + self.eal() + ["--"] + self.options()

    def runtime_dir(self) -> Path:
        return RUNTIME_ROOT / self.file_prefix


class Dataplane:
    """One vxfed-dataplane in a namespace (Topology.host for the host's). Its DPDK run
    directory is removed when the Topology closes; its log is the Topology's
    `<namespace>_<name>.log` (`-run<N>` from the second start on)."""

    def __init__(self, where: Namespace, launch: DataplaneLaunch, build_dir: Optional[Path] = None,
                 name: str = "vxfed-dataplane"):
        self.ns = where
        self.topo = where.topo
        self.launch = launch
        self.name = name
        self.program = binary(DATAPLANE, build_dir)
        self.dpctl_program = binary(DPCTL, build_dir)
        self.proc: Optional[subprocess.Popen] = None     # the last one started
        self.stopped = False                              # stopped on purpose: not a crash
        self.starts = 0
        self.topo.remove_at_close(launch.runtime_dir())

    @property
    def socket(self) -> Path:
        return Path(self.launch.api_socket)

    def start(self, timeout: float = 30) -> subprocess.Popen:
        """Starts it and waits for its API socket; PartUnavailable if it exits or times out."""
        if not self.program.exists():
            raise PartUnavailable("vxfed-dataplane", f"{self.program} is not built")
        # A socket left by a killed run must not be taken for the new one's.
        self.socket.unlink(missing_ok=True)
        self.starts += 1
        self.stopped = False
        name = self.name if self.starts == 1 else f"{self.name}-run{self.starts}"
        self.proc = self.ns.spawn(self.launch.argv(self.program), name=name)
        wait_path(self.socket, self.proc, f"vxfed-dataplane in {self.ns}", timeout, self.log)
        return self.proc

    def log(self) -> str:
        """The log of the last start (also after it stopped)."""
        return self.topo.log_of_process(self.proc) if self.proc is not None else ""

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and not self.stopped

    def check_alive(self) -> None:
        """Raises if it was started and has exited since (a stop() is not a crash)."""
        if self.proc is not None and not self.stopped and self.proc.poll() is not None:
            raise PartUnavailable(f"vxfed-dataplane in {self.ns}",
                                  f"exited with status {self.proc.returncode}:\n{self.log()[-2000:]}")

    def stop(self, timeout: float = 15) -> Optional[int]:
        """SIGTERM and wait (SIGKILL after timeout); removes its socket and run directory.
        Returns the exit status (None if it was not running)."""
        proc = self.proc
        if proc is None or self.stopped:
            return None
        self.stopped = True
        rc = proc.poll()
        if rc is None:
            proc.terminate()
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait(timeout=5)
        self.socket.unlink(missing_ok=True)
        shutil.rmtree(self.launch.runtime_dir(), ignore_errors=True)
        return rc

    def kill(self) -> Optional[int]:
        """SIGKILL, as a crash: the socket and DPDK's run directory stay behind (start()
        replaces them). Returns the exit status (None if it was not running)."""
        proc = self.proc
        if proc is None or self.stopped:
            return None
        self.stopped = True
        if proc.poll() is None:
            proc.kill()
        return proc.wait(timeout=10)

    # -- the table API, through vxfed-dpctl --
    def dpctl(self, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        return run([str(self.dpctl_program), "--socket", str(self.socket), *args], check=check, timeout=timeout)

    def call(self, *args: str) -> dict:
        return json.loads(self.dpctl(*args).stdout)

    def send_snapshot(self, snapshot: dict, check: bool = True) -> subprocess.CompletedProcess:
        path = self.topo.workdir / f"snapshot-{time.monotonic_ns()}.json"
        path.write_text(json.dumps(snapshot))
        return self.dpctl("snapshot", str(path), check=check)

    def status(self) -> dict:
        return self.call("status")["status"]

    def counters(self) -> dict:
        return self.call("counters")["counters"]

    def dump(self) -> dict:
        """The tables in force: {"generation": N, "tables": {...}}."""
        return self.call("dump")["tables"]

    def route(self, prefix: str) -> Optional[dict]:
        for r in self.dump().get("tables", {}).get("routes", []):
            if r.get("prefix") == prefix:
                return r
        return None


def main(argv: list[str]) -> int:
    """Prints the vxfed-dataplane command line of a launch, one argument per line."""
    p = argparse.ArgumentParser(prog="python3 -m vxfed_harness.dataplane", description=main.__doc__)
    p.add_argument("--file-prefix", required=True)
    p.add_argument("--api-socket", required=True, type=Path)
    p.add_argument("--vtep-ip", required=True)
    p.add_argument("--uplink-iface", required=True, help="af_packet uplink on this interface")
    p.add_argument("--queues", type=int, default=1)
    p.add_argument("--mtu", type=int, default=9000)
    p.add_argument("--underlay-subnet")
    p.add_argument("--tables-file", type=Path)
    p.add_argument("--build-dir", type=Path, help="default: $VXFED_BUILD_DIR or ./build of this checkout")
    a = p.parse_args(argv)
    launch = DataplaneLaunch(file_prefix=a.file_prefix, api_socket=a.api_socket, vtep_ip=a.vtep_ip,
                             uplink_iface=a.uplink_iface, queues=a.queues, mtu=a.mtu,
                             underlay_subnet=a.underlay_subnet, tables_file=a.tables_file)
    print("\n".join(launch.argv(binary(DATAPLANE, a.build_dir))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
