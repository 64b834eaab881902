"""The truth table's world and its policy scenarios (test_policy_truth_table.py runs them).

The world: namespaces alpha, beta and gamma in both clusters (namespace sameness: the same
name is the same namespace everywhere), three pods a, b, c in each, so 18 pods. Each
namespace's labels carry `site: a` or `site: b` after its cluster, so a namespace selector can
tell the clusters apart; the other labels are the same in both.

A scenario is the whole state the store should hold while its matrix is probed: its policies
(each for one cluster) and the labels that differ from the world's. The runner applies the
difference from the previous scenario, so a scenario that lists one policy fewer than the one
before it is a policy deleted, and one that lists other labels is a relabelling.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CLUSTERS = ("cluster-a", "cluster-b")
NAMESPACES = ("alpha", "beta", "gamma")
POD_NAMES = ("a", "b", "c")
NETWORK = "fed"

NAMESPACE_LABELS = {
    "alpha": {"team": "red", "env": "prod"},
    "beta": {"team": "blue", "env": "prod"},
    "gamma": {"team": "red", "env": "dev"},
}
POD_LABELS = {
    "a": {"app": "a", "tier": "web"},
    "b": {"app": "b", "tier": "db"},
    "c": {"app": "c", "tier": "web", "pod-template-hash": "5d8f7c"},
}
# (proto, port) of every probe of a cell.
PROBES = (("tcp", 80), ("tcp", 81), ("udp", 53), ("udp", 80))


def base_namespace_labels(cluster: str, ns: str) -> dict[str, str]:
    return {**NAMESPACE_LABELS[ns], "site": cluster[-1]}


def base_pod_labels(name: str) -> dict[str, str]:
    return dict(POD_LABELS[name])


@dataclass
class Scenario:
    name: str
    what: str
    policies: list[tuple[str, dict]] = field(default_factory=list)        # (cluster, MultiNetworkPolicy)
    namespace_labels: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)  # (cluster, ns)
    pod_labels: dict[tuple[str, str, str], dict[str, str]] = field(default_factory=dict)   # (cluster, ns, pod)


def policy(ns: str, name: str, spec: dict) -> dict:
    return {"apiVersion": "k8s.cni.cncf.io/v1beta1", "kind": "MultiNetworkPolicy",
            "metadata": {"name": name, "namespace": ns,
                         "annotations": {"k8s.v1.cni.cncf.io/policy-for": f"{ns}/{NETWORK}"}},
            "spec": spec}


def deny_ingress(ns: str, name: str = "deny-ingress") -> dict:
    return policy(ns, name, {"podSelector": {}, "policyTypes": ["Ingress"]})


def deny_egress(ns: str, name: str = "deny-egress") -> dict:
    return policy(ns, name, {"podSelector": {}, "policyTypes": ["Egress"]})


def scenarios(blocks: dict[str, str], ip: dict[tuple[str, str, str], str]) -> list[Scenario]:
    """blocks: node short name -> its pod block (a1, a2 of cluster-a; b1, b2 of cluster-b);
    ip: (cluster, ns, pod) -> the pod's address."""
    A, B = CLUSTERS
    add_up_1 = policy("alpha", "from-b-tcp80", {
        "podSelector": {}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "b"}}}], "ports": [{"port": 80}]}]})
    add_up_2 = policy("alpha", "from-beta-udp", {
        "podSelector": {}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "blue"}}}],
                     "ports": [{"protocol": "UDP"}]}]})
    from_team_blue = policy("alpha", "from-team-blue", {
        "podSelector": {}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "blue"}}}]}]})
    db_isolated = policy("beta", "db-isolated", {
        "podSelector": {"matchLabels": {"tier": "db"}}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"tier": "web"}}}], "ports": [{"port": 81}]}]})
    return [
        Scenario("no-policy", "no policy at all: every cell allowed"),
        Scenario("deny-ingress", "cluster-a alpha: default deny ingress",
                 [(A, deny_ingress("alpha"))]),
        Scenario("deny-ingress-both-clusters", "alpha denies ingress in both clusters (one policy each)",
                 [(A, deny_ingress("alpha")), (B, deny_ingress("alpha"))]),
        Scenario("deny-egress", "cluster-a beta: default deny egress",
                 [(A, deny_egress("beta"))]),
        Scenario("deny-both-directions", "cluster-b gamma: one policy denying ingress and egress",
                 [(B, policy("gamma", "deny-all", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}))]),
        Scenario("from-namespace-label", "cluster-a alpha: ingress only from namespaces team=blue (beta, both clusters)",
                 [(A, from_team_blue)]),
        Scenario("from-pods-same-namespace", "cluster-a beta's app=b: ingress only from app=a of beta (every cluster)",
                 [(A, policy("beta", "b-from-a", {
                     "podSelector": {"matchLabels": {"app": "b"}}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a"}}}]}]}))]),
        Scenario("from-pods-other-namespace", "cluster-b alpha: ingress from app=c pods of namespace gamma (AND-ed)",
                 [(B, policy("alpha", "from-gamma-c", {
                     "podSelector": {}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gamma"}},
                                            "podSelector": {"matchLabels": {"app": "c"}}}]}]}))]),
        Scenario("and-versus-or", "cluster-a gamma: two peers (env=dev namespaces) OR (tier=db pods of gamma)",
                 [(A, policy("gamma", "dev-or-db", {
                     "podSelector": {}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"env": "dev"}}},
                                           {"podSelector": {"matchLabels": {"tier": "db"}}}]}]}))]),
        Scenario("from-other-cluster", "cluster-a beta: ingress only from the other cluster (namespaces site=b)",
                 [(A, policy("beta", "from-site-b", {
                     "podSelector": {}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"site": "b"}}}]}]}))]),
        Scenario("from-other-cluster-pods", "cluster-b alpha's a: from app=b pods of site=b prod namespaces",
                 [(B, policy("alpha", "a-from-b-site-b", {
                     "podSelector": {"matchLabels": {"app": "a"}}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"site": "b", "env": "prod"}},
                                            "podSelector": {"matchLabels": {"app": "b"}}}]}]}))]),
        Scenario("ipblock-except", "cluster-a alpha: ingress from 10.244.0.0/15 except node a2's and b1's blocks",
                 [(A, policy("alpha", "from-block", {
                     "podSelector": {}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"ipBlock": {"cidr": "10.244.0.0/15",
                                                        "except": [blocks["a2"], blocks["b1"]]}}]}]}))]),
        Scenario("ipblock-except-one-pod", "cluster-b gamma: ingress from cluster-a's pods except alpha/a's /32",
                 [(B, policy("gamma", "from-a-but-one", {
                     "podSelector": {}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"ipBlock": {"cidr": "10.244.0.0/16",
                                                        "except": [ip[(A, "alpha", "a")] + "/32"]}}]}]}))]),
        Scenario("port", "cluster-a alpha: ingress on TCP 80 only, from anyone",
                 [(A, policy("alpha", "tcp80", {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]}))]),
        Scenario("port-range", "cluster-b beta: ingress on TCP 81-90 (endPort) from anyone",
                 [(B, policy("beta", "tcp81-90", {
                     "podSelector": {}, "policyTypes": ["Ingress"],
                     "ingress": [{"ports": [{"protocol": "TCP", "port": 81, "endPort": 90}]}]}))]),
        Scenario("port-range-edge", "cluster-a gamma: ingress on TCP 79-80 and UDP 50-53",
                 [(A, policy("gamma", "edges", {
                     "podSelector": {}, "policyTypes": ["Ingress"],
                     "ingress": [{"ports": [{"port": 79, "endPort": 80},
                                            {"protocol": "UDP", "port": 50, "endPort": 53}]}]}))]),
        Scenario("udp-not-tcp", "cluster-a beta: ingress on UDP 80 only (not TCP 80)",
                 [(A, policy("beta", "udp80", {
                     "podSelector": {}, "policyTypes": ["Ingress"],
                     "ingress": [{"ports": [{"protocol": "UDP", "port": 80}]}]}))]),
        Scenario("udp-any-port", "cluster-b alpha: ingress on any UDP port from namespaces env=prod",
                 [(B, policy("alpha", "udp-prod", {
                     "podSelector": {}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"env": "prod"}}}],
                                  "ports": [{"protocol": "UDP"}]}]}))]),
        Scenario("egress-ipblock", "cluster-b beta: egress only to cluster-a's pods (10.244.0.0/16)",
                 [(B, policy("beta", "to-cluster-a", {
                     "podSelector": {}, "policyTypes": ["Egress"],
                     "egress": [{"to": [{"ipBlock": {"cidr": "10.244.0.0/16"}}]}]}))]),
        Scenario("egress-ipblock-except-port", "cluster-a alpha: egress to 10.245.0.0/16 except b2's block, TCP 80",
                 [(A, policy("alpha", "to-b-but-b2", {
                     "podSelector": {}, "policyTypes": ["Egress"],
                     "egress": [{"to": [{"ipBlock": {"cidr": "10.245.0.0/16", "except": [blocks["b2"]]}}],
                                 "ports": [{"port": 80}]}]}))]),
        Scenario("egress-selectors", "cluster-a gamma: egress to team=blue namespaces, and UDP 53 to gamma's app=a",
                 [(A, policy("gamma", "to-blue-and-dns", {
                     "podSelector": {}, "policyTypes": ["Egress"],
                     "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"team": "blue"}}}]},
                                {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gamma"}},
                                         "podSelector": {"matchLabels": {"app": "a"}}}],
                                 "ports": [{"protocol": "UDP", "port": 53}]}]}))]),
        Scenario("egress-default-types", "cluster-b gamma's c: egress rule without policyTypes (Ingress and Egress)",
                 [(B, policy("gamma", "c-default-types", {
                     "podSelector": {"matchLabels": {"app": "c"}},
                     "egress": [{"to": [{"podSelector": {"matchLabels": {"tier": "web"}}}]}]}))]),
        Scenario("rules-not-in-force", "cluster-a beta: policyTypes [Egress] with ingress rules (not in force), "
                 "egress to alpha only",
                 [(A, policy("beta", "egress-only", {
                     "podSelector": {}, "policyTypes": ["Egress"],
                     "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a"}}}]}],
                     "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "alpha"}}}]}]}))]),
        Scenario("match-expressions", "cluster-b alpha's app In (a, b): from pods tier NotIn (db) of env In (dev) "
                 "namespaces, or from alpha's pods with app and without role (Exists, DoesNotExist)",
                 [(B, policy("alpha", "expressions", {
                     "podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
                     "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [
                                                {"key": "env", "operator": "In", "values": ["dev"]}]},
                                            "podSelector": {"matchExpressions": [
                                                {"key": "tier", "operator": "NotIn", "values": ["db"]}]}},
                                           {"podSelector": {"matchExpressions": [
                                                {"key": "app", "operator": "Exists"},
                                                {"key": "role", "operator": "DoesNotExist"}]}}]}]}))]),
        Scenario("two-policies-add-up", "cluster-a alpha: TCP 80 from app=b pods of alpha, plus UDP from team=blue",
                 [(A, add_up_1), (A, add_up_2)]),
        Scenario("a-policy-deleted", "the previous scenario with from-beta-udp deleted",
                 [(A, add_up_1)]),
        Scenario("a-pod-relabelled", "as before, and cluster-b alpha/a relabelled app=b: now a peer of from-b-tcp80",
                 [(A, add_up_1)], pod_labels={(B, "alpha", "a"): {"app": "b", "tier": "web"}}),
        Scenario("a-selected-pod-relabelled", "cluster-a beta: tier=db pods take TCP 81 from tier=web; "
                 "cluster-a beta/c relabelled tier=db (now selected)",
                 [(A, db_isolated)], pod_labels={(A, "beta", "c"): {"app": "c", "tier": "db"}}),
        Scenario("namespace-label-before", "cluster-a alpha: ingress only from team=blue namespaces",
                 [(A, from_team_blue)]),
        Scenario("a-namespace-relabelled", "as before, and cluster-b gamma relabelled team=blue: its pods now admitted",
                 [(A, from_team_blue)], namespace_labels={(B, "gamma"): {"team": "blue", "env": "dev", "site": "b"}}),
        Scenario("many-at-once", "ten policies of the scenarios above at once, in both clusters",
                 [(A, add_up_1), (A, add_up_2), (A, db_isolated),
                  (A, policy("gamma", "to-blue", {
                      "podSelector": {"matchLabels": {"app": "a"}}, "policyTypes": ["Egress"],
                      "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"team": "blue"}}}]}]})),
                  (B, deny_ingress("gamma")),
                  (B, policy("gamma", "gamma-from-alpha-udp", {
                      "podSelector": {"matchLabels": {"tier": "web"}},
                      "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "red", "env": "prod"}}}],
                                   "ports": [{"protocol": "UDP", "port": 53, "endPort": 80}]}]})),
                  (B, deny_egress("beta")),
                  (B, policy("beta", "beta-to-site-a", {
                      "podSelector": {}, "policyTypes": ["Egress"],
                      "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"site": "a"}}}],
                                  "ports": [{"port": 81}, {"protocol": "UDP", "port": 80}]}]})),
                  (B, policy("alpha", "alpha-b-from-ipblock", {
                      "podSelector": {"matchLabels": {"app": "b"}}, "policyTypes": ["Ingress"],
                      "ingress": [{"from": [{"ipBlock": {"cidr": blocks["a1"]}}, {"ipBlock": {"cidr": blocks["b2"]}}]}]})),
                  (A, deny_ingress("alpha", "alpha-deny-ingress"))]),
        Scenario("all-deleted", "every policy deleted, every label back: every cell allowed again"),
    ]
