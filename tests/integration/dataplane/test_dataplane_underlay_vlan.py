#!/usr/bin/env python3
"""The underlay 802.1Q tag (--underlay-vlan, --dscp-pcp) on the wire. This kernel has no 8021q
module, so no VLAN device can check it; instead:

  1. vxfed-dataplane with --underlay-vlan 0 (802.1p priority tags) and --dscp-pcp 10=5 talks to
     the Linux kernel's vxlan device on node B, which accepts VID-0 tags without 8021q: pings of
     four traffic classes cross both ways, and a capture of node B's underlay interface
     (tcpdump, which shows the tag the kernel took off the frame) has every encapsulated frame
     and the dataplane's ARP tagged VID 0 with the PCP of the inner DSCP (class selector, or the
     override).
  2. VXLAN frames tagged VID 100 (a VLAN the node is not even configured for: the fabric decides
     membership) and VID 0, written raw onto the underlay from node B, are decapsulated and
     reach pod A.
"""

import re
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d

# Raw VXLAN injector, run in node B: argv = src MAC, dst MAC, then per frame "TCI:ICMP_ID".
INJECT = r'''
import socket, struct, sys
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
def ipv4(src, dst, proto, payload, tos=0):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(payload), 0, 0x4000, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload
src_mac, dst_mac = (bytes.fromhex(m.replace(":", "")) for m in sys.argv[1:3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("up1", 0))
for spec in sys.argv[3:]:
    tci, ident = (int(x, 0) for x in spec.split(":"))
    icmp = struct.pack("!BBHHH", 8, 0, 0, ident, 1) + b"vxfed-vlan" * 4
    icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
    inner = (bytes.fromhex("%POD_A_MAC%".replace(":", "")) + bytes.fromhex("%GATEWAY_MAC%".replace(":", ""))
             + b"\x08\x00" + ipv4("%POD_B%", "%POD_A%", 1, icmp))
    vxlan = struct.pack("!II", 0x08000000, %VNI% << 8) + inner
    udp = struct.pack("!HHHH", 50001, 4789, 8 + len(vxlan), 0) + vxlan
    frame = dst_mac + src_mac + struct.pack("!HH", 0x8100, tci) + b"\x08\x00" + ipv4("%VTEP_B%", "%VTEP_A%", 17, udp)
    s.send(frame)
'''
for key in ("POD_A_MAC", "GATEWAY_MAC", "POD_B", "POD_A", "VNI", "VTEP_B", "VTEP_A"):
    INJECT = INJECT.replace(f"%{key}%", str(getattr(d, key)))

# (ping -Q TOS byte, payload size to tell the frames apart, expected PCP)
CLASSES = [(0x00, 100, 0),       # best effort
           (26 << 2, 200, 3),    # RoCEv2's DSCP 26 -> class selector 3
           (46 << 2, 300, 5),    # EF -> 5
           (10 << 2, 400, 5)]    # DSCP 10 (class selector 1) -> 5 by --dscp-pcp 10=5
OUTER = 14 + 4 + 20 + 8 + 8 + 14 + 20 + 8   # tagged outer + inner Ethernet/IPv4/ICMP headers
OUTER_SRC = re.compile(r"ethertype IPv4 \(0x0800\), (?:length \d+: )?(\d+\.\d+\.\d+\.\d+)\.\d+ > \S+ VXLAN")
ARP_SENDER = re.compile(r"(?:Request who-has \S+ tell (\S+),|Reply (\S+) is-at)")


def sender(line: str) -> str:
    """The outer source address of a VXLAN frame or the sender of an ARP in tcpdump -e -nn output."""
    m = OUTER_SRC.search(line) or ARP_SENDER.search(line)
    return next((g for g in m.groups() if g), "") if m else ""


def mac_of(ns, ifname: str) -> str:
    return ns.run(["cat", f"/sys/class/net/{ifname}/address"]).stdout.strip()


def tagged_lines(ns, pcap: str) -> list[str]:
    r = ns.run(["tcpdump", "-r", pcap, "-e", "-nn"], check=False)
    return r.stdout.splitlines()


def main() -> None:
    t.require_root()
    t.require_program("tcpdump")
    with t.Topology("dpvlan") as topo:
        f = d.ForwarderTopology(topo)
        f.build()
        pcap = str(topo.workdir / "up1.pcap")
        cap = f.node_b.spawn(["tcpdump", "-i", "up1", "-U", "--immediate-mode", "-nn", "-w", pcap, "arp or udp port 4789"], name="tcpdump-up1")
        time.sleep(1.0)  # tcpdump attached before the dataplane's first ARP
        f.start(extra=["--underlay-vlan", "0", "--dscp-pcp", "10=5"])
        f.send_snapshot(d.tables(generation=1))
        f.wait_reachable()
        for tos, size, _ in CLASSES:
            r = f.pod_a.run(["ping", "-n", "-c", "2", "-i", "0.2", "-W", "2", "-Q", str(tos), "-s", str(size), d.POD_B],
                            check=False)
            assert r.returncode == 0 and " 0% packet loss" in r.stdout, (tos, r.stdout + r.stderr)
            r = f.pod_b.run(["ping", "-n", "-c", "2", "-i", "0.2", "-W", "2", "-Q", str(tos), "-s", str(size), d.POD_A],
                            check=False)
            assert r.returncode == 0 and " 0% packet loss" in r.stdout, (tos, r.stdout + r.stderr)
        time.sleep(0.5)
        cap.terminate()
        cap.wait(timeout=10)
        lines = tagged_lines(f.node_b, pcap)
        from_a = [ln for ln in lines if sender(ln) == d.VTEP_A]
        untagged_from_a = [ln for ln in from_a if "802.1Q" not in ln]
        assert not untagged_from_a, "untagged frames from the dataplane:\n" + "\n".join(untagged_from_a[:5])
        arps = [ln for ln in from_a if "ARP" in ln]
        assert arps and all("vlan 0, p 0," in ln for ln in arps), "ARP of the dataplane:\n" + "\n".join(arps)
        for tos, size, pcp in CLASSES:
            frames = [ln for ln in from_a if f"length {OUTER + size}:" in ln and "VXLAN" in ln]
            # 2 echo requests (A's pings) + 2 echo replies (B's pings) of this size, both of A's class.
            assert len(frames) == 4, (tos, size, "\n".join(ln for ln in from_a if "VXLAN" in ln))
            bad = [ln for ln in frames if f"vlan 0, p {pcp}," not in ln]
            assert not bad, f"TOS {tos:#x}: expected vlan 0, p {pcp}:\n" + "\n".join(bad)
        t.log(f"underlay capture: {len(from_a)} frames from the dataplane, all VID 0 with the PCP of their class "
              f"(e.g. {[ln for ln in from_a if 'VXLAN' in ln][0].split(': ')[1]})")
        untagged_from_b = [ln for ln in lines if sender(ln) == d.VTEP_B and "802.1Q" not in ln]
        assert untagged_from_b, "node B's kernel sends untagged frames: the dataplane's decap of those is tested"

        # Tagged frames in: VID 100 with PCP 5, and a priority tag, from node B's raw socket.
        before = d.vni_counters(f.counters()).get("decap_packets", 0)
        pod_cap = f.pod_a.spawn(["tcpdump", "-i", "eth0", "-U", "--immediate-mode", "-nn", "-w", str(topo.workdir / "podA.pcap"), "icmp"],
                                name="tcpdump-podA")
        time.sleep(1.0)
        f.node_b.run(["python3", "-c", INJECT, mac_of(f.node_b, "up1"), mac_of(f.node_a, "up0"),
                      f"{5 << 13 | 100:#x}:0x4201", f"{3 << 13:#x}:0x4202"])
        t.wait_for(lambda: d.vni_counters(f.counters()).get("decap_packets", 0) >= before + 2, 10,
                   "the two tagged VXLAN frames decapsulated")
        time.sleep(0.5)
        pod_cap.terminate()
        pod_cap.wait(timeout=10)
        seen = tagged_lines(f.pod_a, str(topo.workdir / "podA.pcap"))
        for ident in (0x4201, 0x4202):
            hit = [ln for ln in seen if f"{d.POD_B} > {d.POD_A}: ICMP echo request, id {ident}," in ln]
            assert hit and "802.1Q" not in hit[0], (hex(ident), "\n".join(seen))
        assert d.vni_counters(f.counters())["decap_packets"] == before + 2, "only the two injected frames"
        t.log("VXLAN tagged VID 100 / PCP 5 and VID 0 / PCP 3 decapsulated to pod A, untagged")
        rc, log = f.stop()
        assert rc == 0, log


if __name__ == "__main__":
    t.main_wrapper(main)
