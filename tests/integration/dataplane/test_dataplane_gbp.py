#!/usr/bin/env python3
"""VXLAN Group Policy (VXLAN-GBP) from a Linux peer: node B's kernel vxlan device is created with
`gbp`, so it writes the packet mark's low 16 bits into the VXLAN header as the Group Policy ID
(flags 0x88) and the mark's bit 0x80000 as the A bit; with mark 0 it sends plain VXLAN (0x08).
An iptables mangle rule on node B marks what it forwards from pod B into vxlan0.

  1. Without a mark: pod B and pod A ping each other; no GBP packet is counted.
  2. Mark 0x1234: pod B pings pod A and pod A pings pod B (the replies from B carry the group
     too); every ping is answered, the dataplane counts the GBP packets it received
     (Counters.gbp_rx_packets), none with A, and drops none for its flags.
  3. Mark 0x81234 (A set): the same pings; now they count as policy-applied too.
Before the forwarder took GBP, every marked packet was dropped as bad_vxlan_flags."""

import vxfed_harness as t
from vxfed_harness import forwarder as d

MARK_RULE = "FORWARD -o vxlan0 -j MARK --set-mark {mark}"


def gbp_counts(f: d.ForwarderTopology) -> tuple[int, int]:
    c = f.counters()
    return int(c.get("gbp_rx_packets", 0)), int(c.get("gbp_rx_policy_applied", 0))


def use_gbp_device(f: d.ForwarderTopology) -> None:
    """Replaces node B's vxlan0 (as ForwarderTopology.build made it) by the same device with
    `gbp`: Linux cannot switch gbp on an existing device."""
    b = f.node_b
    b.run("ip link del vxlan0")
    b.run(f"ip link add vxlan0 type vxlan id {d.VNI} local {f.vtep_b} dstport 4789 dev up1 nolearning gbp")
    b.run(f"ip link set vxlan0 address {d.GATEWAY_MAC} mtu {f.pod_mtu} up")
    b.run(f"bridge fdb append 00:00:00:00:00:00 dev vxlan0 dst {d.VTEP_A}")
    b.run(f"ip route add 10.244.0.0/16 via {d.GATEWAY_A} dev vxlan0 onlink")
    b.run(f"ip neigh replace {d.GATEWAY_A} lladdr {d.GATEWAY_MAC} dev vxlan0 nud permanent")
    details = b.run("ip -d link show vxlan0").stdout
    assert " gbp" in details, details


def ping_both_ways(f: d.ForwarderTopology, count: int) -> None:
    for src, dst in ((f.pod_b, d.POD_A), (f.pod_a, d.POD_B)):
        r = src.ping(dst, count=count)
        assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr


def marked_packets(f: d.ForwarderTopology, mark: str) -> int:
    """Packets node B's mangle rule for this mark has marked."""
    out = f.node_b.run("iptables -t mangle -L FORWARD -v -n -x").stdout
    for line in out.splitlines():
        if "MARK set " + mark in line:
            return int(line.split()[0])
    raise AssertionError(f"no mangle rule for mark {mark}:\n{out}")


def main() -> None:
    t.require_root()
    with t.Topology("dpgbp") as topo:
        f = d.ForwarderTopology(topo)
        f.build()
        use_gbp_device(f)
        f.start()
        f.send_snapshot(d.tables(generation=1, vtep_b=f.vtep_b))
        f.wait_reachable()

        # 1. Mark 0: the gbp device sends plain VXLAN.
        g0, a0 = gbp_counts(f)
        ping_both_ways(f, 5)
        g1, a1 = gbp_counts(f)
        t.log(f"no mark: gbp_rx_packets {g0} -> {g1}")
        assert (g1, a1) == (g0, a0), ((g0, a0), (g1, a1))

        # 2. Group 0x1234: 10 echo requests from B and 10 replies from B, all with G.
        decap0 = d.vni_counters(f.counters()).get("decap_packets", 0)
        f.node_b.run("iptables -t mangle -A " + MARK_RULE.format(mark="0x1234"))
        ping_both_ways(f, 10)
        g2, a2 = gbp_counts(f)
        marked = marked_packets(f, "0x1234")
        after = f.counters()
        decap = d.vni_counters(after)["decap_packets"] - decap0
        t.log(f"mark 0x1234: {marked} packets marked on node B; gbp_rx_packets {g1} -> {g2}, "
              f"policy applied {a1} -> {a2}; decap {decap}")
        assert marked >= 20, marked
        assert g2 - g1 >= 20 and g2 - g1 <= marked, (g1, g2, marked)
        assert a2 == a1, (a1, a2)
        assert decap >= 20, decap
        drops = d.drop_map(after)
        assert drops["bad_vxlan_flags"] == 0 and drops["bad_vxlan_gbp_bits"] == 0, drops

        # 3. The mark's bit 0x80000 is the A bit (policy applied) in Linux's vxlan driver.
        f.node_b.run("iptables -t mangle -R " + MARK_RULE.format(mark="0x81234").replace("FORWARD", "FORWARD 1", 1))
        ping_both_ways(f, 5)
        g3, a3 = gbp_counts(f)
        t.log(f"mark 0x81234: gbp_rx_packets {g2} -> {g3}, policy applied {a2} -> {a3}")
        assert g3 - g2 >= 10 and a3 - a2 >= 10 and a3 - a2 <= g3 - g2, (g2, g3, a2, a3)

        drops = d.drop_map(f.counters())
        assert drops["bad_vxlan_flags"] == 0 and drops["bad_vxlan_gbp_bits"] == 0, drops
        rc, log = f.stop()
        assert rc == 0, log
        assert "vxlan-gbp received: " + str(g3) in log, log[-2000:]


if __name__ == "__main__":
    t.main_wrapper(main)
