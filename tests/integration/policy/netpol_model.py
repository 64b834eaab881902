"""An independent model of network policy, for the truth-table test: which connections a set of
MultiNetworkPolicy objects lets through between labelled pods of two clusters.

Written from the Kubernetes NetworkPolicy semantics (networking.k8s.io/v1; MultiNetworkPolicy's
spec is the same) and docs/policy.md's "Semantics" for what vxfed adds across clusters. It
shares no code with vxfed's compiler (policy/compile.hpp) and does not call it: the test's
point is that two readings of the rules agree, cell by cell.

The rules, as the model applies them:

- A policy selects pods of its own cluster and namespace whose labels match its podSelector
  (an empty selector selects all of them). Every pod here is on the policy's network.
- policyTypes defaults to [Ingress], plus Egress when the policy has an egress rule.
- A pod selected by some policy whose policyTypes has a direction is isolated in that
  direction; a connection passes in that direction only if some rule of some such policy
  allows it. Rules of a direction missing from policyTypes count for nothing. Policies add up.
- A connection from pod S to pod D passes when S's egress allows it towards D and D's
  ingress allows it from S (replies of a passing connection pass: the probes need them).
- A rule allows when its peers (from / to) match the other pod (no peers: every pod) and its
  ports match (no ports: every protocol and port).
- Peers: podSelector alone - the policy's namespace, in every cluster (namespace sameness);
  namespaceSelector alone - pods of matching namespaces, the namespace's labels taken in the
  peer's own cluster; both - both; ipBlock - the peer's address in cidr and in no except.
- Ports: protocol (default TCP), port (absent: every port), endPort (a range, inclusive).
  Ingress compares the destination port of the connection, which is also what egress compares.
- A namespace's labels always include kubernetes.io/metadata.name: <its name>.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class ModelPod:
    cluster: str
    namespace: str
    name: str
    ip: str


@dataclass
class World:
    """What the store holds: namespace labels per (cluster, name), pod labels per pod, policies
    (the MultiNetworkPolicy objects as dicts) per (cluster, namespace, name)."""
    namespaces: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    pod_labels: dict[ModelPod, dict[str, str]] = field(default_factory=dict)
    policies: dict[tuple[str, str, str], dict] = field(default_factory=dict)

    def namespace_labels(self, cluster: str, namespace: str) -> dict[str, str]:
        labels = dict(self.namespaces.get((cluster, namespace), {}))
        labels.setdefault(NAME_LABEL, namespace)
        return labels


def selector_matches(selector: dict | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector: matchLabels and matchExpressions, all AND-ed; {} matches all."""
    selector = selector or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"operator {op}")
    return True


def policy_types(spec: dict) -> set[str]:
    if "policyTypes" in spec:
        return set(spec["policyTypes"])
    types = {"Ingress"}
    if spec.get("egress"):
        types.add("Egress")
    return types


def in_block(ip: str, block: dict) -> bool:
    addr = ipaddress.ip_address(ip)
    if addr not in ipaddress.ip_network(block["cidr"]):
        return False
    return not any(addr in ipaddress.ip_network(e) for e in block.get("except") or [])


def peer_matches(world: World, policy_ns: str, peer: dict, other: ModelPod) -> bool:
    if "ipBlock" in peer:
        return in_block(other.ip, peer["ipBlock"])
    has_ns, has_pod = "namespaceSelector" in peer, "podSelector" in peer
    if has_ns:
        if not selector_matches(peer["namespaceSelector"], world.namespace_labels(other.cluster, other.namespace)):
            return False
    elif other.namespace != policy_ns:
        return False   # podSelector alone: the policy's namespace, in every cluster
    if has_pod and not selector_matches(peer["podSelector"], world.pod_labels[other]):
        return False
    return True


def port_matches(ports: list[dict] | None, proto: str, port: int) -> bool:
    if not ports:
        return True
    for p in ports:
        if p.get("protocol", "TCP").lower() != proto:
            continue
        if "port" not in p:
            return True
        first = int(p["port"])
        last = int(p.get("endPort", first))
        if first <= port <= last:
            return True
    return False


def selecting(world: World, pod: ModelPod, direction: str) -> list[dict]:
    """The policies that select pod and are in force in direction (Ingress | Egress)."""
    out = []
    for (cluster, ns, _name), pol in world.policies.items():
        spec = pol.get("spec") or {}
        if cluster != pod.cluster or ns != pod.namespace or direction not in policy_types(spec):
            continue
        if selector_matches(spec.get("podSelector"), world.pod_labels[pod]):
            out.append(pol)
    return out


def direction_allows(world: World, local: ModelPod, other: ModelPod, direction: str, proto: str, port: int) -> bool:
    pols = selecting(world, local, direction)
    if not pols:
        return True
    rules_key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    for pol in pols:
        ns = pol["metadata"]["namespace"]
        for rule in pol["spec"].get(rules_key) or []:
            peers = rule.get(peers_key)
            if peers and not any(peer_matches(world, ns, p, other) for p in peers):
                continue
            if port_matches(rule.get("ports"), proto, port):
                return True
    return False


def allowed(world: World, src: ModelPod, dst: ModelPod, proto: str, port: int) -> bool:
    """Does a connection from src to dst (proto tcp|udp, dst's port) pass, replies included?"""
    return (direction_allows(world, src, dst, "Egress", proto, port) and
            direction_allows(world, dst, src, "Ingress", proto, port))
