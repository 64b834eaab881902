#!/usr/bin/env python3
"""Path MTU through a routed underlay: a router namespace between vxfed-dataplane (node A) and a
Linux VXLAN peer (node B) whose link toward node B has MTU 1500, below the 9000 the nodes use.
The dataplane sets DF on every outer packet, so the router answers a large one with ICMP
fragmentation-needed (MTU 1500) to node A's VTEP; the dataplane learns the path MTU toward
node B's VTEP from it and answers pod A's packets over 1450 bytes (1500 - 50) with
fragmentation-needed naming 1450, as Linux's vxlan does. Then pod A's own kernel sends at
1450: pings of that size cross, and an iperf3 TCP stream (whose first segments were sized for
the pod MTU 8950) runs. Without DF an oversized packet is dropped and counted
(path_too_big_no_df). The dataplane logs the path MTU it learned."""

import json
import re

import vxfed_harness as t
from vxfed_harness import forwarder as d

ROUTER_MTU = 1500
PATH_INNER_MTU = ROUTER_MTU - 50


def main() -> None:
    t.require_root()
    with t.Topology("dppmtu") as topo:
        f = d.ForwarderTopology(topo, router_mtu=ROUTER_MTU)
        f.up()
        r = f.pod_a.ping(d.POD_B, count=3, size=1000, df=True)
        assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr
        before = d.drop_map(f.counters())
        assert before.get("icmp_frag_needed_learned", 0) == 0, before

        # 3000-byte packets with DF: the first ones die at the router, which tells node A's VTEP.
        # Then the dataplane answers pod A itself; pod A's kernel learns 1450 and says so.
        r = f.pod_a.run(["ping", "-n", "-c", "6", "-i", "0.3", "-W", "1", "-M", "do", "-s", str(3000 - 28), d.POD_B],
                        check=False)
        out = r.stdout + r.stderr
        t.log("3000-byte DF pings: " + " | ".join(out.strip().splitlines()[-3:]))
        assert re.search(rf"mtu\s*=\s*{PATH_INNER_MTU}", out), out
        after = d.drop_map(f.counters())
        learned = after.get("icmp_frag_needed_learned", 0)
        answered = after.get("path_too_big_df", 0)
        assert learned >= 1, after
        assert answered >= 1, after
        t.log(f"router ICMP learned: {learned}; pod packets answered with fragmentation-needed: {answered}")

        # Pod A's kernel now sends 1450-byte packets at most toward pod B: they cross.
        r = f.pod_a.ping(d.POD_B, count=5, size=PATH_INNER_MTU - 28, df=True)
        assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr
        # One byte more does not (pod A's kernel refuses it from the cached path MTU).
        r = f.pod_a.ping(d.POD_B, count=1, size=PATH_INNER_MTU - 28 + 1, df=True)
        assert r.returncode != 0, r.stdout

        # TCP: its segments were sized for 8950; path MTU discovery brings them to 1450.
        f.pod_b.spawn(["iperf3", "-s", "-1", "-B", d.POD_B], name="iperf3-server")
        t.wait_for(lambda: f.pod_b.run(["ss", "-ltn"], check=False).stdout.count(":5201") > 0, 10, "iperf3 server")
        r = f.pod_a.run(["iperf3", "-c", d.POD_B, "-t", "3", "-J"], check=False, timeout=30)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr
        result = json.loads(r.stdout)
        bps = result["end"]["sum_received"]["bits_per_second"]
        t.log(f"iperf3 TCP pod A -> pod B through the 1500-byte path: {bps / 1e6:.0f} Mbit/s")
        assert bps > 10e6, result["end"]

        # Without DF, and with pod A's cached path MTU flushed (else its kernel fragments at
        # 1450 by itself): 3000-byte packets leave the pod whole, and are dropped and counted.
        no_df0 = d.drop_map(f.counters()).get("path_too_big_no_df", 0)
        f.pod_a.run("ip route flush cache")
        f.pod_a.run(["ping", "-n", "-c", "2", "-i", "0.2", "-W", "1", "-M", "dont", "-s", str(3000 - 28), d.POD_B],
                    check=False)
        no_df1 = d.drop_map(f.counters()).get("path_too_big_no_df", 0)
        assert no_df1 >= no_df0 + 2, (no_df0, no_df1)

        rc, log = f.stop()
        assert f"path MTU toward VTEP {d.VTEP_B_ROUTED} is {ROUTER_MTU}" in log, log[-3000:]
        t.log("dataplane log: " + next(l for l in log.splitlines() if "path MTU toward VTEP" in l).strip())


if __name__ == "__main__":
    t.main_wrapper(main)
