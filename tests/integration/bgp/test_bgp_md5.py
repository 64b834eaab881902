#!/usr/bin/env python3
"""TCP MD5 on the BGP sessions (RFC 2385, `password:` of a peer): a speaker with the wrong
password never establishes, the refusal is counted by the kernel, and the right password brings
the session up with no restart of anything but the adapter's config.

Topology (namespaces, created and removed here), real FRR and the vxfed adapter on each side:
  A (AS 65001, 198.18.0.1, VTEP 198.18.0.11, pods 10.244.0.0/16) --ul0--
  B (AS 65002, 198.18.0.2, VTEP 198.18.0.12, pods 10.245.0.0/16)

Phases:
 1. wrong password on B: for WAIT_S (several connect retries at 1 s) A's session to B never
    reaches Established, neither side learns a route, and A's kernel counts the segments it
    refused (TcpExt TCPMD5Failure: a signature that does not verify).
 2. no password on B at all: still never established; A counts TCPMD5NotFound (unsigned
    segments for a session that requires one).
 3. B's config corrected (SIGHUP): the session establishes and each side learns the other's
    block, as a legitimate peer does.
Prints `RESULTS {json}`.
"""
import json
import time

import vxfed_harness as t
from bgp_topo import Node, underlay
from vxfed_harness.frr import require_frr

VNI = 1500
PASSWORD = "vxfed-Md5-Right"
WAIT_S = 6.0   # six connect retries (connect_retry 1 s) in which the session must stay down


def tcp_ext(n: Node) -> dict[str, int]:
    """The kernel's TcpExt counters in the node's namespace (/proc/net/netstat is per netns)."""
    lines = n.ns.run(["cat", "/proc/net/netstat"], check=True).stdout.splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return dict(zip(names.split()[1:], map(int, values.split()[1:])))
    raise AssertionError("no TcpExt line in /proc/net/netstat")


def bgp_state(n: Node, peer: str) -> dict:
    return json.loads(n.vtysh("show bgp neighbors " + peer + " json")).get(peer, {})


def config(asn: int, router_id: str, peer: str, peer_asn: int, cluster: str, cidr: str, password) -> dict:
    p = {"address": peer, "remote_asn": peer_asn, "cluster": cluster, "network": "fed",
         "keepalive": 1, "hold": 3, "connect_retry": 1}
    if password is not None:
        p["password"] = password
    return {"asn": asn, "router_id": router_id, "graceful_restart": False,
            "clusters": {cluster: [cidr]}, "peers": [p]}


def stays_down(a: Node, b: Node, counter: str, label: str, results: dict) -> None:
    before = tcp_ext(a).get(counter, 0)
    t0 = time.monotonic()
    while time.monotonic() - t0 < WAIT_S:
        a.check_alive()
        b.check_alive()
        st = bgp_state(a, "198.18.0.2")
        assert st.get("bgpState") != "Established", f"{label}: A established with B: {st.get('bgpState')}"
        assert bgp_state(b, "198.18.0.1").get("bgpState") != "Established", f"{label}: B established with A"
        time.sleep(0.25)
    assert "10.245.0.0/16" not in a.routes() and "10.244.0.0/16" not in b.routes(), (a.routes(), b.routes())
    refused = tcp_ext(a).get(counter, 0) - before
    assert refused > 0, f"{label}: A's kernel counted no {counter} in {WAIT_S} s"
    results[label] = {"established": False, counter: refused, "watched_s": WAIT_S}
    t.log(f"{label}: never established in {WAIT_S} s; A's kernel refused {refused} segments ({counter})")


def main() -> None:
    require_frr()
    t.require_binary("tests/integration/bgp/vxfed-bgp-driver")
    results: dict = {}
    with t.Topology("bgpmd5") as topo:
        a = Node(topo, "a", 65001, "198.18.0.1", "198.18.0.11")
        b = Node(topo, "b", 65002, "198.18.0.2", "198.18.0.12")
        underlay(topo, a, b)
        a.write_config(config(65001, "198.18.0.1", "198.18.0.2", 65002, "cluster-b", "10.245.0.0/16", PASSWORD))
        b.write_config(config(65002, "198.18.0.2", "198.18.0.1", 65001, "cluster-a", "10.244.0.0/16",
                              "vxfed-Md5-Wrong"))
        for n in (a, b):
            n.start_frr()
            topo.on_failure(f"BGP on {n.short}", lambda n=n: print(n.vtysh("show bgp summary", check=False)))
        a.start_driver(["10.244.0.0/16"], {"fed": VNI})
        b.start_driver(["10.245.0.0/16"], {"fed": VNI})
        # Both adapters have applied their configs (the passwords are in FRR) before we watch.
        for n in (a, b):
            t.wait_for(lambda n=n: n.state_path.exists() and n.state()["stats"].get("applies", 0) >= 1,
                       60, f"{n.short}'s adapter to apply its FRR config")
        stays_down(a, b, "TCPMD5Failure", "wrong_password", results)

        b.write_config(config(65002, "198.18.0.2", "198.18.0.1", 65001, "cluster-a", "10.244.0.0/16", None))
        b.reload_driver()
        t.wait_for(lambda: "password" not in b.vtysh("show running-config"), 30, "B's password removed from FRR")
        stays_down(a, b, "TCPMD5NotFound", "no_password", results)

        b.write_config(config(65002, "198.18.0.2", "198.18.0.1", 65001, "cluster-a", "10.244.0.0/16", PASSWORD))
        start = time.monotonic()
        b.reload_driver()
        a.wait_route("10.245.0.0/16", 60)
        b.wait_route("10.244.0.0/16", 60)
        assert bgp_state(a, "198.18.0.2").get("bgpState") == "Established"
        assert a.routes()["10.245.0.0/16"]["vteps"] == ["198.18.0.12"], a.routes()
        results["right_password"] = {"established": True, "routes_after_s": round(time.monotonic() - start, 2)}
        t.log(f"right password: established, routes learned {results['right_password']['routes_after_s']} s after the reload")
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    main()
