"""Network policy in a federation mid-roll (tests/integration/upgrade/): the policy objects the
upgrade test applies with `vxfedctl policy apply -f`, and what it reads back from the nodes to
tell where a flow was refused and which VTEPs get VXLAN-GBP (docs/policy.md, "Mixed releases").

    numbers = apply(node, objects, workdir)          # vxfedctl policy apply -f; pod -> identity
    registered_gbp(bed, KEY_PREFIX)                  # node -> its store registration says gbp: true
    bad = check_flows(bed, [Flow(src, dst, allowed=False, refused_at=a2), ...])
    gbp_vteps(node)                                  # the VTEPs its forwarder sends GBP to

A flow is one ICMP echo (the policies' rules have no ports, so they cover ICMP: docs/policy.md,
"Semantics"), every flow of a check at once. A refusal is told from a loss by the drops of the
node that is to refuse it, under the reason it is to count (`policy_denied_ingress` unless said).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .node import Node

POLICY_API = "k8s.cni.cncf.io/v1beta1"
REFUSED_WAIT_S = 0.5    # ping -W for a flow expected to be refused: one lost echo is the answer


def namespace_obj(name: str, labels: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def pod_obj(namespace: str, name: str, labels: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels}}


def egress_to_pods(namespace: str, name: str, network: str, selected: dict[str, str], peers: dict[str, str]) -> dict:
    """A MultiNetworkPolicy on `network`: pods matching `selected` send anything to pods matching
    `peers` (podSelector alone: the policy's namespace in every cluster), nothing else."""
    return {"apiVersion": POLICY_API, "kind": "MultiNetworkPolicy",
            "metadata": {"name": name, "namespace": namespace,
                         "annotations": {"k8s.v1.cni.cncf.io/policy-for": f"{namespace}/{network}"}},
            "spec": {"podSelector": {"matchLabels": selected}, "policyTypes": ["Egress"],
                     "egress": [{"to": [{"podSelector": {"matchLabels": peers}}]}]}}


def ingress_from_pods(namespace: str, name: str, network: str, selected: dict[str, str],
                      peers: dict[str, str], cidrs: tuple[str, ...] = ()) -> dict:
    """A MultiNetworkPolicy on `network`: pods matching `selected` take anything (no ports: every
    protocol, ICMP included) from pods matching `peers` (podSelector alone: the policy's namespace
    in every cluster) and from the addresses of `cidrs` (ipBlock peers), nothing else."""
    sources = [{"podSelector": {"matchLabels": peers}}, *({"ipBlock": {"cidr": c}} for c in cidrs)]
    return {"apiVersion": POLICY_API, "kind": "MultiNetworkPolicy",
            "metadata": {"name": name, "namespace": namespace,
                         "annotations": {"k8s.v1.cni.cncf.io/policy-for": f"{namespace}/{network}"}},
            "spec": {"podSelector": {"matchLabels": selected}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": sources}]}}


def apply(node: Node, objects: list[dict], workdir: Path, tag: str) -> dict[tuple[str, str], int]:
    """`vxfedctl policy apply -f` of objects (a kind: List, as JSON) on node, for its cluster.
    Returns the identity numbers it printed, (namespace, pod) -> number."""
    path = workdir / f"policy-{tag}.yaml"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=1) + "\n")
    res = node.vxfedd.ctl("policy", "apply", "-f", str(path), timeout=15)
    if res.returncode != 0:
        raise AssertionError(f"{node.short}: vxfedctl policy apply -f {path}: exit {res.returncode}: "
                             f"{(res.stdout + res.stderr).strip()}")
    namespaces = {o["metadata"]["namespace"] for o in objects if o["kind"] == "Pod"}
    numbers = {}
    for line in res.stdout.splitlines():
        m = re.match(r"^(\S+)\s+(\S+)\s+(\d+)\s*$", line)
        if m and m.group(1) in namespaces:
            numbers[(m.group(1), m.group(2))] = int(m.group(3))
    return numbers


def endpoint_identity(node: Node, container_id: str) -> Optional[int]:
    """The identity node's forwarder has for the endpoint of container_id (None: no endpoint)."""
    for e in node.dataplane.dump().get("tables", {}).get("endpoints", []):
        if e.get("id", "").startswith(container_id):
            return int(e.get("identity", 0))
    return None


def registered_gbp(bed, prefix: str) -> dict[str, bool]:
    """Node -> what its registration in the federation store (`v1/nodes/<node>`) says about GBP:
    true only when it says `"gbp": true` (the previous release writes no such field)."""
    records = bed.etcd.get_prefix(f"{prefix}/v1/nodes/")
    return {s: json.loads(records[f"{prefix}/v1/nodes/{n.node_name}"]).get("gbp") is True
            for s, n in bed.nodes.items()}


def gbp_vteps(node: Node) -> list[str]:
    """The VTEPs node's forwarder sends VXLAN-GBP to (its `Vtep` entries with gbp: true)."""
    return sorted(v["ip"] for v in node.dataplane.dump().get("tables", {}).get("vteps", []) if v.get("gbp"))


def drops(node: Node) -> dict[str, int]:
    """node's forwarder's drops by reason (both releases print them alike)."""
    return {d["reason"]: int(d.get("packets", 0)) for d in node.dataplane.counters().get("drops", [])}


def gbp_received(node: Node) -> int:
    """GBP packets node's forwarder has taken (0 for a forwarder that has no such counter)."""
    return int(node.dataplane.counters().get("gbp_rx_packets", 0))


@dataclass
class Flow:
    src: object                     # federation_bed.Pod
    dst: object                     # federation_bed.Pod
    allowed: bool
    refused_at: Optional[Node] = None   # the node whose forwarder must count the refusal
    reason: str = "policy_denied_ingress"   # the drop reason it counts it under

    def __str__(self) -> str:
        verdict = "allowed" if self.allowed else f"refused at {self.refused_at.short} ({self.reason})"
        return f"{self.src.name} -> {self.dst.name} ({verdict})"


def _echo(src, dst_ip: str, wait_s: float) -> bool:
    return src.ns.run(["ping", "-n", "-q", "-c", "1", "-W", str(wait_s), dst_ip], check=False,
                      timeout=30).returncode == 0


def check_flows(flows: list[Flow]) -> list[str]:
    """One echo per flow, all at once; an allowed flow gets a second try (a first packet may wait
    for ARP). Returns what differs from the expectation: an allowed flow not answered, a refused
    one answered, or refusals its node did not count (each flow's reason there must grow by at
    least its refused flows' echoes: one each, or a retry's more)."""
    refusers = {f.refused_at.short: f.refused_at for f in flows if not f.allowed}
    before = {s: drops(n) for s, n in refusers.items()}
    answered: list[Optional[bool]] = [None] * len(flows)

    def run(i: int, f: Flow) -> None:
        if f.allowed:
            answered[i] = _echo(f.src, f.dst.ip, 3) or _echo(f.src, f.dst.ip, 3)
        else:
            answered[i] = _echo(f.src, f.dst.ip, REFUSED_WAIT_S)
    threads = [threading.Thread(target=run, args=(i, f)) for i, f in enumerate(flows)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    bad = [f"{f}: {'answered' if ok else 'not answered'}" for f, ok in zip(flows, answered) if ok != f.allowed]
    for s, n in refusers.items():
        after = drops(n)
        for reason in sorted({f.reason for f in flows if not f.allowed and f.refused_at is n}):
            want = sum(1 for f in flows if not f.allowed and f.refused_at is n and f.reason == reason)
            got = after.get(reason, 0) - before[s].get(reason, 0)
            if got < want:
                bad.append(f"{s}: {reason} grew by {got}, expected at least {want} (its refused flows)")
    return bad
