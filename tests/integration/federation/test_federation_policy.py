#!/usr/bin/env python3
"""Network policy in the federation store against a real three-member etcd (issue 34 item 1;
federation/policy_store.hpp, docs/federation.md "Policy").

Each vxfed-policy-driver process is one applier (a node, or one cluster's label source):
  1. six processes start at one moment and each applies ROUNDS batches in a row; round i's
     batch has a pod whose label set is the same in every process ({round: i}) and one whose
     label set is the process's own ({round: i, node: N}). Every process gets the same number
     for the shared label set of a round, no two label sets share a number, no number is below
     256 (0-255 reserved), and the store holds exactly one identity per label set with as many
     users as pods hold it. How many transactions lost a race and read again is printed;
  2. what cluster-a applied (a MultiNetworkPolicy, a Namespace, Pods, as kubectl prints them)
     is what another process, a node of cluster-b, lists: the policy scoped to cluster-a, the
     pods' identities with their namespace's labels;
  3. an input with an unknown field in a policy's spec is refused naming the field, and nothing
     of it is written;
  4. the largest apply etcd takes by default (--max-txn-ops 128): 30 pods with label sets of
     their own (120 operations) are written in one transaction at one revision; 33 (132) are
     refused whole by the store before etcd sees them, saying what to do.
"""

from __future__ import annotations

import json
import subprocess
import time

import vxfed_harness as t
from vxfed_harness.etcd_cluster import EtcdCluster

PREFIX = "/vxfed"
PROCESSES = 6
ROUNDS = 15

CLUSTER_A_INPUT = """\
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

BAD_INPUT = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: lonely
    namespace: prod
    labels: {app: lonely}
- apiVersion: k8s.cni.cncf.io/v1beta1
  kind: MultiNetworkPolicy
  metadata:
    name: typo
    namespace: prod
    annotations:
      k8s.v1.cni.cncf.io/policy-for: prod/red
  spec:
    podSelector: {}
    ingres: []
"""


class Driver:
    def __init__(self, cluster: EtcdCluster):
        self.bin = str(t.require_binary("tests/integration/federation/vxfed-policy-driver"))
        self.cluster = cluster

    def args(self, *rest: str, start_at: int | None = None) -> list[str]:
        out = [self.bin, "--endpoints", self.cluster.endpoints, "--key-prefix", PREFIX, "--timeout-ms", "2000"]
        if start_at is not None:
            out += ["--start-at", str(start_at)]
        return out + list(rest)

    def run(self, *rest: str, check: bool = True) -> subprocess.CompletedProcess:
        r = t.run(self.args(*rest), check=False, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(rest)} failed ({r.returncode}): {r.stderr.strip()}")
        return r


def race(d: Driver) -> None:
    start_at = int(time.time() * 1000) + 1500
    nodes = [f"node-{i}" for i in range(PROCESSES)]
    procs = [subprocess.Popen(d.args("race", "--cluster", "cluster-a", "--node", n, "--rounds", str(ROUNDS),
                                     start_at=start_at),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in nodes]
    lines: dict[str, list[dict]] = {}
    for n, p in zip(nodes, procs):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"{n} failed ({p.returncode}): {err.strip()}"
        lines[n] = [json.loads(line) for line in out.splitlines()]
        assert len(lines[n]) == ROUNDS, f"{n} printed {len(lines[n])} rounds: {out}"
    took = time.time() - start_at / 1000
    shared_of_round: dict[int, int] = {}
    own: dict[int, tuple[str, int]] = {}
    retried = 0
    for n, rounds in lines.items():
        for r in rounds:
            numbers = {p["name"]: p["identity"] for p in r["pods"]}
            shared = numbers[f"{n}-shared-{r['round']}"]
            mine = numbers[f"{n}-own-{r['round']}"]
            assert shared >= 256 and mine >= 256, f"{n} round {r['round']}: a reserved number handed out: {numbers}"
            first = shared_of_round.setdefault(r["round"], shared)
            assert shared == first, f"round {r['round']}: {n} got {shared} for the shared label set, another got {first}"
            assert mine not in own, f"{n} round {r['round']}: number {mine} also given to {own[mine]}"
            own[mine] = (n, r["round"])
            retried += r["attempts"] - 1
    assert len(set(shared_of_round.values())) == ROUNDS, f"two rounds share a number: {shared_of_round}"
    assert not set(own) & set(shared_of_round.values()), "a process's own label set got a shared number"
    stored = d.cluster.get_prefix(f"{PREFIX}/v1/policy/identities/")
    assert len(stored) == ROUNDS * (1 + PROCESSES), f"{len(stored)} identity records, expected {ROUNDS * (1 + PROCESSES)}"
    keys = [json.loads(v)["key"] for v in stored.values()]
    assert len(set(keys)) == len(keys), "two numbers for one canonical key"
    users = d.cluster.get_prefix(f"{PREFIX}/v1/policy/identity-users/")
    for rnd, number in shared_of_round.items():
        holders = [k for k in users if k.startswith(f"{PREFIX}/v1/policy/identity-users/{number}/")]
        assert len(holders) == PROCESSES, f"round {rnd}: identity {number} has {len(holders)} users: {holders}"
    t.log(f"{PROCESSES} appliers x {ROUNDS} rounds in {took:.2f} s: one number per label set "
          f"({len(stored)} identities), {retried} transactions lost a race and read again")


def test_main() -> None:
    t.require_root()
    with t.Topology("fedpolicy") as topo:
        cluster = EtcdCluster(topo, members=3)
        cluster.start()
        d = Driver(cluster)
        # 1. concurrent appliers
        race(d)

        # 2. cluster-a applies; a node of cluster-b lists it
        source = topo.workdir / "cluster-a.yaml"
        source.write_text(CLUSTER_A_INPUT)
        applied = json.loads(d.run("apply", "--cluster", "cluster-a", "--file", str(source)).stdout)
        numbers = {p["name"]: p["identity"] for p in applied["pods"]}
        seen = json.loads(d.run("list").stdout)
        assert seen["revision"] >= applied["revision"], (seen["revision"], applied)
        assert "prod/db-from-web@cluster-a" in seen["policies"], seen["policies"]
        web_key = seen["identities"][str(numbers["web-7d4b9c-x2x"])]
        assert "cluster=cluster-a\n" in web_key and "namespace-label:team=blue\n" in web_key, web_key
        assert "pod-template-hash" not in web_key, web_key
        assert numbers["db-0"] != numbers["web-7d4b9c-x2x"]
        stored = cluster.get_prefix(f"{PREFIX}/v1/policy/policies/cluster-a/prod/db-from-web")
        spec = json.loads(next(iter(stored.values())))["spec"]
        assert spec["policyTypes"] == ["Ingress"] and spec["ingress"][0]["ports"][0]["port"] == 5432, spec
        t.log(f"cluster-a's apply (revision {applied['revision']}) listed by another process: "
              f"{seen['policies']}, web {numbers['web-7d4b9c-x2x']}, db {numbers['db-0']}")

        # 3. bad input: refused naming the field, nothing written
        before = cluster.get_prefix(f"{PREFIX}/v1/policy/")
        bad = topo.workdir / "bad.yaml"
        bad.write_text(BAD_INPUT)
        r = d.run("apply", "--cluster", "cluster-a", "--file", str(bad), check=False)
        assert r.returncode == 1 and "items[1].spec.ingres" in r.stderr, f"{r.returncode}: {r.stderr}"
        assert cluster.get_prefix(f"{PREFIX}/v1/policy/") == before, "a refused input changed the store"
        t.log(f"refused: {r.stderr.strip().splitlines()[0][:200]}")

        # 4. one transaction up to etcd's default limit, refused whole beyond it
        def pods_file(name: str, count: int) -> str:
            path = topo.workdir / f"{name}.yaml"
            items = "".join(f"- {{apiVersion: v1, kind: Pod, metadata: {{name: {name}-{i}, namespace: bulk, "
                            f"labels: {{app: {name}-{i}}}}}}}\n" for i in range(count))
            path.write_text("apiVersion: v1\nkind: List\nitems:\n" + items)
            return str(path)
        big = json.loads(d.run("apply", "--cluster", "cluster-b", "--file", pods_file("fits", 30)).stdout)
        assert big["new_identities"] == 30 and len({p["identity"] for p in big["pods"]}) == 30, big
        stored = cluster.get_prefix(f"{PREFIX}/v1/policy/pods/cluster-b/bulk/")
        assert len(stored) == 30, f"{len(stored)} of 30 pods stored"
        revisions = json.loads(cluster.ctl("get", "--prefix", f"{PREFIX}/v1/policy/pods/cluster-b/bulk/",
                                           "-w", "json").stdout)["kvs"]
        assert {kv["mod_revision"] for kv in revisions} == {big["revision"]}, "the 30 pods were not one transaction"
        before = cluster.get_prefix(f"{PREFIX}/v1/policy/")
        r = d.run("apply", "--cluster", "cluster-b", "--file", pods_file("toomany", 33), check=False)
        assert r.returncode == 1 and "this apply needs 132 operations" in r.stderr and "--max-txn-ops" in r.stderr, \
            f"{r.returncode}: {r.stderr}"
        assert cluster.get_prefix(f"{PREFIX}/v1/policy/") == before, "a refused apply changed the store"
        t.log(f"30 pods in one transaction (revision {big['revision']}); 33 refused: {r.stderr.strip()[:160]}")


if __name__ == "__main__":
    t.main_wrapper(test_main)
