#!/usr/bin/env python3
"""A second vxfed-dataplane started on the same API socket stands by, then takes over
(common/serving_lock.hpp; what a rolling update with the new pod started first does).

On the forwarder topology, for the uplink as our own sockets (--uplink-iface) and through
DPDK's net_af_packet (the DaemonSet's), with a 100 Hz ping from pod A to pod B throughout:
- the new dataplane starts while the old one forwards, logs that it stands by, and leaves
  the old one's socket alone (same inode, still answering); pod traffic is not duplicated;
- SIGTERM to a stand-by: exit 0, nothing taken, the old one still serves;
- SIGTERM to the old one: it exits 0 and the stand-by serves the socket within 0.5 s (printed),
  discards the uplink frames it queued meanwhile (copies the old one forwarded: none of them
  reaches pod A twice), and forwards once it gets the tables.
The outage printed is the longest gap between echo replies, with the tables sent by this
test as soon as the new socket answers (vxfedd does that within its 20 ms socket watch)."""

import re
import signal
import time
from pathlib import Path

import vxfed_harness as t
from vxfed_harness import forwarder as d
from vxfed_harness.dataplane import Dataplane, DataplaneLaunch

REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from.*?(DUP!)?$", re.M)


def launch(topo: t.Topology, f: d.ForwarderTopology, gen: str, pmd: bool) -> DataplaneLaunch:
    return DataplaneLaunch(file_prefix=f"vxto{topo.suffix}{gen}", api_socket=Path(f.socket), vtep_ip=d.VTEP_A,
                           uplink_iface="up0", uplink_pmd=pmd, queues=1, mtu=f.mtu)


def spawn(f: d.ForwarderTopology, dp: Dataplane, name: str):
    dp.proc = f.node_a.spawn(dp.launch.argv(dp.program), name=name)
    t.wait_for(lambda: "standing by" in dp.log() or dp.proc.poll() is not None, 60, f"{name} standing by")
    assert dp.proc.poll() is None, dp.log()[-2000:]


def socket_answers(dp: Dataplane) -> bool:
    return dp.dpctl("status", check=False).returncode == 0


def run(topo: t.Topology, pmd: bool) -> float:
    f = d.ForwarderTopology(topo)
    f.build()
    old = Dataplane(f.node_a, launch(topo, f, "a", pmd), name="dp-old")
    old.start()
    f.dataplane = old
    f.send_snapshot(d.tables(generation=1))
    f.wait_reachable()
    inode = Path(f.socket).stat().st_ino

    # A stand-by stopped before it served: the old one is untouched.
    early = Dataplane(f.node_a, launch(topo, f, "b", pmd), name="dp-early")
    spawn(f, early, "dp-early")
    early.proc.send_signal(signal.SIGTERM)
    assert early.proc.wait(timeout=15) == 0, early.log()[-2000:]
    assert "never served" in early.log(), early.log()[-2000:]
    assert Path(f.socket).stat().st_ino == inode and socket_answers(old), "a stand-by touched the old socket"

    stream = f.pod_a.spawn(["ping", "-n", "-D", "-i", "0.01", "-W", "1", d.POD_B], name="ping")
    new = Dataplane(f.node_a, launch(topo, f, "c", pmd), name="dp-new")
    spawn(f, new, "dp-new")
    time.sleep(1.0)   # both running: the old forwards, the new one's uplink queues copies
    assert Path(f.socket).stat().st_ino == inode and socket_answers(old), "the stand-by took the socket early"
    assert "API listening" not in new.log(), new.log()[-2000:]
    assert int(old.status()["generation"]) == 1

    t0 = time.monotonic()
    old.proc.send_signal(signal.SIGTERM)
    # (Not the socket's inode: the file system may give the new socket the old one's.)
    t.wait_for(lambda: "API listening" in new.log() and socket_answers(new), 10, "the stand-by serving the socket",
               interval=0.005)
    took = time.monotonic() - t0
    f.dataplane = new
    f.send_snapshot(d.tables(generation=2))
    assert old.proc.wait(timeout=15) == 0, old.log()[-2000:]
    f.wait_reachable()
    time.sleep(0.5)
    stream.send_signal(signal.SIGINT)
    stream.wait(timeout=10)
    out = topo.log_of_process(stream)
    replies = [(float(m.group(1)), bool(m.group(2))) for m in REPLY.finditer(out)]
    assert len(replies) > 100, out[-2000:]
    dups = sum(1 for _, dup in replies if dup)
    times = [ts for ts, _ in replies]
    gap = max(b - a for a, b in zip(times, times[1:]))
    m = re.search(r"took over .* after standing by ([0-9.]+) s \((\d+) stale uplink frame", new.log())
    assert m, new.log()[-2000:]
    mode = "net_af_packet" if pmd else "own sockets"
    t.log(f"{mode}: SIGTERM to the old -> the new one answering on the socket: {took * 1000:.0f} ms; "
          f"outage (longest gap between replies) {gap * 1000:.0f} ms; stale uplink frames discarded {m.group(2)}; "
          f"duplicated replies {dups}")
    assert dups == 0, f"{dups} duplicated echo replies: the stand-by forwarded copies"
    assert int(m.group(2)) > 0, "the stand-by's uplink queued nothing while the old one forwarded (no copies?)"
    assert took < 0.5, f"the take-over took {took:.3f} s"
    new.stop()
    return gap


def main() -> None:
    t.require_root()
    for pmd in (False, True):
        with t.Topology("dptake") as topo:
            run(topo, pmd)


if __name__ == "__main__":
    t.main_wrapper(main)
