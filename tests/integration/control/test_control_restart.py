#!/usr/bin/env python3
"""vxfedd + vxfed-dataplane: restarts of either side converge to identical tables.

Topology (namespaces this test creates, removed at exit):
  node netns: vxfed-dataplane (af_packet uplink up0 <-veth MTU 9000-> up1 in the peer netns)
              four pod ports vxfcA1.. (host ends of veths whose other ends sit in pod netns)
  vxfedd runs in the node netns too; both sockets live in this test's work directory.

Steps:
  1. two networks (red from the pool, blue pinned to VNI 5000, a static route on red),
     four endpoints attached over the API (vxfedctl attach = the CNI plugin's AttachEndpoint);
  2. kill -9 vxfedd and restart it: same VNIs, same endpoints, and the dataplane's tables
     (DumpTables) identical to before;
  3. restart vxfed-dataplane: vxfedd replays the snapshot; tables identical again. The time
     from the new dataplane's API socket appearing to the replayed tables is printed;
  4. kill -9 vxfed-dataplane and restart it: replayed again;
  5. hand-over: a second vxfedd and dataplane on the same sockets and state dir stand by while
     the first pair serves, SIGTERM to the first pair, the second serves the same VNIs,
     endpoints and tables (the time from the SIGTERM to the tables in force is printed).
Generations only go forward: after every restart of either side the dataplane's generation is
higher than before it (a restarted vxfedd continues from the dataplane's).
"""

from __future__ import annotations

import json
import subprocess
import time

import vxfed_harness as t
from vxfed_harness import vxfedd
from vxfed_harness.dataplane import Dataplane, DataplaneLaunch, canonical_tables

VTEP = "198.18.0.1"
PEER_VTEP = "198.18.0.2"
UNDERLAY_MTU = 9000

ENDPOINTS = [  # container id, network, ip, mac
    ("ctr-red-1", "red", "10.244.1.11", "02:00:0a:f4:01:0b"),
    ("ctr-red-2", "red", "10.244.1.12", "02:00:0a:f4:01:0c"),
    ("ctr-blue-1", "blue", "10.244.2.11", "02:00:0a:f4:02:0b"),
    ("ctr-blue-2", "blue", "10.244.2.12", "02:00:0a:f4:02:0c"),
]



class Control:
    """vxfedd and vxfed-dataplane in the node namespace; socket and state dir given to vxfedd
    on its command line (over the config's defaults)."""

    def __init__(self, topo: t.Topology, node: t.Namespace):
        self.topo = topo
        self.node = node
        t.require_binary("control/vxfedd")
        t.require_binary("control/vxfedctl")
        t.require_binary("dataplane/vxfed-dataplane")
        self.dp_socket = topo.workdir / "dp.sock"
        self.socket = topo.workdir / "run" / "vxfedd.sock"
        self.dataplane = Dataplane(node, DataplaneLaunch(
            file_prefix=f"vxctl{topo.suffix}", api_socket=self.dp_socket, vtep_ip=VTEP, uplink_iface="up0",
            mtu=UNDERLAY_MTU))
        cfg = vxfedd.config("node-a1", VTEP, "cluster-a", ["10.244.0.0/16"], self.dp_socket, uplink="up0",
                            underlay_mtu=UNDERLAY_MTU, log_level=None,
                            dataplane={"reconnect_min_ms": 50, "reconnect_max_ms": 500},
                            vni={"pools": [{"name": "federation", "ranges": ["1000-2000"]}]},
                            networks=[{"name": "red", "subnet": "10.244.1.0/24",
                                       "static_routes": [{"prefix": "10.245.1.0/24", "vteps": [PEER_VTEP]}]},
                                      {"name": "blue", "subnet": "10.244.2.0/24", "vni": 5000}])
        self.daemon = vxfedd.Vxfedd(node, topo.workdir / "vxfedd.yaml", self.socket, cfg,
                                    args=["--state-dir", str(topo.workdir / "state"), "--socket", str(self.socket),
                                          "--log-level", "debug"])

    # -- processes --
    def start_daemon(self) -> None:
        self.daemon.start(wait=False)
        t.wait_until(lambda: self.ctl("status", check=False).returncode in (0, 4), 30, "vxfedd's API",
                     self.daemon.check_alive)

    def start_dataplane(self) -> float:
        self.dataplane.start(timeout=60)
        return time.monotonic()

    # -- clients --
    def ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.daemon.ctl(*args, check=check, timeout=30)

    def ctl_json(self, *args: str) -> dict:
        return json.loads(self.ctl("--json", *args).stdout)

    def dump(self) -> dict:
        out = t.run([str(self.daemon.ctl_program), "--json", "dump-dataplane", "--dataplane-socket",
                     str(self.dp_socket)], timeout=30)
        return json.loads(out.stdout)

    def wait_ready(self, timeout: float = 60) -> None:
        t.wait_for(lambda: self.ctl("status", check=False).returncode == 0, timeout,
                   "vxfedd to report the dataplane ready")

    def wait_all_in_dataplane(self, timeout: float = 60) -> None:
        def done() -> bool:
            eps = self.ctl_json("endpoints")["endpoints"]
            return len(eps) == len(ENDPOINTS) and all(e["in_dataplane"] for e in eps)
        t.wait_until(done, timeout, "every endpoint in the dataplane", self.dataplane.check_alive)


def state_of(c: Control) -> dict:
    vnis = {v["network"] or f'held-{v["vni"]}': v["vni"] for v in c.ctl_json("vnis")["vnis"]}
    eps = {f'{e["container_id"]}/{e["ifname"]}': (e["network"], e["ip"], e["mac"], e["host_iface"], e["vni"])
           for e in c.ctl_json("endpoints")["endpoints"]}
    return {"vnis": vnis, "endpoints": eps}


def assert_went_forward(before: int, after: int, what: str) -> int:
    assert after > before, f"generation went from {before} to {after} across {what}: generations only go forward"
    t.log(f"{what}: generation {before} -> {after}")
    return after


def main() -> None:
    t.require_root()
    for prog in ("ip",):
        t.require_program(prog)
    with t.Topology("ctlrs") as topo:
        node = topo.netns("node")
        peer = topo.netns("peer")
        c = Control(topo, node)
        topo.veth(node, "up0", peer, "up1", mtu=UNDERLAY_MTU)
        peer.run(f"ip addr add {PEER_VTEP}/24 dev up1")
        node.run("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        ifaces = {}
        for i, (cid, network, ip, mac) in enumerate(ENDPOINTS):
            pod = topo.netns(f"p{i}")
            host_iface = f"vxfc{topo.suffix}{i}"[:15]
            topo.veth(pod, "net1", node, host_iface, mtu=UNDERLAY_MTU)
            pod.run(f"ip link set net1 address {mac} mtu {UNDERLAY_MTU - 50}")
            ifaces[cid] = host_iface
        c.daemon.check_config()
        c.start_dataplane()
        c.start_daemon()
        c.wait_ready()
        for cid, network, ip, mac in ENDPOINTS:
            c.ctl("attach", cid, "--network", network, "--ip", ip, "--mac", mac, "--host-iface", ifaces[cid])
        c.wait_all_in_dataplane()
        before = state_of(c)
        dump_before = c.dump()
        tables_before = canonical_tables(dump_before)
        t.log(f"state: {json.dumps(before['vnis'])}; dataplane has {len(tables_before['networks'])} networks, "
              f"{len(tables_before['endpoints'])} endpoints, {len(tables_before['routes'])} routes")
        assert len(tables_before["networks"]) == 2, tables_before
        assert len(tables_before["endpoints"]) == len(ENDPOINTS), tables_before
        assert len(tables_before["routes"]) == 1, tables_before
        assert before["vnis"]["blue"] == 5000 and 1000 <= before["vnis"]["red"] <= 2000, before
        # Idempotent ADD and refused conflicting ADD.
        cid, network, ip, mac = ENDPOINTS[0]
        c.ctl("attach", cid, "--network", network, "--ip", ip, "--mac", mac, "--host-iface", ifaces[cid])
        conflict = c.ctl("attach", cid, "--network", network, "--ip", "10.244.1.99", "--mac", mac,
                         "--host-iface", ifaces[cid], check=False)
        assert conflict.returncode == 1 and "ALREADY_EXISTS" in conflict.stderr, conflict

        # --- kill -9 vxfedd and restart it ---
        generation = int(dump_before["generation"])
        c.daemon.kill()
        # The dataplane keeps forwarding on its tables while vxfedd is gone.
        assert canonical_tables(c.dump()) == tables_before, "dataplane tables changed while vxfedd was down"
        c.start_daemon()
        c.wait_ready()
        c.wait_all_in_dataplane()
        after = state_of(c)
        assert after == before, f"state changed across kill -9:\nbefore {before}\nafter  {after}"
        dump_after = c.dump()
        tables_after = canonical_tables(dump_after)
        assert tables_after == tables_before, \
            f"dataplane tables differ after vxfedd restart:\nbefore {tables_before}\nafter  {tables_after}"
        generation = assert_went_forward(generation, int(dump_after["generation"]), "vxfedd kill -9")
        t.log("kill -9 vxfedd + restart: same VNIs, same endpoints, identical dataplane tables")

        # --- restart the dataplane: vxfedd replays everything ---
        c.dataplane.stop(timeout=30)
        t.wait_for(lambda: c.ctl("status", check=False).returncode == 4, 30, "vxfedd to notice the dataplane left")
        socket_up = c.start_dataplane()
        replayed_at = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if canonical_tables(c.dump()) == tables_before:
                    replayed_at = time.monotonic()
                    break
            except Exception:  # the dataplane may still be starting its API
                pass
            time.sleep(0.02)
        assert replayed_at is not None, "tables were not replayed to the restarted dataplane"
        c.wait_ready()
        c.wait_all_in_dataplane()
        generation = assert_went_forward(generation, int(c.dump()["generation"]), "dataplane restart")
        log = c.daemon.log()
        sync_lines = [line for line in log.splitlines() if "applied snapshot" in line]
        t.log(f"dataplane restart: tables replayed {1000 * (replayed_at - socket_up):.0f} ms after its API socket "
              f"appeared (vxfedd: '{sync_lines[-1].split('] ')[-1] if sync_lines else '?'}')")
        print(f"REPLAY_MS {1000 * (replayed_at - socket_up):.1f}")
        # --- kill -9 the dataplane and restart it ---
        c.dataplane.kill()
        t.wait_for(lambda: c.ctl("status", check=False).returncode == 4, 30, "vxfedd to notice the dataplane died")
        c.start_dataplane()
        c.wait_ready()
        c.wait_all_in_dataplane()
        dump_after = c.dump()
        assert canonical_tables(dump_after) == tables_before, "tables not replayed after kill -9 of the dataplane"
        generation = assert_went_forward(generation, int(dump_after["generation"]), "dataplane kill -9")
        # Detach is idempotent; unknown endpoints are fine.
        c.ctl("detach", ENDPOINTS[0][0])
        c.ctl("detach", ENDPOINTS[0][0])
        t.wait_for(lambda: len(canonical_tables(c.dump())["endpoints"]) == len(ENDPOINTS) - 1, 30,
                   "the detached endpoint to leave the dataplane")
        hand_over(c, topo, node)


def hand_over(c: Control, topo: t.Topology, node: t.Namespace) -> None:
    """Make-before-break (a rolling update with maxSurge): a second vxfedd and dataplane on the
    same sockets and state dir stand by while the first pair serves; SIGTERM to the first pair;
    the second serves the same state and tables."""
    before = state_of(c)
    tables_before = canonical_tables(c.dump())
    new_dp = Dataplane(node, DataplaneLaunch(
        file_prefix=f"vxctn{topo.suffix}", api_socket=c.dp_socket, vtep_ip=VTEP, uplink_iface="up0",
        mtu=UNDERLAY_MTU), name="dp-next")
    new_dp.proc = node.spawn(new_dp.launch.argv(new_dp.program), name="dp-next")
    new_daemon = vxfedd.Vxfedd(node, c.daemon.config_path, c.socket, None, name="vxfedd-next", args=c.daemon.args)
    new_daemon.proc = node.spawn([str(new_daemon.program), "--config", str(c.daemon.config_path), "--foreground",
                                  *c.daemon.args], name="vxfedd-next")
    for p, what in ((new_dp, "dataplane"), (new_daemon, "vxfedd")):
        t.wait_for(lambda: "standing by" in p.log() or p.proc.poll() is not None, 60, f"the next {what} standing by")
        assert p.proc.poll() is None, p.log()[-2000:]
    c.ctl("status")  # the first vxfedd still answers, its dataplane ready
    assert state_of(c) == before
    t0 = time.monotonic()
    c.daemon.proc.terminate()
    c.dataplane.proc.terminate()
    t.wait_for(lambda: "API listening" in new_dp.log(), 30, "the next dataplane serving", interval=0.005)
    t.wait_for(lambda: _tables_or_none(c) == tables_before, 30, "the tables in the next dataplane", interval=0.005)
    took = time.monotonic() - t0
    assert c.daemon.proc.wait(timeout=15) == 0 and c.dataplane.proc.wait(timeout=15) == 0
    c.daemon.stopped = c.dataplane.stopped = True
    c.daemon, c.dataplane = new_daemon, new_dp
    c.wait_ready()
    assert state_of(c) == before, "state changed across the hand-over"
    # Both processes are new: the generation starts again, as on a node's reboot (the rule that
    # generations only go forward holds while either side lives on).
    assert int(c.dump()["generation"]) >= 1
    t.log(f"hand-over (both stood by, then SIGTERM to both old ones): the tables in force in the next "
          f"dataplane {took * 1000:.0f} ms after the SIGTERM")
    print(f"HANDOVER_MS {took * 1000:.1f}")


def _tables_or_none(c: Control):
    try:
        return canonical_tables(c.dump())
    except Exception:  # noqa: BLE001 - the next dataplane may not answer yet
        return None


if __name__ == "__main__":
    t.main_wrapper(main)
