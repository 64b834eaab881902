#!/usr/bin/env python3
"""The federation store against a real three-member etcd cluster (Debian's etcd-server).

Each vxfed-fed-driver process is one client (one "node"); many at once play a federation.
  1. eight nodes join network red at the same moment: one VNI for all, eight distinct blocks;
     six nodes create six networks at the same moment: six distinct VNIs;
  2. a watch on v1/networks/ sees a network being created;
  3. one member killed (the first endpoint listed; the clients start from members of their own,
     so some of them from this one): the same answers, and new networks and blocks still work;
  4. every member down: a call fails with UNAVAILABLE naming the store and its endpoints, within
     the timeouts;
  5. the members back (same data): calls work again and nothing changed;
  6. TLS: a member that requires client certificates (etcd --client-cert-auth) serves a client
     with the CA, certificate and key, and refuses one without a certificate.
"""

from __future__ import annotations

import json
import subprocess
import time

import vxfed_harness as t
from vxfed_harness.etcd_cluster import EtcdCluster, make_pki

PREFIX = "/vxfed"


class Driver:
    def __init__(self, cluster: EtcdCluster):
        self.bin = str(t.require_binary("tests/integration/federation/vxfed-fed-driver"))
        self.cluster = cluster

    def args(self, *rest: str, start_at: int | None = None, tls: list[str] | None = None) -> list[str]:
        out = [self.bin, "--endpoints", self.cluster.endpoints, "--key-prefix", PREFIX, "--timeout-ms", "1000",
               *(tls or [])]
        if start_at is not None:
            out += ["--start-at", str(start_at)]
        return out + list(rest)

    def join(self, node: str, network: str, subnet: str, check: bool = True) -> subprocess.CompletedProcess:
        r = t.run(self.args("join", "--node", node, "--network", network, "--subnet", subnet), check=False, timeout=30)
        if check and r.returncode != 0:
            raise AssertionError(f"join {node} {network} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    def join_many(self, jobs: list[tuple[str, str, str]]) -> list[dict]:
        """Starts every join at one moment (--start-at), returns their answers in order."""
        start_at = int(time.time() * 1000) + 1500
        procs = [subprocess.Popen(self.args("join", "--node", n, "--network", net, "--subnet", s, start_at=start_at),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for n, net, s in jobs]
        answers = []
        for (n, net, _), p in zip(jobs, procs):
            out, err = p.communicate(timeout=60)
            if p.returncode != 0:
                raise AssertionError(f"concurrent join {n} {net} failed ({p.returncode}): {err.strip()}")
            answers.append(json.loads(out))
        return answers


def test_main() -> None:
    t.require_root()
    with t.Topology("fedetcd") as topo:
        cluster = EtcdCluster(topo, members=3)
        started = time.monotonic()
        cluster.start()
        t.log(f"etcd cluster of 3 healthy in {time.monotonic() - started:.2f} s: {cluster.endpoints}")
        d = Driver(cluster)
        # 1. one network, eight nodes at once; six networks at once.
        nodes = [f"node-{i}" for i in range(8)]
        answers = d.join_many([(n, "red", "10.244.0.0/16") for n in nodes])
        vnis = {a["vni"] for a in answers}
        blocks = [a["block"] for a in answers]
        assert len(vnis) == 1, f"red got several VNIs: {answers}"
        assert len(set(blocks)) == 8, f"two nodes share a block: {blocks}"
        red_vni = vnis.pop()
        t.log(f"8 concurrent joins of red: VNI {red_vni}, blocks {sorted(blocks)}")
        nets = [f"net-{i}" for i in range(6)]
        created = d.join_many([(f"node-{i}", n, f"10.{100 + i}.0.0/16") for i, n in enumerate(nets)])
        net_vnis = [a["vni"] for a in created]
        assert len(set(net_vnis)) == 6 and red_vni not in net_vnis, f"VNIs shared: red {red_vni}, {net_vnis}"
        stored = cluster.get_prefix(f"{PREFIX}/v1/networks/")
        assert len(stored) == 7, f"store has {sorted(stored)}"
        assert len({json.loads(v)["vni"] for v in stored.values()}) == 7, stored

        # 2. a watch sees the next network appear.
        watch = subprocess.Popen(d.args("watch", "--prefix", "v1/networks/", "--count", "1"),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = watch.stdout.readline()
        assert json.loads(first).get("watching"), f"watch did not start: {first!r}"
        d.join("node-0", "watched", "10.200.0.0/16")
        out, err = watch.communicate(timeout=30)
        assert watch.returncode == 0, f"watch failed: {err}"
        event = json.loads(out.splitlines()[0])
        assert event["type"] == "put" and event["key"] == "v1/networks/watched", event

        # 3. one member killed: nothing changes, new things still work.
        before = cluster.get_prefix(f"{PREFIX}/v1/")
        cluster.kill(0)
        started = time.monotonic()
        again = json.loads(d.join("node-3", "red", "10.244.0.0/16").stdout)
        took = time.monotonic() - started
        assert again == answers[3], f"after a member was killed node-3 got {again}, had {answers[3]}"
        assert cluster.get_prefix(f"{PREFIX}/v1/") == before, "the store changed when a member died"
        fresh = json.loads(d.join("node-8", "red", "10.244.0.0/16").stdout)
        assert fresh["vni"] == red_vni and fresh["block"] not in blocks, fresh
        extra = json.loads(d.join("node-8", "after-kill", "10.201.0.0/16").stdout)
        t.log(f"member 0 killed: same answer in {took:.2f} s; new block {fresh['block']}, new VNI {extra['vni']}")

        # 4. all members down: UNAVAILABLE naming the store.
        cluster.stop_all()
        started = time.monotonic()
        r = d.join("node-9", "while-down", "10.202.0.0/16", check=False)
        took = time.monotonic() - started
        assert r.returncode == 3, f"expected exit 3 (UNAVAILABLE), got {r.returncode}: {r.stderr}"
        assert "UNAVAILABLE" in r.stderr and "etcd at" in r.stderr and cluster.endpoint(1) in r.stderr, r.stderr
        assert took < 10, f"the failure took {took:.1f} s"
        t.log(f"all members down: refused in {took:.2f} s: {r.stderr.strip()[:200]}")

        # 5. back: works, same data.
        started = time.monotonic()
        cluster.start_all()
        back = json.loads(d.join("node-9", "while-down", "10.202.0.0/16").stdout)
        assert back["vni"] not in set(net_vnis) | {red_vni, extra["vni"]}, back
        assert json.loads(d.join("node-3", "red", "10.244.0.0/16").stdout) == answers[3]
        t.log(f"members back: working again {time.monotonic() - started:.2f} s after restart")

        # 6. TLS with client certificates.
        pki = make_pki(topo.workdir / "pki")
        secure = EtcdCluster(topo, members=1, name="etcd-tls", tls=pki)
        secure.start()
        tls_driver = Driver(secure)
        full = ["--ca-file", pki["ca"], "--cert-file", pki["client_cert"], "--key-file", pki["client_key"]]
        r = t.run(tls_driver.args("join", "--node", "node-0", "--network", "red", "--subnet", "10.244.0.0/16",
                                  tls=full), check=False, timeout=30)
        assert r.returncode == 0, f"TLS join failed: {r.stderr}"
        assert secure.get_prefix(f"{PREFIX}/v1/networks/"), "nothing written over TLS"
        r = t.run(tls_driver.args("join", "--node", "node-1", "--network", "red", "--subnet", "10.244.0.0/16",
                                  tls=["--ca-file", pki["ca"]]), check=False, timeout=30)
        assert r.returncode != 0 and "etcd at" in r.stderr, f"no client certificate: {r.returncode} {r.stderr}"
        t.log(f"TLS: served with a client certificate, refused without: {r.stderr.strip().splitlines()[-1][:200]}")


if __name__ == "__main__":
    t.main_wrapper(test_main)
