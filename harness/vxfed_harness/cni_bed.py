"""Test bed for the vxfed CNI plugin (its integration tests and perf/cni/cni_bench.py): a fake
vxfedd (tests/cni/fake_vxfedd, the unit-level stand-in), pod namespaces, configs, and leak
accounting."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path
from typing import Optional

from .env import SOURCE_DIR, log, require_binary, require_program, skip
from . import protowire as pw
from .cni_runtime import CniError, Runtime, fnv_host_iface
from .proc import wait_for
from .topology import Namespace, Topology

REFERENCE_PLUGINS = Path("/usr/lib/cni")


def control_call(sock_path: str, op_field: int, op_payload: bytes) -> int:
    """Sends one ControlRequest (proto/control.proto: request_id 1, the operation in field
    op_field) and returns the response's code (field 2)."""
    req = pw.field_varint(1, 1) + pw.field_bytes(op_field, op_payload)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(sock_path)
        s.sendall(pw.delimited(req))
        data = b""
        while (frame := pw.split_delimited(data)) is None:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"{sock_path} closed the connection before answering")
            data += chunk
    return pw.varint_fields(frame[0]).get(2, 0)


def attach_endpoint(sock_path: str, container_id: str, network: str, ip: str, mac: str, host_iface: str,
                    pod: Optional[tuple[str, str]] = None, ifname: str = "net1") -> int:
    """AttachEndpoint (proto/control.proto EndpointSpec) as the CNI plugin sends it, with the
    pod's names (K8S_POD_NAMESPACE, K8S_POD_NAME) when `pod` is given; the response's code."""
    def arg(k: str, v: str) -> bytes:
        return pw.field_bytes(8, pw.field_bytes(1, k.encode()) + pw.field_bytes(2, v.encode()))
    spec = (pw.field_bytes(1, container_id.encode()) + pw.field_bytes(2, ifname.encode()) +
            pw.field_bytes(3, network.encode()) + pw.field_bytes(4, ip.encode()) + pw.field_bytes(5, mac.encode()) +
            pw.field_bytes(6, host_iface.encode()))
    if pod:
        spec += arg("K8S_POD_NAMESPACE", pod[0]) + arg("K8S_POD_NAME", pod[1])
    return control_call(sock_path, 10, pw.field_bytes(1, spec))


def detach_endpoint(sock_path: str, container_id: str, ifname: str) -> int:
    return control_call(sock_path, 11, pw.field_bytes(1, container_id.encode()) + pw.field_bytes(2, ifname.encode()))


class CniBed:
    """Owns a fake vxfedd, the plugin's state/IPAM dirs, a runtime, and pod namespaces."""

    def __init__(self, topo: Topology, networks: Optional[list] = None, build_dir: Optional[Path] = None):
        self.topo = topo
        self.plugin = require_binary("cni/vxfed", build_dir)
        self.fake = require_binary("tests/cni/fake_vxfedd", build_dir)
        require_program("ip")
        if not (REFERENCE_PLUGINS / "host-local").exists():
            skip("containernetworking-plugins is not installed (/usr/lib/cni/host-local)")
        self.work = topo.workdir
        self.bin_dir = self.work / "bin"
        self.bin_dir.mkdir()
        # CNI_PATH: our plugin beside the reference plugins, as an install would put it.
        (self.bin_dir / "vxfed").symlink_to(self.plugin)
        self.socket = str(self.work / "vxfedd.sock")
        self.state_dir = str(self.work / "state")
        self.ipam_dir = str(self.work / "ipam")
        self.endpoints_file = self.work / "endpoints.json"
        self.networks = networks or [{"name": "fed-a", "subnet": "10.244.0.0/16", "gateway": "10.244.0.1",
                                      "mtu": 8950, "vni": 1001, "remote_cidrs": ["10.245.0.0/16"]}]
        (self.work / "networks.json").write_text(json.dumps({"networks": self.networks}))
        self.runtime = Runtime([str(self.bin_dir), str(REFERENCE_PLUGINS)], self.work / "cache")
        self.fake_proc = None
        self.suffix = topo.suffix
        self.pods: dict[str, Namespace] = {}

    def bandwidth_enforced(self) -> bool:
        """Whether this build links bpf/ (vxfed --version says "ebpf")."""
        out = subprocess.run([str(self.plugin), "--version"], capture_output=True, text=True, check=True).stdout
        return json.loads(out)["bandwidthEnforcement"] == "ebpf"

    # -- fake vxfedd --
    def start_vxfedd(self, *extra: str) -> None:
        self.stop_vxfedd()
        self.fake_proc = self.topo.spawn([str(self.fake), "--socket", self.socket, "--config",
                                          str(self.work / "networks.json"), "--state", str(self.endpoints_file),
                                          *extra], name="fake_vxfedd")
        wait_for(lambda: os.path.exists(self.socket) and self._connectable(), 10, "fake vxfedd socket")

    def _connectable(self) -> bool:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.socket)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def stop_vxfedd(self) -> None:
        if self.fake_proc and self.fake_proc.poll() is None:
            self.fake_proc.terminate()
            self.fake_proc.wait(timeout=10)
        self.fake_proc = None

    def endpoints(self) -> list[dict]:
        return json.loads(self.endpoints_file.read_text())["endpoints"] if self.endpoints_file.exists() else []

    # -- configs --
    def conf(self, version: str = "1.1.0", name: str = "fed-a", ipam: Optional[dict] = None, **extra) -> dict:
        c = {"cniVersion": version, "name": name, "type": "vxfed", "socket": self.socket,
             "stateDir": self.state_dir, "logLevel": "info",
             "capabilities": {"mac": True, "ips": True, "bandwidth": True},
             "ipam": ipam or self.host_local()}
        c.update(extra)
        return c

    def host_local(self, start: str = "10.244.1.2", end: str = "10.244.1.250") -> dict:
        return {"type": "host-local", "dataDir": self.ipam_dir,
                "ranges": [[{"subnet": "10.244.0.0/16", "rangeStart": start, "rangeEnd": end,
                             "gateway": "10.244.0.1"}]]}

    def conflist(self, version: str, plugins: list[dict], name: str = "fed-a") -> dict:
        return {"cniVersion": version, "name": name, "plugins": plugins}

    # -- pods --
    def cid(self, short: str) -> str:
        return f"{short}-{self.suffix}"

    def pod(self, short: str) -> Namespace:
        ns = self.topo.netns(short)
        self.pods[short] = ns
        return ns

    @staticmethod
    def netns_path(ns: Namespace) -> str:
        return f"/var/run/netns/{ns.name}"

    # -- observation --
    @staticmethod
    def host_link_exists(name: str) -> bool:
        return subprocess.run(["ip", "link", "show", "dev", name], capture_output=True).returncode == 0

    def ipam_reservations(self) -> list[str]:
        d = Path(self.ipam_dir)
        if not d.exists():
            return []
        return sorted(p.name for p in d.rglob("*") if p.is_file() and p.name[0].isdigit() and "last_reserved" not in p.name)

    def records(self) -> list[str]:
        d = Path(self.state_dir) / "attachments"
        return sorted(p.name for p in d.iterdir()) if d.exists() else []

    def queue(self) -> list[dict]:
        p = Path(self.state_dir) / "pending-detach.json"
        return json.loads(p.read_text()) if p.exists() else []

    def leftovers(self, container_ids: list[tuple[str, str]]) -> dict:
        """Everything an attachment may leave behind, for these (container id, ifname) pairs."""
        links = [fnv_host_iface(c, i) for c, i in container_ids if self.host_link_exists(fnv_host_iface(c, i))]
        eps = [e for e in self.endpoints() if (e["container_id"], e["ifname"]) in set(container_ids)]
        tmp = [p.name for p in Path(self.state_dir).rglob("*.tmp.*")] if Path(self.state_dir).exists() else []
        return {"links": links, "endpoints": eps, "records": self.records(), "ipam": self.ipam_reservations(),
                "tmpfiles": tmp}

    def assert_clean(self, container_ids: list[tuple[str, str]], what: str) -> None:
        left = self.leftovers(container_ids)
        if any(left.values()):
            raise AssertionError(f"{what}: left behind {left}")


def expect_error(fn, code: int, message_part: str, what: str) -> CniError:
    try:
        fn()
    except CniError as e:
        if e.code != code or message_part.lower() not in (e.msg + " " + e.details).lower():
            raise AssertionError(f"{what}: expected code {code} with {message_part!r}, got {e.code}: {e.msg} / {e.details}")
        log(f"ok: {what} -> {e.code} {e.msg}")
        return e
    raise AssertionError(f"{what}: succeeded, expected code {code}")


class RealNodeCni:
    """The vxfed plugin against a REAL node (vxfed_harness.node.Node: vxfedd and the dataplane),
    run by the test runtime inside the node's namespace, host-local handing out range_start ..
    range_end of the network's subnet. For the fake vxfedd, use CniBed."""

    def __init__(self, topo: Topology, node, network: str, subnet: str, gateway: str,
                 range_start: str, range_end: str, build_dir: Optional[Path] = None):
        plugin = require_binary("cni/vxfed", build_dir)
        if not (REFERENCE_PLUGINS / "host-local").exists():
            skip("containernetworking-plugins is not installed (/usr/lib/cni/host-local)")
        work = topo.workdir
        bin_dir = work / "bin"
        bin_dir.mkdir()
        # CNI_PATH: our plugin beside the reference plugins, as an install would put it.
        (bin_dir / "vxfed").symlink_to(plugin)
        self.runtime = Runtime([str(bin_dir), str(REFERENCE_PLUGINS)], work / "cache", prefix=node.ns.prefix())
        self.conf = {"cniVersion": "1.1.0", "name": network, "type": "vxfed", "socket": str(node.vxfedd.socket),
                     "stateDir": str(work / "cni-state"), "logLevel": "info",
                     "ipam": {"type": "host-local", "dataDir": str(work / "ipam"),
                              "ranges": [[{"subnet": subnet, "rangeStart": range_start,
                                           "rangeEnd": range_end, "gateway": gateway}]]}}

    def wait_ready(self, timeout: float = 60) -> None:
        """Until STATUS succeeds: vxfedd answers and the dataplane is in sync."""
        def status_ok() -> bool:
            try:
                self.runtime.status(self.conf)
                return True
            except CniError as e:
                log(f"STATUS: {e.code} {e.msg}")
                return False
        wait_for(status_ok, timeout, "STATUS 0 (vxfedd and the dataplane ready)", interval=1)


def documented_chain() -> dict:
    """The JSON block after "A chained conflist" in docs/cni.md: the conflist the docs tell
    users to install (cni_chained and cni_hostport run exactly that, so doc and tests cannot
    drift)."""
    text = (SOURCE_DIR / "docs/cni.md").read_text()
    start = text.index("A chained conflist")
    block = re.search(r"```json\n(.*?)\n```", text[start:], re.S)
    assert block, "docs/cni.md: no json block after 'A chained conflist'"
    return json.loads(block.group(1))
