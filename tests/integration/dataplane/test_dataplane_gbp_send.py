#!/usr/bin/env python3
"""VXLAN Group Policy (VXLAN-GBP) sent by the forwarder, against Linux's vxlan driver on node B.
Pod A's endpoint carries identity 677 (0x2a5); node B's VTEP is given `gbp` in an explicit Vtep
entry or not. A mangle rule on node B counts what vxlan0 decapsulated with the packet mark's low
16 bits equal to 677 (Linux's vxlan device with `gbp` puts the Group Policy ID there), another
what it decapsulated with low bits 0.

  1. Node B's vxlan0 without `gbp`, Vtep entry without gbp: pod A and pod B ping each other
     (a device without gbp drops any VXLAN flags but 0x08: every echo answered means plain
     VXLAN).
  2. The same device, the Vtep entry says gbp: pod A's echo requests now carry G, and the
     device without gbp drops them (the reason the flag is per VTEP).
  3. vxlan0 recreated with `gbp`: pod A's echo requests arrive marked 677, every one answered.
  4. The round trip: node B marks what it sends (0x1234): the forwarder takes its GBP packets
     (gbp_rx_packets) while sending its own.
  5. The Vtep entry's gbp off again (a Delta, in place): packets arrive unmarked, none with
     677 any more, pings still answered (the gbp device takes plain VXLAN)."""

import vxfed_harness as t
from vxfed_harness import forwarder as d
from test_dataplane_gbp import gbp_counts, use_gbp_device

IDENTITY = 677
COUNT_RULES = [f"PREROUTING -i vxlan0 -m mark --mark {IDENTITY}/0xffff",
               "PREROUTING -i vxlan0 -m mark --mark 0/0xffff"]


def tables_with_identity(f: d.ForwarderTopology, gbp: bool) -> dict:
    snapshot = d.tables(generation=1, vtep_b=f.vtep_b)
    snapshot["tables"]["endpoints"][0]["identity"] = IDENTITY
    snapshot["tables"]["vteps"] = [{"ip": f.vtep_b, "gbp": gbp}]
    return snapshot


def add_count_rules(f: d.ForwarderTopology) -> None:
    for rule in COUNT_RULES:
        f.node_b.run("iptables -t mangle -A " + rule)


def counted(f: d.ForwarderTopology) -> tuple[int, int]:
    """(packets from vxlan0 marked IDENTITY, packets with low mark bits 0)."""
    out = f.node_b.run("iptables -t mangle -L PREROUTING -v -n -x").stdout
    marked = plain = None
    for line in out.splitlines():
        if f"mark match {hex(IDENTITY)}/0xffff" in line:
            marked = int(line.split()[0])
        elif "mark match 0x0/0xffff" in line:
            plain = int(line.split()[0])
    assert marked is not None and plain is not None, out
    return marked, plain


def ping(src, dst: str, count: int) -> bool:
    r = src.ping(dst, count=count)
    return r.returncode == 0 and " 0% packet loss" in r.stdout


def set_gbp(f: d.ForwarderTopology, gbp: bool, generation: int) -> None:
    d.send_delta(f, {"generation": generation, "upsert": {"vteps": [{"ip": f.vtep_b, "gbp": gbp}]}})
    dump = f.call("dump")
    vteps = dump["tables"]["tables"].get("vteps", [])
    assert any(v["ip"] == f.vtep_b and bool(v.get("gbp", False)) == gbp for v in vteps), dump


def main() -> None:
    t.require_root()
    with t.Topology("dpgbps") as topo:
        f = d.ForwarderTopology(topo)
        f.build()
        f.start()
        f.send_snapshot(tables_with_identity(f, gbp=False))
        f.wait_reachable()
        add_count_rules(f)

        # 1. Plain toward a VTEP without gbp: the kernel device without gbp takes it.
        assert ping(f.pod_a, d.POD_B, 5) and ping(f.pod_b, d.POD_A, 5)
        m1, p1 = counted(f)
        t.log(f"device without gbp, vtep without gbp: marked {m1}, unmarked {p1}")
        assert m1 == 0 and p1 >= 10, (m1, p1)

        # 2. G toward a device without gbp: dropped by Linux (why the flag is per VTEP).
        set_gbp(f, True, 2)
        assert not ping(f.pod_a, d.POD_B, 3)
        m2, p2 = counted(f)
        t.log(f"device without gbp, vtep with gbp: marked {m2}, unmarked {p2 - p1} more")
        assert m2 == 0 and p2 == p1, (m1, p1, m2, p2)

        # 3. Node B's device with gbp: the group arrives in the mark.
        use_gbp_device(f)
        assert ping(f.pod_a, d.POD_B, 10), "pings toward the gbp device"
        m3, p3 = counted(f)
        t.log(f"gbp device, vtep with gbp: marked {m3}, unmarked {p3 - p2} more")
        assert m3 >= 10 and p3 == p2, (m3, p2, p3)

        # 4. The round trip: node B's marked packets are taken while ours carry the group.
        g0, _ = gbp_counts(f)
        f.node_b.run("iptables -t mangle -A FORWARD -o vxlan0 -j MARK --set-mark 0x1234")
        assert ping(f.pod_b, d.POD_A, 5), "pings from the gbp device's side"
        g1, _ = gbp_counts(f)
        m4, _ = counted(f)
        t.log(f"round trip: gbp_rx_packets {g0} -> {g1}, marked {m3} -> {m4}")
        assert g1 - g0 >= 5 and m4 - m3 >= 5, (g0, g1, m3, m4)
        f.node_b.run("iptables -t mangle -D FORWARD -o vxlan0 -j MARK --set-mark 0x1234")

        # 5. gbp off again, in place: plain VXLAN, still taken by the gbp device.
        set_gbp(f, False, 3)
        assert ping(f.pod_a, d.POD_B, 5)
        m5, p5 = counted(f)
        t.log(f"gbp device, vtep without gbp: marked {m5 - m4} more, unmarked {p5 - p3} more")
        assert m5 == m4 and p5 - p3 >= 5, (m4, m5, p3, p5)

        drops = d.drop_map(f.counters())
        assert drops["bad_vxlan_flags"] == 0 and drops["bad_vxlan_gbp_bits"] == 0, drops
        rc, log = f.stop()
        assert rc == 0, log


if __name__ == "__main__":
    t.main_wrapper(main)
