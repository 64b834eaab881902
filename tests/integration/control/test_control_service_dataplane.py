#!/usr/bin/env python3
"""The Service entries vxfedd compiles reach a real vxfed-dataplane (docs/services.md, "Serving
a VIP"): one node (its own namespace, etcd in it, the real dataplane on a veth uplink), network
red, a static route to 10.250.0.0/24 (another node's block of this cluster; 10.250.1.0/24 has no
route: that node is gone).
  1. a LocalFirst service with backends 10.250.0.5 and 10.250.1.5 (both ready): vxfedd's entry
     has 10.250.0.5 only; its metrics say 1 allowed, 1 node down; the dataplane acknowledged
     every delta and refused none (vxfedd's dataplane counters);
  2. the dataplane killed and restarted: the snapshot vxfedd replays carries the entry (its
     debug line counts 1 service) and is applied;
  2b. vxfedd restarted while etcd is down: its first snapshot carries the entry from its
     cache (fail static), the dataplane keeps it; etcd back, the store's listing takes over;
  3. the backend marked not ready: the entry has no backend, acknowledged; the service deleted:
     the entry removed, acknowledged; nothing refused.
After each step the dataplane's own dump (vxfed-dpctl dump) holds exactly vxfedd's entry.
"""

from __future__ import annotations

import re
import time

import vxfed_harness as t
from vxfed_harness.etcd_cluster import EtcdCluster
from vxfed_harness.node import Node

PREFIX = "/vxfed"
METRICS = "127.0.0.1:9472"  # free in the node's own namespace


def web(ready: bool) -> str:
    return f"""\
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
  - {{name: dns, protocol: UDP, port: 53}}
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
- {{name: dns, protocol: UDP, port: 53}}
endpoints:
- addresses: ["10.250.0.5"]
  conditions: {{ready: {'true' if ready else 'false'}}}
- addresses: ["10.250.1.5"]
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata:
  name: web
  namespace: default
  creationTimestamp: "2026-12-06T10:00:00Z"
"""


def metrics(n: Node) -> dict[str, float]:
    out = n.ns.run(["python3", "-c", f"import urllib.request;print(urllib.request.urlopen('http://{METRICS}/metrics').read().decode())"]).stdout
    values = {}
    for line in out.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def main() -> None:
    t.require_root()
    for b in ("control/vxfedd", "control/vxfedctl", "dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl"):
        t.require_binary(b)
    with t.Topology("svcdp") as topo:
        n = Node(topo, "node", "198.18.0.1", "10.244.0.0/16", node_name="node-a", cluster="cluster-a")
        peer = topo.netns("ulpeer")
        topo.wire(n.ns, ["198.18.0.1/24"], peer, ["198.18.0.2/24"], ifname="ul0", b_ifname="ul1")
        etcd = EtcdCluster(topo, members=1, ns=n.ns)
        etcd.start()
        n.start_dataplane(timeout=60)
        cfg = n.vxfedd_config(
            networks=[{"name": "red", "subnet": "10.244.0.0/16",
                       "static_routes": [{"prefix": "10.250.0.0/24", "vteps": ["198.18.0.2"]}]}],
            federation={"endpoints": [etcd.endpoint(0)], "key_prefix": PREFIX},
            services={"range": "10.96.0.0/24"}, metrics_listen=METRICS, log_level="debug")
        cfg["cluster"]["pod_cidrs"] = ["10.244.0.0/16", "10.250.0.0/16"]
        n.start_vxfedd(cfg)
        d = n.vxfedd
        d.wait_ready(timeout=60)
        files = {}
        for name, ready in (("web.yaml", True), ("web-not-ready.yaml", False)):
            files[name] = topo.workdir / name
            files[name].write_text(web(ready))

        def entry_line(backends: str) -> bool:
            return re.search(r"services: default/web VIP \S+ on VNI \d+: backends \[" + re.escape(backends) + r"\]",
                             d.log()) is not None

        def settled() -> bool:
            """Every table generation sent is acknowledged, none refused."""
            m = metrics(n)
            assert m.get("vxfedd_dataplane_deltas_refused_total", 0) == 0, "the dataplane refused a delta"
            assert m.get("vxfedd_dataplane_snapshots_refused_total", 0) == 0, "the dataplane refused a snapshot"
            return m["vxfedd_dataplane_acked_generation"] == m["vxfedd_dataplane_generation"]

        def dump_matches(backends: list[str] | None) -> str:
            """The dataplane's dump has default/web with exactly `backends` (None: not at all)."""
            dumped = n.dataplane.dump().get("tables", {})
            mine = [s for s in dumped.get("services", []) if s.get("id") == "default/web"]
            if backends is None:
                assert not mine, mine
                return "the dataplane's dump has no default/web"
            assert len(mine) == 1 and [b["ip"] for b in mine[0].get("backends", [])] == backends, dumped
            assert mine[0]["vip"] and mine[0]["vni"] == n.vni_of("red"), mine[0]
            return f"the dataplane's dump holds default/web as vxfedd sent it: {mine[0]}"

        # 1. programmed: the node-down backend left out.
        assert d.ctl("service", "apply", "-f", str(files["web.yaml"])).returncode == 0
        t.wait_until(lambda: entry_line("10.250.0.5/1"), 10, "the entry with 10.250.0.5 only", d.check_alive)
        m = metrics(n)
        assert m['vxfedd_service_backends_allowed{service="default/web"}'] == 1, m
        assert m['vxfedd_service_backends{service="default/web",state="node_down"}'] == 1, m
        assert m['vxfedd_service_backends{service="default/web",state="ready"}'] == 1, m
        assert m['vxfedd_services{state="programmed"}'] == 1, m
        t.wait_until(settled, 10, "the dataplane to acknowledge the entry", d.check_alive)
        t.log(dump_matches(["10.250.0.5"]))

        # 2. the dataplane restarted: the replayed snapshot carries the entry.
        n.dataplane.kill()
        t0 = time.monotonic()
        n.start_dataplane(timeout=60)
        d.wait_ready(timeout=60)
        t.wait_until(settled, 10, "the replayed snapshot acknowledged", d.check_alive)
        t.log(f"dataplane restarted, tables replayed and acknowledged in {time.monotonic() - t0:.2f} s")
        assert re.search(r"snapshot generation \d+: 1 networks, 0 endpoints, 1 routes, 1 services", d.log()), \
            "no replayed snapshot carried the service"
        t.log(dump_matches(["10.250.0.5"]))

        # 2b. vxfedd restarted without the store: the cache keeps the entry in the dataplane.
        etcd.kill(0)
        n.stop_vxfedd()
        n.start_vxfedd()
        d.wait_ready(timeout=60)
        t.wait_until(settled, 10, "the restarted vxfedd's snapshot acknowledged", d.check_alive)
        t.log("vxfedd restarted with etcd down: " + dump_matches(["10.250.0.5"]))
        assert "services: 1 entries from" in d.log(), "the restarted vxfedd did not load its service cache"
        etcd.start_member(0)
        etcd.wait_healthy([0])
        t.wait_until(lambda: metrics(n).get("vxfedd_services_listings_total", 0) >= 1, 15,
                     "the store's first listing after etcd came back", d.check_alive)
        t.log(dump_matches(["10.250.0.5"]))

        # 3. not ready: no backend left; deleted: removed. Each acknowledged.
        assert d.ctl("service", "apply", "-f", str(files["web-not-ready.yaml"])).returncode == 0
        t.wait_until(lambda: entry_line(""), 10, "the entry without backends", d.check_alive)
        t.wait_until(settled, 10, "the dataplane to acknowledge it", d.check_alive)
        assert metrics(n)['vxfedd_service_backends_allowed{service="default/web"}'] == 0
        t.log(dump_matches([]))
        assert d.ctl("service", "delete", "default/web").returncode == 0
        t.wait_until(lambda: "services: default/web removed from the dataplane's tables" in d.log(), 10,
                     "the entry removed", d.check_alive)
        t.wait_until(settled, 10, "the dataplane to acknowledge the removal", d.check_alive)
        t.log(dump_matches(None))
        n.dataplane.check_alive()


if __name__ == "__main__":
    t.main_wrapper(main)
