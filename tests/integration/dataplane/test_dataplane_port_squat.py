#!/usr/bin/env python3
"""A local process that takes the VXLAN port reads none of the tenants' traffic (docs/security.md).

An unprivileged process (uid 65534) in node A's namespace binds UDP VTEP_A:4789 before the
dataplane starts, so the dataplane's claim finds the port taken. Then, on the forwarder topology
(pod B behind the kernel's vxlan device sends to pod A behind vxfed-dataplane):
1. pod B pings pod A 20 times: every ping is answered through the dataplane, and the squatter
   reads none of the VXLAN datagrams (the uplink's tc drop sees them first); GetStatus says
   `vxlan_port: taken`, `uplink_kernel_drop: attached`, scope `all`, pinned.
2. The squatter leaves: the dataplane holds the port again within 1 s (`claimed`).
3. The dataplane is killed (-9) and a squatter binds the free port at once; pod B's pings go on
   arriving at node A with no dataplane there: the pinned drop keeps every one from the squatter.
4. A new dataplane takes the pinned drop over, forwards again, and takes the port back within
   1 s of the squatter leaving.
The drop's pins live in a bpffs of the test's own (--uplink-drop-pin-root), removed at the end.
"""

import subprocess
import tempfile
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d

SQUATTER = f"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("{d.VTEP_A}", 4789))
print("bound uid", __import__("os").getuid(), flush=True)
n = 0
while True:
    s.recv(65536)
    n += 1
    print("received", n, flush=True)
"""


def start_squatter(f: d.ForwarderTopology, name: str) -> subprocess.Popen:
    """The squatter as uid 65534 (nobody) in node A; waits until it holds the port."""
    proc = f.node_a.spawn(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           "/usr/bin/python3", "-c", SQUATTER], name=name)
    t.wait_for(lambda: "bound uid 65534" in f.topo.log_of_process(proc) or proc.poll() is not None, 10,
             "the squatter binding the VXLAN port")
    assert proc.poll() is None, "the squatter could not bind the port:\n" + f.topo.log_of_process(proc)
    return proc


def received(f: d.ForwarderTopology, proc: subprocess.Popen) -> int:
    return f.topo.log_of_process(proc).count("received ")


def stop_squatter(proc: subprocess.Popen) -> float:
    """Kills it; returns the moment it was gone (monotonic)."""
    proc.kill()
    proc.wait(timeout=5)
    return time.monotonic()


def seconds_until_claimed(f: d.ForwarderTopology, since: float) -> float:
    t.wait_for(lambda: f.status().get("vxlan_port") == "claimed", 5, "the dataplane taking the port back")
    return time.monotonic() - since


def main() -> None:
    t.require_root()
    t.require_program("setpriv")
    with t.Topology("dpsquat") as topo:
        pin_root = tempfile.mkdtemp(prefix="vxfed-squat-bpffs-")
        t.run(["mount", "-t", "bpf", "bpf", pin_root])
        topo.on_close("bpffs", lambda: (t.run(["umount", pin_root], check=False),
                                        t.run(["rmdir", pin_root], check=False)))
        f = d.ForwarderTopology(topo)
        f.build()
        # As on a Kubernetes node, the VTEP is the node's own address: the node's stack takes
        # VXLAN to it, so a socket on the port would be handed the datagrams.
        f.node_a.run(f"ip addr add {d.VTEP_A}/24 dev up0")
        squatter = start_squatter(f, "squatter1")
        f.start(extra=["--uplink-drop-pin-root", pin_root])
        f.send_snapshot(d.tables(generation=1))
        f.wait_reachable()

        st = f.status()
        t.log(f"with the squatter there first: vxlan_port={st.get('vxlan_port')} "
              f"uplink_kernel_drop={st.get('uplink_kernel_drop')} scope={st.get('uplink_kernel_drop_scope')} "
              f"pinned={st.get('uplink_kernel_drop_pinned')}")
        assert st.get("vxlan_port") == "taken", st
        assert st.get("uplink_kernel_drop") == "attached", st
        assert st.get("uplink_kernel_drop_scope") == "all", st
        assert st.get("uplink_kernel_drop_pinned") is True, st

        # 1. Traffic flows; the squatter reads none of it.
        r = f.pod_b.ping(d.POD_A, count=20)
        assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr
        got = received(f, squatter)
        t.log(f"pod B -> pod A: 20 pings answered; the squatter read {got} VXLAN datagrams")
        assert got == 0, f"the squatter read {got} of our datagrams:\n" + topo.log_of_process(squatter)

        # 2. It leaves: the port is ours again within 1 s.
        took = seconds_until_claimed(f, stop_squatter(squatter))
        t.log(f"the port claimed {took:.2f} s after the squatter left")
        assert took <= 1.0, f"claimed only after {took:.2f} s"

        # 3. The dataplane crashes; a squatter takes the port at once; VXLAN keeps arriving.
        f.dataplane.kill()
        squatter = start_squatter(f, "squatter2")
        udp_in = lambda: f.node_a.nstat("UdpInDatagrams", "UdpInErrors", "UdpNoPorts")
        rx = lambda: int(f.node_a.run("cat /sys/class/net/up0/statistics/rx_packets").stdout)
        rx0, udp0 = rx(), udp_in()
        r = f.pod_b.ping(d.POD_A, count=10, timeout=60)
        assert " 0 received" in r.stdout, "answered with no dataplane?\n" + r.stdout
        arrived = rx() - rx0
        got = received(f, squatter)
        t.log(f"no dataplane: 10 pings from pod B, {arrived} frames arrived on node A's uplink, the squatter "
              f"read {got}; node A's UDP input {udp0} -> {udp_in()}")
        assert arrived >= 10, f"the pings never reached node A ({arrived} frames): the test proves nothing"
        assert got == 0, f"the squatter read {got} datagrams while no dataplane ran:\n" + topo.log_of_process(squatter)

        # 4. A new dataplane takes the pinned drop over and the port back.
        f.start(extra=["--uplink-drop-pin-root", pin_root])
        f.send_snapshot(d.tables(generation=1))
        f.wait_reachable()
        assert "took over the link pinned" in f.dataplane.log(), f.dataplane.log()[-3000:]
        r = f.pod_b.ping(d.POD_A, count=5)
        assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr
        assert received(f, squatter) == 0, topo.log_of_process(squatter)
        took = seconds_until_claimed(f, stop_squatter(squatter))
        t.log(f"after the restart: the port claimed {took:.2f} s after the squatter left")
        assert took <= 1.0, f"claimed only after {took:.2f} s"
        rc, _ = f.stop()
        assert rc == 0, rc
        # Removing the pins is how an operator lifts the drop (docs/security.md).
        t.run(["rm", "-r", f"{pin_root}/uplink-drop"])
    print("test_dataplane_port_squat: OK")


if __name__ == "__main__":
    t.main_wrapper(main)
