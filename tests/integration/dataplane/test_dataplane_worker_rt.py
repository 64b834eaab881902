#!/usr/bin/env python3
"""--worker-rt-priority (dataplane/runtime/worker_scheduling.hpp; issue 35): the workers run
SCHED_FIFO at that priority and the rest of the process stays ordinary; without
CAP_SYS_NICE the dataplane says so in its log and forwards on with ordinary workers. The
latency it buys under CPU load is measured by perf/latency/latency_suite.py --background-load
(docs/pod-ports.md, "A busy node")."""

import json
import os
from pathlib import Path

import vxfed_harness as t
from vxfed_harness import forwarder as d

SCHED_FIFO = 1


def thread_policies(pid: int) -> dict[int, tuple[str, int, int]]:
    """tid -> (name, scheduling policy, real-time priority) of each thread of pid."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()   # from field 3 (state) on
        out[int(task.name)] = ((task / "comm").read_text().strip(), int(fields[38]), int(fields[37]))
    return out


def forwards(f: d.ForwarderTopology) -> None:
    f.send_snapshot(d.tables(generation=1))
    f.wait_reachable()
    r = f.pod_a.ping(d.POD_B, count=5)
    assert r.returncode == 0, r.stdout


def main() -> None:
    t.require_root()
    with t.Topology("dprt") as topo:
        f = d.ForwarderTopology(topo, queues=2)
        f.build()

        f.start(extra=["--worker-rt-priority", "3"])
        forwards(f)
        threads = thread_policies(f.proc.pid)
        fifo = {tid: v for tid, v in threads.items() if v[1] == SCHED_FIFO}
        assert len(fifo) == 2, f"expected the 2 workers SCHED_FIFO, threads (name, policy, rt priority): {threads}"
        assert all(v[2] == 3 for v in fifo.values()), fifo
        assert threads[f.proc.pid][1] != SCHED_FIFO, "the main (control) thread must stay an ordinary thread"
        log = topo.log_of_process(f.proc)
        assert log.count("real-time, SCHED_FIFO priority 3") == 2, log
        t.log(f"--worker-rt-priority 3: workers {sorted(v[0] for v in fifo.values())} SCHED_FIFO 3, "
              f"the other {len(threads) - 2} threads ordinary; forwarding")
        f.dataplane.stop()

        # Without CAP_SYS_NICE (bounding set and inheritable dropped; root's RLIMIT_RTPRIO is 0):
        # a warning, ordinary workers, forwarding all the same.
        wrapper = topo.workdir / "no-sys-nice"
        wrapper.write_text("#!/bin/sh\nexec setpriv --bounding-set -sys_nice --inh-caps -sys_nice "
                           f"{f.dataplane.program} \"$@\"\n")
        wrapper.chmod(0o755)
        f.dataplane.program = wrapper
        f.dataplane.start()
        forwards(f)
        threads = thread_policies(f.proc.pid)
        assert not [v for v in threads.values() if v[1] == SCHED_FIFO], threads
        log = topo.log_of_process(f.proc)
        assert "not real-time: SCHED_FIFO priority 3: Operation not permitted (needs CAP_SYS_NICE" in log, log
        t.log("without CAP_SYS_NICE: 'not real-time' logged per worker, ordinary threads, forwarding")


if __name__ == "__main__":
    t.main_wrapper(main)
