#!/usr/bin/env python3
"""vxfedd's BGP wiring end to end: two nodes, each with real FRR (zebra + dplane_fpm_nl, bgpd),
vxfed-dataplane (af_packet uplink) and vxfedd with a `bgp:` section. Nothing but vxfedd's
config is written by hand: vxfedd renders and applies FRR's config, FRR peers over eBGP,
zebra streams the selected routes to vxfedd over FPM, vxfedd programs the dataplane.

Topology (namespaces created and removed here; MTU 9000 underlay veth ul0):
  A: AS 65001, underlay/VTEP 198.18.0.1, pods 10.244.0.0/16  --ul0--  B: AS 65002, 198.18.0.2,
  pods 10.245.0.0/16. Both have the network "fed"; its VNI comes from vxfedd's pool (the same
  name gets the same VNI on both nodes; the test reads it from `vxfedctl networks`).

Phases:
 1. convergence: from the start of both vxfedds until A's `vxfedctl routes` holds
    10.245.0.0/16 via B's VTEP in the network's VNI and B's holds 10.244.0.0/16 via A's;
    both routes also in each dataplane's tables (vxfed-dpctl dump). Time printed.
 2. `vxfedctl peers`: Established, 1 prefix received, 1 advertised, on both sides;
    `vxfedctl status`: fpm_connected.
 3. peer down: B's bgpd stopped (SIGTERM, graceful restart off): A's route leaves vxfedd and
    the dataplane within the hold time.
 4. peer back: B's bgpd started again (scripts/frr-start.sh --only bgpd, which loads the
    frr.conf vxfedd rendered): A re-learns the route, in vxfedd and in the dataplane.

Prints `RESULTS {json}` with the measured times.
"""
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import vxfed_testlib as t
from bgp_topo import require_frr

NETWORK = "fed"
HOLD = 3
MTU = 9000
SCRIPTS = t.SOURCE_DIR / "scripts"
POLL = 0.2          # s between observations: each is one short-lived client process


class VxNode:
    """One node namespace: FRR, vxfed-dataplane and vxfedd, all under workdir/<short>."""

    def __init__(self, topo: t.Topology, short: str, asn: int, ip: str, pod_cidr: str):
        self.topo = topo
        self.short = short
        self.asn = asn
        self.ip = ip                      # underlay address = VTEP = BGP router id
        self.pod_cidr = pod_cidr
        self.ns = topo.netns(short)
        # The dataplane forwards, not the kernel; no IPv6 chatter on the underlay.
        for key in ("net.ipv4.ip_forward=0", "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1"):
            self.ns.run(["sysctl", "-qw", key])
        self.dir = topo.workdir / short
        self.frr_dir = self.dir / "frr"
        for d in (self.frr_dir, self.dir / "state", self.dir / "bpf"):
            d.mkdir(parents=True, exist_ok=True)
        self.dp_sock = self.dir / "dataplane.sock"
        self.sock = self.dir / "vxfedd.sock"
        self.dpdk_prefix = f"vxbgpd{topo.suffix}{short}"
        self.dataplane = None
        self.vxfedd = None
        self.vxfedd_starts = 0
        self.vxfedd_name = "vxfedd"
        self.frr_up = False

    # ---- FRR ----
    def start_frr(self, only: str = "") -> None:
        args = [str(SCRIPTS / "frr-start.sh"), "--dir", str(self.frr_dir), "--netns", self.ns.name]
        if only:
            args += ["--only", only]
        t.run(args, timeout=60)
        self.frr_up = True

    def stop_frr(self, only: str = "") -> None:
        args = [str(SCRIPTS / "frr-stop.sh"), "--dir", str(self.frr_dir)] + (["--only", only] if only else [])
        t.run(args, check=False, timeout=30)

    def vtysh(self, *commands: str) -> str:
        args = ["vtysh", "--vty_socket", str(self.frr_dir), "--config_dir", str(self.frr_dir)]
        for c in commands:
            args += ["-c", c]
        return self.ns.run(args, check=False, timeout=30).stdout

    # ---- dataplane ----
    def start_dataplane(self) -> None:
        binary = t.require_binary("dataplane/vxfed-dataplane")
        # The frame must fit the mbuf data room at MTU 9000 (vxfed-dataplane --help, docs/dataplane.md).
        framesz = 9216
        self.dataplane = self.ns.spawn(
            [str(binary), "-l", "0,1", "--no-huge", "-m", "512", "--no-pci", "--file-prefix", self.dpdk_prefix,
             "--vdev", f"net_af_packet0,iface=ul0,qpairs=1,framesz={framesz},blocksz={framesz * 4},framecnt=512",
             "--", "--uplink", "net_af_packet0", "--vtep-ip", self.ip, "--mtu", str(MTU), "--queues", "1",
             "--underlay-subnet", "198.18.0.0/24", "--api-socket", str(self.dp_sock)],
            name="vxfed-dataplane")
        self.wait_file(self.dp_sock, self.dataplane, "vxfed-dataplane", 30)

    def dump_tables(self) -> dict:
        binary = t.BUILD_DIR / "dataplane/runtime/vxfed-dpctl"
        res = self.ns.run([str(binary), "--socket", str(self.dp_sock), "dump"], check=False, timeout=15)
        if res.returncode != 0:
            raise RuntimeError(f"vxfed-dpctl dump on {self.short}: {res.returncode} {res.stderr.strip()}")
        return json.loads(res.stdout)["tables"]

    def dataplane_route(self, prefix: str):
        for r in self.dump_tables().get("tables", {}).get("routes", []):
            if r.get("prefix") == prefix:
                return r
        return None

    # ---- vxfedd ----
    def vxfedd_config(self, peer: "VxNode") -> dict:
        return {
            "node": {"name": f"node-{self.short}", "vtep_ip": self.ip, "uplink": "ul0", "underlay_mtu": MTU},
            "cluster": {"name": f"cluster-{self.short}", "pod_cidrs": [self.pod_cidr], "asn": self.asn},
            "daemon": {"socket": str(self.sock), "state_dir": str(self.dir / "state"), "log_level": "info",
                       "metrics_listen": ""},
            "dataplane": {"socket": str(self.dp_sock)},
            "networks": [{"name": NETWORK, "subnet": self.pod_cidr}],
            "bgp": {
                "enabled": True,
                "asn": self.asn,
                "router_id": self.ip,
                # Off so that a stopped peer's routes are withdrawn at once instead of being kept
                # as stale for restart_time (bgp_graceful_restart tests that behaviour).
                "graceful_restart": False,
                "clusters": {f"cluster-{peer.short}": [peer.pod_cidr]},
                "peers": [{"address": peer.ip, "remote_asn": peer.asn, "cluster": f"cluster-{peer.short}",
                           "network": NETWORK, "keepalive": 1, "hold": HOLD, "connect_retry": 1}],
                "frr": {"config_path": str(self.frr_dir / "frr.conf"), "vty_socket_dir": str(self.frr_dir),
                        "status_interval_ms": 500},
                "fpm": {"resync_settle_ms": 1000, "resync_min_ms": 2000},
            },
        }

    def start_vxfedd(self, peer: "VxNode") -> None:
        binary = t.require_binary("control/vxfedd")
        cfg = self.dir / "vxfedd.yaml"
        cfg.write_text(json.dumps(self.vxfedd_config(peer), indent=1) + "\n")   # JSON is YAML
        # Pins of the per-pod eBPF programs: our own directory, never the machine's.
        self.vxfedd_starts += 1
        self.vxfedd_name = "vxfedd" if self.vxfedd_starts == 1 else f"vxfedd-run{self.vxfedd_starts}"
        self.vxfedd = self.ns.spawn([str(binary), "--config", str(cfg), "--foreground"], name=self.vxfedd_name,
                                    env={"VXFED_BPF_PIN_ROOT": str(self.dir / "bpf")})

    def vxfedd_log(self) -> str:
        return (self.topo.workdir / f"{self.ns.name}_{self.vxfedd_name}.log").read_text(errors="replace")

    def stop_vxfedd(self) -> None:
        self.vxfedd.terminate()
        self.vxfedd.wait(timeout=15)
        self.vxfedd = None             # stopped on purpose: not a crash for check_alive()

    def vxfedctl(self, *args: str):
        binary = t.BUILD_DIR / "control/vxfedctl"
        res = self.ns.run([str(binary), "--socket", str(self.sock), "--json", *args], check=False, timeout=15)
        if res.returncode != 0:
            raise RuntimeError(f"vxfedctl {' '.join(args)} on {self.short}: {res.returncode} "
                               f"{(res.stdout + res.stderr).strip()[-300:]}")
        return json.loads(res.stdout)

    def bgp_route(self, prefix: str):
        for r in self.vxfedctl("routes").get("routes", []):
            if r.get("prefix") == prefix and r.get("source") == "bgp":
                return r
        return None

    def vni_of(self, network: str) -> int:
        for n in self.vxfedctl("networks").get("networks", []):
            if n.get("spec", {}).get("name") == network:
                return int(n["vni"])
        raise KeyError(network)

    # ---- helpers ----
    def check_alive(self) -> None:
        for proc, what in ((self.dataplane, "vxfed-dataplane"), (self.vxfedd, self.vxfedd_name)):
            if proc is not None and proc.poll() is not None:
                log = self.topo.workdir / f"{self.ns.name}_{what}.log"
                raise RuntimeError(f"{what} on {self.short} exited with {proc.returncode}:\n"
                                   + (log.read_text(errors="replace")[-2000:] if log.exists() else ""))

    def wait_file(self, path: Path, proc, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            self.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} on {self.short} did not create {path} within {timeout:.0f}s")
            time.sleep(0.05)

    def close(self) -> None:
        for proc in (self.vxfedd, self.dataplane):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        if self.frr_up:
            self.stop_frr()
        shutil.rmtree(Path("/var/run/dpdk") / self.dpdk_prefix, ignore_errors=True)


def wait_until(pred, timeout: float, what: str, nodes) -> float:
    """Polls pred (a node's process dying fails at once); returns the seconds it took."""
    t0 = time.monotonic()
    last_exc = None
    while True:
        for n in nodes:
            n.check_alive()
        try:
            if pred():
                return time.monotonic() - t0
        except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as exc:
            last_exc = exc
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}"
                               + (f" (last error: {last_exc})" if last_exc else ""))
        time.sleep(POLL)


def require() -> None:
    require_frr()
    for b in ("dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl", "control/vxfedd", "control/vxfedctl"):
        t.require_binary(b)
    if not Path("/usr/lib/x86_64-linux-gnu/frr/modules/dplane_fpm_nl.so").exists():
        t.skip("FRR's dplane_fpm_nl module is missing")


def main() -> None:
    require()
    results: dict = {}
    with t.Topology("bgpvxd") as topo:
        a = VxNode(topo, "a", 65001, "198.18.0.1", "10.244.0.0/16")
        b = VxNode(topo, "b", 65002, "198.18.0.2", "10.245.0.0/16")
        try:
            topo.veth(a.ns, "ul0", b.ns, "ul0", mtu=MTU)
            for n in (a, b):
                n.ns.run(["ip", "addr", "add", f"{n.ip}/24", "dev", "ul0"])
            run_phases(a, b, results)
        except Exception:
            for n in (a, b):
                print(f"----- FRR on {n.short}: show bgp summary -----\n" + n.vtysh("show bgp summary"))
                for f in sorted(n.frr_dir.glob("*.log")):
                    print(f"----- {n.short}/frr/{f.name} -----\n" + f.read_text(errors="replace")[-2000:])
            topo.dump_logs()
            raise
        finally:
            for n in (a, b):
                n.close()
    print("RESULTS " + json.dumps(results))


def check_route(node: VxNode, peer: VxNode, vni: int) -> dict:
    r = node.bgp_route(peer.pod_cidr)
    assert r is not None, f"{node.short}: no BGP route to {peer.pod_cidr}"
    assert r["vteps"] == [peer.ip], f"{node.short}: {peer.pod_cidr} must go to {peer.short}'s VTEP {peer.ip}: {r}"
    assert int(r["vni"]) == vni, f"{node.short}: {peer.pod_cidr} must be in VNI {vni}: {r}"
    assert r["network"] == NETWORK and r["peer"] == peer.ip, r
    d = node.dataplane_route(peer.pod_cidr)
    assert d is not None, f"{node.short}: {peer.pod_cidr} is not in the dataplane's tables"
    assert int(d["vni"]) == vni and [h["vtep"] for h in d["next_hops"]] == [peer.ip], \
        f"{node.short}: dataplane route {d}"
    return r


def run_phases(a: VxNode, b: VxNode, results: dict) -> None:
    nodes = (a, b)
    for n in nodes:
        n.start_frr()
    for n in nodes:
        n.start_dataplane()

    # ---- 1. convergence ----
    t.log("starting vxfedd on both nodes")
    start = time.monotonic()
    a.start_vxfedd(b)
    b.start_vxfedd(a)
    seen: dict[str, float] = {}

    def converged() -> bool:
        for n, peer in ((a, b), (b, a)):
            if f"vxfedd-{n.short}" not in seen and n.bgp_route(peer.pod_cidr) is not None:
                seen[f"vxfedd-{n.short}"] = time.monotonic() - start
            if f"dataplane-{n.short}" not in seen and n.dataplane_route(peer.pod_cidr) is not None:
                seen[f"dataplane-{n.short}"] = time.monotonic() - start
        return len(seen) == 4
    wait_until(converged, 60, "both nodes to learn the other's pod CIDR (vxfedd and dataplane)", nodes)
    results["convergence_s"] = round(max(seen[f"vxfedd-{n.short}"] for n in nodes), 2)
    results["convergence_dataplane_s"] = round(max(seen[f"dataplane-{n.short}"] for n in nodes), 2)
    results["convergence_detail_s"] = {k: round(v, 2) for k, v in sorted(seen.items())}
    t.log(f"converged: routes in both vxfedds {results['convergence_s']} s, in both dataplanes "
          f"{results['convergence_dataplane_s']} s after starting vxfedd ({results['convergence_detail_s']})")

    vni = a.vni_of(NETWORK)
    assert vni == b.vni_of(NETWORK), f"network {NETWORK} has VNI {vni} on A but {b.vni_of(NETWORK)} on B"
    results["vni"] = vni
    ra = check_route(a, b, vni)
    rb = check_route(b, a, vni)
    t.log(f"A: {ra}\nB: {rb}")
    # Only the other cluster's CIDR is learned: our own advertisement must not come back.
    for n, peer in ((a, b), (b, a)):
        bgp_prefixes = {r["prefix"] for r in n.vxfedctl("routes").get("routes", []) if r.get("source") == "bgp"}
        assert bgp_prefixes == {peer.pod_cidr}, f"{n.short}: BGP routes {bgp_prefixes}"

    # ---- 2. peers and status ----
    def peer_ok(n: VxNode, peer: VxNode) -> bool:
        ps = n.vxfedctl("peers").get("peers", [])
        return (len(ps) == 1 and ps[0]["address"] == peer.ip and ps[0]["state"] == "Established"
                and int(ps[0]["prefixes_received"]) == 1 and int(ps[0]["prefixes_advertised"]) == 1)
    for n, peer in ((a, b), (b, a)):
        wait_until(lambda: peer_ok(n, peer), 15, f"{n.short}'s vxfedctl peers: Established, 1 received, 1 advertised",
                   nodes)
        p = n.vxfedctl("peers")["peers"][0]
        assert int(p["remote_asn"]) == peer.asn and p["cluster"] == f"cluster-{peer.short}", p
        st = n.vxfedctl("status")
        assert st.get("bgp_enabled") and st.get("fpm_connected"), f"{n.short} status: {st}"
        assert st.get("dataplane_connected") and st.get("dataplane_ready"), f"{n.short} status: {st}"
    results["peer_a"] = a.vxfedctl("peers")["peers"][0]
    t.log(f"A's peer: {results['peer_a']}")

    # ---- 3. peer down ----
    t.log("stopping B's bgpd")
    t0 = time.monotonic()
    b.stop_frr(only="bgpd")
    wait_until(lambda: a.bgp_route(b.pod_cidr) is None, HOLD + 10, "A's vxfedd to drop B's route", nodes)
    gone = time.monotonic() - t0
    wait_until(lambda: a.dataplane_route(b.pod_cidr) is None, 10, "A's dataplane to drop B's route", nodes)
    results["peer_down_vxfedd_s"] = round(gone, 2)
    results["peer_down_dataplane_s"] = round(time.monotonic() - t0, 2)
    t.log(f"B's bgpd stopped: A's vxfedd dropped the route after {gone:.2f} s, "
          f"its dataplane after {results['peer_down_dataplane_s']} s (hold time {HOLD} s)")
    assert results["peer_down_dataplane_s"] <= HOLD + 2, \
        f"withdrawal took {results['peer_down_dataplane_s']} s, hold time is {HOLD} s"
    wait_until(lambda: a.vxfedctl("peers")["peers"][0]["state"] != "Established", 10,
               "A's vxfedctl peers to show the session down", nodes)
    results["peer_down_state_a"] = a.vxfedctl("peers")["peers"][0]["state"]
    # B keeps A's route: its vxfedd and dataplane are unaffected by its own bgpd stopping
    # (zebra withdraws it from FPM though, as bgpd is gone: either is acceptable; not asserted).

    # ---- 4. peer back ----
    t.log("starting B's bgpd again")
    t0 = time.monotonic()
    b.start_frr(only="bgpd")
    wait_until(lambda: a.bgp_route(b.pod_cidr) is not None, 60, "A's vxfedd to re-learn B's route", nodes)
    back = time.monotonic() - t0
    wait_until(lambda: a.dataplane_route(b.pod_cidr) is not None, 10, "A's dataplane to re-learn B's route", nodes)
    results["peer_back_vxfedd_s"] = round(back, 2)
    results["peer_back_dataplane_s"] = round(time.monotonic() - t0, 2)
    check_route(a, b, vni)
    wait_until(lambda: b.bgp_route(a.pod_cidr) is not None and b.dataplane_route(a.pod_cidr) is not None, 30,
               "B to hold A's route again", nodes)
    check_route(b, a, vni)
    for n, peer in ((a, b), (b, a)):
        wait_until(lambda: peer_ok(n, peer), 15, f"{n.short}'s peer Established again", nodes)
    t.log(f"B's bgpd back: A re-learned the route after {back:.2f} s (dataplane "
          f"{results['peer_back_dataplane_s']} s)")

    # ---- 5. vxfedd restart ----
    # The dataplane keeps its tables while vxfedd is away; the new vxfedd must not replace
    # them with a table that lacks the BGP routes while its adapter re-learns them from zebra.
    t.log("restarting A's vxfedd")
    a.stop_vxfedd()
    t0 = time.monotonic()
    a.start_vxfedd(b)
    absent: list[float] = []       # seconds after the restart at which A's dataplane lacked the route
    back_in_vxfedd = None
    while True:
        a.check_alive()
        now = time.monotonic() - t0
        if a.dataplane_route(b.pod_cidr) is None:
            absent.append(round(now, 2))
        if back_in_vxfedd is None:
            try:
                if a.bgp_route(b.pod_cidr) is not None and a.vxfedctl("status").get("fpm_connected"):
                    back_in_vxfedd = now
            except RuntimeError:
                pass               # the API socket is not up yet
        # Watch on until the adapter's FPM resync is over (resync_min_ms 2 s, settle 1 s).
        if back_in_vxfedd is not None and now > back_in_vxfedd + 4:
            break
        if now > 60:
            raise TimeoutError("A's vxfedd did not get its BGP route back within 60 s of its restart")
        time.sleep(0.1)
    results["vxfedd_restart_route_back_s"] = round(back_in_vxfedd, 2)
    results["vxfedd_restart_dataplane_gap_s"] = [absent[0], absent[-1]] if absent else []
    t.log(f"A's vxfedd restarted: BGP route in vxfedd (FPM connected) after {back_in_vxfedd:.2f} s; "
          f"dataplane without it: {results['vxfedd_restart_dataplane_gap_s'] or 'never'}")
    assert not absent, (f"A's dataplane lost {b.pod_cidr} during the vxfedd restart "
                        f"(missing at {absent[0]}..{absent[-1]} s)")
    assert "forwarding on 1 routes of the previous run" in a.vxfedd_log(), "the route cache was not replayed"
    check_route(a, b, vni)

    # ---- 6. vxfedd restart, a route withdrawn meanwhile ----
    # The replayed routes are only kept until the adapter's first full table: one that zebra
    # no longer has is removed by the resync after the restart.
    t.log("stopping A's vxfedd, then B's bgpd; starting A's vxfedd again")
    a.stop_vxfedd()
    b.stop_frr(only="bgpd")
    wait_until(lambda: b.pod_cidr not in json.loads(a.vtysh("show ip route bgp json") or "{}"), HOLD + 10,
               "A's zebra to drop B's route", nodes)
    t0 = time.monotonic()
    a.start_vxfedd(b)
    wait_until(lambda: a.bgp_route(b.pod_cidr) is None and a.dataplane_route(b.pod_cidr) is None, 30,
               "A's vxfedd resync to remove the route withdrawn while it was down", nodes)
    results["vxfedd_restart_stale_removed_s"] = round(time.monotonic() - t0, 2)
    assert "forwarding on 1 routes of the previous run" in a.vxfedd_log(), "the route cache was not replayed"
    t.log(f"the route withdrawn while A's vxfedd was down: removed {results['vxfedd_restart_stale_removed_s']} s "
          "after its restart (FPM reconnect + resync)")


if __name__ == "__main__":
    t.main_wrapper(main)
