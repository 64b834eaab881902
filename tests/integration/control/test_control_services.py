#!/usr/bin/env python3
"""`vxfedctl service apply | get | delete` end to end (docs/services.md, "vxfedctl service"):
two vxfedd of two clusters (cluster-a, cluster-b) on one real etcd, `services: {range:
10.96.0.0/24}` on both, and a third without a `services:` section.
  1. both export default/web (cluster-a's export the older): `service get --json` on either
     node shows one service with one VIP from the range and the backends of both clusters, and
     each export's condition NoConflicts;
  2. cluster-b re-applies web with another targetPort: its export gets Conflict
     (PortConflict) and its backends leave the set, the VIP stays; re-applied as before, the
     conflict is gone;
  3. a file with an unknown strategy and weights that do not parse, and one with a VIP outside
     the range and a backend outside every cluster's CIDR, are refused with exit 1 naming each
     field, and the store's service keys are unchanged (nothing applied);
  4. delete: cluster-a's by name, cluster-b's by its file; the VIP is held down (its key says
     so) and `get` lists no service; the same delete again counts it absent; then both
     clusters export default/api at the same moment, five rounds: one VIP allocated each time;
  5. the vxfedd without a services range refuses the ops naming the missing key.
No dataplane is needed: services live in vxfedd and the store.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess

import vxfed_harness as t
from vxfed_harness.etcd_cluster import EtcdCluster
from vxfed_harness.vxfedd import Vxfedd, config

PREFIX = "/vxfed"
RANGE = "10.96.0.0/24"


def web(cluster: str, address: str, created: str, target_port: int = 8080) -> str:
    return f"""\
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
  annotations:
    vxfed.io/strategy: LocalFirst
spec:
  type: ClusterIP
  ports:
  - {{name: http, protocol: TCP, port: 80, targetPort: {target_port}}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-{cluster}
  namespace: default
  labels:
    kubernetes.io/service-name: web
addressType: IPv4
ports:
- {{name: http, protocol: TCP, port: {target_port}}}
endpoints:
- addresses: ["{address}"]
  conditions: {{ready: true}}
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata:
  name: web
  namespace: default
  creationTimestamp: "{created}"
"""


def bad_service(name: str, annotations: str, address: str) -> str:
    return f"""\
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: default
  annotations:
{annotations}
spec:
  ports:
  - {{name: http, protocol: TCP, port: 80}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: {name}-a
  namespace: default
  labels:
    kubernetes.io/service-name: {name}
addressType: IPv4
ports:
- {{name: http, protocol: TCP, port: 80}}
endpoints:
- addresses: ["{address}"]
"""


# Each object is read first (services/parse.hpp), then checked against the federation
# (services/validate.hpp) only when the whole input reads: hence two files.
BAD_READ = "---\n".join([
    bad_service("s1", "    vxfed.io/strategy: Nearest", "10.244.0.11"),
    bad_service("s2", "    vxfed.io/strategy: WeightedRoundRobin\n    vxfed.io/weights: cluster-a=three", "10.244.0.12"),
])
BAD_CHECK = "---\n".join([
    bad_service("s3", "    vxfed.io/vip: 10.97.0.1", "10.244.0.13"),
    bad_service("s4", "    vxfed.io/strategy: LocalFirst", "10.250.0.1"),
])
BAD_FIELDS = {  # file -> (a piece of the field path, a piece of the reason), one line each
    "bad-read.yaml": [('Service default/s1: documents[0].metadata.annotations["vxfed.io/strategy"]', "Nearest"),
                      ('Service default/s2: documents[2].metadata.annotations["vxfed.io/weights"]', "three")],
    "bad-check.yaml": [('metadata.annotations["vxfed.io/vip"]', "10.97.0.1"),
                       ("endpoints[0].addresses[0]", "10.250.0.1")],
}


def service_keys(cluster: EtcdCluster) -> dict[str, str]:
    return cluster.get_prefix(f"{PREFIX}/v1/services/")


def ctl(d: Vxfedd, *args: str):
    r = d.ctl(*args)
    t.log(f"{d.name}$ vxfedctl {' '.join(args)} -> exit {r.returncode}\n{r.stdout}{r.stderr}".rstrip())
    return r


def the_web(listing: dict) -> dict:
    services = listing.get("services", [])
    assert [(s["namespace"], s["name"]) for s in services] == [("default", "web")], services
    return services[0]


def conditions(listing: dict) -> dict:
    return {c["cluster"]: c for c in listing.get("conditions", [])}


def test_main() -> None:
    t.require_root()
    with t.Topology("ctlsvc") as topo:
        cluster = EtcdCluster(topo, members=1)
        cluster.start()
        fed = {"endpoints": cluster.endpoints.split(","), "key_prefix": PREFIX, "request_timeout_ms": 3000}
        daemons = []
        for name, cl, vtep, subnet, services in (("node-a", "cluster-a", "198.18.0.1", "10.244.0.0/16", {"range": RANGE}),
                                                   ("node-b", "cluster-b", "198.18.0.2", "10.245.0.0/16", {"range": RANGE}),
                                                   ("node-c", "cluster-c", "198.18.0.3", "10.246.0.0/16", None)):
            w = topo.workdir / name
            sections = {"federation": fed}
            if services:
                sections["services"] = services
            cfg = config(name, vtep, cl, [subnet], w / "dp.sock", socket=w / "run" / "vxfedd.sock",
                         state_dir=w / "state", networks=[{"name": "red", "subnet": subnet}], **sections)
            daemons.append(Vxfedd(topo.host, w / "vxfedd.yaml", w / "run" / "vxfedd.sock", cfg, name=name))
        a, b, c = daemons
        files = {}
        for name, text in (("a.yaml", web("cluster-a", "10.244.0.5", "2026-12-06T10:00:00Z")),
                           ("b.yaml", web("cluster-b", "10.245.0.7", "2026-12-06T11:00:00Z")),
                           ("b-conflict.yaml", web("cluster-b", "10.245.0.7", "2026-12-06T11:00:00Z", target_port=9090)),
                           ("bad-read.yaml", BAD_READ), ("bad-check.yaml", BAD_CHECK)):
            files[name] = topo.workdir / name
            files[name].write_text(text)
        try:
            for d in daemons:
                d.start()

            # 1. both clusters export default/web: one VIP, both backends, on either node.
            r = ctl(a, "service", "apply", "-f", str(files["a.yaml"]))
            assert r.returncode == 0 and "applied for cluster cluster-a" in r.stdout, (r.returncode, r.stderr)
            assert "VIP allocated: default/web " in r.stdout, r.stdout
            applied_b = b.ctl_json("service", "apply", "-f", str(files["b.yaml"]))
            assert applied_b["cluster"] == "cluster-b" and applied_b["written"] == ["default/web"], applied_b
            assert not applied_b.get("allocated"), f"cluster-b allocated a second VIP: {applied_b}"
            ctl(b, "service", "get")
            vips = set()
            for d in (a, b):
                listing = d.ctl_json("service", "get")
                assert listing["service_range"] == RANGE, listing
                svc = the_web(listing)
                vips.add(svc["vip"])
                assert ipaddress.ip_address(svc["vip"]) in ipaddress.ip_network(RANGE), svc
                assert svc["strategy"] == "LocalFirst", svc
                backends = [(x["cluster"], x["address"], x.get("ready", False)) for x in svc["backends"]]
                assert backends == [("cluster-a", "10.244.0.5", True), ("cluster-b", "10.245.0.7", True)], backends
                assert svc["clusters"] == ["cluster-a", "cluster-b"], svc["clusters"]
                conds = conditions(listing)
                assert set(conds) == {"cluster-a", "cluster-b"}, conds
                assert all(not x.get("conflict", False) and x["reason"] == "NoConflicts" for x in conds.values()), conds
            assert len(vips) == 1, f"the two nodes see different VIPs: {vips}"
            vip = vips.pop()
            t.log(f"default/web: VIP {vip}, backends of both clusters on both nodes")

            # 2. a conflicting export: cluster-b's newer one disagrees on the target port.
            assert b.ctl("service", "apply", "-f", str(files["b-conflict.yaml"])).returncode == 0
            ctl(a, "service", "get")
            listing = a.ctl_json("service", "get")
            svc = the_web(listing)
            assert svc["vip"] == vip, "a conflict moved the VIP"
            assert [x["cluster"] for x in svc["backends"]] == ["cluster-a"], svc["backends"]
            conds = conditions(listing)
            assert conds["cluster-b"].get("conflict") is True and conds["cluster-b"]["reason"] == "PortConflict", conds
            assert not conds["cluster-a"].get("conflict", False), conds
            assert b.ctl("service", "apply", "-f", str(files["b.yaml"])).returncode == 0
            conds = conditions(a.ctl_json("service", "get"))
            assert not any(x.get("conflict", False) for x in conds.values()), conds

            # 3. a bad file: every field named, exit 1, nothing written.
            before = service_keys(cluster)
            for name, fields in BAD_FIELDS.items():
                r = ctl(a, "service", "apply", "-f", str(files[name]))
                assert r.returncode == 1 and "INVALID_ARGUMENT" in r.stderr, (r.returncode, r.stderr)
                for field, word in fields:
                    line = next((l for l in r.stderr.splitlines() if field in l), None)
                    assert line is not None and word in line, f"{name}: {field} not named with '{word}': {r.stderr}"
                assert service_keys(cluster) == before, f"the refused {name} changed the store"

            # 4. deletes: cluster-a's by name, cluster-b's by its file.
            deleted = a.ctl_json("service", "delete", "default/web")
            assert deleted["deleted"] == ["default/web"] and not deleted.get("released"), deleted
            svc = the_web(b.ctl_json("service", "get"))
            assert [x["cluster"] for x in svc["backends"]] == ["cluster-b"] and svc["vip"] == vip, svc
            r = ctl(b, "service", "delete", "-f", str(files["b.yaml"]))
            assert r.returncode == 0 and f"VIP released (held down): default/web {vip}" in r.stdout, r.stdout
            listing = a.ctl_json("service", "get")
            assert not listing.get("services") and not listing.get("conditions"), listing
            record = json.loads(service_keys(cluster)[f"{PREFIX}/v1/services/vips/{vip}"])
            assert record["service"] == "default/web" and record["state"] == "held", record
            again = b.ctl_json("service", "delete", "-f", str(files["b.yaml"]))
            assert again.get("absent_deletes") == 1 and not again.get("deleted"), again
            r = ctl(b, "service", "delete", "web")
            assert r.returncode == 2 and "NAMESPACE/NAME" in r.stderr, (r.returncode, r.stderr)

            # 4b. both clusters export default/api at the same moment, five times over (each
            # round deleted again): one VIP each round, whichever transaction wins.
            for i in range(5):
                for d, cl, addr in ((a, "cluster-a", "10.244.0.9"), (b, "cluster-b", "10.245.0.9")):
                    (topo.workdir / f"api-{cl}.yaml").write_text(
                        web(cl, addr, "2026-12-06T10:00:00Z").replace("name: web", "name: api")
                        .replace("service-name: web", "service-name: api"))
                procs = [subprocess.Popen([str(d.ctl_program), "--socket", str(d.socket), "--json", "service", "apply",
                                           "-f", str(topo.workdir / f"api-{cl}.yaml")],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                         for d, cl in ((a, "cluster-a"), (b, "cluster-b"))]
                outs = [p.communicate(timeout=15) for p in procs]
                assert all(p.returncode == 0 for p in procs), outs
                allocated = [x for out, _ in outs for x in json.loads(out).get("allocated", [])]
                assert len(allocated) == 1, f"round {i}: {allocated}"
                services = a.ctl_json("service", "get")["services"]
                assert len(services) == 1, services
                svc = services[0]
                assert svc["name"] == "api" and len(svc["backends"]) == 2 and svc["vip"] == allocated[0].split()[1], svc
                for d in (a, b):
                    assert d.ctl("service", "delete", "default/api").returncode == 0
            t.log("five simultaneous exports of default/api from both clusters: one VIP each time")

            # 5. no services range: a clear refusal naming the key.
            for args in (("service", "get"), ("service", "apply", "-f", str(files["a.yaml"]))):
                r = ctl(c, *args)
                assert r.returncode == 1 and "UNAVAILABLE" in r.stderr and "services: {range" in r.stderr, \
                    (args, r.returncode, r.stderr)
            for d in daemons:
                d.check_alive()
        finally:
            for d in daemons:
                d.stop()


if __name__ == "__main__":
    t.main_wrapper(test_main)
