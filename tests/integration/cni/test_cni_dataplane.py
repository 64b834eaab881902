#!/usr/bin/env python3
"""The vxfed CNI plugin with the REAL vxfedd (build/control/vxfedd) and vxfed-dataplane
(build/dataplane/vxfed-dataplane) in a node namespace: two pods on the same network, attached
by the plugin through the test runtime, ping each other through the dataplane, including an
8922-byte ping with DF set (pod MTU 8950 = 9000 - 50). CHECK passes once the dataplane has the
endpoints, STATUS is 0, DEL with vxfedd down queues the detach and the next invocation replays
it, and at the end vxfedd holds no endpoint and the node no interface of ours.

pod1 is attached through a conflist with the reference bandwidth plugin after vxfed: its tbf
qdisc on the host end counts 0 bytes while pod0 pings pod1 (the dataplane writes the veth
beneath the qdiscs), which is why `vxfed --check` refuses that plugin (cni_chained)."""

import json
import os

import vxfed_harness as tl
from vxfed_harness.node import Node
from vxfed_harness.cni_bed import REFERENCE_PLUGINS, RealNodeCni
from vxfed_harness.cni_runtime import CniError, fnv_host_iface

NETWORK = "fed-a"


def main():
    tl.require_root()
    for b in ("control/vxfedd", "control/vxfedctl", "dataplane/vxfed-dataplane", "dataplane/runtime/vxfed-dpctl"):
        tl.require_binary(b)
    tl.require_binary("cni/vxfed")
    if not (REFERENCE_PLUGINS / "host-local").exists():
        tl.skip("containernetworking-plugins is not installed")
    with tl.Topology("cnidp") as topo:
        w = topo.workdir
        # Nothing but the dataplane may carry pod traffic: the node's kernel does not forward
        # and owns no pod address (the gateway exists only in the dataplane).
        n = Node(topo, "node", "198.18.0.1", "10.244.0.0/16", asn=65001, node_name="node-a", cluster="cluster-a")
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
        tl.log("STATUS 0 with the real vxfedd and dataplane")

        # pod1: vxfed (without the bandwidth capability) then the reference bandwidth plugin
        # (Debian's stops at 1.0.0), 1 Mbit/s into the pod.
        chain = {"cniVersion": "1.0.0", "name": NETWORK, "plugins": [
            {k: v for k, v in conf.items() if k not in ("cniVersion", "name")},
            {"type": "bandwidth", "capabilities": {"bandwidth": True}}]}
        confs = [conf, chain]
        shaped = {"bandwidth": {"ingressRate": 1_000_000, "ingressBurst": 100_000,
                                "egressRate": 1_000_000, "egressBurst": 100_000}}

        pods = []
        for i in range(2):
            ns = topo.netns(f"pod{i}")
            ns.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
            cid = f"dp{i}-{topo.suffix}"
            res = rt.add(confs[i], cid, f"/var/run/netns/{ns.name}", "eth0",
                         args={"K8S_POD_NAMESPACE": "test", "K8S_POD_NAME": f"pod{i}"},
                         runtime_config=shaped if i == 1 else None)
            ip = res["ips"][0]["address"].split("/")[0]
            pods.append((ns, cid, ip))
            tl.log(f"pod{i}: {ip} host end {fnv_host_iface(cid, 'eth0')}")

        def checks_pass():
            for i, (ns, cid, _) in enumerate(pods):
                try:
                    rt.check(confs[i], cid, f"/var/run/netns/{ns.name}", "eth0")
                except CniError as e:
                    tl.log(f"CHECK {cid}: {e.code} {e.msg}")
                    return False
            return True

        tl.wait_for(checks_pass, 30, "CHECK to pass (endpoints in the dataplane)", interval=1)
        eps = {e["container_id"]: e for e in endpoints()}
        for ns, cid, ip in pods:
            assert eps[cid]["ip"] == ip and eps[cid]["host_iface"] == fnv_host_iface(cid, "eth0"), eps
        tl.log("CHECK passes; vxfedd has both endpoints")

        (a, _, a_ip), (b, _, b_ip) = pods
        failures = []
        r = a.ping(b_ip, count=5)
        tl.log(f"ping {a_ip} -> {b_ip}: {r.stdout.strip().splitlines()[-2] if r.stdout else r.stderr}")
        if r.returncode != 0:
            failures.append(f"ping pod0 -> pod1 failed: {r.stdout} {r.stderr}")
        r = a.ping(b_ip, count=3, size=8922, df=True)
        tl.log(f"ping -s 8922 -M do: {r.stdout.strip().splitlines()[-2] if r.stdout else r.stderr}")
        if r.returncode != 0:
            failures.append(f"8922-byte DF ping failed: {r.stdout} {r.stderr}")
        r = a.ping(b_ip, count=1, size=8923, df=True)
        if r.returncode == 0:
            failures.append("an 8923-byte DF ping went through: the pod MTU is not 8950")
        r = b.ping(a_ip, count=3)
        if r.returncode != 0:
            failures.append(f"ping pod1 -> pod0 failed: {r.stdout} {r.stderr}")
        if failures:
            raise AssertionError("; ".join(failures))
        tl.log("pods ping each other through the dataplane, 8922 bytes with DF included")

        # 80 kB into pod1 (and its replies out): a tbf in the path would count every byte.
        r = a.ping(b_ip, count=10, size=8000)
        qdiscs = json.loads(node.run(["tc", "-s", "-j", "qdisc", "show", "dev", fnv_host_iface(pods[1][1], "eth0")]).stdout)
        tbf = [q for q in qdiscs if q.get("kind") == "tbf"]
        assert tbf, f"the bandwidth plugin installed no tbf on pod1's host end: {qdiscs}"
        assert r.returncode == 0, f"ping into the shaped pod failed: {r.stdout} {r.stderr}"
        tl.log(f"bandwidth plugin's tbf on pod1's host end after 10 x 8000-byte pings: {tbf[0].get('bytes')} bytes, "
               f"{tbf[0].get('packets')} packets; ping {r.stdout.strip().splitlines()[-2]}")
        assert tbf[0].get("bytes") == 0, f"the tbf saw traffic: the dataplane no longer bypasses qdiscs? {tbf}"

        # DEL with vxfedd down: queued; vxfedd restarts; the next invocation replays it.
        ns0, cid0, _ = pods[0]
        n.stop_vxfedd()
        rt.delete(conf, cid0, f"/var/run/netns/{ns0.name}", "eth0")
        q = json.loads((w / "cni-state" / "pending-detach.json").read_text())
        assert [e["containerID"] for e in q] == [cid0], q
        n.start_vxfedd()
        cni.wait_ready()  # the next invocation after vxfedd is back replays the queue
        assert not (w / "cni-state" / "pending-detach.json").exists(), "queue not replayed"
        assert cid0 not in {e["container_id"] for e in endpoints()}, endpoints()
        tl.log("DEL with vxfedd down was queued and replayed after its restart")

        ns1, cid1, _ = pods[1]
        rt.delete(chain, cid1, f"/var/run/netns/{ns1.name}", "eth0")
        assert endpoints() == [], endpoints()
        links = json.loads(node.run(["ip", "-j", "link"]).stdout)
        assert not [l["ifname"] for l in links if l["ifname"].startswith("vxf")], links
        assert os.listdir(w / "cni-state" / "attachments") == []
        tl.log("DEL left nothing: no endpoints, links or records")


if __name__ == "__main__":
    tl.main_wrapper(main)
