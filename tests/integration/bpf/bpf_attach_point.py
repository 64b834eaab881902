#!/usr/bin/env python3
"""Checks, on this kernel, why vxfed's programs attach on the POD side of the veth.

The dataplane reads and writes the host end of a pod's veth through AF_PACKET (DPDK's
af_packet PMD sets PACKET_QDISC_BYPASS by default). With a drop-everything TC program on the
host end:
  1. frames the pod sends still reach an AF_PACKET socket on the host end (taps run before
     TC ingress), so a host-side ingress limit cannot limit what the dataplane reads;
  2. frames sent through AF_PACKET without PACKET_QDISC_BYPASS pass TC egress (and are
     dropped), but with PACKET_QDISC_BYPASS they skip it and reach the pod, so a host-side
     egress limit cannot limit what the dataplane writes.
Each case has a control without the filter, so a broken probe cannot pass.
"""
import os
import subprocess
import sys
import time

from vxfed_harness import BUILD_DIR, Topology, log, main_wrapper, require_root

TAP = r'''
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
s.bind((sys.argv[1], 0)); s.settimeout(1.5)
n = 0
try:
    while True:
        if b"vxfed-probe" in s.recv(9100): n += 1
except socket.timeout:
    pass
print(n)
'''

SEND = r'''
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
if sys.argv[2] == "1":
    s.setsockopt(263, 20, 1)  # SOL_PACKET, PACKET_QDISC_BYPASS
s.bind((sys.argv[1], 0))
frame = bytes.fromhex("ffffffffffff02000000009988b5") + b"vxfed-probe" * 5  # local experimental ethertype
errors = 0
for _ in range(5):
    try:
        s.send(frame)
    except OSError:
        errors += 1
print(errors)
'''

FRAMES = 5


def main() -> None:
    require_root()
    drop_obj = BUILD_DIR / "tests/integration/bpf/drop_all.bpf.o"
    if not drop_obj.exists():
        from vxfed_harness import skip
        skip(f"{drop_obj} is not built")
    with Topology("bpfap") as topo:
        pod = topo.netns("pod")
        host = topo.netns("host")
        topo.veth(pod, "eth0", host, "vxh0")
        tap_py = topo.workdir / "tap.py"
        send_py = topo.workdir / "send.py"
        tap_py.write_text(TAP)
        send_py.write_text(SEND)

        def trial(sender, send_if, receiver, recv_if, bypass="0"):
            tap = subprocess.Popen(receiver.prefix() + ["python3", str(tap_py), recv_if],
                                   stdout=subprocess.PIPE, text=True)
            time.sleep(0.6)
            errors = int(sender.run(["python3", str(send_py), send_if, bypass]).stdout.strip())
            seen = int(tap.communicate(timeout=15)[0].strip() or "0")
            return seen, errors

        seen, _ = trial(pod, "eth0", host, "vxh0")
        log(f"control: pod -> host end, AF_PACKET tap saw {seen}/{FRAMES}")
        assert seen == FRAMES, "probe broken: the tap did not see frames without any filter"

        host.run("tc qdisc add dev vxh0 clsact")
        host.run(["tc", "filter", "add", "dev", "vxh0", "ingress", "bpf", "da", "obj", str(drop_obj), "sec", "tc"])
        seen, _ = trial(pod, "eth0", host, "vxh0")
        log(f"host-end TC ingress drops all: AF_PACKET tap on the host end still saw {seen}/{FRAMES}")
        assert seen == FRAMES, "expected AF_PACKET to see frames before TC ingress drops them"
        host.run("tc filter del dev vxh0 ingress")

        seen, errors = trial(host, "vxh0", pod, "eth0")
        log(f"control: AF_PACKET send on the host end, pod saw {seen}/{FRAMES}")
        assert seen == FRAMES and errors == 0

        host.run(["tc", "filter", "add", "dev", "vxh0", "egress", "bpf", "da", "obj", str(drop_obj), "sec", "tc"])
        seen, errors = trial(host, "vxh0", pod, "eth0", "0")
        log(f"host-end TC egress drops all, no bypass: pod saw {seen}/{FRAMES}, send errors {errors}")
        assert seen == 0, "expected TC egress to drop AF_PACKET frames sent through the qdisc layer"
        seen, errors = trial(host, "vxh0", pod, "eth0", "1")
        log(f"host-end TC egress drops all, PACKET_QDISC_BYPASS: pod saw {seen}/{FRAMES}, send errors {errors}")
        assert seen == FRAMES, "expected PACKET_QDISC_BYPASS frames to skip TC egress"


if __name__ == "__main__":
    main_wrapper(main)
