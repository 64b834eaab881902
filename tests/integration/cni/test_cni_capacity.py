#!/usr/bin/env python3
"""A node whose dataplane is full (vxfed-dataplane --max-pod-ports 2), with the REAL vxfedd and
dataplane, the vxfed plugin and host-local through the test runtime:

- CHECK right after ADD passes: ADD returns only once the dataplane acknowledged the endpoint
  (issue 18 defect 2: CHECK used to fail with 103 "the dataplane does not (yet)").
- 20 ADDs beyond the capacity each fail with code 105 naming the cause ("pod ports ... in
  use"), leave nothing behind (no endpoint in vxfedd, no interface, no address held), and do
  not disturb the pods already there: a ping between them at 50 packets/s runs through all 20
  and loses nothing; vxfedd sends no snapshot for them (defect 3: each one used to make it
  resend the full snapshot, then re-attach every endpoint, ~1.3 s without forwarding).
- Once a pod leaves, the next ADD takes its place and CHECK passes at once."""

import json
import re
import signal
import subprocess
import time

import vxfed_harness as tl
from vxfed_harness.node import Node
from vxfed_harness.cni_bed import REFERENCE_PLUGINS, RealNodeCni
from vxfed_harness.cni_runtime import CniError

NETWORK = "fed-a"
REFUSED_ADDS = 20


def main():
    tl.require_root()
    for b in ("control/vxfedd", "control/vxfedctl", "dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl"):
        tl.require_binary(b)
    tl.require_binary("cni/vxfed")
    if not (REFERENCE_PLUGINS / "host-local").exists():
        tl.skip("containernetworking-plugins is not installed")
    with tl.Topology("cnicap") as topo:
        w = topo.workdir
        n = Node(topo, "node", "198.18.0.1", "10.244.0.0/16", node_name="node-a", cluster="cluster-a",
                 dataplane_extra=["--max-pod-ports", "2"])
        node = n.ns
        peer = topo.netns("ulpeer")
        topo.wire(node, ["198.18.0.1/24"], peer, ["198.18.0.2/24"], ifname="ul0", b_ifname="ul1")
        n.start_dataplane(timeout=60)
        n.start_vxfedd(n.vxfedd_config(networks=[{"name": NETWORK, "vni": 1001, "subnet": "10.244.0.0/16",
                                                  "gateway": "10.244.0.1"}]))
        endpoints = n.vxfedd.endpoints
        cni = RealNodeCni(topo, n, NETWORK, "10.244.0.0/16", "10.244.0.1", "10.244.3.2", "10.244.3.250")
        rt, conf = cni.runtime, cni.conf
        cni.wait_ready()

        def add(name, ns, cid):
            res = rt.add(conf, cid, f"/var/run/netns/{ns.name}", "eth0")
            # No waiting: ADD returned, so the dataplane carries the pod and CHECK passes now.
            rt.check(conf, cid, f"/var/run/netns/{ns.name}", "eth0")
            return res["ips"][0]["address"].split("/")[0]

        pods = []
        for i in range(2):
            ns = topo.netns(f"pod{i}")
            ns.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
            cid = f"cap{i}-{topo.suffix}"
            t0 = time.monotonic()
            pods.append((ns, cid, add(f"pod{i}", ns, cid)))
            tl.log(f"pod{i}: ADD + CHECK at once: {pods[-1][2]} ({time.monotonic() - t0:.2f} s)")
        assert all(e["in_dataplane"] and e["dataplane"] == "yes" for e in endpoints()), endpoints()
        (a, _, a_ip), (b, _, b_ip) = pods
        r = a.ping(b_ip, count=3)
        assert r.returncode == 0, f"the two pods do not reach each other: {r.stdout} {r.stderr}"

        snapshots_before = n.vxfedd.log().count("dataplane applied snapshot")
        ipam_before = sorted(p.name for p in (w / "ipam" / NETWORK).iterdir())
        # 50 packets/s while the refused ADDs run; SIGINT ends it with its summary.
        ping = subprocess.Popen(a.prefix() + ["ping", "-n", "-i", "0.02", b_ip], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        time.sleep(1)
        extra = topo.netns("extra")
        t0 = time.monotonic()
        for i in range(REFUSED_ADDS):
            cid = f"over{i}-{topo.suffix}"
            try:
                rt.add(conf, cid, f"/var/run/netns/{extra.name}", "eth0")
            except CniError as e:
                assert e.code == 105, f"ADD {i} over capacity: code {e.code}, expected 105: {e}"
                assert re.search(r"pod ports .*in use", e.msg), f"the error does not name the cause: {e.msg}"
                if i == 0:
                    tl.log(f"ADD over capacity: code {e.code}: {e.msg}")
            else:
                raise AssertionError(f"ADD {i} beyond the dataplane's 2 pod ports succeeded")
        adds_s = time.monotonic() - t0
        time.sleep(1)
        ping.send_signal(signal.SIGINT)
        out, _ = ping.communicate(timeout=10)
        m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
        assert m, out
        sent, got = int(m.group(1)), int(m.group(2))
        # Lost = sequence numbers missing before the last reply: the request in flight when
        # SIGINT stops ping has no reply yet and is not a loss.
        seqs = {int(x) for x in re.findall(r"bytes from .* icmp_seq=(\d+)", out)}
        last = max(seqs, default=0)
        lost = last - len(seqs)
        tl.log(f"{REFUSED_ADDS} refused ADDs in {adds_s:.1f} s; ping during them: {sent} sent, {got} received, "
               f"{lost} lost before the last reply (request {last})")
        assert sent >= 50, f"ping sent only {sent}"
        assert last >= sent - 2, f"the last reply was to request {last} of {sent}: traffic stopped at the end"
        assert lost == 0, f"a refused ADD interrupted another pod's traffic: {lost} of {last} lost"

        log = n.vxfedd.log()
        assert log.count("dataplane applied snapshot") == snapshots_before, "refused ADDs made vxfedd resend a snapshot"
        assert "refused snapshot" not in log and "resending the full snapshot" not in log, log[-3000:]
        eps = endpoints()
        assert sorted(e["container_id"] for e in eps) == sorted(c for _, c, _ in pods), eps
        dumped = n.dataplane.dump().get("tables", {}).get("endpoints", [])
        assert sorted(e["id"] for e in dumped) == sorted(f"{c}/eth0" for _, c, _ in pods), dumped
        links = json.loads(extra.run(["ip", "-j", "link"]).stdout)
        assert [l["ifname"] for l in links] == ["lo"], f"a refused ADD left an interface in the pod: {links}"
        assert sorted(p.name for p in (w / "ipam" / NETWORK).iterdir()) == ipam_before, "a refused ADD kept its address"
        tl.log("nothing left by the refused ADDs; no snapshot sent; vxfedd and the dataplane agree on 2 endpoints")

        # A pod leaves: the next ADD gets its port, and CHECK passes at once.
        ns1, cid1, _ = pods[1]
        rt.delete(conf, cid1, f"/var/run/netns/{ns1.name}", "eth0")
        cid = f"after-{topo.suffix}"
        ip = add("after", extra, cid)
        r = a.ping(ip, count=3)
        assert r.returncode == 0, f"the pod added after a DEL is not reachable: {r.stdout} {r.stderr}"
        tl.log(f"after a DEL the next ADD ({ip}) is carried, CHECK passes at once, ping works")
        rt.delete(conf, cid, f"/var/run/netns/{extra.name}", "eth0")
        rt.delete(conf, pods[0][1], f"/var/run/netns/{a.name}", "eth0")
        assert endpoints() == [], endpoints()


if __name__ == "__main__":
    tl.main_wrapper(main)
