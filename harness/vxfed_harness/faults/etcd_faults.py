"""etcd_member_kills: the federation store's members SIGKILLed one by one while the pods talk,
on the federated topology (topologies.py). docs/federation.md says what must hold: forwarding,
existing networks and pod ADD/DEL never ask the store; what needs the store (a new network's
VNI, a node's block claim) is refused with UNAVAILABLE naming the store while it has no quorum,
and nothing is reset or handed out twice. The suite measures the forwarding (zero loss is the
goal) and compares the state before and after, the store's keys included; this function
records what vxfedd answered while quorum was lost into the fault's JSON (ctx.observed).
A broken invariant (something done without quorum, a refusal not naming the store, a VNI or
block changed or handed out twice, anything left over) fails the fault (its error); what falls
short of the documented behaviour without breaking one (an answer slower than the clients'
timeouts, a pod ADD that fails) is listed in `goal_shortfalls` and the goal is not met.

  1. network `fclaim` created through node B only: it exists in the store, so node A's first
     use of it later is a block claim alone (its VNI is known);
  2. the leader killed (quorum kept: 2 of 3): a new network on node A must still work (the
     other members answer, after an election), then it is removed; held HOLD_S;
  3. a second member killed (quorum lost: 1 of 3, a member that answers but cannot serve):
     a pod ADD and DEL on the existing network must work (the plugin's own timeouts), right
     after the kill and again after the store operations below; on node A a new network (`fnew`: VNI and block) and the block claim (`fclaim`) must be
     refused naming the store (asked with a long client timeout, to get vxfedd's answer);
     `vxfedctl status` sampled all along (does the API answer?); held at least HOLD_S;
  4. the second member restarted (quorum back: quorum_lost_s ends here), then the first, data
     dirs kept; every member healthy, every vxfedd sees the store again;
  5. the refused operations left nothing (not on node A, not in the store); tried again they
     succeed: `fnew` gets a VNI no other network has, node A gets `fclaim` with node B's VNI;
     then both are removed (their VNIs stay held down, which the state comparison leaves out);
  6. every node's VNI and block of every network equals the store's.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

from ..federation_bed import KEY_PREFIX
from ..proc import PartUnavailable, wait_for

HOLD_S = 3.0                  # each state (quorum kept, quorum lost) held at least this long
CTL_TIMEOUT_S = 40.0          # a store call may take request_timeout_ms per member, and the io
                              # thread may be inside another one (the keep-alive) when it arrives
CLIENT_TIMEOUT_S = 5.0        # vxfedctl's and the CNI plugin's default timeout for vxfedd's answer
CLAIM_NET, CLAIM_SUBNET_A, CLAIM_SUBNET_B = "fclaim", "10.148.0.0/16", "10.149.0.0/16"
NEW_NET, NEW_SUBNET = "fnew", "10.150.0.0/16"
KEPT_NET, KEPT_SUBNET = "fkept", "10.151.0.0/16"


def _ctl(node, *args: str) -> tuple[int, str, float]:
    """vxfedctl --json ARGS on node: (exit code, stdout + stderr, seconds it took)."""
    t0 = time.monotonic()
    r = node.vxfedd.ctl("--json", *args, timeout=CTL_TIMEOUT_S + 10)
    return r.returncode, (r.stdout + r.stderr).strip(), round(time.monotonic() - t0, 3)


def _networks(node) -> dict[str, tuple[int, str]]:
    """name -> (VNI, this node's block), as the node has them."""
    return {n["spec"]["name"]: (int(n["vni"]), n.get("node_block", ""))
            for n in node.vxfedctl("networks").get("networks", [])}


def _store(etcd) -> dict[str, str]:
    return {k[len(KEY_PREFIX) + 1:]: v for k, v in etcd.get_prefix(f"{KEY_PREFIX}/v1/").items()}


def _must(problems: list[str], what: str, rc: int, text: str) -> dict:
    if rc != 0:
        problems.append(f"{what}: exit {rc}: {text[-300:]}")
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {}


def etcd_member_kills(ctx) -> None:
    t, b = ctx.t, ctx.b
    etcd = t.etcd
    obs = ctx.observed
    problems: list[str] = []      # broken invariants: the fault's error
    shortfalls: list[str] = []    # short of docs/federation.md's promise: the goal not met

    # 1. a network node A does not have yet, but the store does (through node B).
    got = _must(problems, f"add-network {CLAIM_NET} on node B (store healthy)",
                *_ctl(b, "add-network", CLAIM_NET, "--subnet", CLAIM_SUBNET_B)[:2])
    claim_vni = got.get("vni")

    # 2. the leader killed: quorum kept.
    first = etcd.leader()
    if first is None:
        raise AssertionError("etcd has no leader before the fault (etcdctl endpoint status)")
    try:
        _kill_and_hold(ctx, etcd, first, obs, problems, shortfalls)
    finally:
        # Whatever happened above, the members are started again (data dirs kept).
        for i in range(etcd.size):
            if not etcd.running(i):
                etcd.start_member(i)
    _after_recovery(ctx, etcd, claim_vni, obs, problems)
    obs["goal_shortfalls"] = shortfalls
    if problems:
        raise AssertionError("; ".join(problems))


def _kill_and_hold(ctx, etcd, first: int, obs: dict, problems: list[str], shortfalls: list[str]) -> None:
    """Steps 2 to 4: the kills, what vxfedd does without quorum, the restarts."""
    t, a = ctx.t, ctx.a
    ctx.progress(f"faults: etcd_member_kills: SIGKILL member m{first} (the leader); quorum kept")
    etcd.kill(first)
    killed1 = time.monotonic()
    rc, text, took = _ctl(a, "add-network", KEPT_NET, "--subnet", KEPT_SUBNET)
    obs["quorum_kept_add_network"] = {"exit": rc, "s": took, "text": text[-400:] if rc else ""}
    if rc != 0:
        problems.append(f"a new network with 2 of 3 members up was refused: {text[-300:]}")
    else:
        rc, text, _ = _ctl(a, "remove-network", KEPT_NET)
        if rc != 0:
            problems.append(f"remove-network {KEPT_NET} with 2 of 3 members up: {text[-300:]}")
    time.sleep(max(0.0, HOLD_S - (time.monotonic() - killed1)))

    # 3. a second member killed: quorum lost.
    second = next(i for i in range(etcd.size) if i != first)
    ctx.progress(f"faults: etcd_member_kills: SIGKILL member m{second}; quorum lost")
    etcd.kill(second)
    killed2 = time.monotonic()
    obs["members_killed"] = [f"m{first} (leader)", f"m{second}"]
    sampler = ApiSampler(a)
    sampler.start()
    try:
        _without_quorum(t, a, obs, problems, shortfalls)
        time.sleep(max(0.0, HOLD_S - (time.monotonic() - killed2)))
    finally:
        api = sampler.stop()
    obs["api_without_quorum"] = api
    if api["timed_out"]:
        shortfalls.append(f"vxfedd's API stalled without quorum: {api['timed_out']} of {api['calls']} "
                          f"`vxfedctl status` calls timed out ({CLIENT_TIMEOUT_S:.0f} s), the longest answer "
                          f"{api['max_s']:.1f} s")
    _restart(ctx, etcd, first, second, killed2, obs)


def _without_quorum(t, a, obs: dict, problems: list[str], shortfalls: list[str]) -> None:
    """Step 3: with one member of three up, what vxfedd does for pods and for the store."""
    # A pod on the existing network, as a runtime adds one (the plugin's own timeouts): the
    # store is never asked (docs/federation.md), so this must work, before vxfedd has noticed
    # the loss and again after its store calls have failed (pod_churn_once, below).
    pods = [pod_churn_once(t, a, "eqA", "right after the second kill", shortfalls)]
    # What vxfedd answers for what needs the store: asked with a client timeout long enough to
    # get its answer (the default 5 s of vxfedctl and the CNI plugin is judged separately).
    refusals = []
    for what, args in ((f"add-network {NEW_NET}: a new network (its VNI and node A's block)",
                        ("add-network", NEW_NET, "--subnet", NEW_SUBNET)),
                       (f"add-network {CLAIM_NET}: node A's block claim (the VNI is in the store)",
                        ("add-network", CLAIM_NET, "--subnet", CLAIM_SUBNET_A))):
        rc, text, took = _ctl(a, "--timeout-ms", str(int(CTL_TIMEOUT_S * 1000)), *args)
        refusals.append({"operation": what, "exit": rc, "s": took, "text": text[-600:]})
        if rc == 0:
            problems.append(f"{what} succeeded without quorum")
        elif "UNAVAILABLE" not in text or "federation store" not in text:
            problems.append(f"{what} without quorum: expected UNAVAILABLE naming the federation store, got "
                            f"exit {rc}: {text[-300:]!r}")
        elif took > CLIENT_TIMEOUT_S:
            shortfalls.append(f"{what}: refused naming the store, but after {took:.1f} s: a client with the "
                              f"default {CLIENT_TIMEOUT_S:.0f} s timeout (vxfedctl, the CNI plugin) gives up first")
    obs["refusals"] = refusals
    pods.append(pod_churn_once(t, a, "eqB", "after the store calls failed (vxfedd knows the store is away)",
                               shortfalls))
    obs["pod_add_del_without_quorum"] = pods


def _restart(ctx, etcd, first: int, second: int, killed2: float, obs: dict) -> None:
    # 4. back, data dirs kept: the second member first (its return restores quorum).
    t = ctx.t
    ctx.progress(f"faults: etcd_member_kills: restarting m{second}, then m{first} (data dirs kept)")
    restarted = time.monotonic()
    etcd.start_member(second)
    etcd.wait_healthy([second], timeout=30)
    quorum_back = time.monotonic()
    obs["quorum_lost_s"] = round(quorum_back - killed2, 3)
    obs["quorum_back_after_restart_s"] = round(quorum_back - restarted, 3)
    etcd.start_member(first)
    etcd.wait_healthy(range(etcd.size), timeout=30)
    obs["all_members_healthy_after_restart_s"] = round(time.monotonic() - restarted, 3)
    back = {}
    for label, n in t.nodes().items():
        wait_for(lambda n=n: n.vxfedd.status().get("federation_available"), 30,
                 f"vxfedd on {label} to see the federation store again")
        back[label] = round(time.monotonic() - quorum_back, 3)
    obs["store_seen_again_s"] = back


def _after_recovery(ctx, etcd, claim_vni, obs: dict, problems: list[str]) -> None:
    t, a, b = ctx.t, ctx.a, ctx.b
    # 5. nothing left by the refusals; the same operations now succeed, without a duplicate.
    have = _networks(a)
    store = _store(etcd)
    for leftover in (NEW_NET in have and f"node A has {NEW_NET}",
                     CLAIM_NET in have and f"node A has {CLAIM_NET}",
                     f"v1/networks/{NEW_NET}" in store and f"the store has v1/networks/{NEW_NET}",
                     f"v1/members/{CLAIM_NET}/{a.node_name}" in store
                     and f"the store has node A's membership of {CLAIM_NET}"):
        if leftover:
            problems.append(f"a refused operation left something: {leftover}")
    new = _must(problems, f"add-network {NEW_NET} after recovery",
                *_ctl(a, "add-network", NEW_NET, "--subnet", NEW_SUBNET)[:2])
    claim = _must(problems, f"add-network {CLAIM_NET} on node A after recovery",
                  *_ctl(a, "add-network", CLAIM_NET, "--subnet", CLAIM_SUBNET_A)[:2])
    others = {n: v for n, (v, _) in _networks(b).items() if n != CLAIM_NET}
    if new.get("vni") in others.values():
        problems.append(f"{NEW_NET} got VNI {new.get('vni')}, which another network has: {others}")
    if claim and claim.get("vni") != claim_vni:
        problems.append(f"node A got {CLAIM_NET} with VNI {claim.get('vni')}, node B has {claim_vni}")
    obs["after_recovery"] = {f"{NEW_NET}_vni": new.get("vni"), f"{CLAIM_NET}_vni": claim_vni,
                             f"{CLAIM_NET}_vni_on_node_a": claim.get("vni")}
    problems += consistency(t, etcd)
    for node, net in ((a, NEW_NET), (a, CLAIM_NET), (b, CLAIM_NET)):
        rc, text, _ = _ctl(node, "remove-network", net)
        if rc != 0:
            problems.append(f"remove-network {net} on {node.node_name}: {text[-300:]}")


def pod_churn_once(t, node, short: str, when: str, shortfalls: list[str]) -> dict:
    """One pod added and deleted on node through the CNI plugin: what it took, or the error."""
    t0 = time.monotonic()
    out = {"when": when}
    try:
        pod = t.add_pod(node, short)
        out["add_s"] = round(time.monotonic() - t0, 3)
        t0 = time.monotonic()
        t.delete_pod(pod)
        out["del_s"] = round(time.monotonic() - t0, 3)
        out["ok"] = True
    except PartUnavailable as exc:
        out.update(ok=False, failed_after_s=round(time.monotonic() - t0, 3), text=str(exc)[-400:])
        shortfalls.append(f"a pod ADD/DEL on an existing network failed without quorum ({when}) after "
                          f"{out['failed_after_s']:.1f} s: {str(exc)[-200:]}")
    return out


class ApiSampler:
    """`vxfedctl status` on a node every 0.2 s on a thread of its own, with the default client
    timeout: whether vxfedd's API answers while the store has no quorum, and how fast."""

    def __init__(self, node):
        self.node = node
        self.times: list[float] = []
        self.timed_out = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="api sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                r = self.node.vxfedd.ctl("status", timeout=CLIENT_TIMEOUT_S + 5)
                failed = r.returncode == 3      # vxfedd (or the dataplane) did not answer in time
            except subprocess.TimeoutExpired:
                failed = True
            self.times.append(time.monotonic() - t0)
            self.timed_out += failed
            self._stop.wait(0.2)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        ordered = sorted(self.times)
        return {"calls": len(ordered), "timed_out": self.timed_out,
                "max_s": round(ordered[-1], 3) if ordered else None,
                "p50_s": round(ordered[len(ordered) // 2], 3) if ordered else None}


def consistency(t, etcd) -> list[str]:
    """Every node's VNI and block of every network equal the store's; no two networks share a
    VNI; no two nodes share a block."""
    store = _store(etcd)
    out = []
    vni_of = {}
    for key, value in store.items():
        if key.startswith("v1/networks/"):
            vni_of[key.split("/", 2)[2]] = json.loads(value)["vni"]
    if len(set(vni_of.values())) != len(vni_of):
        out.append(f"two networks share a VNI in the store: {vni_of}")
    for label, n in t.nodes().items():
        for net, (vni, block) in _networks(n).items():
            if vni_of.get(net) != vni:
                out.append(f"{label}: network {net} has VNI {vni}, the store {vni_of.get(net)}")
            stored = store.get(f"v1/node-networks/{n.node_name}/{net}")
            if block and stored != block:
                out.append(f"{label}: network {net} has block {block}, the store {stored!r}")
    holders: dict[tuple[str, str], str] = {}
    for key, block in store.items():
        if key.startswith("v1/node-networks/") and block:
            _, _, node, net = key.split("/", 3)
            if (net, block) in holders:
                out.append(f"block {block} of {net} held by both {holders[(net, block)]} and {node}")
            holders[(net, block)] = node
    return out
