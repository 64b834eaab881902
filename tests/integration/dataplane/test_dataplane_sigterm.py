#!/usr/bin/env python3
"""SIGTERM stops vxfed-dataplane cleanly: exit 0, final counters printed (matching the traffic
that went through), ports released, API socket removed. Tables come from --tables-file here
(stand-alone mode)."""

import json
import os
import re
import signal
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d


def main() -> None:
    t.require_root()
    with t.Topology("dpterm") as topo:
        f = d.ForwarderTopology(topo)
        f.build()
        tables = topo.workdir / "tables.json"
        tables.write_text(json.dumps(d.tables(generation=3)))
        f.start(tables_file=tables)
        st = f.status()
        assert st["ready"] is True and int(st["generation"]) == 3, st
        f.wait_reachable()
        r = f.pod_a.ping(d.POD_B, count=10)
        assert r.returncode == 0, r.stdout
        encap = d.vni_counters(f.counters())["encap_packets"]
        assert encap >= 10
        f.proc.send_signal(signal.SIGTERM)
        rc = f.proc.wait(timeout=15)
        log = topo.log_of("vxfed-dataplane")
        assert rc == 0, log
        assert "final counters" in log, log
        m = re.search(r"vni 100: encap (\d+) pkts", log)
        assert m and int(m.group(1)) >= encap, log
        assert re.search(r"port uplink queue 0: rx \d+ pkts", log), log
        assert re.search(r"pod port \d+ on hA released", log), log
        assert not os.path.exists(f.socket), "API socket left behind"
        # The pod port is gone: nothing forwards any more.
        assert f.pod_a.ping(d.POD_B, count=1).returncode != 0
        t.log("SIGTERM: exit 0, final counters printed, ports released")


if __name__ == "__main__":
    t.main_wrapper(main)
