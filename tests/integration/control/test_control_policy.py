#!/usr/bin/env python3
"""`vxfedctl policy apply | get | delete` end to end (docs/policy.md, "Applying policy"): two
vxfedd of two clusters (cluster-a, cluster-b) on one real etcd, and a third without a
`federation:` section.
  1. node A applies a MultiNetworkPolicy, a Namespace and two Pods (a List as kubectl prints
     it); node B's `policy get --json` lists them as cluster-a's, with the namespace's labels and
     the identity numbers A's apply reported; node B applies the same namespace and pods for
     cluster-b: the pods get numbers of their own (the cluster is part of the identity), the
     same for two pods with the same labels;
  2. a file with an unknown field, a bad CIDR, a reversed port range and a selector operator
     that does not exist (and a valid Pod) is refused with exit 1 naming each field, and the
     store's policy keys are unchanged (nothing applied); a file that cannot be read and one
     over the API's 4 MiB request limit are refused by vxfedctl itself (exit 2);
  3. `policy delete -f` removes A's objects, `policy delete pod NS/NAME` B's; B's listing no
     longer has them; the same delete again counts the objects as absent;
  3b. with etcd silent (SIGSTOP), an apply waits on vxfedd's store thread while `status`
     answers at once (< 1 s), and is refused within its 4 s bound (UNAVAILABLE, "may or may not");
  4. the vxfedd without a store refuses every policy op saying it needs the federation store.
No dataplane is needed: policy lives in vxfedd and the store.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

import vxfed_harness as t
from vxfed_harness.etcd_cluster import EtcdCluster
from vxfed_harness.vxfedd import Vxfedd, config

PREFIX = "/vxfed"

CLUSTER_A = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: prod
    labels: {team: blue}
    uid: 3f1c-ignored
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

CLUSTER_B = """\
apiVersion: v1
kind: Namespace
metadata:
  name: prod
  labels: {team: blue}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: prod
  labels: {app: web}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-2
  namespace: prod
  labels: {app: web, pod-template-hash: 99aa}
"""

# Four mistakes in one policy, next to a valid Pod: nothing of it may be applied.
BAD = """\
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
    name: broken
    namespace: prod
    annotations:
      k8s.v1.cni.cncf.io/policy-for: prod/red
  spec:
    podSelector:
      matchExpressions:
      - {key: app, operator: Includes, values: [db]}
    ingres: []
    egress:
    - to:
      - ipBlock: {cidr: 10.0.0.300/8}
      ports:
      - {protocol: UDP, port: 9000, endPort: 8000}
"""
BAD_FIELDS = [  # (field path, a word of the reason)
    ("items[1].spec.ingres", "unknown key"),
    ("items[1].spec.podSelector.matchExpressions[0].operator", "Includes"),
    ("items[1].spec.egress[0].to[0].ipBlock.cidr", "10.0.0.300/8"),
    ("items[1].spec.egress[0].ports[0].endPort", "must be >= port (9000)"),
]


def policy_keys(cluster: EtcdCluster) -> dict[str, str]:
    return cluster.get_prefix(f"{PREFIX}/v1/policy/")


def ctl(d: Vxfedd, *args: str):
    r = d.ctl(*args)
    t.log(f"{d.name}$ vxfedctl {' '.join(args)} -> exit {r.returncode}\n{r.stdout}{r.stderr}".rstrip())
    return r


def test_main() -> None:
    t.require_root()
    with t.Topology("ctlpol") as topo:
        cluster = EtcdCluster(topo, members=1)
        cluster.start()
        fed = {"endpoints": cluster.endpoints.split(","), "key_prefix": PREFIX, "request_timeout_ms": 3000}
        daemons = []
        for name, cl, vtep, subnet, federation in (("node-a", "cluster-a", "198.18.0.1", "10.244.0.0/16", fed),
                                                     ("node-b", "cluster-b", "198.18.0.2", "10.245.0.0/16", fed),
                                                     ("node-c", "cluster-c", "198.18.0.3", "10.246.0.0/16", None)):
            w = topo.workdir / name
            sections = {"federation": federation} if federation else {}
            cfg = config(name, vtep, cl, [subnet], w / "dp.sock", socket=w / "run" / "vxfedd.sock",
                         state_dir=w / "state", networks=[{"name": "red", "subnet": subnet}],
                         **sections)
            daemons.append(Vxfedd(topo.host, w / "vxfedd.yaml", w / "run" / "vxfedd.sock", cfg, name=name))
        a, b, c = daemons
        files = {}
        for name, text in (("a.yaml", CLUSTER_A), ("b.yaml", CLUSTER_B), ("bad.yaml", BAD)):
            files[name] = topo.workdir / name
            files[name].write_text(text)
        try:
            for d in daemons:
                d.start()

            # 1. applied on A, seen on B as cluster-a's.
            r = ctl(a, "policy", "apply", "-f", str(files["a.yaml"]))
            assert r.returncode == 0, r.stderr
            assert "applied for cluster cluster-a" in r.stdout, r.stdout
            applied = a.ctl_json("policy", "apply", "-f", str(files["a.yaml"]))  # again: idempotent
            assert applied["cluster"] == "cluster-a" and applied["new_identities"] == 0, applied
            a_ids = {p["name"]: p["identity"] for p in applied["pod_identities"]}
            assert set(a_ids) == {"web-7d4b9c-x2x", "db-0"} and a_ids["web-7d4b9c-x2x"] != a_ids["db-0"], a_ids
            assert all(n >= 256 for n in a_ids.values()), f"numbers below 256 are reserved: {a_ids}"

            ctl(b, "policy", "get")
            got = b.ctl_json("policy", "get")
            pols = [(p["cluster"], p["namespace"], p["name"], p["pod_selector"], p["policy_types"]) for p in got["policies"]]
            assert pols == [("cluster-a", "prod", "db-from-web", "app=db", ["Ingress"])], pols
            assert got["policies"][0]["policy_for"] == ["prod/red"] and got["policies"][0]["ingress_rules"] == 1, got
            nss = {(n["cluster"], n["name"]): n["labels"] for n in got["namespaces"]}
            assert nss == {("cluster-a", "prod"): {"team": "blue"}}, nss  # as written (the store adds nothing)
            pods = {(p["cluster"], p["name"]): p for p in got["pods"]}
            assert set(pods) == {("cluster-a", "web-7d4b9c-x2x"), ("cluster-a", "db-0")}, pods
            for name, number in a_ids.items():
                assert pods[("cluster-a", name)]["identity"] == number, (name, pods[("cluster-a", name)], number)
            assert got["identities"] == 2, got["identities"]

            # B applies for its own cluster: same labels, other cluster -> other numbers; two
            # pods whose labels differ only by pod-template-hash share one.
            applied_b = b.ctl_json("policy", "apply", "-f", str(files["b.yaml"]))
            assert applied_b["cluster"] == "cluster-b", applied_b
            b_ids = {p["name"]: p["identity"] for p in applied_b["pod_identities"]}
            assert b_ids["web-1"] == b_ids["web-2"], b_ids
            assert b_ids["web-1"] not in a_ids.values(), (a_ids, b_ids)
            got_a = a.ctl_json("policy", "get")
            pods_a = {(p["cluster"], p["name"]): p["identity"] for p in got_a["pods"]}
            assert pods_a == {("cluster-a", "web-7d4b9c-x2x"): a_ids["web-7d4b9c-x2x"], ("cluster-a", "db-0"): a_ids["db-0"],
                              ("cluster-b", "web-1"): b_ids["web-1"], ("cluster-b", "web-2"): b_ids["web-2"]}, pods_a
            t.log(f"identities: cluster-a {a_ids}, cluster-b {b_ids}, the same on both nodes")

            # 2. a bad file: every field named, exit 1, nothing written.
            before = policy_keys(cluster)
            r = ctl(a, "policy", "apply", "-f", str(files["bad.yaml"]))
            assert r.returncode == 1 and "INVALID_ARGUMENT" in r.stderr, (r.returncode, r.stderr)
            for field, word in BAD_FIELDS:
                line = next((l for l in r.stderr.splitlines() if f"{files['bad.yaml']}: {field}:" in l), None)
                assert line is not None and word in line, f"{field} not named with '{word}': {r.stderr}"
            assert policy_keys(cluster) == before, "a refused file changed the store"
            assert not any(p["name"] == "lonely" for p in b.ctl_json("policy", "get")["pods"])
            r = ctl(a, "policy", "apply", "-f", str(topo.workdir / "missing.yaml"))
            assert r.returncode == 2 and "cannot be read" in r.stderr, (r.returncode, r.stderr)
            huge = topo.workdir / "huge.yaml"
            huge.write_text("# padding\n" * 500_000)  # 5 MB: over the API's 4 MiB request limit
            r = a.ctl("policy", "apply", "-f", str(huge))
            assert r.returncode == 2 and "vxfedd takes at most" in r.stderr, (r.returncode, r.stderr)
            a.check_alive()

            # 3. deletes: A's by its file, B's by name.
            deleted = a.ctl_json("policy", "delete", "-f", str(files["a.yaml"]))
            assert deleted["deleted"] == 4 and deleted["absent_deletes"] == 0, deleted
            r = ctl(b, "policy", "delete", "pod", "prod/web-1", "prod/web-2")
            assert r.returncode == 0 and "deleted for cluster cluster-b" in r.stdout, r.stderr
            got = b.ctl_json("policy", "get")
            assert got["policies"] == [] and [(n["cluster"], n["name"]) for n in got["namespaces"]] == [("cluster-b", "prod")], got
            assert got["pods"] == [], got["pods"]
            again = a.ctl_json("policy", "delete", "-f", str(files["a.yaml"]))
            assert again["deleted"] == 4 and again["absent_deletes"] == 4, again
            r = ctl(b, "policy", "delete", "service", "prod/x")
            assert r.returncode == 2 and "not a kind" in r.stderr, (r.returncode, r.stderr)

            # 3b. etcd silent (SIGSTOP: connections stay open, nothing answers): the apply waits
            # on vxfedd's store thread, not its API thread, so `status` answers meanwhile; the
            # apply is refused within its 4 s bound saying it may or may not have landed.
            etcd = cluster.procs[0]
            etcd.send_signal(signal.SIGSTOP)
            try:
                started = time.monotonic()
                apply = subprocess.Popen([str(a.ctl_program), "--socket", str(a.socket), "policy", "apply", "-f",
                                          str(files["a.yaml"])], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                time.sleep(0.5)
                asked = time.monotonic()
                status = a.ctl("--json", "status")
                status_took = time.monotonic() - asked
                assert apply.poll() is None, "the apply did not wait for the silent store"
                assert status.returncode in (0, 4) and json.loads(status.stdout)["cluster"] == "cluster-a", status.stderr
                assert status_took < 1.0, f"status took {status_took:.2f} s while a policy apply waited for the store"
                out, err = apply.communicate(timeout=15)
                apply_took = time.monotonic() - started
            finally:
                etcd.send_signal(signal.SIGCONT)
            t.log(f"etcd silent: status answered in {status_took * 1000:.0f} ms while the apply waited; "
                  f"the apply refused after {apply_took:.2f} s: {err.strip()[:200]}")
            assert apply.returncode == 1 and "UNAVAILABLE" in err and "may or may not" in err, (apply.returncode, err)
            # The client gives up on its own after request_timeout_ms (3000 for the one member:
            # long enough that a store call on the API thread would hold `status` for seconds);
            # PolicyApi's 4 s CallDeadline is the bound, plus process start and slack.
            assert 2.0 <= apply_took <= 5.5, f"the apply's answer came after {apply_took:.2f} s (bound: 4 s)"
            # The store answers again; the refused apply may have landed: deleting is safe either way.
            t.wait_for(lambda: a.ctl("policy", "get").returncode == 0, 20, "policy get after etcd resumed")
            gone = a.ctl_json("policy", "delete", "-f", str(files["a.yaml"]))
            assert gone["deleted"] == 4, gone

            # 4. no federation store: a clear refusal, for every op.
            for args in (("policy", "get"), ("policy", "apply", "-f", str(files["a.yaml"])),
                         ("policy", "delete", "ns", "prod")):
                r = ctl(c, *args)
                assert r.returncode == 1 and "UNAVAILABLE" in r.stderr and "needs the federation store" in r.stderr, \
                    (args, r.returncode, r.stderr)
            for d in daemons:
                d.check_alive()
        finally:
            for d in daemons:
                d.stop()


if __name__ == "__main__":
    t.main_wrapper(test_main)
