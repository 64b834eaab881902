#!/usr/bin/env python3
"""vxfedd compiles the federated services into the dataplane's Service entries
(docs/services.md, "Serving a VIP"), end to end with a real etcd and two vxfedds of two
clusters (node-a of cluster-a, node-b of cluster-b), each serving network `red` and reaching
the other cluster's pod CIDR through a static route. No dataplane runs: what is asserted is
the entry vxfedd programs into its tables (the `services: ...` line it logs at debug level for
every entry it changes; control_service_dataplane checks the entries in a real dataplane).
  1. node-a has pod P_A (attached, in its block) and node-b P_B; both clusters export the
     LocalFirst service default/web (P_A from cluster-a, P_B from cluster-b): node-a's entry has
     the VIP, port 80 -> 8080 and backend P_A only; node-b's has P_B only;
  2. cluster-a marks P_A not ready: node-a's entry falls over to P_B; ready again: back to P_A;
  3. P_A detached from node-a (its pod gone, the slice not yet updated): node-a no longer
     reaches it, the entry falls over to P_B; P_A attached again: back;
  4. cluster-a deletes its export (P_A gone from the slices): node-a's entry has P_B;
  5. node-a's route to cluster-b withdrawn (config reload without the static route: P_B's node
     is unreachable): node-a's entry has no backend; the route back: P_B again;
  6. cluster-b deletes its export: node-a's entry is removed.
Each step is timed from the command's return to the log line. After steps 1, 2 and 5,
`vxfedctl service get` (JSON and table) shows node-a's view: each backend's state (ready /
not-ready / node-down), whether LocalFirst allows it now from node-a, and its weight.
"""

from __future__ import annotations

import ipaddress
import re
import time

import vxfed_harness as t
from vxfed_harness.etcd_cluster import EtcdCluster
from vxfed_harness.vxfedd import Vxfedd, config

PREFIX = "/vxfed"
RANGE = "10.96.0.0/24"
RANGE_B = "10.96.0.0/23"  # node-b's config says otherwise: the store's range wins
ENTRY = re.compile(r"services: default/web VIP (\S+) on VNI (\d+): backends \[([^\]]*)\]")
REMOVED = "services: default/web removed from the dataplane's tables"


def web(address: str, created: str, ready: bool = True, with_export: bool = True) -> str:
    text = f"""\
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
  annotations:
    vxfed.io/strategy: LocalFirst
spec:
  ports:
  - {{name: http, protocol: TCP, port: 80, targetPort: 8080}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  namespace: default
  labels:
    kubernetes.io/service-name: web
addressType: IPv4
ports:
- {{name: http, protocol: TCP, port: 8080}}
endpoints:
- addresses: ["{address}"]
  conditions: {{ready: {'true' if ready else 'false'}}}
"""
    if with_export:
        text += f"""\
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata:
  name: web
  namespace: default
  creationTimestamp: "{created}"
"""
    return text


class Entries:
    """The `services: default/web ...` lines of one vxfedd's log, read from where the last
    check stopped, so that each wait sees only what changed after its command."""

    def __init__(self, d: Vxfedd):
        self.d = d
        self.seen = 0

    def mark(self) -> None:
        self.seen = len(self.d.log())

    def wait(self, backends: list[str] | None, what: str, timeout: float = 10) -> tuple[float, str, int]:
        """Until the log says default/web's entry has exactly `backends` (None: removed);
        returns (seconds, VIP, VNI) of that line."""
        t0 = time.monotonic()
        found: dict = {}

        def saw() -> bool:
            new = self.d.log()[self.seen:]
            for line in new.splitlines():
                if backends is None and REMOVED in line:
                    found["line"] = ("", 0)
                m = ENTRY.search(line)
                if m and backends is not None:
                    # Backends at weight 0 take no new flow (kept for their open ones): left out.
                    ips = [b.split("/")[0] for b in m.group(3).split() if not b.endswith("/0")]
                    found["line"] = (m.group(1), int(m.group(2))) if ips == backends else None
            return bool(found.get("line"))

        t.wait_until(saw, timeout, f"{self.d.name}: {what}", self.d.check_alive, interval=0.05)
        took = time.monotonic() - t0
        self.mark()
        vip, vni = found["line"]
        t.log(f"{self.d.name}: {what}: {took:.2f} s")
        return took, vip, vni


def node_view(d: Vxfedd, programmed: bool, backends: dict[str, tuple[str, bool]], what: str) -> None:
    """`vxfedctl service get --json` on `d`: default/web programmed (or not) and each backend's
    state and "allowed now" from this node as given; an allowed one has a weight, others 0."""
    listing = d.ctl_json("service", "get")
    assert int(listing["node_revision"]) > 0, listing  # int64: a string in JSON
    web_info = next(s for s in listing["services"] if s["name"] == "web")
    assert web_info["in_node_view"] and web_info["programmed"] == programmed, (what, web_info)
    got = {b["address"]: b for b in web_info["backends"]}
    assert set(got) == set(backends), (what, got)
    for address, (state, allowed) in backends.items():
        b = got[address]
        assert (b["state"], b["allowed"]) == (state, allowed), (what, address, b)
        assert (b["weight"] > 0) == allowed, (what, address, b)
    t.log(f"{d.name}: service get, {what}: " +
          ", ".join(f"{a} {b['state']} allowed={b['allowed']} weight={b['weight']}" for a, b in got.items()))


def test_main() -> None:
    t.require_root()
    with t.Topology("svcprog") as topo:
        cluster = EtcdCluster(topo, members=1)
        cluster.start()
        fed = {"endpoints": cluster.endpoints.split(","), "key_prefix": PREFIX, "request_timeout_ms": 3000}
        daemons = []
        for name, cl, vtep, subnet, other, other_vtep in (
                ("node-a", "cluster-a", "198.18.0.1", "10.244.0.0/16", "10.245.0.0/16", "198.18.0.2"),
                ("node-b", "cluster-b", "198.18.0.2", "10.245.0.0/16", "10.244.0.0/16", "198.18.0.1")):
            w = topo.workdir / name
            network = {"name": "red", "subnet": subnet,
                       "static_routes": [{"prefix": other, "vteps": [other_vtep]}]}
            cfg = config(name, vtep, cl, [subnet], w / "dp.sock", socket=w / "run" / "vxfedd.sock",
                         state_dir=w / "state", networks=[network], federation=fed,
                         services={"range": RANGE if name == "node-a" else RANGE_B, "network": "red"},
                         log_level="debug")
            daemons.append(Vxfedd(topo.host, w / "vxfedd.yaml", w / "run" / "vxfedd.sock", cfg, name=name))
        a, b = daemons
        try:
            for d in daemons:
                d.start()
            pods = {}
            for d, mac in ((a, "02:00:00:00:0a:05"), (b, "02:00:00:00:0b:05")):
                net = next(n for n in d.ctl_json("networks")["networks"] if n["spec"]["name"] == "red")
                block = ipaddress.ip_network(net["node_block"])
                pods[d.name] = (str(block.network_address + 5), mac)
                r = d.ctl("attach", f"pod-{d.name}", "--network", "red", "--ip", pods[d.name][0], "--mac", mac,
                          "--host-iface", f"vp{d.name[-1]}0")
                assert r.returncode == 0, (d.name, r.stdout, r.stderr)
            p_a, p_b = pods["node-a"][0], pods["node-b"][0]
            t.log(f"P_A {p_a} on node-a, P_B {p_b} on node-b")
            ea, eb = Entries(a), Entries(b)
            files = {}
            for name, text in (("a.yaml", web(p_a, "2026-12-06T10:00:00Z")),
                               ("a-not-ready.yaml", web(p_a, "2026-12-06T10:00:00Z", ready=False)),
                               ("b.yaml", web(p_b, "2026-12-06T11:00:00Z"))):
                files[name] = topo.workdir / name
                files[name].write_text(text)
            times = {}

            # 1. both clusters export web: each node's entry has its own cluster's backend.
            for d in (a, b):
                r = d.ctl("service", "apply", "-f", str(files["a.yaml" if d is a else "b.yaml"]))
                assert r.returncode == 0, (d.name, r.stderr)
            times["programmed"], vip, vni = ea.wait([p_a], "entry with P_A only (LocalFirst, both exported)")
            assert ipaddress.ip_address(vip) in ipaddress.ip_network(RANGE_B), vip
            assert vni == a.vni_of("red"), (vni, a.vni_of("red"))
            _, vip_b, _ = eb.wait([p_b], "node-b's entry with P_B only")
            assert vip_b == vip, (vip, vip_b)
            listing = a.ctl_json("service", "get")
            assert listing["services"][0]["vip"] == vip, listing
            # GetNetwork hands the CNI plugin the store's range on `red` (NetworkInfo.service_cidrs),
            # on node-b too, whose config names another range.
            store_range = listing["service_range"]
            assert store_range in (RANGE, RANGE_B), listing
            for d in (a, b):
                red = next(n for n in d.ctl_json("networks")["networks"] if n["spec"]["name"] == "red")
                assert red["service_cidrs"] == [store_range], (d.name, red)
            t.log(f"both nodes hand over the store's range {store_range} on red (configs: {RANGE}, {RANGE_B})")
            node_view(a, True, {p_a: ("ready", True), p_b: ("ready", False)}, "LocalFirst from cluster-a")

            # 2. not ready and back.
            ea.mark()
            assert a.ctl("service", "apply", "-f", str(files["a-not-ready.yaml"])).returncode == 0
            times["not_ready"], _, _ = ea.wait([p_b], "P_A not ready: falls over to P_B")
            node_view(a, True, {p_a: ("not-ready", False), p_b: ("ready", True)}, "P_A not ready")
            text = a.ctl("service", "get")
            assert text.returncode == 0, text.stderr
            row_a = next(l for l in text.stdout.splitlines() if p_a in l and "cluster-a" in l)
            assert row_a.split()[3:6] == ["false", "not-ready", "no"], row_a
            t.log("node-a$ vxfedctl service get   (P_A not ready)\n" + text.stdout)
            assert a.ctl("service", "apply", "-f", str(files["a.yaml"])).returncode == 0
            times["ready_again"], _, _ = ea.wait([p_a], "P_A ready again: back to P_A")

            # 3. P_A's pod detached from node-a: not reached any more.
            assert a.ctl("detach", "pod-node-a").returncode == 0
            times["detached"], _, _ = ea.wait([p_b], "P_A detached: falls over to P_B")
            r = a.ctl("attach", "pod-node-a", "--network", "red", "--ip", p_a, "--mac", pods["node-a"][1],
                      "--host-iface", "vpa0")
            assert r.returncode == 0, r.stderr
            ea.wait([p_a], "P_A attached again: back to P_A")

            # 4. cluster-a's export deleted.
            assert a.ctl("service", "delete", "default/web").returncode == 0
            times["deleted"], _, _ = ea.wait([p_b], "cluster-a's export deleted: P_B")

            # 5. node-a's route to cluster-b withdrawn (reload without it), then back.
            routes = a.config["networks"][0].pop("static_routes")
            a.write_config()
            a.proc.send_signal(1)  # SIGHUP
            times["route_withdrawn"], _, _ = ea.wait([], "route to cluster-b withdrawn: no backend")
            node_view(a, True, {p_b: ("node-down", False)}, "route to cluster-b withdrawn")
            text = a.ctl("service", "get")
            row_b = next(l for l in text.stdout.splitlines() if p_b in l and "cluster-b" in l)
            assert row_b.split()[3:7] == ["true", "node-down", "no", "-"], row_b
            a.config["networks"][0]["static_routes"] = routes
            a.write_config()
            a.proc.send_signal(1)
            ea.wait([p_b], "route back: P_B")

            # 6. the last export deleted: the entry goes.
            assert b.ctl("service", "delete", "default/web").returncode == 0
            times["removed"], _, _ = ea.wait(None, "last export deleted: entry removed")
            eb.wait(None, "node-b's entry removed")
            t.log("seconds from the command's return to the entry: " +
                  ", ".join(f"{k} {v:.2f}" for k, v in times.items()))
            for d in daemons:
                d.check_alive()
            t.log("node-a's service lines:\n" + "\n".join(l for l in a.log().splitlines() if "services:" in l))
        finally:
            for d in daemons:
                d.stop()


if __name__ == "__main__":
    t.main_wrapper(test_main)
