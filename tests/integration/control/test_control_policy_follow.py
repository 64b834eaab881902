#!/usr/bin/env python3
"""vxfedd follows network policy in the federation store and compiles it for its own pods
(docs/policy.md, "vxfedd follows the store"), end to end with a real etcd and one vxfedd
(node-a of cluster-a, network `red`, no dataplane: nothing goes to the forwarder yet). What is
asserted is vxfedd's metrics page:
  1. a pod prod/db-0 attached on node-a (the CNI's K8S_POD_NAMESPACE/K8S_POD_NAME) before its
     labels are in the store: one local identity, the unlabelled one (1), nothing isolated;
  2. `vxfedctl policy apply` of a Namespace, a MultiNetworkPolicy (pods app=db take TCP 5432
     from pods app=web) and the Pods web-... and db-0: within 1 s of the apply's return the
     page shows the policy and both identities held, db-0's own number as the local identity,
     its ingress isolated with exactly one peer (web's identity), egress not isolated, tables
     bytes > 0; the debug log names the policy and the identities;
  3. `vxfedctl policy delete -f` of the same file: within 1 s the policy is gone, db-0 is
     unlabelled again and nothing is isolated (the numbers stay held down for the hold-down,
     as docs/policy.md says, and the page counts them);
  4. the identity collector (PolicyStore::maintain) has run on node-a, the federation's
     collector, without failures;
  5. etcd killed: the watch is seen broken, the tables stay; etcd restarted: the watch is
     re-established by itself and a new apply is compiled within 1 s of its return;
  6. a pod detached: its network's compiler is dropped (no local identity series left).
"""

from __future__ import annotations

import ipaddress
import re
import time
import urllib.request

import vxfed_harness as t
from vxfed_harness import protowire as pw
from vxfed_harness.cni_bed import control_call
from vxfed_harness.etcd_cluster import EtcdCluster, free_port
from vxfed_harness.vxfedd import Vxfedd, config

PREFIX = "/vxfed"
GOAL_S = 1.0

OBJECTS = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: prod
    labels: {team: blue}
- apiVersion: k8s.cni.cncf.io/v1beta1
  kind: MultiNetworkPolicy
  metadata:
    name: db-from-web
    namespace: prod
    annotations:
      k8s.v1.cni.cncf.io/policy-for: prod/red
  spec:
    podSelector:
      matchLabels: {app: db}
    ingress:
    - from:
      - podSelector:
          matchLabels: {app: web}
      ports:
      - {protocol: TCP, port: 5432}
- apiVersion: v1
  kind: Pod
  metadata:
    name: web-7d4b9c-x2x
    namespace: prod
    labels: {app: web, pod-template-hash: 7d4b9c}
- apiVersion: v1
  kind: Pod
  metadata:
    name: db-0
    namespace: prod
    labels: {app: db}
"""

FAMILIES = [
    "vxfedd_policy_policies", "vxfedd_policy_identities", "vxfedd_policy_store_revision",
    "vxfedd_policy_local_identities", "vxfedd_policy_tables_bytes", "vxfedd_policy_local_isolated",
    "vxfedd_policy_local_peers", "vxfedd_policy_update_last_seconds", "vxfedd_policy_update_max_seconds",
    "vxfedd_policy_update_busy_seconds", "vxfedd_policy_updates_total", "vxfedd_policy_listings_total",
    "vxfedd_policy_list_failures_total", "vxfedd_policy_watch_breaks_total", "vxfedd_policy_watching",
    "vxfedd_policy_records_skipped_total", "vxfedd_policy_identity_exhausted_total", "vxfedd_policy_collector",
    "vxfedd_policy_collector_runs_total", "vxfedd_policy_collector_failures_total",
    "vxfedd_policy_identities_released_total", "vxfedd_policy_identities_forgotten_total",
]

SAMPLE = re.compile(r"^([a-z_]+)(?:\{([^}]*)\})? (\S+)$")


def scrape(port: int) -> dict[tuple[str, frozenset], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m or not m.group(1).startswith("vxfedd_policy_"):
            continue
        labels = frozenset(tuple(kv.split("=", 1)) for kv in re.findall(r'[a-z_]+="[^"]*"', m.group(2) or ""))
        out[(m.group(1), frozenset((k, v.strip('"')) for k, v in labels))] = float(m.group(3))
    return out


def series(page: dict, name: str, **labels: str) -> dict[frozenset, float]:
    """The samples of `name` whose labels include `labels`."""
    want = set(labels.items())
    return {l: v for (n, l), v in page.items() if n == name and want <= set(l)}


def attach_pod(sock: str, container: str, ip: str, mac: str, namespace: str, name: str) -> None:
    """AttachEndpoint with the pod's CNI args, as the CNI plugin sends it (vxfedctl attach
    carries none)."""
    def entry(k: str, v: str) -> bytes:
        return pw.field_bytes(8, pw.field_bytes(1, k.encode()) + pw.field_bytes(2, v.encode()))
    spec = (pw.field_bytes(1, container.encode()) + pw.field_bytes(2, b"net1") + pw.field_bytes(3, b"red") +
            pw.field_bytes(4, ip.encode()) + pw.field_bytes(5, mac.encode()) + pw.field_bytes(6, b"vpa0") +
            entry("K8S_POD_NAMESPACE", namespace) + entry("K8S_POD_NAME", name))
    code = control_call(sock, 10, pw.field_bytes(1, spec))
    assert code == 0, f"attach {namespace}/{name}: code {code}"


def timed_wait(port: int, check, what: str, d: Vxfedd) -> float:
    """Seconds until check(page) holds (polled every 20 ms), from now."""
    t0 = time.monotonic()
    last: dict = {}

    def holds() -> bool:
        last["page"] = scrape(port)
        return check(last["page"])

    try:
        t.wait_until(holds, 10, what, d.check_alive, interval=0.02)
    except Exception:
        t.log(f"last page: {sorted(last.get('page', {}).items())}")
        raise
    took = time.monotonic() - t0
    t.log(f"{what}: {took:.3f} s")
    return took


def test_main() -> None:
    t.require_root()
    with t.Topology("polfollow") as topo:
        cluster = EtcdCluster(topo, members=1)
        cluster.start()
        fed = {"endpoints": cluster.endpoints.split(","), "key_prefix": PREFIX, "request_timeout_ms": 3000}
        w = topo.workdir / "node-a"
        port = free_port()
        cfg = config("node-a", "198.18.0.1", "cluster-a", ["10.244.0.0/16"], w / "dp.sock",
                     socket=w / "run" / "vxfedd.sock", state_dir=w / "state",
                     networks=[{"name": "red", "subnet": "10.244.0.0/16"}], federation=fed,
                     log_level="debug", metrics_listen=f"127.0.0.1:{port}")
        a = Vxfedd(topo.host, w / "vxfedd.yaml", w / "run" / "vxfedd.sock", cfg, name="node-a")
        try:
            a.start()
            net = next(n for n in a.ctl_json("networks")["networks"] if n["spec"]["name"] == "red")
            ip = str(ipaddress.ip_network(net["node_block"]).network_address + 5)
            attach_pod(str(a.socket), "c-db-0", ip, "02:00:00:00:0a:05", "prod", "db-0")

            # 1. Attached before its labels are in the store: unlabelled, nothing isolated.
            timed_wait(port, lambda p: series(p, "vxfedd_policy_local_identities", network="red") ==
                       {frozenset({("network", "red")}): 1.0} and
                       series(p, "vxfedd_policy_local_isolated", identity="1", namespace="prod", direction="ingress"),
                       "db-0 attached: one local identity, the unlabelled one", a)
            page = scrape(port)
            assert series(page, "vxfedd_policy_policies") == {frozenset(): 0.0}, page
            assert list(series(page, "vxfedd_policy_local_isolated").values()) == [0.0, 0.0], page

            # 2. Applied: held, compiled for db-0 within the goal.
            path = topo.workdir / "prod.yaml"
            path.write_text(OBJECTS)
            r = a.ctl("policy", "apply", "-f", str(path))
            applied_at = time.monotonic()
            assert r.returncode == 0, r.stdout + r.stderr
            numbers = dict(re.findall(r"^prod\s+(\S+)\s+(\d+)\s*$", r.stdout, re.M))
            db, web = numbers["db-0"], numbers["web-7d4b9c-x2x"]
            assert db != web and int(db) >= 256 and int(web) >= 256, r.stdout

            def compiled(p: dict) -> bool:
                return (series(p, "vxfedd_policy_policies") == {frozenset(): 1.0} and
                        series(p, "vxfedd_policy_identities") == {frozenset(): 2.0} and
                        list(series(p, "vxfedd_policy_local_isolated", identity=db, direction="ingress").values()) == [1.0] and
                        list(series(p, "vxfedd_policy_local_peers", identity=db, direction="ingress").values()) == [1.0])
            timed_wait(port, compiled, "applied: the policy held and db-0's ingress compiled", a)
            took = time.monotonic() - applied_at
            assert took < GOAL_S, f"compiled {took:.3f} s after the apply returned (goal {GOAL_S} s)"
            page = scrape(port)
            t.log("after the apply: the last change fed in {:.3f} ms (the longest so far {:.3f} ms), {:.0f} bytes of tables".format(
                page[("vxfedd_policy_update_last_seconds", frozenset())] * 1e3,
                page[("vxfedd_policy_update_max_seconds", frozenset())] * 1e3,
                list(series(page, "vxfedd_policy_tables_bytes", network="red").values())[0]))
            assert list(series(page, "vxfedd_policy_local_isolated", identity=db, direction="egress").values()) == [0.0]
            assert series(page, "vxfedd_policy_local_identities", network="red") == {frozenset({("network", "red")}): 1.0}
            assert not series(page, "vxfedd_policy_local_isolated", identity="1"), "db-0 is no longer unlabelled"
            assert list(series(page, "vxfedd_policy_tables_bytes", network="red").values())[0] > 0
            assert series(page, "vxfedd_policy_identity_exhausted_total") == {frozenset(): 0.0}, page
            assert series(page, "vxfedd_policy_watching") == {frozenset(): 1.0}, page
            # Every family docs/policy.md ("Metrics") names is on the page (the writer leaves
            # out a sample that breaks the naming rules).
            families = {name for name, _ in page}
            for name in FAMILIES:
                assert name in families, (name, sorted(families))
            assert page[("vxfedd_policy_listings_total", frozenset())] >= 2, page  # start, then the apply
            assert page[("vxfedd_policy_list_failures_total", frozenset())] == 0, page
            log = a.log()
            assert "policy: policy cluster-a/prod/db-from-web applied" in log, log[-3000:]
            assert f"policy: identity {db} added" in log and f"policy: identity {web} added" in log, log[-3000:]

            # 3. Deleted: gone within the goal; db-0 unlabelled again.
            r = a.ctl("policy", "delete", "-f", str(path))
            deleted_at = time.monotonic()
            assert r.returncode == 0, r.stdout + r.stderr

            def gone(p: dict) -> bool:
                return (series(p, "vxfedd_policy_policies") == {frozenset(): 0.0} and
                        not series(p, "vxfedd_policy_local_isolated", identity=db) and
                        list(series(p, "vxfedd_policy_local_isolated", identity="1", direction="ingress").values()) == [0.0])
            timed_wait(port, gone, "deleted: the policy gone, db-0 unlabelled, nothing isolated", a)
            took = time.monotonic() - deleted_at
            assert took < GOAL_S, f"gone {took:.3f} s after the delete returned (goal {GOAL_S} s)"
            # The numbers are held down, not forgotten (docs/policy.md, "Identity numbers").
            held = a.ctl_json("policy", "get")
            t.log(f"after the delete: {scrape(port).get(('vxfedd_policy_identities', frozenset()))} identities held; "
                  f"store listing: {len(held.get('pods', []))} pods")
            assert not held.get("policies") and not held.get("pods"), held
            assert f"policy: policy cluster-a/prod/db-from-web deleted" in a.log()

            # The identity collector runs on this node, the federation's only one (v1/collector).
            timed_wait(port, lambda p: series(p, "vxfedd_policy_collector") == {frozenset(): 1.0} and
                       list(series(p, "vxfedd_policy_collector_runs_total").values())[0] >= 1,
                       "the identity collector ran on node-a (the federation's collector)", a)
            page = scrape(port)
            assert series(page, "vxfedd_policy_collector_failures_total") == {frozenset(): 0.0}, page

            # 5. etcd killed: the watch breaks, the tables stay; etcd back: the watch is
            # re-established by itself, and the next apply is compiled as fast.
            cluster.kill(0)
            timed_wait(port, lambda p: series(p, "vxfedd_policy_watching") == {frozenset(): 0.0},
                       "etcd killed: the watch seen broken", a)
            page = scrape(port)
            assert series(page, "vxfedd_policy_local_isolated", identity="1", direction="ingress"), page
            cluster.restart(0)
            timed_wait(port, lambda p: series(p, "vxfedd_policy_watching") == {frozenset(): 1.0},
                       "etcd back: the watch re-established", a)
            assert list(series(scrape(port), "vxfedd_policy_watch_breaks_total").values())[0] >= 1
            r = a.ctl("policy", "apply", "-f", str(path))
            applied_at = time.monotonic()
            assert r.returncode == 0, r.stdout + r.stderr
            timed_wait(port, compiled, "applied again after etcd's restart: compiled", a)
            took = time.monotonic() - applied_at
            assert took < GOAL_S, f"compiled {took:.3f} s after the apply returned (goal {GOAL_S} s)"

            # 6. The pod detached: no local pod on red, its compiler dropped.
            assert a.ctl("detach", "c-db-0", "--ifname", "net1").returncode == 0
            timed_wait(port, lambda p: not series(p, "vxfedd_policy_local_identities"),
                       "db-0 detached: no local identities", a)
        finally:
            a.stop()


if __name__ == "__main__":
    t.main_wrapper(test_main)
