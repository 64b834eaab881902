#!/usr/bin/env python3
"""Interoperability on the wire: a pod behind vxfed-dataplane and a pod behind the Linux kernel's
vxlan device, joined by an MTU 9000 underlay, exchange pings (also 8950-byte frames with DF, in
both directions) and an iperf3 run; the dataplane's counters (read over its API) move as they
must. Also: datagrams above the pod MTU cross as fragments both ways (ping -M dont -s 10000,
iperf3 UDP with 12,000- and 30,000-byte datagrams); nothing is forwarded before the first Snapshot; a pod packet over the network MTU
gets ICMP fragmentation-needed naming MTU 8950 when DF is set, and is dropped and counted
(too_big_no_df) when it is not; a forged inner source from pod B (an address not routed to
node B's VTEP) is dropped by the reverse-path check and counted (inner_source_spoofed)."""

import json
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d


def main() -> None:
    t.require_root()
    with t.Topology("dpwire") as topo:
        f = d.ForwarderTopology(topo)
        f.build()
        f.start()
        # Empty tables: not ready, nothing forwarded, counted as no_tables.
        assert f.status().get("ready", False) is False, f.status()
        r = f.pod_a.ping(d.POD_B, count=2)
        assert r.returncode != 0, "forwarded before the first snapshot:\n" + r.stdout
        no_tables0 = d.drop_map(f.counters())["no_tables"]
        # Two broadcast pings from node B reach the uplink without waiting for ARP.
        f.node_b.run(["ping", "-b", "-n", "-c", "2", "-i", "0.2", "-W", "1", "198.18.0.255"], check=False)
        assert d.drop_map(f.counters())["no_tables"] >= no_tables0 + 2, (no_tables0, f.counters()["ports"])
        f.send_snapshot(d.tables(generation=7))
        st = f.status()
        assert st["ready"] is True and int(st["generation"]) == 7, st
        assert int(st["ports"]) == 2, st   # uplink + the af_packet port hot-plugged on hA
        f.wait_reachable()
        before = f.counters()

        for src, dst in ((f.pod_a, d.POD_B), (f.pod_b, d.POD_A)):
            r = src.ping(dst, count=5)
            assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr
            # 8922 bytes of ICMP payload = 8950-byte IPv4 packet = the pod MTU, DF set.
            r = src.ping(dst, count=5, size=8922, df=True)
            assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr
            assert "8930 bytes from" in r.stdout, r.stdout

        # A little over the pod MTU with DF: refused by the sender's kernel (MTU 8950).
        r = f.pod_a.ping(d.POD_B, count=1, size=8923, df=True)
        assert r.returncode != 0, r.stdout

        # Too big for the tunnel: raise pod A's MTU past the network's so its kernel sends
        # 8960-byte packets. With DF the dataplane answers ICMP fragmentation-needed with the
        # network MTU (8950); without DF it drops and counts (too_big_no_df).
        drops0 = d.drop_map(f.counters())
        f.pod_a.run("ip link set eth0 mtu 9000")
        r = f.pod_a.ping(d.POD_B, count=2, size=8960 - 28, df=True)
        t.log("oversized DF ping: " + (r.stdout + r.stderr).strip().splitlines()[-1])
        assert r.returncode != 0 and "8950" in (r.stdout + r.stderr), r.stdout + r.stderr
        f.pod_a.run(f"ip route flush cache")
        r = f.pod_a.run(["ping", "-n", "-c", "2", "-W", "1", "-M", "dont", "-s", str(8960 - 28), d.POD_B], check=False)
        assert r.returncode != 0, r.stdout
        f.pod_a.run(f"ip link set eth0 mtu {d.POD_MTU}")
        f.pod_a.run(f"ip route flush cache")
        drops1 = d.drop_map(f.counters())
        assert drops1["too_big_df"] > drops0["too_big_df"], (drops0, drops1)
        assert drops1["too_big_no_df"] > drops0["too_big_no_df"], (drops0, drops1)

        srv = f.pod_b.spawn("iperf3 -s -1", name="iperf3-server")
        time.sleep(0.5)
        r = f.pod_a.run(f"iperf3 -c {d.POD_B} -t 3 -J", timeout=60)
        srv.wait(timeout=10)
        result = json.loads(r.stdout)
        gbps = result["end"]["sum_received"]["bits_per_second"] / 1e9
        t.log(f"iperf3 pod A -> pod B through vxfed-dataplane and kernel vxlan: {gbps:.2f} Gbit/s")
        assert result["end"]["sum_received"]["bytes"] > 10_000_000, result["end"]

        # Fragments cross as fragments (docs/pod-ports.md): datagrams above the pod MTU, which
        # the pods' own stacks fragment, get through both ways. With the af_packet endpoint
        # ports (PACKET_FANOUT_FLAG_DEFRAG) they were reassembled and dropped: 100 % loss.
        for src, dst in ((f.pod_a, d.POD_B), (f.pod_b, d.POD_A)):
            r = src.run(["ping", "-n", "-c", "5", "-i", "0.2", "-W", "2", "-M", "dont", "-s", "10000", dst], check=False)
            assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr
        for length in (12000, 30000):
            for reverse in (False, True):
                srv = f.pod_b.spawn("iperf3 -s -1", name=f"iperf3-udp-{length}")
                time.sleep(0.5)
                r = f.pod_a.run(f"iperf3 -c {d.POD_B} -u -b 50M -l {length} -w 4M -t 2 -J" + (" -R" if reverse else ""),
                                timeout=60)
                srv.wait(timeout=10)
                udp = json.loads(r.stdout)["end"]["sum"]
                t.log(f"iperf3 UDP {length}-byte datagrams {'B -> A' if reverse else 'A -> B'}: "
                      f"{udp['lost_packets']}/{udp['packets']} lost")
                assert udp["packets"] > 100 and udp["lost_percent"] < 5, udp

        # The reverse-path check (docs/security.md): pod B sends from an address the tables do
        # not route to node B's VTEP (node B's kernel forwards it, rp_filter off); decapsulated,
        # it is refused and counted, and pod B's own address still gets through.
        spoof0 = d.drop_map(f.counters())["inner_source_spoofed"]
        f.node_b.run("sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.hB.rp_filter=0")
        f.pod_b.run("ip addr add 10.99.0.7/32 dev eth0")
        r = f.pod_b.run(["ping", "-n", "-c", "3", "-i", "0.2", "-W", "1", "-I", "10.99.0.7", d.POD_A], check=False)
        assert r.returncode != 0, "a forged inner source was delivered:\n" + r.stdout
        spoof1 = d.drop_map(f.counters())["inner_source_spoofed"]
        t.log(f"forged inner source 10.99.0.7 from pod B: inner_source_spoofed {spoof0} -> {spoof1}")
        assert spoof1 >= spoof0 + 3, (spoof0, spoof1)
        f.pod_b.run("ip addr del 10.99.0.7/32 dev eth0")
        r = f.pod_b.ping(d.POD_A, count=2)
        assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr

        after = f.counters()
        v0, v1 = d.vni_counters(before), d.vni_counters(after)
        enc = v1["encap_packets"] - v0.get("encap_packets", 0)
        dec = v1["decap_packets"] - v0.get("decap_packets", 0)
        t.log(f"counters moved: encap {enc} decap {dec}")
        # 20 pings each way (10 echo + 10 reply per direction) + iperf3's thousands.
        assert enc >= 20 + 1000 and dec >= 20, (v0, v1)
        assert v1["encap_bytes"] - v0.get("encap_bytes", 0) >= result["end"]["sum_received"]["bytes"]
        for field in ("rx_packets", "tx_packets"):
            assert d.port_sum(after, "uplink", field) > d.port_sum(before, "uplink", field)
            assert d.port_sum(after, "hA", field) > d.port_sum(before, "hA", field)
        drops = d.drop_map(after)
        assert len(drops) >= 30 and "unknown_vni" in drops and drops["unknown_vni"] == 0, drops
        for bad in ("udp_length_mismatch", "bad_vxlan_flags", "unknown_vtep", "inner_too_big",
                    "headers_split", "truncated"):
            assert drops[bad] == 0, (bad, drops)
        dump = f.call("dump")["tables"]
        assert int(dump["generation"]) == 7 and len(dump["tables"]["endpoints"]) == 1, dump
        rc, log = f.stop()
        assert rc == 0, log


if __name__ == "__main__":
    t.main_wrapper(main)
