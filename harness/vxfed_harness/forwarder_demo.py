"""The forwarder demo (scripts/forwarder-demo.sh runs it after installing and building): on
the forwarder's topology (forwarder.py, the one the dataplane integration tests use), pods
ping each other (also 8950-byte frames with DF set), iperf3 runs both ways, the dataplane's
counters are read over its API, and SIGTERM shows its final counters; then a short report.
Everything is removed on exit, Ctrl-C or failure.

    python3 -m vxfed_harness.forwarder_demo [--seconds N] [--build-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import time
from pathlib import Path

from .env import BUILD_DIR
from .forwarder import POD_A, POD_B, POD_MTU, UNDERLAY_MTU, VNI, VTEP_A, VTEP_B, ForwarderTopology, tables
from .topology import Namespace, Topology


def step(text: str) -> None:
    print(f"\n== {text}", flush=True)


def ping_summary(ns: Namespace, dest: str, count: int, interval: float, size: int | None = None) -> str:
    """"L% loss, rtt min/avg/max a/b/c ms" of a ping run (DF set when size is given)."""
    args = ["ping", "-n", "-q", "-c", str(count), "-i", str(interval)]
    if size is not None:
        args += ["-M", "do", "-s", str(size)]
    out = ns.run(args + [dest], check=False, timeout=60).stdout
    loss = re.search(r"([\d.]+)% packet loss", out)
    rtt = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/", out)
    if not loss or not rtt:
        return f"no replies ({out.strip().splitlines()[-1] if out.strip() else 'no output'})"
    return f"{loss.group(1)}% loss, rtt min/avg/max {rtt.group(1)}/{rtt.group(2)}/{rtt.group(3)} ms"


def iperf(server: Namespace, client: Namespace, dest: str, seconds: float) -> str:
    srv = server.spawn(["iperf3", "-s", "-1"], name=f"iperf3-server-{time.monotonic_ns()}")
    time.sleep(0.5)
    res = client.run(["iperf3", "-c", dest, "-t", str(seconds), "-J"], check=False, timeout=seconds + 60)
    srv.wait(timeout=10)
    try:
        end = json.loads(res.stdout)["end"]
    except (ValueError, KeyError):
        return f"iperf3 failed: {(res.stdout + res.stderr).strip()[-200:]}"
    return (f"{end['sum_received']['bits_per_second'] / 1e9:.2f} Gbit/s, "
            f"{end['sum_sent'].get('retransmits', 0)} retransmits")


def print_counters(c: dict) -> None:
    for p in c["ports"]:
        print(f"  port {p['name']:<7} queue {p['queue']}: rx {int(p['rx_packets']):>9} tx {int(p['tx_packets']):>9} "
              f"drops {int(p['drops'])}")
    for v in c["vnis"]:
        print(f"  vni {v['vni']}: encap {int(v['encap_packets'])} pkts / {int(v['encap_bytes'])} B, "
              f"decap {int(v['decap_packets'])} pkts / {int(v['decap_bytes'])} B")
    nonzero = {d["reason"]: int(d["packets"]) for d in c["drops"] if int(d["packets"])}
    print(f"  drops by reason ({len(c['drops'])} reasons, non-zero shown): {nonzero or 'none'}")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python3 -m vxfed_harness.forwarder_demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=5, help="iperf3 seconds each way (default 5)")
    p.add_argument("--build-dir", type=Path, default=BUILD_DIR)
    args = p.parse_args(argv)
    r: dict[str, str] = {}
    with Topology("fdemo") as topo:
        f = ForwarderTopology(topo, build_dir=args.build_dir)
        f.build()
        step(f"topology: namespaces {', '.join(ns.name for ns in topo.namespaces)}")
        step(f"vxfed-dataplane in {f.node_a.name} (uplink af_packet on up0, 1 worker, no hugepages)")
        f.start()
        print(" ".join(f.dataplane.launch.argv(f.dataplane.program)))
        print(f"status before tables: {json.dumps(f.status())[:200]}")
        f.send_snapshot(tables(generation=1))
        print(f"snapshot applied:     {json.dumps(f.status())[:200]}")
        f.wait_reachable()

        step("ping pod A -> pod B and back (64 bytes and 8950-byte frames with DF set)")
        r["ping_ab"] = ping_summary(f.pod_a, POD_B, 20, 0.05)
        r["ping_ba"] = ping_summary(f.pod_b, POD_A, 20, 0.05)
        r["jumbo_ab"] = ping_summary(f.pod_a, POD_B, 10, 0.05, size=POD_MTU - 28)
        r["jumbo_ba"] = ping_summary(f.pod_b, POD_A, 10, 0.05, size=POD_MTU - 28)
        for key, label in (("ping_ab", "A->B 64B"), ("ping_ba", "B->A 64B"), ("jumbo_ab", f"A->B {POD_MTU}B DF"),
                           ("jumbo_ba", f"B->A {POD_MTU}B DF")):
            print(f"{label}: {r[key]}")
        step("latency: 1000 pings A -> B, 2 ms apart")
        r["latency"] = ping_summary(f.pod_a, POD_B, 1000, 0.002)
        print(r["latency"])

        step(f"iperf3 TCP, one stream, {args.seconds:g}s each way")
        r["tcp_ab"] = iperf(f.pod_b, f.pod_a, POD_B, args.seconds)
        print(f"A->B: {r['tcp_ab']}")
        r["tcp_ba"] = iperf(f.pod_a, f.pod_b, POD_A, args.seconds)
        print(f"B->A: {r['tcp_ba']}")

        step("dataplane counters (vxfed-dpctl counters)")
        print_counters(f.counters())

        step("SIGTERM: the dataplane stops and prints its final counters")
        f.proc.send_signal(signal.SIGTERM)
        rc = f.proc.wait(timeout=30)
        log = f.dataplane.log()
        print(log[log.find("vxfed-dataplane final counters"):] if "final counters" in log else log[-2000:])
        print(f"exit code: {rc}")
    print(f"""
================ vxfed forwarder demo: report ================
 pod A (behind vxfed-dataplane, VTEP {VTEP_A}) <-> pod B (behind Linux kernel vxlan, VTEP {VTEP_B}),
 VNI {VNI}, underlay MTU {UNDERLAY_MTU}
 ping 64 B        A->B: {r['ping_ab']}
                  B->A: {r['ping_ba']}
 ping {POD_MTU} B, DF  A->B: {r['jumbo_ab']}
                  B->A: {r['jumbo_ba']}
 latency (1000 pings, 2 ms apart) A->B: {r['latency']}
 iperf3 TCP 1 stream  A->B: {r['tcp_ab']}
                      B->A: {r['tcp_ba']}
 dataplane exit code on SIGTERM: {rc}
==============================================================""")
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
