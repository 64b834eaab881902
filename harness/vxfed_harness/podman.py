"""podman as a real container runtime for tests: Debian's podman 4.3 with its CNI network
backend, isolated under a Topology's work directory.

    with t.Topology("mytest") as topo:
        plugins_in_namespace(bin_dir, {"vxfed": build / "cni/vxfed"}, node_ns)
        pm = Podman(topo, cni_plugin_dirs=[bin_dir, "/usr/lib/cni"])
        image = pm.import_busybox()                 # a busybox-static root filesystem
        pm.add_network(conflist)                    # <network config dir>/<name>.conflist
        c = pm.run_container("a", image, network="fed-a", mac="0a:58:0a:f4:01:99")
        c.exec("ping", "-c", "1", "10.244.1.3")

Everything podman keeps is its own: storage (`--root`, vfs driver: no overlay mounts to
leak), run root, tmp dir (file locks, not the machine-wide SHM segment another podman uses),
containers.conf (CONTAINERS_CONF) and the CNI network config dir. Another podman on the
machine (scripts/build-image.sh's system storage, a concurrent test) is never touched.

podman itself runs in the host's namespaces (its netns bind mounts under /run/netns must be
visible to every later podman call). A plugin that must act in a node's network namespace —
vxfed creates the host end of the pod's veth where the node's dataplane sees it — is put in
CNI_PATH as a wrapper that enters that namespace only (`plugins_in_namespace`: nsenter --net,
so the mounts, bpffs included, stay the host's).

Facts of these machines the set-up works around:
- crun 1.8.1 refuses the hybrid cgroup layout: `--runtime runc`, cgroupfs manager.
- podman sets RLIMIT_NPROC/NOFILE of a container to its own large defaults, and runc's
  setrlimit is refused here (even at today's values, without CAP_SYS_RESOURCE): containers.conf's
  default_ulimits sets both lower (CONTAINER_ULIMIT).
- No registry is reachable: the image is imported from a busybox-static root filesystem.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .env import log, require_program, skip
from .proc import run
from .topology import Namespace, Topology

BUSYBOX = Path("/bin/busybox")           # busybox-static: one static binary
BUSYBOX_APPLETS = ("sh", "sleep", "ping", "ip", "cat", "ls", "ifconfig", "true", "nc", "wget", "hostname",
                   "echo", "kill", "ps", "date", "seq", "head")
DEFAULT_IMAGE = "localhost/vxfed-test-busybox:latest"
CONTAINER_ULIMIT = "4096:4096"       # nproc and nofile of every container (see above)


def require_podman() -> str:
    """podman, runc and busybox-static (scripts/install-deps.sh installs them), or skip."""
    podman = require_program("podman")
    require_program("runc")
    static = run(["dpkg-query", "-W", "-f=${Status}", "busybox-static"], check=False).stdout
    if not BUSYBOX.exists() or "install ok installed" not in static:
        skip("busybox-static is not installed (the image is its one static binary)")
    return podman


def plugins_in_namespace(bin_dir: Path, plugins: dict[str, str | Path], ns: Namespace) -> None:
    """Writes into bin_dir, for each name -> program, an executable `name` that runs program in
    ns's network namespace (and nothing else of it): a CNI_PATH entry for a runtime that runs in
    the host while the node under test is a namespace."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, program in plugins.items():
        wrapper = bin_dir / name
        wrapper.write_text(f"#!/bin/sh\nexec nsenter --net={ns.path} {program}\n")
        wrapper.chmod(0o755)


@dataclass
class Container:
    podman: "Podman"
    name: str

    def exec(self, *cmd: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        return self.podman.cmd("exec", self.name, *cmd, check=check, timeout=timeout)

    def inspect(self) -> dict:
        return json.loads(self.podman.cmd("inspect", self.name).stdout)[0]

    @property
    def netns(self) -> str:
        """The container's network namespace (a bind mount under /run/netns), as CNI_NETNS had it."""
        return self.inspect()["NetworkSettings"]["SandboxKey"]

    @property
    def container_id(self) -> str:
        """What podman passed as CNI_CONTAINERID (the infra/container id)."""
        return self.inspect()["Id"]

    def network(self, name: str) -> dict:
        return self.inspect()["NetworkSettings"]["Networks"][name]

    def ping(self, dest: str, count: int = 3, interval: float = 0.2, timeout: float = 30,
             wait_s: int = 2) -> subprocess.CompletedProcess:
        return self.exec("ping", "-c", str(count), "-i", str(interval), "-W", str(wait_s), dest,
                         check=False, timeout=timeout)

    def remove(self) -> None:
        self.podman.cmd("rm", "-f", "-t", "0", self.name, check=False)


class Podman:
    def __init__(self, topo: Topology,
                 cni_plugin_dirs: tuple[str | Path, ...] | list[str | Path] = ("/usr/lib/cni",),
                 name: str = "podman"):
        require_podman()
        self.topo = topo
        self.dir = topo.workdir / name
        self.root = self.dir / "root"
        self.runroot = self.dir / "runroot"
        self.tmpdir = self.dir / "tmp"
        self.network_dir = self.dir / "networks"
        for d in (self.root, self.runroot, self.tmpdir, self.network_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.conf_path = self.dir / "containers.conf"
        plugin_dirs = ", ".join(json.dumps(str(d)) for d in cni_plugin_dirs)
        self.conf_path.write_text(f"""# written by vxfed_harness.podman for one test
[containers]
default_ulimits = ["nproc={CONTAINER_ULIMIT}", "nofile={CONTAINER_ULIMIT}"]
log_driver = "k8s-file"

[network]
network_backend = "cni"
cni_plugin_dirs = [{plugin_dirs}]
network_config_dir = "{self.network_dir}"
default_network = "podman-unused-{topo.suffix}"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "{self.dir / 'events.log'}"
lock_type = "file"
tmp_dir = "{self.tmpdir}"
""")
        self.env = {"CONTAINERS_CONF": str(self.conf_path),
                    "CONTAINERS_STORAGE_CONF": str(self._storage_conf()),
                    "CONTAINERS_REGISTRIES_CONF": str(self._registries_conf())}
        self.containers: list[Container] = []
        topo.on_close(f"podman {name}", self.close)

    def _storage_conf(self) -> Path:
        p = self.dir / "storage.conf"
        p.write_text(f'[storage]\ndriver = "vfs"\nrunroot = "{self.runroot}"\ngraphroot = "{self.root}"\n')
        return p

    def _registries_conf(self) -> Path:
        p = self.dir / "registries.conf"
        p.write_text("unqualified-search-registries = []\n")
        return p

    def argv(self, *args: str) -> list[str]:
        return [
            "env", *[f"{k}={v}" for k, v in self.env.items()],
            "podman", "--root", str(self.root), "--runroot", str(self.runroot), "--tmpdir", str(self.tmpdir),
            "--storage-driver", "vfs", "--network-config-dir", str(self.network_dir),
            "--cgroup-manager", "cgroupfs", "--events-backend", "file", "--runtime", "runc", *args]

    def cmd(self, *args: str, check: bool = True, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
        return run(self.argv(*args), check=check, timeout=timeout, **kw)

    def stop_as_kubelet(self, *names: str, grace: float = 10) -> None:
        """Stops containers the way the kubelet does (containerd, runc): SIGTERM to each
        container's main process alone, SIGKILL after `grace` seconds; what else still runs in
        the container is SIGKILLed when it is taken down. Not `podman stop`: for a container
        without a PID namespace of its own (the DaemonSet's hostPID) podman signals every
        process in it, and a bgpd that gets SIGTERM sends its peers a Cease, which ends their
        graceful restart: the reflector dropped the node's block for ~6 s (issue 37 item 15)."""
        running = [n for n in names if self.cmd("kill", "--signal", "TERM", n, check=False).returncode == 0]
        deadline = time.monotonic() + grace
        for n in running:
            left = max(0.1, deadline - time.monotonic())
            try:
                self.cmd("wait", n, check=False, timeout=left)
            except subprocess.TimeoutExpired:
                self.cmd("kill", "--signal", "KILL", n, check=False)
        # The rest of each container (FRR's daemons under frr-node.sh) gets SIGKILL, as runc's
        # delete does to a container that shares the host's PIDs.
        self.cmd("stop", "--time", "0", *names, check=False, timeout=60)

    def restart_as_kubelet(self, name: str, grace: float = 10) -> None:
        """A container restart as the kubelet does it: stop_as_kubelet, then start."""
        self.stop_as_kubelet(name, grace=grace)
        self.cmd("start", name)

    # -- images --
    def import_busybox(self, image: str = DEFAULT_IMAGE) -> str:
        """A one-binary image: busybox-static with its applets as links, /etc for ping and
        names; imported with `tar | podman import` (no registry)."""
        rootfs = self.dir / "busybox-rootfs"
        (rootfs / "bin").mkdir(parents=True, exist_ok=True)
        for d in ("etc", "proc", "sys", "dev", "tmp", "run", "var"):
            (rootfs / d).mkdir(exist_ok=True)
        shutil.copy2(BUSYBOX, rootfs / "bin" / "busybox")
        for applet in BUSYBOX_APPLETS:
            link = rootfs / "bin" / applet
            if not link.exists():
                link.symlink_to("busybox")
        (rootfs / "etc" / "passwd").write_text("root:x:0:0:root:/:/bin/sh\n")
        (rootfs / "etc" / "group").write_text("root:x:0:\n")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(self.argv("import", "--quiet", "--change", "CMD=/bin/sh", "-", image),
                             stdin=tar.stdout, capture_output=True, text=True, timeout=120)
        tar.stdout.close()
        tar.wait()
        if imp.returncode != 0:
            raise RuntimeError(f"podman import failed: {imp.stderr}")
        log(f"podman: imported {image} ({imp.stdout.strip()[:12]})")
        return image

    # -- networks --
    def add_network(self, conflist: dict) -> Path:
        """Writes the CNI conflist podman reads for `--network <name>`."""
        path = self.network_dir / f"{conflist['name']}.conflist"
        path.write_text(json.dumps(conflist, indent=2))
        return path

    # -- containers --
    def run_container(self, name: str, image: str = DEFAULT_IMAGE, network: Optional[str] = None,
                      mac: Optional[str] = None, ip: Optional[str] = None, command: tuple[str, ...] = ("sleep", "3600"),
                      check: bool = True, extra: tuple[str, ...] = ()) -> Container | subprocess.CompletedProcess:
        """`podman run -d`; returns the Container, or with check=False the failed command's result."""
        args = ["run", "-d", "--name", name]
        if network:
            args += ["--network", network]
        if mac:
            args += ["--mac-address", mac]
        if ip:
            args += ["--ip", ip]
        args += list(extra) + [image, *command]
        r = self.cmd(*args, check=False, timeout=180)
        if r.returncode != 0:
            if check:
                raise RuntimeError(f"podman run {name} failed ({r.returncode}): {r.stderr.strip()}")
            return r
        c = Container(self, name)
        self.containers.append(c)
        return c

    def close(self) -> None:
        """Removes every container (their CNI DEL runs now, while the node's daemons still
        do), then the storage."""
        if not self.root.exists():
            return
        self.cmd("rm", "-a", "-f", "-t", "0", check=False, timeout=180)
        # vfs storage is plain directories; nothing is mounted below root once containers are gone.
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
                  if line.split()[1].startswith(str(self.dir))]
        for m in sorted(mounts, key=len, reverse=True):
            run(["umount", "-l", m], check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
