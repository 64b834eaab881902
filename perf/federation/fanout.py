#!/usr/bin/python3
"""A reflector's fan-out at size: one reflector holding 130,000 node blocks (a VTEP each) fills
1, 10 and 50 client sessions at once; its time and memory for each.

    sudo perf/federation/fanout.py --build-dir build                      # 130,000 blocks; 1, 10, 50 clients
    sudo perf/federation/fanout.py --build-dir build --routes 20000 --clients 1,5

The bed, on one switch (198.18.0.0/15):
  spk   198.18.0.12 / .20  ExaBGP, two eBGP sessions standing for two other clusters' reflectors
                           (cluster-c: 10.64.0.0/10, cluster-b: 10.128.0.0/10), half the blocks
                           each, every block with a VTEP of its own
  rr    198.18.0.10        FRR (bgpd, zebra) on vxfed-reflector's config: a BGP view (the
                           default), its nodes on the listen range 198.18.0.64/26
  sinks 198.18.0.64 + i    harness/vxfed_harness/bgp_sink.py: one process holding every client
                           session, reading and discarding what the reflector sends (it costs far
                           less than a bgpd per client would; its CPU time is reported)

The speaker's routes are in the reflector before any client connects; then, for each client
count, the sink connects all its sessions at once and the time is taken from the first connect
to the last session holding the whole table (its NLRI bytes: 5 per /26 block; FRR's End-of-RIB
is recorded too, but it came after 40–260 UPDATEs to clients that joined an existing update
group, so it does not say the table is in). Memory: the
reflector bgpd's VmRSS before and after, its CPU seconds during the fill (/proc/PID/stat).
JSON to --out (default perf/results/federation-fanout-<UTC time>.json). Exit status 0 when
every session of every count got its whole table, 1 otherwise, 3 when the bed did not come up.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import vxfed_harness as tl
from vxfed_harness.env import binary
from vxfed_harness.exabgp import ExaBgp, Session, require_exabgp
from vxfed_harness.frr import Frr, require_frr
from vxfed_harness.node import prepare_node_namespace
from vxfed_harness.proc import run, wait_until
from vxfed_harness.scale_bed import MAX_BLOCKS, block, frr_pid, rss_of, vtep

ASN = 65001
RR_IP, SPK_C_IP, SPK_B_IP = "198.18.0.10", "198.18.0.12", "198.18.0.20"
CLIENTS_RANGE = "198.18.0.64/26"            # the reflector's nodes: the sink's sessions
CIDR = {"cluster-c": "10.64.0.0/10", "cluster-b": "10.128.0.0/10"}
OWN_CIDR = "10.0.0.0/16"                    # the reflector's own cluster (no blocks of its own here)


def routes(cluster: str, count: int) -> list[tuple[str, str]]:
    # scale_bed's numbering: cluster-a's /10 is cluster-c's here (the same addresses).
    src = "cluster-a" if cluster == "cluster-c" else cluster
    return [(block(src, i), vtep(src, i)) for i in range(count)]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reflector_yaml(rr: Frr, limit: int) -> dict:
    return {"bgp": {
        "role": "route-reflector", "asn": ASN, "router_id": RR_IP, "graceful_restart": False,
        "clusters": {"cluster-b": [CIDR["cluster-b"]], "cluster-c": [CIDR["cluster-c"]]},
        "nodes": {"listen_range": CLIENTS_RANGE, "cidrs": [OWN_CIDR], "max_prefix": limit, "listen_limit": 5000},
        "peers": [{"address": SPK_B_IP, "remote_asn": 65002, "cluster": "cluster-b", "connect_retry": 1,
                   "max_prefix": limit},
                  {"address": SPK_C_IP, "remote_asn": 65003, "cluster": "cluster-c", "connect_retry": 1,
                   "max_prefix": limit}],
        "frr": {"config_path": str(rr.dir / "frr.conf"), "vty_socket_dir": str(rr.dir)},
    }}


def received(rr: Frr) -> int:
    peers = json.loads(rr.vtysh("show bgp ipv4 unicast summary json") or "{}").get("peers", {})
    return sum(int(peers.get(ip, {}).get("pfxRcd", 0)) for ip in (SPK_B_IP, SPK_C_IP))


def client_sessions(rr: Frr) -> int:
    """The sink's sessions the reflector has Established (a closed one may stay listed a while:
    the sink announces graceful restart, which FRR wants before it sends End-of-RIB)."""
    peers = json.loads(rr.vtysh("show bgp ipv4 unicast summary json") or "{}").get("peers", {})
    return sum(1 for ip, p in peers.items()
               if ipaddress.IPv4Address(ip) in ipaddress.IPv4Network(CLIENTS_RANGE) and p.get("state") == "Established")


def fill(rr: Frr, sink_ns, clients: int, total: int, timeout: float) -> dict:
    sources = [str(ipaddress.IPv4Network(CLIENTS_RANGE)[i + 1]) for i in range(clients)]
    pid = frr_pid(rr, "bgpd")
    before_rss, before_cpu = rss_of(pid), cpu_seconds(pid)
    res = sink_ns.run([sys.executable, "-m", "vxfed_harness.bgp_sink", "--peer", RR_IP, "--asn", str(ASN),
                       "--sources", ",".join(sources), "--timeout", str(timeout),
                       "--expect-nlri-bytes", str(5 * total)], check=False, timeout=timeout + 30,
                      env=dict(os.environ, PYTHONPATH=str(tl.SOURCE_DIR / "harness")))
    after_rss, after_cpu = rss_of(pid), cpu_seconds(pid)
    out = json.loads(res.stdout.strip().splitlines()[-1]) if res.stdout.strip() else {"sessions": []}
    sessions = out["sessions"]
    done = [s for s in sessions if s.get("whole")]
    first = min((s["connected"] for s in sessions if s.get("connected")), default=None)
    fig = {
        "clients": clients,
        "complete": len(done),
        "fill_s": round(max(s["whole"] for s in done) - first, 3) if done and len(done) == clients else None,
        "first_client_s": round(min(s["whole"] for s in done) - first, 3) if done else None,
        "end_of_rib_before_whole": sum(1 for s in done if s.get("end_of_rib") and s["end_of_rib"] < s["whole"]),
        "updates_per_session": [min((s.get("updates", 0) for s in sessions), default=0),
                                max((s.get("updates", 0) for s in sessions), default=0)],
        "mbytes_per_session": round(max((s.get("bytes", 0) for s in sessions), default=0) / 1e6, 1),
        "reflector_bgpd_rss_mb_before": before_rss.rss_mb, "reflector_bgpd_rss_mb_after": after_rss.rss_mb,
        "reflector_bgpd_hwm_mb": after_rss.hwm_mb,
        "reflector_bgpd_cpu_s": round(after_cpu - before_cpu, 2),
        "sink_cpu_s": out.get("cpu_s"),
        "errors": sorted({s["error"] for s in sessions if s.get("error")}),
        "routes": total,
    }
    # The reflector forgets the closed sessions before the next count.
    wait_until(lambda: client_sessions(rr) == 0, 120, "the reflector to drop the sink's sessions")
    return fig


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--build-dir", type=Path, default=tl.BUILD_DIR)
    p.add_argument("--out", type=Path)
    p.add_argument("--routes", type=int, default=130000, help="node blocks in all, half per speaker session")
    p.add_argument("--clients", default="1,10,50", help="client session counts, comma-separated (at most 62)")
    p.add_argument("--timeout", type=float, default=600, help="seconds one fill may take")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("fanout: must run as root (network namespaces)")
    counts = [int(c) for c in args.clients.split(",") if c]
    if args.routes < 2 or args.routes % 2 or args.routes // 2 > MAX_BLOCKS:
        p.error(f"--routes must be even, 2..{2 * MAX_BLOCKS}")
    if not counts or max(counts) > 62 or min(counts) < 1:
        p.error("--clients: counts of 1..62")
    require_frr()
    require_exabgp()
    tool = str(binary("bgp/vxfed-reflector", args.build_dir))
    out = args.out or tl.SOURCE_DIR / "perf" / "results" / \
        f"federation-fanout-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {"benchmark": "federation_fanout", "routes": args.routes, "cpus": os.cpu_count(),
              "loadavg_at_start": Path("/proc/loadavg").read_text().split()[:3],
              "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "fills": []}
    half = args.routes // 2
    with tl.Topology("fanout") as topo:
        rr_ns, spk_ns, sink_ns = topo.netns("rr"), topo.netns("spk"), topo.netns("sink")
        for ns in (rr_ns, spk_ns, sink_ns):
            prepare_node_namespace(ns, forwarding=False)
        net = ipaddress.IPv4Network(CLIENTS_RANGE)
        sink_addrs = [f"{net[i + 1]}/15" for i in range(max(counts))]
        topo.switch("sw", [("prr", rr_ns, "ul0", [f"{RR_IP}/15"]),
                           ("pspk", spk_ns, "ul0", [f"{SPK_C_IP}/15", f"{SPK_B_IP}/15"]),
                           ("psink", sink_ns, "ul0", sink_addrs)])
        rr = Frr(rr_ns, topo.workdir / "rr" / "frr")
        yaml_path = topo.workdir / "rr" / "reflector.yaml"
        yaml_path.parent.mkdir(parents=True, exist_ok=True)
        yaml_path.write_text(json.dumps(reflector_yaml(rr, 2 * MAX_BLOCKS)) + "\n")
        rr.write_conf(run([tool, "--config", str(yaml_path), "--print"]).stdout)
        speaker = ExaBgp(spk_ns, topo.workdir / "exabgp")
        speaker.session(Session(RR_IP, SPK_C_IP, 65003, ASN, routes("cluster-c", half)))
        speaker.session(Session(RR_IP, SPK_B_IP, 65002, ASN, routes("cluster-b", half)))
        topo.on_failure("reflector", lambda: rr.dump("reflector"))
        try:
            rr.start()
            t0 = time.time()
            speaker.start()
            wait_until(lambda: received(rr) == args.routes, args.timeout, "the reflector to hold every block",
                       speaker.check_alive)
        except tl.PartUnavailable as exc:
            print(f"fanout: the bed did not come up: {exc}", file=sys.stderr)
            return 3
        result["reflector_loaded_s"] = round(time.time() - t0, 2)
        result["reflector_bgpd_rss_mb_loaded"] = rss_of(frr_pid(rr, "bgpd")).rss_mb
        tl.log(f"the reflector holds {args.routes} blocks ({result['reflector_loaded_s']} s after the speaker "
               f"started; bgpd {result['reflector_bgpd_rss_mb_loaded']} MB)")
        for n in counts:
            f = fill(rr, sink_ns, n, args.routes, args.timeout)
            result["fills"].append(f)
            tl.log(f"{n} client(s): whole table in {f['fill_s']} s (first {f['first_client_s']} s; "
                   f"{f['complete']}/{n} complete), reflector bgpd {f['reflector_bgpd_rss_mb_after']} MB "
                   f"(peak {f['reflector_bgpd_hwm_mb']}), {f['reflector_bgpd_cpu_s']} s CPU; sink {f['sink_cpu_s']} s CPU"
                   + (f"; errors {f['errors']}" if f["errors"] else ""))
        speaker.stop()
    result["loadavg_at_end"] = Path("/proc/loadavg").read_text().split()[:3]
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["fills"], indent=1))
    tl.log(f"wrote {out}")
    return 0 if all(f["complete"] == f["clients"] for f in result["fills"]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
