"""A node of the DaemonSet under podman, whole: its own podman (storage, CNI config dir), host
directories for the manifest's volumes, vxfedd's ConfigMap with this node's facts, the
install-cni init container run to completion, the vxfed-dataplane, vxfedd and (with BGP) FRR
containers from the image (daemonset_podman.py turns the manifest into podman arguments), and
pods made by podman's CNI backend with the conflist install-cni put on the "host".

    node = PodmanNode(topo, ns, "a", vtep="198.18.0.1", image=ref, archive=saved_image)
    node.configure(networks=[...])          # vxfedd.yaml into the config volume
    node.install_cni()                      # the init container: plugin + conflist
    node.create(1); node.start(1)           # dp-1, vxfedd-1
    pod = node.pod("a1")                    # podman run --network vxfed: CNI ADD through vxfed

The CNI plugin podman runs is the one install-cni copied out of the image, wrapped to run in
the node's network namespace (podman.plugins_in_namespace). Substituted for the test machine,
as in tests/deploy/podman_node_test.py: the dataplane's uplink, lcores and memory; and in the
installed conflist the host paths (vxfedd's socket, the plugin's state, log and IPAM dirs
live under this node's work directory instead of /run, /var).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Optional

import yaml

from . import daemonset_podman as ds
from . import manifests as m
from .cni_bed import REFERENCE_PLUGINS
from .env import require_binary, skip
from .podman import Container, Podman, plugins_in_namespace
from .proc import run, wait_for
from .topology import Namespace, Topology

HOST_DIRS = ("run-vxfed", "state", "config", "frr-conf", "run-frr", "cni-bin", "cni-conf", "node-locks")


def require_image() -> str:
    """The image under test (VXFED_IMAGE: scripts/test.sh builds it and sets it), refused when
    it was built from other files than this build's (its io.vxfed.content-id label)."""
    image = os.environ.get("VXFED_IMAGE")
    if not image:
        skip("VXFED_IMAGE is not set (scripts/test.sh builds the image and sets it)")
    labels = json.loads(run(["podman", "image", "inspect", image]).stdout)[0].get("Labels") or {}
    assert labels.get("io.vxfed.content-id") == ds.image_content_id(), (
        f"{image} was built from other files than this build's: run scripts/build-image.sh")
    return image


class PodmanNode:
    def __init__(self, topo: Topology, ns: Namespace, name: str, vtep: str, image: str, archive: Path,
                 uplink: str = "up0"):
        self.topo, self.ns, self.name, self.vtep, self.image, self.uplink = topo, ns, name, vtep, image, uplink
        self.dir = topo.workdir / f"node-{name}"
        self.wrappers = self.dir / "cni-path"
        self.pm = Podman(topo, cni_plugin_dirs=[self.wrappers, REFERENCE_PLUGINS], name=f"podman-{name}")
        self.pm.cmd("load", "-q", "-i", str(archive), timeout=300)
        self.busybox = ""   # imported with the first pod
        self.host = {}
        for d in HOST_DIRS:
            (self.dir / d).mkdir(parents=True, exist_ok=True)
            self.host[d] = str(self.dir / d)
        self.host.update({"bpffs": "/sys/fs/bpf", "netns": "/run/netns"})
        self.containers, self.cms = ds.containers()
        self.fields = dict(m.NODE_FIELDS, **{"status.hostIP": vtep, "spec.nodeName": f"node-{name}"})
        self.socket = self.dir / "run-vxfed" / "vxfedd.sock"
        self.vxfedctl = require_binary("control/vxfedctl")
        self.network = ""   # podman's --network for pods: the installed conflist's name
        self.frr = False    # the FRR container runs too (configure with bgp)
        topo.on_failure(f"node {name}'s containers", self.dump)

    # -- configuration --
    def configure(self, networks: list[dict], pod_cidrs: list[str], bgp: Optional[dict] = None) -> None:
        """vxfedd.yaml (the ConfigMap's, with this node's facts; no federation store, eBPF
        reconcile off: the host's bpffs is shared with other tests) and the conflist beside it,
        as the ConfigMap volume has them. bgp: what replaces the ConfigMap's `bgp.peers` and
        `bgp.clusters` (the rest of its bgp section, FRR's paths included, as written; the FRR
        container then runs too), or None for BGP off."""
        cm = self.cms[("vxfed-system", "vxfed-config")]
        cfg = yaml.safe_load(cm["vxfedd.yaml"])
        cfg["node"]["uplink"] = self.uplink
        cfg["cluster"]["pod_cidrs"] = pod_cidrs
        cfg["daemon"]["metrics_listen"] = ""
        cfg["networks"] = networks
        if bgp is None:
            cfg["bgp"] = {"enabled": False}
        else:
            cfg["bgp"].update(bgp)
        self.frr = bgp is not None
        cfg.pop("federation", None)
        cfg["bpf"] = {"reconcile": False}
        config = Path(self.host["config"])
        (config / "vxfedd.yaml").write_text(yaml.safe_dump(cfg))
        (config / "10-vxfed.conflist").write_text(cm["10-vxfed.conflist"])

    def install_cni(self) -> dict:
        """Runs the init container to completion; returns the conflist it installed, with this
        node's host paths, as podman's network `vxfed`."""
        args, cmd = ds.podman_args(*self.containers["install-cni"], self.ns.path, self.host, self.fields, self.cms)
        self.pm.cmd("run", "--rm", "--name", f"install-cni-{self.name}", *args, self.image, *cmd, timeout=180)
        plugin = Path(self.host["cni-bin"]) / "vxfed"
        installed = json.loads((Path(self.host["cni-conf"]) / "10-vxfed.conflist").read_text())
        plugins_in_namespace(self.wrappers, {"vxfed": plugin}, self.ns)
        vxfed = installed["plugins"][0]
        vxfed.update({"socket": str(self.socket), "stateDir": str(self.dir / "cni-state"),
                      "logFile": str(self.dir / "vxfed-cni.log")})
        vxfed["ipam"]["dataDir"] = str(self.dir / "cni-ipam")
        self.pm.add_network(installed)
        self.network = installed["name"]
        return installed

    # -- the daemon containers --
    def create(self, gen: int, ref: Optional[str] = None) -> None:
        dp_args, dp_cmd = ds.podman_args(*self.containers["vxfed-dataplane"], self.ns.path, self.host, self.fields,
                                         self.cms, uplink=self.uplink,
                                         file_prefix=f"pmn{self.name}{gen}{self.topo.suffix}")
        vd_args, vd_cmd = ds.podman_args(*self.containers["vxfedd"], self.ns.path, self.host, self.fields, self.cms)
        self.pm.cmd("create", "--name", f"dp-{gen}", *dp_args, ref or self.image, *dp_cmd, timeout=180)
        self.pm.cmd("create", "--name", f"vxfedd-{gen}", *vd_args, ref or self.image, *vd_cmd, timeout=180)
        if self.frr:
            fr_args, fr_cmd = ds.podman_args(*self.containers["frr"], self.ns.path, self.host, self.fields, self.cms)
            self.pm.cmd("create", "--name", f"frr-{gen}", *fr_args, ref or self.image, *fr_cmd, timeout=180)

    def names(self, gen: int) -> list[str]:
        """The daemon containers of generation gen."""
        return [f"dp-{gen}", f"vxfedd-{gen}"] + ([f"frr-{gen}"] if self.frr else [])

    def start(self, gen: int, timeout: float = 60, wait: bool = True) -> None:
        self.pm.cmd("start", *self.names(gen), timeout=60)
        if wait:
            wait_for(lambda: self.socket.exists() and self.ctl("status", check=False).returncode == 0, timeout,
                     f"node {self.name}: vxfedd serving with its dataplane ready")

    def dump(self, lines: int = 40) -> None:
        """The last lines of every container's log (a failed test's evidence)."""
        names = self.pm.cmd("ps", "-a", "--format", "{{.Names}}", check=False).stdout.split()
        for name in names:
            print(f"----- node {self.name}: container {name} -----")
            print("\n".join(self.logs(name).splitlines()[-lines:]))

    def logs(self, container: str) -> str:
        r = self.pm.cmd("logs", container, check=False)
        return r.stdout + r.stderr

    def ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run([str(self.vxfedctl), "--socket", str(self.socket), *args], check=check, timeout=30)

    def endpoints(self) -> list[dict]:
        return json.loads(self.ctl("--json", "endpoints").stdout)["endpoints"]

    # -- pods --
    def pod(self, name: str) -> Container:
        """A busybox container on the installed network: podman's CNI backend runs its chain
        (vxfed, tuning, portmap)."""
        if not self.busybox:
            self.busybox = self.pm.import_busybox()
        return self.pm.run_container(name, self.busybox, network=self.network)


__all__ = ["PodmanNode", "require_image"]
