"""The DaemonSet's containers (deploy/vxfed-daemonset.yaml) as `podman create` arguments, the
way the kubelet would run them: the manifest's command with $(VAR) expanded from its env,
capabilities (all dropped, the listed ones added), no new privileges, host network (a node's
namespace here) and host PID, each volume mount from a host directory (read-only and
HostToContainer propagation as written). Substituted for the test machine, only in the
dataplane's command: the uplink interface, the lcores and the memory (no hugepages:
--no-huge instead of --in-memory).

- `containers()`: container name -> (pod spec, container), and the ConfigMaps.
- `image_content_id()`: scripts/build-image.sh's io.vxfed.content-id of this build's files.
- `podman_args(spec, container, node_ns, volumes, fields)`: (podman options, command).
"""

from __future__ import annotations

import hashlib
from typing import Dict, List, Tuple

from . import manifests as m

DATAPLANE_LCORES = ["--lcores", "0@0,1@1,2@1"]   # control + 2 workers on a 2-CPU machine


def containers() -> Tuple[Dict[str, Tuple[dict, dict]], dict]:
    docs = m.load_all()
    for doc in docs:
        if doc.body.get("kind") == "DaemonSet":
            return {c["name"]: (spec, c) for spec, c, _ in m.pod_containers(doc.body)}, m.config_maps(docs)
    raise AssertionError("deploy/: no DaemonSet")


def image_content_id() -> str:
    """sha256 of the "IMAGE_PATH SHA256" lines of deploy/image/layout's files, as build-image.sh labels it."""
    lines = [f"{path} {hashlib.sha256(src.read_bytes()).hexdigest()}\n" for path, src in m.image_layout().items()]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def dataplane_command(argv: List[str], uplink: str, file_prefix: str) -> List[str]:
    out = []
    for a in argv:
        if a == "--in-memory":
            out += ["--no-huge", "-m", "1024", "--no-pci", "--file-prefix", file_prefix]
            continue
        out.append(a.replace("iface=eth1", f"iface={uplink}"))
    out[1:1] = DATAPLANE_LCORES
    return out


def podman_args(spec: dict, c: dict, node_ns: str, volumes: Dict[str, str], fields: Dict[str, str],
                config_maps: dict, uplink: str = "up0", file_prefix: str = "vxfed") -> Tuple[List[str], List[str]]:
    """volumes: the manifest's volume name -> host directory, for every volume c mounts."""
    sec = c.get("securityContext") or {}
    caps = sec.get("capabilities") or {}
    assert not sec.get("privileged"), f"{c['name']} is privileged"
    args = ["--network", f"ns:{node_ns}"] if spec.get("hostNetwork") else []
    if spec.get("hostPID"):
        args += ["--pid", "host"]
    if "ALL" in caps.get("drop", []):
        args += ["--cap-drop", "all"]
    for cap in caps.get("add", []):
        args += ["--cap-add", cap]
    if sec.get("allowPrivilegeEscalation") is False:
        args += ["--security-opt", "no-new-privileges"]
    for v in c.get("volumeMounts", []):
        if v["name"] not in volumes:
            continue  # hugepages: none on the test machine (--no-huge)
        opts = ["ro"] if v.get("readOnly") else []
        if v.get("mountPropagation") == "HostToContainer":
            opts.append("rslave")
        args += ["-v", f"{volumes[v['name']]}:{v['mountPath']}" + (":" + ",".join(opts) if opts else "")]
    env = m.container_env(c, "vxfed-system", config_maps, fields)
    for k, v in env.items():
        args += ["--env", f"{k}={v}"]
    command = m.container_argv(c, env)
    if c["name"] == "vxfed-dataplane":
        command = dataplane_command(command, uplink, file_prefix)
    return args, command
