#!/usr/bin/env python3
"""20 parallel ADDs, then 20 DELs racing 20 more ADDs, for different containers: every call
succeeds, addresses are distinct, the state directory and vxfedd agree, nothing is corrupted
and, at the end, nothing is left."""

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import vxfed_harness as tl
from vxfed_harness.cni_bed import CniBed


def main():
    tl.require_root()
    with tl.Topology("cnipar") as topo:
        bed = CniBed(topo)
        bed.start_vxfedd()
        rt = bed.runtime
        conf = bed.conf("1.1.0")
        first = [(bed.pod(f"a{i}"), bed.cid(f"par-a{i}")) for i in range(20)]
        second = [(bed.pod(f"b{i}"), bed.cid(f"par-b{i}")) for i in range(20)]

        def add(pc):
            return rt.add(conf, pc[1], bed.netns_path(pc[0]), "eth0")

        def delete(pc):
            rt.delete(conf, pc[1], bed.netns_path(pc[0]), "eth0")

        with ThreadPoolExecutor(max_workers=20) as pool:
            results = list(pool.map(add, first))
        ips = [r["ips"][0]["address"] for r in results]
        assert len(set(ips)) == 20, ips
        assert len(bed.records()) == 20 and len(bed.endpoints()) == 20 and len(bed.ipam_reservations()) == 20
        tl.log("20 parallel ADDs ok")

        with ThreadPoolExecutor(max_workers=40) as pool:
            dels = [pool.submit(delete, pc) for pc in first]
            adds = [pool.submit(add, pc) for pc in second]
            for f in dels + adds:
                f.result()
        eps = {(e["container_id"], e["ifname"]) for e in bed.endpoints()}
        assert eps == {(c, "eth0") for _, c in second}, eps
        assert len(bed.records()) == 20 and len(bed.ipam_reservations()) == 20
        for name in bed.records():
            json.loads((Path(bed.state_dir) / "attachments" / name).read_text())  # every record parses
        left = bed.leftovers([(c, "eth0") for _, c in first])
        assert not left["links"] and not left["endpoints"] and not left["tmpfiles"], left
        for p, c in second:
            rt.check(conf, c, bed.netns_path(p), "eth0")
        tl.log("20 DELs racing 20 ADDs ok")

        with ThreadPoolExecutor(max_workers=20) as pool:
            list(pool.map(delete, second))
        bed.assert_clean([(c, "eth0") for _, c in first + second], "all DELs")
        tl.log("20 parallel DELs ok")
        bed.stop_vxfedd()


if __name__ == "__main__":
    tl.main_wrapper(main)
