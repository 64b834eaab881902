#!/usr/bin/env python3
"""The DaemonSet's vxfed-dataplane container from the built image, run by podman as the kubelet
would: the manifest's command, env, capabilities (all dropped, the listed ones added, no new
privileges), host network (here: node A's namespace of the forwarder topology,
harness/vxfed_harness/forwarder.py) and host PID, the run-vxfed volume as a host directory.
Substituted for this machine only: the uplink interface (eth1 -> up0), the lcores (2 CPUs for
control + 2 workers: --lcores 0@0,1@1,2@1) and the memory (no hugepages here: --no-huge
instead of --in-memory; the hugepages volume is not mounted).

The test plays vxfedd: it sends the tables through the socket on the shared volume with
vxfed-dpctl from the host, again whenever a new dataplane's socket appears (as vxfedd does on
reconnect). Measured and printed: container start (podman start of the created container) -> pod A reaches pod B (behind
the kernel's vxlan device on node B); the forwarding outage (longest gap between the echo
replies of a 100 Hz ping) of `podman restart` and of a simulated rolling update (stop the old
container, run one from the next image reference with the same volume).

Needs the image: VXFED_IMAGE (scripts/test.sh builds it with scripts/build-image.sh and sets
it); its io.vxfed.content-id label must match this build's files (a stale image is refused)."""

import hashlib
import json
import os
import re
import signal
import subprocess
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d
from vxfed_harness import manifests as m
from vxfed_harness.podman import Podman, require_podman

SUBST_IFACE = {"iface=eth1": "iface=up0"}
LCORES = ["--lcores", "0@0,1@1,2@1"]
REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from", re.M)


def content_id() -> str:
    """scripts/build-image.sh's io.vxfed.content-id of this build: sha256 of "PATH SHA256" lines."""
    lines = []
    for path, src in m.image_layout().items():
        lines.append(f"{path} {hashlib.sha256(src.read_bytes()).hexdigest()}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def dataplane_container() -> tuple[dict, dict, dict]:
    docs = m.load_all()
    cms = m.config_maps(docs)
    for doc in docs:
        if doc.body.get("kind") == "DaemonSet":
            for spec, c, _ in m.pod_containers(doc.body):
                if c["name"] == "vxfed-dataplane":
                    return spec, c, cms
    raise AssertionError("deploy/: no DaemonSet container vxfed-dataplane")


def podman_args(spec: dict, c: dict, node_ns: str, run_dir, prefix: str) -> tuple[list[str], list[str]]:
    """(podman run options, the container's command) for the manifest's container."""
    fields = dict(m.NODE_FIELDS, **{"status.hostIP": d.VTEP_A})
    env = m.container_env(c, "vxfed-system", {}, fields)
    argv = m.container_argv(c, env)
    out = []
    for a in argv:
        if a == "--in-memory":
            out += ["--no-huge", "-m", "1024", "--no-pci", "--file-prefix", prefix]
            continue
        for old, new in SUBST_IFACE.items():
            a = a.replace(old, new)
        out.append(a)
    assert out[0] == "/opt/vxfed/bin/vxfed-dataplane", out
    out[1:1] = LCORES
    sec = c.get("securityContext") or {}
    caps = sec.get("capabilities") or {}
    args = ["--network", f"ns:{node_ns}"] if spec.get("hostNetwork") else []
    if spec.get("hostPID"):
        args += ["--pid", "host"]
    if "ALL" in caps.get("drop", []):
        args += ["--cap-drop", "all"]
    for cap in caps.get("add", []):
        args += ["--cap-add", cap]
    if sec.get("allowPrivilegeEscalation") is False:
        args += ["--security-opt", "no-new-privileges"]
    assert not sec.get("privileged"), "the manifest's dataplane is privileged"
    mounts = {v["name"]: v["mountPath"] for v in c.get("volumeMounts", [])}
    args += ["-v", f"{run_dir}:{mounts['run-vxfed']}"]
    for k, v in env.items():
        args += ["--env", f"{k}={v}"]
    return args, out


def main() -> None:
    t.require_root()
    require_podman()
    image = os.environ.get("VXFED_IMAGE")
    if not image:
        t.skip("VXFED_IMAGE is not set (scripts/test.sh builds the image and sets it)")
    dpctl = t.require_binary("dataplane/runtime/vxfed-dpctl")
    spec, c, _ = dataplane_container()
    labels = json.loads(t.run(["podman", "image", "inspect", image]).stdout)[0].get("Labels") or {}
    want = content_id()
    assert labels.get("io.vxfed.content-id") == want, (
        f"{image} was built from other files than this build (content-id {labels.get('io.vxfed.content-id')}, "
        f"build {want}): run scripts/build-image.sh")
    with t.Topology("dppm") as topo:
        pm = Podman(topo)
        archive = topo.workdir / "image.tar"
        t0 = time.monotonic()
        t.run(["podman", "save", "--format", "docker-archive", "-o", str(archive), image], timeout=300)
        pm.cmd("load", "-q", "-i", str(archive), timeout=300)
        archive.unlink()
        t.log(f"image {image} copied into the test's podman storage in {time.monotonic() - t0:.1f} s")

        f = d.ForwarderTopology(topo)
        f.build()
        run_dir = topo.workdir / "run-vxfed"
        run_dir.mkdir()
        socket = run_dir / "dataplane.sock"
        prefix = f"dppm{topo.suffix}"
        args, cmd = podman_args(spec, c, f.node_a.path, run_dir, prefix)
        t.log("podman run " + " ".join(args) + f" {image} " + " ".join(cmd))

        def dp(*a: str, check: bool = True) -> subprocess.CompletedProcess:
            return t.run([str(dpctl), "--socket", str(socket), *a], check=check, timeout=30)

        snapshot = topo.workdir / "snapshot.json"
        snapshot.write_text(json.dumps(d.tables(generation=1)))

        def until_forwarding(start: float, what: str) -> float:
            t.wait_for(lambda: socket.exists() and dp("status", check=False).returncode == 0, 60,
                       f"{what}: the dataplane's API socket on the shared volume", interval=0.01)
            dp("snapshot", str(snapshot))
            t.wait_for(lambda: f.pod_a.run(["ping", "-n", "-c", "1", "-W", "0.2", d.POD_B], check=False).returncode == 0,
                       30, f"{what}: pod A -> pod B", interval=0.02)
            return time.monotonic() - start

        start = time.monotonic()
        pm.cmd("create", "--name", "dp-1", *args, image, *cmd, timeout=180)
        created = time.monotonic() - start
        start = time.monotonic()
        pm.cmd("start", "dp-1", timeout=60)
        first = until_forwarding(start, "start")
        t.log(f"container start -> forwarding: {first:.2f} s (podman create before it: {created:.2f} s)")
        r = f.pod_b.run(["ping", "-n", "-c", "5", "-i", "0.2", d.POD_A], check=False)
        assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout
        status = json.loads(dp("status").stdout)["status"]
        assert status["ready"] is True and int(status["ports"]) == 2, status

        def outage(what: str, action) -> float:
            """The longest gap between echo replies of a 100 Hz ping from pod A while action runs."""
            stream = f.pod_a.spawn(["ping", "-n", "-D", "-i", "0.01", "-W", "1", d.POD_B], name=f"ping-{what}")
            time.sleep(0.5)
            action()
            until_forwarding(time.monotonic(), what)
            time.sleep(0.5)
            stream.send_signal(signal.SIGINT)
            stream.wait(timeout=10)
            replies = [float(m.group(1)) for m in REPLY.finditer(topo.log_of_process(stream))]
            assert len(replies) > 50, topo.log_of_process(stream)[-2000:]
            gap = max(b - a for a, b in zip(replies, replies[1:]))
            t.log(f"{what}: longest gap between echo replies {gap:.3f} s ({len(replies)} replies)")
            return gap

        restart = outage("restart", lambda: pm.cmd("restart", "-t", "10", "dp-1", timeout=120))

        # A rolling update of this container: the old one stopped (SIGTERM, its grace period),
        # a new one from the next image with the same volume. The "next" image is this one
        # under another reference: the sequence is what is measured, not a change of version.
        nxt = "localhost/vxfed:next-" + topo.suffix
        pm.cmd("tag", image, nxt)

        # The new container is created first (on a node: the image pulled and unpacked before
        # the old pod goes; here also vfs storage's copy of the image, several seconds), so
        # the outage is the stop of the old and the start of the new.
        pm.cmd("create", "--name", "dp-2", *args, nxt, *cmd, timeout=180)

        def upgrade() -> None:
            t0 = time.monotonic()
            pm.cmd("stop", "-t", "10", "dp-1", timeout=60)
            code = json.loads(pm.cmd("inspect", "dp-1").stdout)[0]["State"]["ExitCode"]
            assert code == 0, f"the old dataplane exited {code} on SIGTERM"
            t1 = time.monotonic()
            pm.cmd("start", "dp-2", timeout=60)
            t.log(f"upgrade: podman stop {t1 - t0:.2f} s, podman start {time.monotonic() - t1:.2f} s")

        upgraded = outage("upgrade", upgrade)
        assert json.loads(dp("status").stdout)["status"]["ready"] is True
        log = pm.cmd("logs", "dp-2").stdout
        marks = [ln for ln in log.splitlines() if "mbuf pool" in ln or "API listening" in ln or "in force" in ln]
        t.log("new dataplane: " + " | ".join(ln[:60] for ln in marks))
        pm.cmd("stop", "-t", "10", "dp-2", timeout=60)
        code = json.loads(pm.cmd("inspect", "dp-2").stdout)[0]["State"]["ExitCode"]
        assert code == 0, f"the dataplane exited {code} on SIGTERM"
        assert not socket.exists(), "the API socket was left on the volume"
        t.log(f"figures: create_s={created:.2f} start_to_forwarding_s={first:.2f} restart_outage_s={restart:.2f} "
              f"upgrade_outage_s={upgraded:.2f}")


if __name__ == "__main__":
    t.main_wrapper(main)
