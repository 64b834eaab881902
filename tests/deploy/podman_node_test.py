#!/usr/bin/env python3
"""A node of the DaemonSet under podman: its vxfed-dataplane and vxfedd containers from the
built image (VXFED_IMAGE: scripts/test.sh builds it and sets it; a stale image is refused),
run as the kubelet would (harness/vxfed_harness/daemonset_podman.py: the manifest's
commands, env, capabilities, host network and PID, the volumes as host directories; only the
uplink, lcores and memory substituted in the dataplane's), on node A of the forwarder
topology (harness/vxfed_harness/forwarder.py; pod B behind the kernel's vxlan on node B). vxfedd's configuration is the ConfigMap's with this node's facts: uplink
up0, the network fed-a on VNI 100 with a static route to node B's pods (no FRR container
here: BGP off; no federation store: no etcd), eBPF reconcile off (the host's bpffs is shared
with other tests).

Pod A is attached with `vxfedctl attach` (what the CNI plugin does on ADD). Checked: pod A
reaches pod B (the time from the containers' start printed); a restart of each container keeps
or restores forwarding; a simulated rolling update of the node as the DaemonSet's maxSurge
does it (the next image reference's containers started on the same volumes while the old ones
serve: both stand by; then the old ones stopped) keeps the VNI and the endpoint, and its
forwarding outage is at most 1 s (issue goal). Printed: each outage (longest gap between echo
replies of a 100 Hz ping), last as one `figures:` line, which docs/deploy.md's table cites."""

import json
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d
from vxfed_harness.ping_stream import PingStream
from vxfed_harness.podman import require_podman
from vxfed_harness.podman_node import PodmanNode, require_image

GATEWAY_MAC_100 = "02:76:78:00:00:64"   # vxfedd's gateway MAC of VNI 100 (common/net/vxlan.hpp)


def main() -> None:
    t.require_root()
    require_podman()
    image = require_image()
    with t.Topology("nodepm") as topo:
        archive = topo.workdir / "image.tar"
        t.run(["podman", "save", "--format", "docker-archive", "-o", str(archive), image], timeout=300)
        f = d.ForwarderTopology(topo)
        f.build()
        # vxfedd gives each network the gateway MAC of its VNI; node B's vxlan device answers to it.
        f.node_b.run(f"ip link set vxlan0 address {GATEWAY_MAC_100}")
        f.node_b.run(f"ip neigh replace {d.GATEWAY_A} lladdr {GATEWAY_MAC_100} dev vxlan0 nud permanent")

        node = PodmanNode(topo, f.node_a, "a", d.VTEP_A, image, archive)
        archive.unlink()
        pm = node.pm
        node.configure([{"name": "fed-a", "vni": d.VNI, "subnet": "10.244.0.0/16", "gateway": d.GATEWAY_A,
                         "static_routes": [{"prefix": "10.245.0.0/16", "vteps": [d.VTEP_B]}]}], ["10.244.0.0/16"])
        sock = node.socket
        ctl = node.ctl

        def forwarding(what: str, timeout: float = 60) -> None:
            t.wait_for(lambda: f.pod_a.run(["ping", "-n", "-c", "1", "-W", "0.2", d.POD_B], check=False).returncode == 0,
                       timeout, f"{what}: pod A -> pod B", interval=0.02)

        node.create(1)
        start = time.monotonic()
        node.start(1, wait=False)
        t.wait_for(lambda: sock.exists() and ctl("status", check=False).returncode in (0, 4), 60, "vxfedd's socket")
        ctl("attach", "podA", "--ifname", "eth0", "--network", "fed-a", "--ip", d.POD_A, "--mac", d.POD_A_MAC,
            "--host-iface", "hA")
        forwarding("start")
        t.log(f"node start (both containers) -> forwarding: {time.monotonic() - start:.2f} s (pod attached by hand)")
        r = f.pod_b.run(["ping", "-n", "-c", "5", "-i", "0.2", d.POD_A], check=False)
        assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout
        before = {"vnis": json.loads(ctl("--json", "vnis").stdout), "endpoints": json.loads(ctl("--json", "endpoints").stdout)}
        assert [e["ip"] for e in before["endpoints"]["endpoints"]] == [d.POD_A], before
        assert before["vnis"], before

        def outage(what: str, action) -> float:
            stream = PingStream(f.pod_a, d.POD_B, name=f"ping-{what}")
            time.sleep(0.5)
            action()
            forwarding(what)
            time.sleep(0.5)
            gap, _ = stream.stop(min_replies=51)
            t.log(f"{what}: longest gap between echo replies {gap:.3f} s")
            return gap

        vxfedd_restart = outage("vxfedd restart", lambda: pm.cmd("restart", "-t", "10", "vxfedd-1", timeout=120))
        dp_restart = outage("dataplane restart", lambda: pm.cmd("restart", "-t", "10", "dp-1", timeout=120))

        nxt = "localhost/vxfed:next-" + topo.suffix
        pm.cmd("tag", image, nxt)
        node.create(2, nxt)

        # The DaemonSet rolls with maxSurge 1, maxUnavailable 0: the new pod starts while the
        # old one serves; its dataplane and vxfedd stand by (common/serving_lock.hpp) with
        # their slow start done, and take over when the old pod's containers stop.
        logs = node.logs
        pm.cmd("start", "dp-2", "vxfedd-2", timeout=60)
        for name in ("dp-2", "vxfedd-2"):
            t.wait_for(lambda: "standing by" in logs(name), 60, f"{name} standing by")
        ctl("status")   # exit 0: the old vxfedd answers, its dataplane ready

        def upgrade() -> None:
            pm.cmd("stop", "-t", "10", "vxfedd-1", "dp-1", timeout=60)
            for name in ("vxfedd-1", "dp-1"):
                code = json.loads(pm.cmd("inspect", name).stdout)[0]["State"]["ExitCode"]
                assert code == 0, f"{name} exited {code} on SIGTERM"

        upgraded = outage("node upgrade", upgrade)
        assert "took over" in logs("dp-2"), logs("dp-2")[-2000:]
        assert upgraded <= 1.0, f"the node's upgrade stopped forwarding for {upgraded:.2f} s (goal: at most 1 s)"
        after = {"vnis": json.loads(ctl("--json", "vnis").stdout), "endpoints": json.loads(ctl("--json", "endpoints").stdout)}
        assert after["vnis"] == before["vnis"], (before["vnis"], after["vnis"])
        assert [e["ip"] for e in after["endpoints"]["endpoints"]] == [d.POD_A], after
        t.log(f"figures: vxfedd_restart_outage_s={vxfedd_restart:.2f} dataplane_restart_outage_s={dp_restart:.2f} "
              f"node_upgrade_outage_s={upgraded:.2f}")
        pm.cmd("stop", "-t", "10", "vxfedd-2", "dp-2", timeout=60)


if __name__ == "__main__":
    t.main_wrapper(main)
