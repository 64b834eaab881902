"""Checks that a variant's overlay actually carries traffic before anything is measured:
every pod pair reachable (same node, same cluster across nodes, across clusters), the pod MTU
passes with DF set on the measured paths, one byte more does not."""

from __future__ import annotations

from ..latency import measure
from .variant import Pod, Variant

FULL_MATRIX_MAX_PODS = 8      # above this, only from and to the first pod (the matrix grows as pods²)


class PathError(RuntimeError):
    pass


def measured_pairs(variant: Variant) -> dict[str, tuple[Pod, Pod]]:
    """The pairs the suite measures: `cross_cluster`, the first pod of cluster A to the first of
    cluster B; `same_cluster`, the first pod of cluster A to the first pod on another node of
    cluster A (absent with one node per cluster)."""
    pods_a, pods_b = variant.pods["a"], variant.pods["b"]
    if not pods_a or not pods_b:
        raise PathError(f"{variant.name}: no pods in one of the clusters")
    out = {"cross_cluster": (pods_a[0], pods_b[0])}
    other_node = [p for p in pods_a if p.node != pods_a[0].node]
    if other_node:
        out["same_cluster"] = (pods_a[0], other_node[0])
    return out


def reach_pairs(variant: Variant) -> list[tuple[Pod, Pod]]:
    pods = variant.pods["a"] + variant.pods["b"]
    if len(pods) <= FULL_MATRIX_MAX_PODS:
        return [(s, d) for s in pods for d in pods if s is not d]
    first = pods[0]
    return [(first, d) for d in pods[1:]] + [(s, first) for s in pods[1:]]


def check(variant: Variant, reach_timeout: float = 20) -> dict:
    """Raises PathError with a sentence naming the pods and what failed; returns what it checked."""
    plan = variant.plan
    measured = measured_pairs(variant)
    pairs = reach_pairs(variant)
    for src, dst in pairs:
        if not measure.reachable(src, dst, timeout=reach_timeout):
            raise PathError(f"{variant.name}: {src.name} ({src.ip} on node-{src.node}) cannot reach {dst.name} "
                            f"({dst.ip} on node-{dst.node}) within {reach_timeout:.0f}s")
    for path, (a, b) in measured.items():
        full = measure.df_ping(a, b, plan.pod_mtu)
        if full.returncode != 0:
            raise PathError(f"{variant.name}: a {plan.pod_mtu}-byte DF ping from {a.name} to {b.name} ({path}) did "
                            f"not get through (underlay MTU {plan.underlay_mtu}): {full.stdout.strip()[-200:]} "
                            f"{full.stderr.strip()[-200:]}")
        over = measure.df_ping(a, b, plan.pod_mtu + 1)
        if over.returncode == 0:
            raise PathError(f"{variant.name}: a {plan.pod_mtu + 1}-byte DF ping from {a.name} to {b.name} ({path}) "
                            f"got through: the pod MTU is not {plan.pod_mtu}")
    return {"pairs": [(s.name, d.name) for s, d in pairs], "df_ping_bytes": plan.pod_mtu,
            "df_ping_over_refused": True, "df_paths": sorted(measured)}
