#!/usr/bin/python3
"""Benchmark of the vxfed CNI plugin (run as root):

  1. latency: ADD then DEL of 100 pods, one at a time, timing each plugin invocation
     (exec to exit, as a runtime sees it; host-local IPAM included) -> p50/p99/min/max, side
     by side with the reference ptp plugin (also a veth pair + host-local) on the same pods,
     interleaved so both see the same machine load; the ratio of medians is the claim;
  2. churn: 10 rounds x (50 ADD + 50 DEL), 10 at a time, counting before and after everything
     an attachment leaves: host interfaces named vxf*, interfaces and addresses inside the pods,
     vxfedd endpoints, IPAM reservations, files under the plugin's state dir.

vxfedd is the unit-level fake (tests/cni/fake_vxfedd), so the numbers are the plugin's own
cost (netlink, IPAM exec, state files, one vxfedd round trip), not vxfedd's. The plugins run
inside a "node" namespace the benchmark creates (ptp puts addresses and routes on the host
side), via `ip netns exec`, which adds the same few ms to both.

  sudo perf/cni/cni_bench.py [--build-dir build] [--pods 100] [--rounds 10] [--per-round 50]
Writes perf/results/cni.json.
"""

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import vxfed_harness as tl
from vxfed_harness.cni_bed import CniBed

SRC = tl.SOURCE_DIR


def pct(values, p):
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(p / 100 * (len(s) - 1))))
    return s[k]


def summary(ms):
    return {"n": len(ms), "p50_ms": round(pct(ms, 50), 2), "p99_ms": round(pct(ms, 99), 2),
            "min_ms": round(min(ms), 2), "max_ms": round(max(ms), 2), "mean_ms": round(statistics.mean(ms), 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", type=Path, default=tl.BUILD_DIR)
    ap.add_argument("--pods", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-round", type=int, default=50)
    ap.add_argument("--parallel", type=int, default=10)
    ap.add_argument("--out", default=str(SRC / "perf/results/cni.json"))
    args = ap.parse_args()

    tl.require_root()
    with tl.Topology("cnibench") as topo:
        # Two networks so one pod can hold a 1.1.0 and a 1.0.0 attachment side by side (one
        # attachment per vxfed network per pod: they would share the gateway route).
        bed = CniBed(topo, networks=[
            {"name": "fed-a", "subnet": "10.244.0.0/16", "gateway": "10.244.0.1", "mtu": 8950, "vni": 1001},
            {"name": "fed-b", "subnet": "10.245.0.0/16", "gateway": "10.245.0.1", "mtu": 8950, "vni": 1002}],
            build_dir=args.build_dir.resolve())
        bed.start_vxfedd()
        rt = bed.runtime
        node = topo.netns("node")
        rt.prefix = node.prefix()
        conf = bed.conf("1.1.0", logLevel="warn", ipam=bed.host_local("10.244.16.2", "10.244.31.250"))
        conf100 = bed.conf("1.0.0", name="fed-b", logLevel="warn",
                           ipam={"type": "host-local", "dataDir": bed.ipam_dir,
                                 "ranges": [[{"subnet": "10.245.0.0/16", "rangeStart": "10.245.16.2",
                                              "rangeEnd": "10.245.31.250", "gateway": "10.245.0.1"}]]})
        ptp = {"cniVersion": "1.0.0", "name": "ptp-baseline", "type": "ptp", "mtu": 8950, "ipMasq": False,
               "ipam": {"type": "host-local", "dataDir": str(bed.work / "ipam-ptp"),
                        "ranges": [[{"subnet": "10.244.64.0/18", "rangeStart": "10.244.64.2",
                                     "rangeEnd": "10.244.79.250"}]]}}
        n = max(args.pods, args.per_round)
        tl.log(f"creating {n} pod namespaces")
        pods = [(bed.pod(f"b{i}"), bed.cid(f"bench{i}")) for i in range(n)]

        def timed(fn):
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1000

        # ---- latency: vxfed at 1.1.0 and 1.0.0, ptp at 1.0.0, interleaved pod by pod
        add_ms, del_ms, add100_ms, del100_ms, ptp_add_ms, ptp_del_ms = [], [], [], [], [], []
        for ns, cid in pods[:args.pods]:
            add_ms.append(timed(lambda: rt.add(conf, cid, bed.netns_path(ns), "eth0")))
            add100_ms.append(timed(lambda: rt.add(conf100, cid + "-v100", bed.netns_path(ns), "eth1")))
            ptp_add_ms.append(timed(lambda: rt.add(ptp, cid, bed.netns_path(ns), "eth2")))
        for ns, cid in pods[:args.pods]:
            del_ms.append(timed(lambda: rt.delete(conf, cid, bed.netns_path(ns), "eth0")))
            del100_ms.append(timed(lambda: rt.delete(conf100, cid + "-v100", bed.netns_path(ns), "eth1")))
            ptp_del_ms.append(timed(lambda: rt.delete(ptp, cid, bed.netns_path(ns), "eth2")))
        tl.log(f"vxfed 1.1.0 ADD {summary(add_ms)}")
        tl.log(f"vxfed 1.1.0 DEL {summary(del_ms)}")
        tl.log(f"ptp   1.0.0 ADD {summary(ptp_add_ms)}")

        # ---- churn with leak accounting
        def count():
            host_links = json.loads(node.run(["ip", "-j", "link"]).stdout)
            pod_links = pod_addrs = 0
            for ns, _ in pods[:args.per_round]:
                links = json.loads(ns.run(["ip", "-j", "addr"]).stdout)
                pod_links += sum(1 for l in links if l["ifname"] != "lo")
                pod_addrs += sum(len(l.get("addr_info", [])) for l in links if l["ifname"] != "lo")
            files = sum(len(f) for _, _, f in os.walk(bed.state_dir))
            return {"host_vxf_links": sum(1 for l in host_links if l["ifname"].startswith("vxf")),
                    "pod_links": pod_links, "pod_addresses": pod_addrs, "endpoints": len(bed.endpoints()),
                    "ipam_reservations": len(bed.ipam_reservations()), "state_files": files,
                    "queued_detaches": len(bed.queue())}

        before = count()
        churn_add, churn_del = [], []
        round_s = []
        t_churn = time.perf_counter()
        for r in range(args.rounds):
            t0 = time.perf_counter()
            batch = [(ns, f"{cid}-r{r}") for ns, cid in pods[:args.per_round]]
            with ThreadPoolExecutor(max_workers=args.parallel) as pool:
                churn_add += list(pool.map(lambda pc: timed(lambda: rt.add(conf, pc[1], bed.netns_path(pc[0]), "eth0")), batch))
                mid = count()
                assert mid["endpoints"] == args.per_round and mid["host_vxf_links"] - before["host_vxf_links"] == args.per_round, mid
                churn_del += list(pool.map(lambda pc: timed(lambda: rt.delete(conf, pc[1], bed.netns_path(pc[0]), "eth0")), batch))
            round_s.append(time.perf_counter() - t0)
            tl.log(f"churn round {r + 1}/{args.rounds}: {round_s[-1]:.1f} s")
        churn_s = time.perf_counter() - t_churn
        after = count()
        leaks = {k: after[k] - before[k] for k in before}
        tl.log(f"before {before}")
        tl.log(f"after  {after}")
        bed.stop_vxfedd()

    load = os.getloadavg()
    out = {
        "benchmark": "cni",
        "when_unix": int(time.time()),
        "host": {"nproc": os.cpu_count(), "loadavg_1m_5m_15m": [round(x, 2) for x in load]},
        "vxfedd": "fake (tests/cni/fake_vxfedd)",
        "ipam": "host-local (/usr/lib/cni)",
        "latency": {"pods": args.pods, "add": summary(add_ms), "del": summary(del_ms),
                    "add_1_0_0": summary(add100_ms), "del_1_0_0": summary(del100_ms),
                    "ptp_baseline": {"add": summary(ptp_add_ms), "del": summary(ptp_del_ms)},
                    "ratio_p50_vs_ptp": {"add": round(pct(add_ms, 50) / pct(ptp_add_ms, 50), 2),
                                         "del": round(pct(del_ms, 50) / pct(ptp_del_ms, 50), 2),
                                         "add_1_0_0": round(pct(add100_ms, 50) / pct(ptp_add_ms, 50), 2),
                                         "del_1_0_0": round(pct(del100_ms, 50) / pct(ptp_del_ms, 50), 2)}},
        "churn": {"rounds": args.rounds, "per_round": args.per_round, "parallel": args.parallel,
                  "seconds": round(churn_s, 1), "round_seconds": [round(x, 2) for x in round_s],
                  "ops_per_second": round(2 * args.rounds * args.per_round / churn_s, 1),
                  "add": summary(churn_add), "del": summary(churn_del),
                  "before": before, "after": after, "leaks": leaks,
                  "leak_free": all(v == 0 for v in leaks.values())},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0 if out["churn"]["leak_free"] else 1


if __name__ == "__main__":
    sys.exit(main())
