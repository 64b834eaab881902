"""A vxfed node for integration tests: one network namespace with real FRR (scripts/frr-start.sh),
vxfed-dataplane (af_packet uplink on ul0, --no-huge, its own --file-prefix) and vxfedd with a
`bgp:` section, everything under the Topology's workdir. Used by test_bgp_vxfedd and
test_bgp_bfd; observations go through the real clients (vxfedctl, vxfed-dpctl, vtysh).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import vxfed_testlib as t
from bgp_topo import require_frr

NETWORK = "fed"
MTU = 9000
SCRIPTS = t.SOURCE_DIR / "scripts"
POLL = 0.2          # s between observations: each is one short-lived client process


class VxNode:
    """One node namespace: FRR, vxfed-dataplane and vxfedd, all under workdir/<short>."""

    def __init__(self, topo: t.Topology, short: str, asn: int, ip: str, pod_cidr: str,
                 peer_options: dict | None = None, bfdd: bool = False, network_in_yaml: bool = True):
        """peer_options: the `bgp.peers[0]` keys besides address/ASN/cluster/network (timers,
        bfd, ...). bfdd: FRR's bfdd runs too (scripts/frr-start.sh --bfdd). network_in_yaml:
        False leaves the network out of the config (the test adds it with add_network())."""
        self.network_in_yaml = network_in_yaml
        self.topo = topo
        self.peer_options = peer_options if peer_options is not None else {}
        self.bfdd = bfdd
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
        if self.bfdd and not only:
            args.append("--bfdd")
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
            "networks": [{"name": NETWORK, "subnet": self.pod_cidr}] if self.network_in_yaml else [],
            "bgp": {
                "enabled": True,
                "asn": self.asn,
                "router_id": self.ip,
                # Off so that a stopped peer's routes are withdrawn at once instead of being kept
                # as stale for restart_time (bgp_graceful_restart tests that behaviour).
                "graceful_restart": False,
                "clusters": {f"cluster-{peer.short}": [peer.pod_cidr]},
                "peers": [{"address": peer.ip, "remote_asn": peer.asn, "cluster": f"cluster-{peer.short}",
                           "network": NETWORK, **self.peer_options}],
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

    def add_network(self) -> None:
        """The network at run time, as an operator would: vxfedctl add-network."""
        self.wait_file(self.sock, self.vxfedd, "vxfedd", 30)
        self.vxfedctl("add-network", NETWORK, "--subnet", self.pod_cidr)

    def remove_network(self) -> None:
        self.vxfedctl("remove-network", NETWORK)

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
            t.stop_process(proc)
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


def dump_frr(nodes) -> None:
    """On failure: what FRR thinks, and its daemons' logs."""
    for n in nodes:
        print(f"----- FRR on {n.short}: show bgp summary -----\n" + n.vtysh("show bgp summary"))
        for f in sorted(n.frr_dir.glob("*.log")):
            print(f"----- {n.short}/frr/{f.name} -----\n" + f.read_text(errors="replace")[-2000:])


def require() -> None:
    require_frr()
    for b in ("dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl", "control/vxfedd", "control/vxfedctl"):
        t.require_binary(b)
    if not Path("/usr/lib/x86_64-linux-gnu/frr/modules/dplane_fpm_nl.so").exists():
        t.skip("FRR's dplane_fpm_nl module is missing")


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


