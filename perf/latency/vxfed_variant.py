"""The vxfed path ("ours"): per node FRR (zebra + bgpd), vxfed-dataplane and vxfedd; pods made
by invoking the vxfed CNI plugin the way a container runtime does. Nothing on the overlay is
written by hand: vxfedd renders FRR's config, BGP exchanges the pod CIDRs, zebra streams the
selected routes to vxfedd over FPM, vxfedd programs the dataplane.

Each part is started from the command line its own docs give (docs/dataplane.md,
docs/control.md, docs/bgp.md, docs/cni.md); those command lines live in the `*_command` and
`*_config` functions below, the one place to adjust when a part's interface changes.

When a part is missing (not built) or does not come up, `up()` raises VariantUnavailable
naming the part; nothing is faked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from topology_plan import ClusterPlan, DemoPlan
from variant_base import Pod, Variant, VariantUnavailable, tl

NETWORK = "fed"                       # the vxfed network both clusters' pods join


@dataclass(frozen=True)
class Component:
    name: str                         # what the demo calls it in messages
    path: str                         # relative to the build dir ("build:"), the source dir ("src:"), or absolute
    owner: str                        # which part provides it

    def resolve(self, build_dir: Path, source_dir: Path) -> Path:
        if self.path.startswith("build:"):
            return build_dir / self.path[len("build:"):]
        if self.path.startswith("src:"):
            return source_dir / self.path[len("src:"):]
        return Path(self.path)


COMPONENTS = [
    Component("vxfed-dataplane", "build:dataplane/vxfed-dataplane", "the DPDK forwarder (dataplane/)"),
    Component("vxfedd", "build:control/vxfedd", "the node daemon (control/)"),
    Component("vxfedctl", "build:control/vxfedctl", "the node daemon's CLI (control/)"),
    Component("vxfed CNI plugin", "build:cni/vxfed", "the CNI plugin (cni/)"),
    Component("FRR instance scripts", "src:scripts/frr-start.sh", "the BGP adapter (bgp/, scripts/frr-*.sh)"),
    Component("FRR instance scripts", "src:scripts/frr-stop.sh", "the BGP adapter (bgp/, scripts/frr-*.sh)"),
    Component("FRR zebra", "/usr/lib/frr/zebra", "Debian package frr"),
    Component("FRR bgpd", "/usr/lib/frr/bgpd", "Debian package frr"),
    Component("host-local IPAM plugin", "/usr/lib/cni/host-local", "Debian package containernetworking-plugins"),
]


def missing_components(build_dir: Path, source_dir: Path) -> list[tuple[Component, Path]]:
    """Every part that is not there (not built / not installed), with the path looked at."""
    out = []
    for c in COMPONENTS:
        p = c.resolve(build_dir, source_dir)
        if not (p.exists() and os.access(p, os.X_OK)):
            out.append((c, p))
    return out


def describe_missing(missing: list[tuple[Component, Path]]) -> tuple[str, str]:
    names = []
    for c, _ in missing:
        if c.name not in names:
            names.append(c.name)
    detail = "; ".join(f"{c.name} ({c.owner}) not found at {p}" for c, p in missing)
    return ", ".join(names), detail


class VxfedVariant(Variant):
    name = "ours"

    def __init__(self, plan: DemoPlan, build_dir: Path, source_dir: Path, up_timeout: float = 60,
                 **kw):
        super().__init__(plan, **kw)
        self.build_dir = Path(build_dir)
        self.source_dir = Path(source_dir)
        self.up_timeout = up_timeout
        self.node_dirs: dict[str, Path] = {}
        self.procs: dict[str, subprocess.Popen] = {}
        self.cni_added: list[tuple[str, str, str, str]] = []   # (cluster, container id, netns path, ifname)
        self.dpdk_prefixes: list[str] = []
        self.frr_started: list[str] = []

    def owned_paths(self) -> list[Path]:
        return super().owned_paths() + [Path("/var/run/dpdk") / f"vxdemo{self.topo.suffix}{c.name}"
                                        for c in self.plan.clusters]

    def bin(self, rel: str) -> Path:
        return self.build_dir / rel

    # ------------------------------------------------------------------ bring-up
    def up(self) -> None:
        missing = missing_components(self.build_dir, self.source_dir)
        if missing:
            names, detail = describe_missing(missing)
            raise VariantUnavailable(names, f"not built or not installed: {detail}")
        plan = self.plan
        self.progress(f"ours: creating node namespaces and the MTU {plan.underlay_mtu} underlay")
        for c in plan.clusters:
            self.make_node(c, forwarding=False)
            d = self.workdir() / c.node_short
            (d / "frr").mkdir(parents=True)
            (d / "state").mkdir()
            (d / "cni").mkdir()
            self.node_dirs[c.name] = d
        self.make_underlay()
        for c in plan.clusters:
            self._start_frr(c)
        for c in plan.clusters:
            self._start_dataplane(c)
        for c in plan.clusters:
            self._start_vxfedd(c)
        for c in plan.clusters:
            self._wait_daemon_ready(c)
        self._wait_bgp_routes()
        for c in plan.clusters:
            for p in c.pods:
                self._cni_add(c, p.short, p.index)
            self.progress(f"ours: cluster {c.name.upper()}: {len(c.pods)} pod(s) from the CNI plugin: "
                          f"{', '.join(p.ip for p in self.pods[c.name])}")

    def _start_frr(self, c: ClusterPlan) -> None:
        self.progress(f"ours: node {c.name.upper()}: starting FRR (zebra with dplane_fpm_nl, bgpd), AS {c.asn}")
        res = tl.run([str(self.source_dir / "scripts/frr-start.sh"), "--dir", str(self.node_dirs[c.name] / "frr"),
                      "--netns", self.nodes[c.name].name], check=False, timeout=60)
        if res.returncode != 0:
            raise VariantUnavailable("FRR (scripts/frr-start.sh)",
                                     f"did not start on node {c.name.upper()}: {res.stderr.strip()[-400:]}")
        self.frr_started.append(c.name)

    def dataplane_command(self, c: ClusterPlan) -> list[str]:
        """docs/dataplane.md: EAL options, `--`, then ours. af_packet uplink on ul0."""
        prefix = f"vxdemo{self.topo.suffix}{c.name}"      # owned_paths() lists its run dir
        self.dpdk_prefixes.append(prefix)
        mtu = self.plan.underlay_mtu
        # The frame must fit the dataplane's mbuf data room (9344 at MTU 9000): the values of
        # vxfed-dataplane --help.
        framesz = 9216 if mtu > 1500 else 2048
        return [str(self.bin("dataplane/vxfed-dataplane")),
                *os.environ.get("VXFED_DATAPLANE_LCORES", "-l 0,1").split(), "--no-huge", "-m", "512", "--no-pci", "--file-prefix", prefix,
                "--vdev", f"net_af_packet0,iface=ul0,qpairs=1,framesz={framesz},blocksz={framesz * 4},framecnt=512",
                "--", "--uplink", "net_af_packet0", "--vtep-ip", c.underlay_ip, "--mtu", str(mtu),
                "--queues", "1", "--underlay-subnet", "198.18.0.0/24",
                "--api-socket", str(self.node_dirs[c.name] / "dataplane.sock"),
                # Experiments (idle policy, busy polling ...): extra vxfed-dataplane options.
                *os.environ.get("VXFED_DATAPLANE_EXTRA_ARGS", "").split()]

    def _start_dataplane(self, c: ClusterPlan) -> None:
        self.progress(f"ours: node {c.name.upper()}: starting vxfed-dataplane (af_packet uplink ul0, VTEP {c.underlay_ip})")
        proc = self.nodes[c.name].spawn(self.dataplane_command(c), name="vxfed-dataplane")
        self.procs[f"dataplane-{c.name}"] = proc
        sock = self.node_dirs[c.name] / "dataplane.sock"
        self._wait_for_file(sock, proc, "vxfed-dataplane", c, timeout=30)

    def vxfedd_config(self, c: ClusterPlan) -> dict:
        """vxfedd's YAML (control/daemon_config.hpp, docs/control.md) with the `bgp:` section of
        docs/bgp.md: eBGP to the other cluster's node, accepting exactly its pod CIDR."""
        d = self.node_dirs[c.name]
        peer = self.plan.peer_of(c)
        return {
            "node": {"name": c.node_short.lower(), "vtep_ip": c.underlay_ip, "uplink": "ul0",
                     "underlay_mtu": self.plan.underlay_mtu},
            "cluster": {"name": f"cluster-{c.name}", "pod_cidrs": [c.pod_cidr], "asn": c.asn},
            "daemon": {"socket": str(d / "vxfedd.sock"), "state_dir": str(d / "state"),
                       "log_level": "info", "metrics_listen": ""},
            "dataplane": {"socket": str(d / "dataplane.sock")},
            "networks": [{"name": NETWORK, "vni": self.plan.vni, "subnet": c.pod_cidr,
                          "gateway": c.gateway}],
            "bgp": {
                "enabled": True,
                "asn": c.asn,
                "router_id": c.underlay_ip,
                "clusters": {f"cluster-{peer.name}": [peer.pod_cidr]},
                # Short timers: the demo should not wait for BGP longer than it must.
                "peers": [{"address": peer.underlay_ip, "remote_asn": peer.asn,
                           "cluster": f"cluster-{peer.name}", "network": NETWORK,
                           "keepalive": 1, "hold": 3, "connect_retry": 1}],
                "frr": {"apply": "reload", "config_path": str(d / "frr" / "frr.conf"),
                        "vty_socket_dir": str(d / "frr"), "status_interval_ms": 1000},
                "fpm": {"listen": "127.0.0.1", "port": 2620},
            },
        }

    def _start_vxfedd(self, c: ClusterPlan) -> None:
        self.progress(f"ours: node {c.name.upper()}: starting vxfedd (network {NETWORK!r} {c.pod_cidr}, "
                      f"VNI {self.plan.vni}, eBGP to {self.plan.peer_of(c).underlay_ip} AS {self.plan.peer_of(c).asn})")
        cfg = self.node_dirs[c.name] / "vxfedd.yaml"
        # JSON is valid YAML: one renderer, no dependency on python3-yaml.
        cfg.write_text(json.dumps(self.vxfedd_config(c), indent=2) + "\n")
        proc = self.nodes[c.name].spawn([str(self.bin("control/vxfedd")), "--config", str(cfg), "--foreground"],
                                        name="vxfedd")
        self.procs[f"vxfedd-{c.name}"] = proc
        self._wait_for_file(self.node_dirs[c.name] / "vxfedd.sock", proc, "vxfedd", c, timeout=30)

    def vxfedctl(self, c: ClusterPlan, *args: str, json_out: bool = False,
                 timeout: float = 10) -> subprocess.CompletedProcess:
        """vxfedctl [--socket S] [--json] SUBCOMMAND ... (global options before the subcommand)."""
        sock = self.node_dirs[c.name] / "vxfedd.sock"
        cmd = [str(self.bin("control/vxfedctl")), "--socket", str(sock)] + (["--json"] if json_out else [])
        return self.nodes[c.name].run(cmd + list(args), check=False, timeout=timeout)

    def _vxfedctl_json(self, c: ClusterPlan, *args: str, ok_codes: tuple[int, ...] = (0,)):
        res = self.vxfedctl(c, *args, json_out=True)
        if res.returncode not in ok_codes:
            raise RuntimeError(f"vxfedctl {' '.join(args)} exited {res.returncode}: {res.stderr.strip()[-300:]}")
        return json.loads(res.stdout)

    def _wait_daemon_ready(self, c: ClusterPlan) -> None:
        self.progress(f"ours: node {c.name.upper()}: waiting for vxfedd to program the dataplane")
        last: dict = {}

        def ready() -> bool:
            nonlocal last
            self._check_alive(c)
            last = self._vxfedctl_json(c, "status", ok_codes=(0, 4))   # 4: dataplane not ready yet
            return bool(last.get("dataplane_connected") and last.get("dataplane_ready"))
        try:
            tl.wait_for(ready, self.up_timeout, f"vxfedd on node {c.name.upper()} to report the dataplane ready",
                        interval=0.5)
        except TimeoutError as exc:
            raise VariantUnavailable("vxfedd <-> vxfed-dataplane", f"{exc}; last status: {last}") from None

    def _wait_bgp_routes(self) -> None:
        self.progress("ours: waiting for BGP: each node must learn the other cluster's pod CIDR")
        t0 = time.monotonic()
        for c in self.plan.clusters:
            peer = self.plan.peer_of(c)
            try:
                tl.wait_for(lambda: self._check_alive(c) or self.learned_route(c, peer.pod_cidr) is not None,
                            self.up_timeout, f"node {c.name.upper()} to learn {peer.pod_cidr} over BGP", interval=0.5)
            except TimeoutError as exc:
                raise VariantUnavailable("BGP (FRR + vxfedd's BGP adapter)",
                                         f"{exc}; {self.bgp_summary(c)}") from None
        self.progress(f"ours: BGP up, routes learned in {time.monotonic() - t0:.1f}s: "
                      + "; ".join(f"{c.name.upper()} -> {self.plan.peer_of(c).pod_cidr} via "
                                  f"{','.join(self.learned_route(c, self.plan.peer_of(c).pod_cidr).get('vteps', []))}"
                                  for c in self.plan.clusters))

    def learned_route(self, c: ClusterPlan, prefix: str) -> dict | None:
        """The route to prefix that vxfedd holds with source "bgp", or None."""
        doc = self._vxfedctl_json(c, "routes")
        routes = doc.get("routes", doc) if isinstance(doc, dict) else doc
        for r in routes or []:
            if r.get("prefix") == prefix and r.get("source") == "bgp":
                return r
        return None

    def bgp_summary(self, c: ClusterPlan) -> str:
        d = self.node_dirs[c.name] / "frr"
        res = self.nodes[c.name].run(["vtysh", "--vty_socket", str(d), "--config_dir", str(d),
                                      "-c", "show bgp summary"], check=False, timeout=15)
        return f"FRR on node {c.name.upper()} says: {(res.stdout or res.stderr).strip()[-600:]}"

    def _cni_add(self, c: ClusterPlan, short: str, index: int) -> None:
        pod_ns = self.topo.netns(short)
        container_id = f"vxdemo-{self.topo.suffix}-{short.lower()}"
        result = self._cni(c, "ADD", container_id, pod_ns.name, "eth0", short)
        try:
            ip = result["ips"][0]["address"].split("/")[0]
        except (KeyError, IndexError, TypeError):
            raise VariantUnavailable("vxfed CNI plugin", f"ADD for {short} printed no IP: {result}") from None
        self.cni_added.append((c.name, container_id, pod_ns.name, "eth0"))
        self.pods[c.name].append(Pod(name=short, cluster=c.name, ns=pod_ns, ip=ip))

    def cni_config(self, c: ClusterPlan) -> dict:
        """docs/cni.md: the network configuration a runtime hands the plugin on stdin."""
        d = self.node_dirs[c.name]
        first_pod = c.pods[0].ip if c.pods else c.gateway
        return {
            "cniVersion": "1.0.0",
            "name": NETWORK,
            "type": "vxfed",
            "socket": str(d / "vxfedd.sock"),
            "stateDir": str(d / "cni"),
            "ipam": {"type": "host-local", "dataDir": str(d / "ipam"),
                     "ranges": [[{"subnet": c.pod_cidr, "rangeStart": first_pod, "gateway": c.gateway}]]},
        }

    def _cni(self, c: ClusterPlan, command: str, container_id: str, netns: str, ifname: str,
             pod_name: str) -> dict:
        env = dict(os.environ,
                   CNI_COMMAND=command, CNI_CONTAINERID=container_id, CNI_NETNS=f"/run/netns/{netns}",
                   CNI_IFNAME=ifname, CNI_PATH=f"{self.bin('cni')}:/usr/lib/cni",
                   CNI_ARGS=f"IgnoreUnknown=1;K8S_POD_NAMESPACE=demo;K8S_POD_NAME={pod_name};"
                            f"K8S_POD_UID={container_id}")
        try:
            res = self.nodes[c.name].run([str(self.bin("cni/vxfed"))], check=False, timeout=30, env=env,
                                         input=json.dumps(self.cni_config(c)))
        except subprocess.TimeoutExpired:
            raise VariantUnavailable("vxfed CNI plugin", f"{command} for {pod_name} did not return within 30s") from None
        if res.returncode != 0:
            raise VariantUnavailable("vxfed CNI plugin", f"{command} for {pod_name} failed ({res.returncode}): "
                                     f"{(res.stdout or res.stderr).strip()[-500:]}")
        if command == "DEL" or not res.stdout.strip():
            return {}
        return json.loads(res.stdout)

    # ------------------------------------------------------------------ helpers
    def _wait_for_file(self, path: Path, proc: subprocess.Popen, what: str, c: ClusterPlan, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise VariantUnavailable(what, f"exited with status {proc.returncode} on node {c.name.upper()}; "
                                         f"log: {self.topo.log_of(f'{self.nodes[c.name].name}:{what}')[-800:]}")
            if path.exists():
                return
            time.sleep(0.1)
        raise VariantUnavailable(what, f"did not create {path} within {timeout:.0f}s on node {c.name.upper()}")

    def _check_alive(self, c: ClusterPlan) -> bool:
        for key, what in ((f"dataplane-{c.name}", "vxfed-dataplane"), (f"vxfedd-{c.name}", "vxfedd")):
            proc = self.procs.get(key)
            if proc is not None and proc.poll() is not None:
                raise VariantUnavailable(what, f"exited with status {proc.returncode} on node {c.name.upper()}; "
                                         f"log: {self.topo.log_of(f'{self.nodes[c.name].name}:{what}')[-800:]}")
        return False

    def counters(self) -> dict:
        out = {}
        for c in self.plan.clusters:
            if c.name in self.nodes:
                try:
                    out[c.name] = self._vxfedctl_json(c, "stats")
                except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
                    out[c.name] = {"error": str(exc)}
        return out

    # ------------------------------------------------------------------ teardown
    def close(self) -> None:
        """As a runtime and an operator would: CNI DEL every pod, stop the daemons, stop FRR,
        then remove the namespaces (Topology.close), DPDK's run files and the work dir."""
        for cname, cid, netns, ifname in reversed(self.cni_added):
            c = self.plan.a if cname == "a" else self.plan.b
            try:
                self._cni(c, "DEL", cid, netns, ifname, cid)
            except (VariantUnavailable, ValueError) as exc:
                self.progress(f"ours: CNI DEL {cid}: {exc}")
        self.cni_added.clear()
        for key in ("vxfedd-a", "vxfedd-b", "dataplane-a", "dataplane-b"):
            tl.stop_process(self.procs.pop(key, None))
        for cname in self.frr_started:
            tl.run([str(self.source_dir / "scripts/frr-stop.sh"), "--dir", str(self.node_dirs[cname] / "frr")],
                   check=False, timeout=30)
        self.frr_started.clear()
        super().close()
        for prefix in self.dpdk_prefixes:
            shutil.rmtree(Path("/var/run/dpdk") / prefix, ignore_errors=True)
