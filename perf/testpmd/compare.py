#!/usr/bin/python3
"""vxfed-dataplane against dpdk-testpmd io-forwarding on the same device pair, same run.

The pair: a pcap vdev replaying synthetic frames forever (infinite_rx) as the receiving port,
and a net_null vdev (no-rx) as the transmitting port. testpmd io-forwards pcap -> null; the
dataplane receives the same frames and forwards them through its pipeline to the null port:
  decap: pcap = uplink (VXLAN from a remote VTEP) -> decapsulated to an endpoint (null port)
  encap: pcap = endpoint (a pod's frames)        -> encapsulated to the uplink (null port)
One worker lcore each, same mbuf data room (the dataplane's jumbo size), runs alternate.
Rates: testpmd's own per-second Tx-pps of the null port; the dataplane's tx counter of the null
port read over its API before and after a window. Prints and writes JSON (perf/results/).

  sudo perf/testpmd/compare.py --build-dir build [--runs 5] [--seconds 5] [--direction decap]

--capture-other-pod: the dataplane also serves an idle pod (a third, silent net_null port), and
each of its runs is two windows back to back, the second with `vxfed-dpctl capture` of that idle
pod running: what a capture costs the pods it does not capture (docs/dataplane.md, "Packet
capture"). The JSON gets capture_on_over_off per direction.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import frames
from vxfed_harness.dataplane import DATAPLANE, RUNTIME_ROOT, DataplaneLaunch, eal_args, lcore_map
from vxfed_harness.env import SOURCE_DIR as ROOT

MBUF_DATA_ROOM = 9344  # what vxfed-dataplane --mtu 9000 allocates (ports.cpp)
QUIET_EAL = ["--log-level", "lib.eal:error"]


def eal(prefix: str, vdevs: list[str]) -> list[str]:
    """testpmd's EAL options: the dataplane's (one worker lcore), on the same devices."""
    return eal_args(prefix, vdevs, lcore_map(1), extra=QUIET_EAL)


def vdevs(direction: str, pcap: str) -> tuple[list[str], str, str]:
    """Returns (vdevs, rx device, tx device); vdev 0 is the dataplane's uplink."""
    pcap_dev = f"rx_pcap={pcap},tx_pcap=/dev/null,infinite_rx=1"
    if direction == "decap":
        return [f"net_pcap0,{pcap_dev}", "net_null1,no-rx=1"], "net_pcap0", "net_null1"
    return ["net_null0,no-rx=1", f"net_pcap1,{pcap_dev}"], "net_pcap1", "net_null0"


def run_testpmd(direction: str, pcap: str, seconds: float, tag: str) -> float:
    devs, _, _ = vdevs(direction, pcap)
    tx_port = 1 if direction == "decap" else 0
    cmd = ["dpdk-testpmd"] + eal(f"vxbt{tag}", devs) + [
        "--", "--forward-mode=io", "--auto-start", "--stats-period", "1", "--no-lsc-interrupt",
        "--total-num-mbufs=16384", f"--mbuf-size={MBUF_DATA_ROOM}", "--rxq=1", "--txq=1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # testpmd prints every port's Tx-pps once a second; collect the null port's, skipping the
    # first non-zero sample (a partial second), until `seconds` samples are in.
    rates, port, seen, tail = [], None, 0, []
    deadline = time.monotonic() + seconds + 60
    assert proc.stdout is not None
    for line in proc.stdout:
        tail = (tail + [line])[-60:]
        m = re.search(r"NIC statistics for port (\d+)", line)
        if m:
            port = int(m.group(1))
        m = re.search(r"Tx-pps:\s+(\d+)", line)
        if m and port == tx_port and int(m.group(1)) > 0:
            seen += 1
            if seen > 1:
                rates.append(int(m.group(1)))
        if len(rates) >= seconds or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    shutil.rmtree(RUNTIME_ROOT / f"vxbt{tag}", ignore_errors=True)
    if not rates:
        raise RuntimeError("testpmd reported no rate:\n" + "".join(tail))
    return statistics.median(rates) / 1e6


def run_ours(build: Path, direction: str, pcap: str, seconds: float, tag: str, workdir: Path,
             capture_other_pod: bool = False) -> tuple[float, float | None]:
    """The dataplane's rate (Mpps), and with capture_other_pod its rate in a second window while
    an idle pod's port is captured (else None)."""
    devs, rx_dev, tx_dev = vdevs(direction, pcap)
    tables = {
        "generation": 1,
        "tables": {
            "networks": [{"vni": frames.VNI, "gateway_ip": "10.244.0.1", "gateway_mac": frames.GATEWAY_MAC.hex(":")}],
            "endpoints": [{"id": "bench", "vni": frames.VNI, "ip": frames.POD_LOCAL,
                           "mac": frames.POD_LOCAL_MAC.hex(":"), "iface": "bench0"}],
            "routes": [{"vni": frames.VNI, "prefix": "10.245.0.0/16", "next_hops": [{"vtep": frames.VTEP_REMOTE}]}],
            "neighbors": [{"ip": frames.VTEP_REMOTE, "mac": frames.REMOTE_MAC.hex(":")}],
        },
    }
    endpoint_dev = tx_dev if direction == "decap" else rx_dev
    uplink_dev = rx_dev if direction == "decap" else tx_dev
    endpoint_ports = {"bench0": endpoint_dev}
    if capture_other_pod:
        devs = devs + ["net_null2,no-rx=1"]
        endpoint_ports["idle0"] = "net_null2"
        tables["tables"]["endpoints"].append({"id": "idle", "vni": frames.VNI, "ip": "10.244.1.3",
                                              "mac": "02:00:0a:f4:01:03", "iface": "idle0"})
    tables_file = workdir / "tables.json"
    tables_file.write_text(json.dumps(tables))
    sock = workdir / f"dp{tag}.sock"
    launch = DataplaneLaunch(file_prefix=f"vxbo{tag}", api_socket=sock, vtep_ip=frames.VTEP_LOCAL, vdevs=devs,
                             uplink=uplink_dev, tables_file=tables_file, endpoint_ports=endpoint_ports,
                             eal_extra=QUIET_EAL, extra=["--log-level", "warn"])
    cmd = launch.argv(build / DATAPLANE)
    log = open(workdir / f"ours{tag}.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    dpctl = str(build / "dataplane/runtime/vxfed-dpctl")

    def tx_packets() -> int:
        out = subprocess.run([dpctl, "--socket", str(sock), "counters"], capture_output=True, text=True, check=True).stdout
        name = "uplink" if direction == "encap" else "bench0"
        return sum(int(p.get("tx_packets", 0)) for p in json.loads(out)["counters"]["ports"] if p["name"] == name)

    try:
        deadline = time.monotonic() + 20
        while not sock.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("vxfed-dataplane did not start:\n" + (workdir / f"ours{tag}.log").read_text()[-3000:])
            time.sleep(0.1)
        time.sleep(1.5)
        a, ta = tx_packets(), time.monotonic()
        time.sleep(seconds)
        b, tb = tx_packets(), time.monotonic()
        with_capture = None
        if capture_other_pod:
            cap = subprocess.Popen([dpctl, "--socket", str(sock), "capture", "--port", "idle0", "--out", "/dev/null",
                                    "--seconds", str(seconds + 5)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
            time.sleep(0.5)
            if cap.poll() is not None:
                raise RuntimeError("vxfed-dpctl capture ended early: " + cap.stderr.read())
            c, tc = tx_packets(), time.monotonic()
            time.sleep(seconds)
            d, td = tx_packets(), time.monotonic()
            cap.send_signal(signal.SIGINT)
            _, err = cap.communicate(timeout=30)
            if cap.returncode != 0 or "ended: stopped" not in err:
                raise RuntimeError("vxfed-dpctl capture: " + err)
            with_capture = (d - c) / (td - tc) / 1e6
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        shutil.rmtree(launch.runtime_dir(), ignore_errors=True)
    return (b - a) / (tb - ta) / 1e6, with_capture


def summary(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3), "runs": [round(v, 3) for v in values]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--direction", choices=["decap", "encap", "both"], default="both")
    ap.add_argument("--frame-bytes", type=int, default=64, help="inner (decap) or pod (encap) frame size")
    ap.add_argument("--out", default=str(ROOT / "perf/results/testpmd.json"))
    ap.add_argument("--capture-other-pod", action="store_true",
                    help="also measure the dataplane while an idle pod's port is captured")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("compare.py: run as root (DPDK)")
    build = Path(args.build_dir).resolve()
    results = []
    with tempfile.TemporaryDirectory(prefix="vxfed-testpmd-") as tmp:
        workdir = Path(tmp)
        for direction in (["decap", "encap"] if args.direction == "both" else [args.direction]):
            pcap = str(workdir / f"{direction}.pcap")
            frames.write(pcap, direction, args.frame_bytes)
            ours, theirs, captured = [], [], []
            for i in range(args.runs):
                tag = f"{os.getpid() % 10000}{i}"
                theirs.append(run_testpmd(direction, pcap, args.seconds, tag))
                rate, with_capture = run_ours(build, direction, pcap, args.seconds, tag, workdir,
                                              args.capture_other_pod)
                ours.append(rate)
                line = f"{direction} run {i + 1}/{args.runs}: ours {ours[-1]:.2f} Mpps, testpmd {theirs[-1]:.2f} Mpps"
                if with_capture is not None:
                    captured.append(with_capture)
                    line += f", ours while another pod is captured {with_capture:.2f} Mpps"
                print(line, flush=True)
            o, t = summary(ours), summary(theirs)
            results.append({
                "direction": direction, "frame_bytes": args.frame_bytes,
                "wire_frame_bytes": args.frame_bytes + (50 if direction == "decap" else 0),
                "devices": "net_pcap(infinite_rx) -> net_null(no-rx), 1 worker lcore, mbuf data room "
                           f"{MBUF_DATA_ROOM}",
                "ours_mpps": o["median"], "testpmd_mpps": t["median"],
                "ratio": round(o["median"] / t["median"], 3),
                "ours": o, "testpmd": t,
                # Each run pairs a testpmd window with the dataplane's right after it: on a
                # shared machine the per-run ratio is the steadier figure.
                "ratio_runs": summary([a / b for a, b in zip(ours, theirs)]),
            })
            if captured:
                results[-1]["ours_capturing_other_pod"] = summary(captured)
                results[-1]["capture_on_over_off"] = summary([c / o for c, o in zip(captured, ours)])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
