#!/usr/bin/env python3
"""Each network's compiled policy reaches the real vxfed-dataplane as its NetworkPolicy entry
(docs/policy.md, "Publishing to the forwarder"): one node (its own namespace, etcd in it, the
real dataplane on a veth uplink), network red, pods prod/db-0 and prod/web-1 attached with the
CNI's K8S_POD_NAMESPACE/K8S_POD_NAME, and an endpoint attached by hand.
  1. the pods' labels applied, no policy: the dump has no policy entry (everything passes);
  2. `vxfedctl policy apply` of a MultiNetworkPolicy for red (db ingress from web, TCP 5432):
     the dump has red's entry with two local tables, both pods mapped (the hand endpoint not),
     db's ingress isolated with web's identity (as the apply printed it) its one peer, web's
     not; the time from the apply returning to the entry in the dump is printed, and vxfedd's
     metrics page counts the publication, its pods and the store change -> sent latency;
  3. a third pod attached (unlabelled, a namespace of its own): it is mapped in the entry
     within the follower's next look of the attached pods (0.5 s);
  4. the dataplane restarted: the snapshot vxfedd replays carries the same entry; vxfedd killed
     and restarted with etcd down: its first snapshot carries the entry from its cache, and it
     stays while the store is away;
  5. the policy deleted: the entry is gone from the dump.
"""

from __future__ import annotations

import re
import sys
import time

import vxfed_harness as t
from vxfed_harness.cni_bed import attach_endpoint
from vxfed_harness.etcd_cluster import EtcdCluster
from vxfed_harness.node import Node

PREFIX = "/vxfed"
METRICS = "127.0.0.1:9464"  # in the node's own network namespace
SAMPLE = re.compile(r'^(vxfedd_policy_publi\w+)(?:\{([^}]*)\})? (\S+)$')

OBJECTS = """\
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: prod, labels: {team: blue}}}
- {apiVersion: v1, kind: Pod, metadata: {name: db-0, namespace: prod, labels: {app: db}}}
- {apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: prod, labels: {app: web}}}
"""

POLICY = """\
apiVersion: k8s.cni.cncf.io/v1beta1
kind: MultiNetworkPolicy
metadata: {name: db-from-web, namespace: prod, annotations: {k8s.v1.cni.cncf.io/policy-for: red}}
spec:
  podSelector: {matchLabels: {app: db}}
  policyTypes: [Ingress]
  ingress:
  - from: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{protocol: TCP, port: 5432}]
"""


def main() -> None:
    t.require_root()
    for b in ("control/vxfedd", "control/vxfedctl", "dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl"):
        t.require_binary(b)
    with t.Topology("polpub") as topo:
        n = Node(topo, "node", "198.18.0.1", "10.244.0.0/16", node_name="node-a", cluster="cluster-a")
        peer = topo.netns("ulpeer")
        topo.wire(n.ns, ["198.18.0.1/24"], peer, ["198.18.0.2/24"], ifname="ul0", b_ifname="ul1")
        etcd = EtcdCluster(topo, members=1, ns=n.ns)
        etcd.start()
        for iface in ("vpa0", "vpb0", "vpc0", "vpd0"):
            n.ns.run(["ip", "link", "add", iface, "type", "veth", "peer", "name", iface + "p"])
            n.ns.run(["ip", "link", "set", iface, "up"])
            n.ns.run(["ip", "link", "set", iface + "p", "up"])
        n.start_dataplane(timeout=60)
        cfg = n.vxfedd_config(networks=[{"name": "red", "subnet": "10.244.0.0/16"}],
                              federation={"endpoints": [etcd.endpoint(0)], "key_prefix": PREFIX},
                              metrics_listen=METRICS)
        n.start_vxfedd(cfg)
        d = n.vxfedd
        d.wait_ready(timeout=60)
        sock = str(d.socket)
        assert attach_endpoint(sock, "c-db-0", "red", "10.244.0.5", "02:00:00:00:0a:05", "vpa0", ("prod", "db-0")) == 0, "attach c-db-0"
        assert attach_endpoint(sock, "c-web-1", "red", "10.244.0.6", "02:00:00:00:0a:06", "vpb0", ("prod", "web-1")) == 0, "attach c-web-1"
        assert attach_endpoint(sock, "c-hand", "red", "10.244.0.7", "02:00:00:00:0a:07", "vpc0", None) == 0, "attach c-hand"

        def tables() -> dict:
            return n.dataplane.dump().get("tables", {})

        def policies() -> list[dict]:
            return tables().get("policies", [])

        def apply(text: str, name: str) -> str:
            path = topo.workdir / name
            path.write_text(text)
            r = d.ctl("policy", "apply", "-f", str(path))
            assert r.returncode == 0, r.stderr
            return r.stdout

        def metrics() -> dict[str, float]:
            """vxfedd_policy_publi* samples by name and labels, from vxfedd's page."""
            page = n.ns.run([sys.executable, "-c", "import urllib.request; print(urllib.request.urlopen("
                             f"'http://{METRICS}/metrics', timeout=2).read().decode())"]).stdout
            return {m.group(1) + "{" + (m.group(2) or "") + "}": float(m.group(3))
                    for m in map(SAMPLE.match, page.splitlines()) if m}

        def mapping(entry: dict) -> dict[str, int]:
            """Endpoint id -> LocalIndex (proto JSON leaves a 0 out)."""
            return {e["endpoint_id"]: int(e.get("local", 0)) for e in entry.get("endpoints", [])}

        t.wait_until(lambda: len(tables().get("endpoints", [])) == 3, 10, "the three endpoints in the dataplane",
                     d.check_alive)
        vni = int(tables()["networks"][0]["vni"])

        # 1. labels, no policy: no entry.
        out = apply(OBJECTS, "objects.yaml")
        numbers = {m.group(1): int(m.group(2)) for m in re.finditer(r"^prod\s+(\S+)\s+(\d+)\s*$", out, re.M)}
        assert set(numbers) == {"db-0", "web-1"}, out
        time.sleep(1.0)  # two looks of the attached pods: anything that would be published is
        assert policies() == [], f"an entry without any policy: {policies()}"

        # 2. the policy: red's entry, measured from the apply returning.
        apply(POLICY, "policy.yaml")
        # Polled without a pause (each dump is one vxfed-dpctl run): the figure's resolution.
        took = t.wait_until(lambda: len(policies()) == 1, 10, "red's policy entry in the dataplane", d.check_alive,
                            interval=0)
        entry = policies()[0]
        assert int(entry["vni"]) == vni, entry
        m = mapping(entry)
        assert set(m) == {"c-db-0/net1", "c-web-1/net1"}, m
        ingress = entry["local_ingress"]
        assert len(ingress) == 2 and len(entry["local_egress"]) == 2, entry
        db, web = ingress[m["c-db-0/net1"]], ingress[m["c-web-1/net1"]]
        assert db.get("isolated") is True, db
        assert [int(p["identity"]) for p in db.get("peers", [])] == [numbers["web-1"]], db
        assert not web.get("isolated", False), web
        t.log(f"policy applied: red's entry (vni {vni}, {len(ingress)} local tables, {len(m)} endpoints) in the "
              f"dataplane {took * 1000:.0f} ms after the apply returned")
        page = metrics()
        assert page["vxfedd_policy_publications_total{}"] == 1, page
        assert page[f'vxfedd_policy_published_endpoints{{network="red",vni="{vni}"}}'] == 2, page
        assert page["vxfedd_policy_publication_latency_last_seconds{}"] > 0, page
        t.log(f"vxfedd: store change -> entry sent {page['vxfedd_policy_publication_latency_last_seconds{}'] * 1000:.2f} ms, "
              f"entry built {page['vxfedd_policy_publication_build_last_seconds{}'] * 1000:.2f} ms, "
              f"{page['vxfedd_policy_publication_last_bytes{}']:.0f} bytes")

        # 3. another pod attached, before any labels: mapped within the next look.
        assert attach_endpoint(sock, "c-new", "red", "10.244.0.8", "02:00:00:00:0a:08", "vpd0", ("stage", "new-0")) == 0, "attach c-new"
        took = t.wait_until(lambda: "c-new/net1" in mapping((policies() or [{}])[0]), 5, "the new pod mapped",
                            d.check_alive, interval=0.02)
        entry = policies()[0]
        assert len(entry["local_ingress"]) == 3, entry
        assert took < 1.5, f"the new pod mapped only {took:.2f} s after its attach"
        t.log(f"a pod attached: mapped in the entry {took * 1000:.0f} ms after the attach returned")
        page = metrics()
        assert page["vxfedd_policy_publications_total{}"] == 2, page
        assert page[f'vxfedd_policy_published_endpoints{{network="red",vni="{vni}"}}'] == 3, page

        # 4. the dataplane restarted: the replayed snapshot carries the same entry.
        n.dataplane.kill()
        n.start_dataplane(timeout=60)
        d.wait_ready(timeout=60)
        t.wait_until(lambda: policies() == [entry], 15, "the replayed snapshot with red's entry", d.check_alive)
        t.log("after the dataplane's restart: the same entry")

        # 4b. vxfedd killed and restarted while the store is away: its snapshot keeps the entry.
        generation = int(n.dataplane.dump().get("generation", 0))
        etcd.kill(0)
        d.kill()
        d.start()
        d.wait_ready(timeout=60)
        t.wait_until(lambda: int(n.dataplane.dump().get("generation", 0)) > generation, 15,
                     "the restarted vxfedd's snapshot applied", d.check_alive)
        assert policies() == [entry], f"after vxfedd's restart without the store: {policies()}"
        time.sleep(1.0)
        assert policies() == [entry], f"while the store is away: {policies()}"
        etcd.restart(0)
        t.log("vxfedd restarted with the store away: the same entry, from its cache")

        # 5. the policy deleted: the entry goes.
        path = topo.workdir / "policy.yaml"
        # The store just came back: the delete is retried until vxfedd reaches it.
        t.wait_until(lambda: d.ctl("policy", "delete", "-f", str(path)).returncode == 0, 30,
                     "the policy deleted", d.check_alive, interval=0.5)
        took = t.wait_until(lambda: policies() == [], 10, "red's entry removed", d.check_alive, interval=0)
        t.log(f"policy deleted: the entry gone {took * 1000:.0f} ms after the delete returned")
        assert len(tables().get("endpoints", [])) == 4
        n.dataplane.check_alive()
        d.check_alive()


if __name__ == "__main__":
    t.main_wrapper(main)
