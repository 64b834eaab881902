#!/usr/bin/env python3
"""Each local pod's policy identity reaches the real vxfed-dataplane as its endpoint's
`identity` (the VXLAN-GBP group policy ID it sends with; docs/policy.md, "Identities on the
wire"): one node (its own namespace, etcd in it, the real dataplane on a veth uplink), network
red, a pod prod/db-0 attached with the CNI's K8S_POD_NAMESPACE/K8S_POD_NAME.
  1. before its labels are in the store: the dataplane's endpoint has the unlabelled number (1);
     an endpoint attached without pod names keeps 0 (unknown) throughout;
  2. `vxfedctl policy apply` of the namespace and the pod's labels: the endpoint has the number
     the apply printed for prod/db-0;
  3. the pod relabelled: the new number the apply printed (different from the old one);
  4. the dataplane restarted: the snapshot vxfedd replays carries the number.
Each read is `vxfed-dpctl dump` (the tables the dataplane applied), compared whole: both endpoints.
"""

from __future__ import annotations

import re
import time

import vxfed_harness as t
from vxfed_harness.cni_bed import attach_endpoint
from vxfed_harness.etcd_cluster import EtcdCluster
from vxfed_harness.node import Node

PREFIX = "/vxfed"
UNLABELLED = 1  # policy::kPeerUnlabelled (docs/policy.md, "Before a pod's labels arrive")


def objects(labels: str) -> str:
    return f"""\
apiVersion: v1
kind: List
items:
- {{apiVersion: v1, kind: Namespace, metadata: {{name: prod, labels: {{team: blue}}}}}}
- {{apiVersion: v1, kind: Pod, metadata: {{name: db-0, namespace: prod, labels: {labels}}}}}
"""


def main() -> None:
    t.require_root()
    for b in ("control/vxfedd", "control/vxfedctl", "dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl"):
        t.require_binary(b)
    with t.Topology("epid") as topo:
        n = Node(topo, "node", "198.18.0.1", "10.244.0.0/16", node_name="node-a", cluster="cluster-a")
        peer = topo.netns("ulpeer")
        topo.wire(n.ns, ["198.18.0.1/24"], peer, ["198.18.0.2/24"], ifname="ul0", b_ifname="ul1")
        etcd = EtcdCluster(topo, members=1, ns=n.ns)
        etcd.start()
        # The pods' host-side interfaces the dataplane attaches to.
        for iface in ("vpa0", "vpb0"):
            n.ns.run(["ip", "link", "add", iface, "type", "veth", "peer", "name", iface + "p"])
            n.ns.run(["ip", "link", "set", iface, "up"])
            n.ns.run(["ip", "link", "set", iface + "p", "up"])
        n.start_dataplane(timeout=60)
        cfg = n.vxfedd_config(networks=[{"name": "red", "subnet": "10.244.0.0/16"}],
                              federation={"endpoints": [etcd.endpoint(0)], "key_prefix": PREFIX})
        n.start_vxfedd(cfg)
        d = n.vxfedd
        d.wait_ready(timeout=60)
        sock = str(d.socket)
        assert attach_endpoint(sock, "c-db-0", "red", "10.244.0.5", "02:00:00:00:0a:05", "vpa0", ("prod", "db-0")) == 0, "attach c-db-0"
        assert attach_endpoint(sock, "c-hand", "red", "10.244.0.6", "02:00:00:00:0a:06", "vpb0", None) == 0, "attach c-hand"

        def identities() -> dict[str, int]:
            """Endpoint id -> identity, from vxfed-dpctl dump (proto JSON leaves a 0 out)."""
            eps = n.dataplane.dump().get("tables", {}).get("endpoints", [])
            return {e["id"]: int(e.get("identity", 0)) for e in eps}

        def holds(db: int) -> bool:
            got = identities()
            return got == {"c-db-0/net1": db, "c-hand/net1": 0}

        def wait_for(db: int, what: str) -> float:
            t0 = time.monotonic()
            t.wait_until(lambda: holds(db), 10, what, d.check_alive)
            return time.monotonic() - t0

        def apply(labels: str) -> int:
            path = topo.workdir / "prod.yaml"
            path.write_text(objects(labels))
            r = d.ctl("policy", "apply", "-f", str(path))
            assert r.returncode == 0, r.stderr
            m = re.search(r"^prod\s+db-0\s+(\d+)\s*$", r.stdout, re.M)
            assert m, f"no identity printed for prod/db-0: {r.stdout}"
            return int(m.group(1))

        # 1. labels not in the store yet.
        took = wait_for(UNLABELLED, "db-0's endpoint with the unlabelled number")
        t.log(f"before its labels: {identities()} ({took:.2f} s after the attach)")

        # 2. its labels applied.
        first = apply("{app: db}")
        assert first not in (0, UNLABELLED), first
        took = wait_for(first, f"db-0's endpoint with identity {first}")
        t.log(f"labels applied: identity {first} in the dataplane {took:.2f} s after the apply returned")

        # 3. relabelled.
        second = apply("{app: db, tier: gold}")
        assert second not in (0, UNLABELLED, first), (first, second)
        took = wait_for(second, f"db-0's endpoint with identity {second}")
        t.log(f"relabelled: identity {second} in the dataplane {took:.2f} s after the apply returned")

        # 4. the dataplane restarted: the replayed snapshot carries it.
        n.dataplane.kill()
        n.start_dataplane(timeout=60)
        d.wait_ready(timeout=60)
        wait_for(second, "the replayed snapshot with db-0's identity")
        t.log(f"after the dataplane's restart: {identities()}")
        n.dataplane.check_alive()


if __name__ == "__main__":
    t.main_wrapper(main)
