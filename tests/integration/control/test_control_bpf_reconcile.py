#!/usr/bin/env python3
"""vxfedd reconciles the per-pod eBPF pins (bpf/) with its endpoints at start-up.

Real programs, real bpffs pins, real namespaces; vxfedd is the real daemon. Four pods get
their programs attached and pinned with vxfed-bpf (what the CNI plugin does on ADD):
  a: has an endpoint in vxfedd, namespace alive            -> kept, still attached
  b: no endpoint, attached before the grace period          -> removed
  c: has an endpoint, but its namespace was deleted         -> removed
  d: no endpoint, attached just now (a CNI ADD in flight)   -> kept (grace)
vxfedd is killed (-9) after the endpoints are attached, the pins are laid out, and vxfedd
is started again: the pins must be exactly {a, d}, and a's limits unchanged.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import vxfed_harness as t
from vxfed_harness import vxfedd

GRACE_S = 3
LIMIT = {"egressRate": 50_000_000, "egressBurst": 12_500_000}


def main() -> None:
    t.require_root()
    t.require_binary("control/vxfedd")
    t.require_binary("control/vxfedctl")
    bpf_tool = t.require_binary("bpf/vxfed-bpf")
    with t.Topology("bpfrec") as topo:
        pin_root = Path(f"/sys/fs/bpf/vxfed-test-bpfrec-{topo.suffix}")
        try:
            run_test(topo, bpf_tool, pin_root)
        finally:
            # Detach whatever is left (b/c if the test failed early), then drop the pin root.
            subprocess.run([str(bpf_tool), "--pin-root", str(pin_root), "reconcile"], capture_output=True)
            shutil.rmtree(pin_root, ignore_errors=True)


def run_test(topo: t.Topology, bpf_tool: Path, pin_root: Path) -> None:
    node = topo.netns("node")
    pods = {}
    for name in "abcd":
        pods[name] = topo.netns(f"pod{name}")
        topo.veth(node, f"hv{name}{topo.suffix}"[:15], pods[name], "eth0", mtu=1500)

    socket = topo.workdir / "vxfedd.sock"
    cfg = vxfedd.config("node-a1", "198.18.0.1", "cluster-a", ["10.244.0.0/16"], topo.workdir / "no-dataplane.sock",
                        socket=socket, state_dir=topo.workdir / "state", uplink="up0", underlay_mtu=None,
                        log_level=None, networks=[{"name": "red", "subnet": "10.244.1.0/24"}],
                        bpf={"pin_root": str(pin_root), "grace_seconds": GRACE_S})
    # vxfedd runs in the host's namespaces, as on a node: `ip netns exec` would give it a
    # fresh /sys without the bpffs mount that holds the pins.
    daemon = vxfedd.Vxfedd(topo.host, topo.workdir / "vxfedd.yaml", socket, cfg)
    ctl = lambda *args: daemon.ctl(*args, check=True)  # noqa: E731

    def start_vxfedd() -> None:
        """Starts vxfedd; returns once it serves (after its start-up reconcile)."""
        daemon.start(wait=False)
        t.wait_until(lambda: "serving" in daemon.log(), 20, f"vxfedd start {daemon.starts}", daemon.check_alive)

    start_vxfedd()
    for name, ip in (("a", "10.244.1.11"), ("c", "10.244.1.13")):
        ctl("attach", f"ctr-{name}", "--ifname", "eth0", "--network", "red", "--ip", ip,
            "--mac", f"02:00:0a:f4:01:{ord(name):02x}", "--host-iface", f"hv{name}{topo.suffix}"[:15])
    daemon.kill()

    def attach_pins(name: str) -> None:
        t.run([str(bpf_tool), "--pin-root", str(pin_root), "attach", "--netns", f"/run/netns/{pods[name].name}",
               "--ifname", "eth0", "--container-id", f"ctr-{name}", "--bandwidth", json.dumps(LIMIT)])

    for name in "abc":
        attach_pins(name)
    time.sleep(GRACE_S + 1)      # a, b and c are now older than the grace period
    attach_pins("d")
    t.run(["ip", "netns", "del", pods["c"].name])
    topo.namespaces.remove(pods["c"])

    def pinned() -> dict:
        out = t.run([str(bpf_tool), "--pin-root", str(pin_root), "list"]).stdout
        return {p["podKey"]: p for p in json.loads(out)}

    before = pinned()
    assert set(before) == {"ctr-a_eth0", "ctr-b_eth0", "ctr-c_eth0", "ctr-d_eth0"}, sorted(before)
    assert not before["ctr-c_eth0"]["netnsAlive"], before["ctr-c_eth0"]

    start_vxfedd()
    after = pinned()
    log = daemon.log()
    t.log(f"pins before {sorted(before)} after {sorted(after)}")
    assert set(after) == {"ctr-a_eth0", "ctr-d_eth0"}, f"pins after the restart: {sorted(after)}\n{log[-3000:]}"
    for key in ("ctr-a_eth0", "ctr-d_eth0"):
        assert after[key]["attached"] and after[key]["netnsAlive"], after[key]
        assert after[key] == before[key], f"{key} changed:\n{before[key]}\n{after[key]}"
    for key in ("ctr-b_eth0", "ctr-c_eth0"):
        assert f"removed the programs of {key}" in log, f"no removal logged for {key}:\n{log[-3000:]}"
    assert "keeping ctr-d_eth0" in log, log[-3000:]
    # a's filters are really still on its interface.
    filters = pods["a"].run("tc filter show dev eth0 egress").stdout
    assert "bpf" in filters, f"no eBPF filter on pod a's eth0 egress: {filters!r}"
    daemon.stop(timeout=10)


if __name__ == "__main__":
    t.main_wrapper(main)
