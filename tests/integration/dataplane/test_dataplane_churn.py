#!/usr/bin/env python3
"""Forwarding under churn (issue 16, item 4): with 130,000 routes installed, pod A pings pod B
at a fixed rate (100/s) through the dataplane while Deltas, one at a time, add and withdraw
/24 routes around the table and attach and detach other pods. Asserts: the steady pair loses
nothing and gets no duplicate (no reply misdelivered or doubled); every churned route forwards
right after its Delta is acknowledged (a ping to an address of it is answered through node B)
and stops right after its withdrawal (no_route counts the probe); every attached pod reaches
pod B and is reached from pod A right after its attach, and its port is gone after its detach.
The tables are changed in place, so no Delta rebuilds the 130k table (status: deltas_applied,
one Snapshot only)."""

import json
import subprocess
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d

ROUTES = 130_000
ROUTE_ROUNDS = 20
POD_ROUNDS = 3          # attach / check / detach, for each extra pod
EXTRA_PODS = 3
PING_COUNT = 1500       # at 100/s: the steady flow outlasts the churn


def table_routes() -> list:
    # 130,000 /24s toward node B (every /24 of 11.0.0.0/8, then 13.0.0.0/24 .. 13.251.207.0/24):
    # the table around which routes churn (12.0.0.0/8).
    def prefix(i: int) -> str:
        return f"{11 + 2 * (i >> 16)}.{(i >> 8) & 255}.{i & 255}.0/24"
    return [{"vni": d.VNI, "prefix": prefix(i), "next_hops": [{"vtep": d.VTEP_B}]} for i in range(ROUTES)]


def churn_prefix(k: int) -> str:
    return f"12.{k}.{k}.0/24"


def pod_ip(i: int) -> str:
    return f"10.244.3.{i}"


def pod_mac(i: int) -> str:
    return f"02:00:0a:f4:03:{i:02x}"


def batch(ns_name: str, lines: list[str]) -> None:
    subprocess.run(["ip", "-n", ns_name, "-batch", "-"], input="\n".join(lines) + "\n", text=True,
                   check=True, capture_output=True)


def main() -> None:
    t.require_root()
    with t.Topology("dpchurn") as topo:
        f = d.ForwarderTopology(topo)
        f.build()
        # Node B sends 12.0.0.0/8 to pod B, which answers for all of it: a ping from pod A to
        # any churned route's address goes out through that route and back.
        f.node_b.run(f"ip route add 12.0.0.0/8 via {d.POD_B} dev hB")
        f.pod_b.run("ip route add local 12.0.0.0/8 dev lo")
        pods = {i: topo.netns(f"c{i}") for i in range(1, EXTRA_PODS + 1)}
        batch(f.node_a.name, [f"link add hC{i} mtu {d.POD_MTU} type veth peer name eth0 netns {ns.name} "
                              f"mtu {d.POD_MTU}" for i, ns in pods.items()] + [f"link set hC{i} up" for i in pods])
        for i, ns in pods.items():
            batch(ns.name, [f"link set eth0 address {pod_mac(i)} up", f"addr add {pod_ip(i)}/32 dev eth0",
                            f"route add {d.GATEWAY_A}/32 dev eth0 scope link",
                            f"route add default via {d.GATEWAY_A} dev eth0"])
        f.start()
        t0 = time.monotonic()
        f.send_snapshot(d.tables(generation=1, extra_routes=table_routes()))
        t.log(f"snapshot of {ROUTES + 1} routes in force after {time.monotonic() - t0:.1f} s")
        assert int(f.status()["routes"]) == ROUTES + 1, f.status()
        f.wait_reachable()

        deltas = topo.workdir / "deltas"
        deltas.mkdir()
        generation = [1]

        def delta(body: dict) -> None:
            generation[0] += 1
            body["generation"] = generation[0]
            path = deltas / f"{generation[0]}.json"
            path.write_text(json.dumps(body))
            f.dpctl_raw("delta", str(path))  # returns once the dataplane acknowledged it

        ping = f.pod_a.spawn(f"ping -n -q -i 0.01 -c {PING_COUNT} -W 2 {d.POD_B}", name="ping")
        time.sleep(0.5)
        started = time.monotonic()

        for k in range(1, ROUTE_ROUNDS + 1):
            probe = churn_prefix(k).replace(".0/24", ".1")
            delta({"upsert": {"routes": [{"vni": d.VNI, "prefix": churn_prefix(k), "next_hops": [{"vtep": d.VTEP_B}]}]}})
            r = f.pod_a.run(["ping", "-n", "-c", "1", "-W", "2", probe], check=False)
            assert r.returncode == 0, f"route {churn_prefix(k)} does not forward after its ack:\n{r.stdout}"
            no_route = d.drop_map(f.counters())["no_route"]
            delta({"remove_routes": [{"vni": d.VNI, "prefix": churn_prefix(k)}]})
            r = f.pod_a.run(["ping", "-n", "-c", "1", "-W", "0.3", probe], check=False)
            assert r.returncode != 0, f"route {churn_prefix(k)} still forwards after its withdrawal"
            assert d.drop_map(f.counters())["no_route"] > no_route, "the probe was not dropped as no_route"

        for rnd in range(POD_ROUNDS):
            for i, ns in pods.items():
                delta({"upsert": {"endpoints": [{"id": f"c{i}/eth0", "vni": d.VNI, "ip": pod_ip(i),
                                                 "mac": pod_mac(i), "iface": f"hC{i}"}]}})
                r = ns.run(["ping", "-n", "-c", "1", "-W", "2", d.POD_B], check=False)
                assert r.returncode == 0, f"round {rnd}: pod c{i} does not reach pod B after its attach:\n{r.stdout}"
                r = f.pod_a.run(["ping", "-n", "-c", "1", "-W", "2", pod_ip(i)], check=False)
                assert r.returncode == 0, f"round {rnd}: pod A does not reach pod c{i} after its attach:\n{r.stdout}"
                delta({"remove_endpoints": [f"c{i}/eth0"]})
                r = f.pod_a.run(["ping", "-n", "-c", "1", "-W", "0.3", pod_ip(i)], check=False)
                assert r.returncode != 0, f"round {rnd}: pod c{i} still reached after its detach"
        churn_s = time.monotonic() - started

        ping.wait(timeout=60)
        line = [l for l in topo.log_of("ping").splitlines() if "packets transmitted" in l][0]
        t.log(f"{generation[0] - 1} Deltas in {churn_s:.1f} s under a 100/s ping; steady pair: {line}")
        sent, received = int(line.split()[0]), int(line.split()[3])
        assert ping.returncode == 0 and received == sent, f"the steady pair lost packets: {line}"
        assert "duplicates" not in line, f"the steady pair got duplicates: {line}"
        st = f.status()
        assert int(st["deltas_applied"]) == generation[0] - 1, st
        assert int(st["generation"]) == generation[0], st
        assert int(st["routes"]) == ROUTES + 1 and int(st["endpoints"]) == 1, st
        assert int(st["ports"]) == 2, st  # uplink + pod A: every detached pod's port released
        rc, log = f.stop()
        assert rc == 0, log


if __name__ == "__main__":
    t.main_wrapper(main)
