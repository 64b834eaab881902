#!/usr/bin/env python3
"""250 pods on one node through the CNI plugin, reached across the overlay (docs/pod-ports.md):
the two-cluster demo topology (harness/vxfed_harness/twocluster: a node per cluster, FRR with
eBGP between them, the real vxfedd and vxfed-dataplane on each, a pod per cluster), then

  - 250 pods added on node A by the vxfed plugin with host-local, as a runtime does (CNI ADD,
    each pod its own namespace and veth; ADD returns once the dataplane forwards for it);
  - vxfedd holds 251 endpoints on node A, every one in the dataplane; the dataplane serves
    their ports;
  - cluster B's pod pings a sample of 25 of them (every tenth) across the overlay, and one of
    them pings back;
  - CNI DEL of all 250: vxfedd is back to its one pod, no host-side veth of theirs is left,
    host-local holds no address of theirs, and the dataplane's ports are back to the uplink
    and the one pod.
Prints the time per ADD and per DEL (median and max)."""

import statistics
import time

import vxfed_harness as t
from vxfed_harness.proc import run
from vxfed_harness.twocluster import plan as plan_mod
from vxfed_harness.twocluster.vxfed import VxfedVariant
from vxfed_harness.frr import require_frr

PODS = 250
SAMPLE_EVERY = 10


def main() -> None:
    t.require_root()
    require_frr()
    plan = plan_mod.make_plan(9000, 1)
    v = VxfedVariant(plan, build_dir=t.BUILD_DIR, source_dir=t.SOURCE_DIR, progress=t.log)
    try:
        v.up()
        run_test(v, plan)
    finally:
        v.close()


def host_veths(v, c) -> set[str]:
    out = v.nodes[c.name].run(["ip", "-o", "link", "show", "type", "veth"]).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}


def run_test(v, plan) -> None:
    a, b = plan.a, plan.b
    node_a = v.vx_nodes[a.name]
    endpoints_before = len(node_a.vxfedd.endpoints())
    veths_before = host_veths(v, a)
    ports_before = int(node_a.dataplane.status().get("ports", 0))
    ipam_dir = v.node_dirs[a.name] / "ipam"
    reserved_before = {p.name for p in ipam_dir.rglob("*") if p.is_file() and p.name[0].isdigit()}

    added, ips, add_s = [], [], []
    for i in range(PODS):
        short = f"mp{i}"
        ns = v.topo.netns(short)
        cid = f"vxmany-{v.topo.suffix}-{i}"
        t0 = time.monotonic()
        result = v._cni(a, "ADD", cid, ns.path, "eth0", short)
        add_s.append(time.monotonic() - t0)
        added.append((cid, ns, short))
        ips.append(result["ips"][0]["address"].split("/")[0])
    t.log(f"{PODS} CNI ADDs: median {statistics.median(add_s) * 1000:.0f} ms, max {max(add_s) * 1000:.0f} ms, "
          f"{sum(add_s):.1f} s in all")
    assert len(set(ips)) == PODS, "addresses handed out twice"

    eps = node_a.vxfedd.endpoints()
    assert len(eps) == endpoints_before + PODS, (len(eps), endpoints_before)
    not_in = [e for e in eps if not e.get("in_dataplane")]
    assert not not_in, f"{len(not_in)} endpoints not in the dataplane, e.g. {not_in[:2]}"
    ports = int(node_a.dataplane.status().get("ports", 0))
    assert ports == ports_before + PODS, (ports, ports_before)
    t.log(f"node A: {len(eps)} endpoints, all in the dataplane; {ports} dataplane ports")

    remote = v.pods[b.name][0]
    failed = []
    for ip in ips[::SAMPLE_EVERY]:
        r = remote.ns.ping(ip, count=2, timeout=20)
        if r.returncode != 0:
            failed.append(ip)
    assert not failed, f"pod {remote.ip} in cluster B cannot reach {failed}"
    last_ns = added[-1][1]
    r = last_ns.ping(remote.ip, count=2, timeout=20)
    assert r.returncode == 0, f"{ips[-1]} -> {remote.ip}: {r.stdout} {r.stderr}"
    t.log(f"cluster B's pod {remote.ip} reached {len(ips[::SAMPLE_EVERY])} of the {PODS} pods across the overlay, "
          f"and {ips[-1]} reached it")

    del_s = []
    for cid, ns, short in added:
        t0 = time.monotonic()
        v._cni(a, "DEL", cid, ns.path, "eth0", short)
        del_s.append(time.monotonic() - t0)
    for cid, ns, short in added:
        run(["ip", "netns", "del", ns.name], check=False)
        v.topo.namespaces.remove(ns)
    t.log(f"{PODS} CNI DELs: median {statistics.median(del_s) * 1000:.0f} ms, max {max(del_s) * 1000:.0f} ms")

    assert len(node_a.vxfedd.endpoints()) == endpoints_before, node_a.vxfedd.endpoints()
    left = host_veths(v, a) - veths_before
    assert not left, f"host-side veths left on node A: {sorted(left)[:5]}"
    reserved = {p.name for p in ipam_dir.rglob("*") if p.is_file() and p.name[0].isdigit()}
    assert reserved == reserved_before, f"host-local still holds {sorted(reserved - reserved_before)[:5]}"
    t.wait_for(lambda: int(node_a.dataplane.status().get("ports", 0)) == ports_before, 10,
               "the dataplane to release the pods' ports")
    r = remote.ns.ping(v.pods[a.name][0].ip, count=2, timeout=20)
    assert r.returncode == 0, "the pod that stayed is no longer reachable"
    t.log("all 250 deleted: endpoints, veths, host-local reservations and dataplane ports as before")


if __name__ == "__main__":
    t.main_wrapper(main)
