"""Checks that a variant's overlay actually carries traffic before anything is measured:
every pod pair reachable, the pod MTU passes with DF set, one byte more does not."""

from __future__ import annotations

from ..latency import measure
from .variant import Variant


class PathError(RuntimeError):
    pass


def check(variant: Variant, reach_timeout: float = 20) -> dict:
    """Raises PathError with a sentence naming the pods and what failed; returns what it checked."""
    plan = variant.plan
    pods_a, pods_b = variant.pods["a"], variant.pods["b"]
    if not pods_a or not pods_b:
        raise PathError(f"{variant.name}: no pods in one of the clusters")
    pairs = [(pods_a[i], pods_b[i]) for i in range(min(len(pods_a), len(pods_b)))]
    pairs += [(pods_a[0], b) for b in pods_b[1:]]
    pairs += [(b, a) for a, b in pairs[:1]]           # and back, B -> A
    for src, dst in pairs:
        if not measure.reachable(src, dst, timeout=reach_timeout):
            raise PathError(f"{variant.name}: {src.name} ({src.ip}) cannot reach {dst.name} ({dst.ip}) "
                            f"within {reach_timeout:.0f}s")
    a, b = pods_a[0], pods_b[0]
    full = measure.df_ping(a, b, plan.pod_mtu)
    if full.returncode != 0:
        raise PathError(f"{variant.name}: a {plan.pod_mtu}-byte DF ping from {a.name} to {b.name} did not "
                        f"get through (underlay MTU {plan.underlay_mtu}): {full.stdout.strip()[-200:]} "
                        f"{full.stderr.strip()[-200:]}")
    over = measure.df_ping(a, b, plan.pod_mtu + 1)
    if over.returncode == 0:
        raise PathError(f"{variant.name}: a {plan.pod_mtu + 1}-byte DF ping got through: the pod MTU is "
                        f"not {plan.pod_mtu}")
    return {"pairs": [(s.name, d.name) for s, d in pairs], "df_ping_bytes": plan.pod_mtu,
            "df_ping_over_refused": True}
