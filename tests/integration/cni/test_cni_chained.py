#!/usr/bin/env python3
"""vxfed as the first plugin of a conflist, followed by the reference tuning and portmap
plugins (Debian's containernetworking-plugins, spec <= 1.0.0, so the list is 1.0.0), with
vxfed's own bandwidth capability: prevResult flows through ADD, CHECK runs over the cached
result, DEL runs in reverse order, and afterwards nothing of any plugin is left. The
reference bandwidth plugin in such a chain does nothing (vxfed-dataplane reads and writes the
host veth beneath its qdiscs; cni_dataplane shows its tbf counting 0 bytes): `vxfed --check`
refuses a conflist that lists it, naming it and what replaces it."""

import json
import subprocess
from pathlib import Path

import vxfed_harness as tl
from vxfed_harness.cni_bed import CniBed
from vxfed_harness.cni_runtime import CniError, fnv_host_iface


def main():
    tl.require_root()
    iptables = tl.require_program("iptables")
    with tl.Topology("cnichain") as topo:
        bed = CniBed(topo)
        bed.start_vxfedd()
        rt = bed.runtime
        vx = bed.conf("1.0.0")
        vx.pop("cniVersion")
        vx.pop("name")
        netconf = bed.conflist("1.0.0", [
            vx,
            {"type": "tuning", "promisc": True, "sysctl": {"net.ipv4.conf.eth0.arp_notify": "1"}},
            {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True},
        ], name="fed-a")
        assert any(p["type"] == "vxfed" and p.get("capabilities", {}).get("bandwidth") for p in netconf["plugins"]), netconf
        # The reference bandwidth plugin after vxfed: refused by `vxfed --check` (install-cni.sh
        # runs it on the conflist it installs), naming the plugin, the cause and the replacement.
        with_bw = json.loads(json.dumps(netconf))
        with_bw["plugins"].insert(2, {"type": "bandwidth", "capabilities": {"bandwidth": True}})
        r = subprocess.run([rt.find("vxfed"), "--check", "-"], input=json.dumps(with_bw), capture_output=True, text=True)
        assert r.returncode == 2, f"vxfed --check accepted a chain with the bandwidth plugin: {r.stdout} {r.stderr}"
        for words in ("plugins[2]", "bandwidth plugin has no effect", "vxfed's capabilities"):
            assert words in r.stderr, f"{words!r} not in: {r.stderr}"
        r = subprocess.run([rt.find("vxfed"), "--check", "-"], input=json.dumps(netconf), capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        tl.log("vxfed --check refuses the bandwidth plugin in the chain and accepts the chain without it")
        ns = bed.pod("chain")
        cid = bed.cid("chain")
        port = 20000 + int(bed.suffix) % 20000
        runtime_config = {
            "bandwidth": {"ingressRate": 100_000_000, "ingressBurst": 1_000_000,
                          "egressRate": 100_000_000, "egressBurst": 1_000_000},
            "portMappings": [{"hostPort": port, "containerPort": 8080, "protocol": "tcp"}],
            "mac": "0a:58:0a:f4:05:05",
        }
        result = rt.add(netconf, cid, bed.netns_path(ns), "eth0", runtime_config=runtime_config)
        host = fnv_host_iface(cid, "eth0")
        # prevResult went through every plugin: the final result still describes vxfed's interface.
        assert result["cniVersion"] == "1.0.0"
        assert [i["name"] for i in result["interfaces"]][:2] == [host, "eth0"], result["interfaces"]
        assert result["ips"][0]["address"].startswith("10.244."), result
        # tuning: promisc and the sysctl inside the pod; the MAC came from vxfed's mac capability.
        link = json.loads(ns.run(["ip", "-j", "-d", "link", "show", "dev", "eth0"]).stdout)[0]
        assert link["promiscuity"] >= 1, link
        assert link["address"] == "0a:58:0a:f4:05:05", link["address"]
        assert ns.run(["cat", "/proc/sys/net/ipv4/conf/eth0/arp_notify"]).stdout.strip() == "1"
        # portmap: a DNAT chain for this container.
        nat = tl.run([iptables, "-t", "nat", "-S"]).stdout
        assert f"--dport {port}" in nat, "portmap rule missing"
        # vxfed's own bandwidth capability: bpf/'s programs pinned for this pod when built in.
        pins = Path("/sys/fs/bpf/vxfed/pods") / f"{cid}_eth0"
        enforced = bed.bandwidth_enforced()
        if enforced:
            assert pins.is_dir(), f"bandwidth requested but {pins} is missing"
        tl.log(f"chained ADD ok: tuning, portmap applied; vxfed eBPF limits: {enforced}")

        # CHECK runs vxfed, tuning, then portmap. Debian's portmap 1.1.1 fails CHECK for
        # an IPv4-only pod by looking for an ip6tables chain it never made (upstream
        # containernetworking/plugins#819, fixed after 1.1.1): accept exactly that, after
        # every plugin before it passed.
        try:
            rt.check(netconf, cid, bed.netns_path(ns), "eth0")
        except CniError as e:
            if not (e.plugin == "portmap" and "ipv6 dnat" in e.msg):
                raise
            tl.log(f"portmap CHECK hit upstream bug #819 ({e.msg}); vxfed and tuning CHECK passed")
        tl.log("chained CHECK ok")

        rt.delete(netconf, cid, bed.netns_path(ns), "eth0")
        nat = tl.run([iptables, "-t", "nat", "-S"]).stdout
        assert f"--dport {port}" not in nat, "portmap rule left behind"
        bed.assert_clean([(cid, "eth0")], "chained DEL")
        assert not pins.exists(), f"{pins} left behind"
        # DEL again (the runtime retries): every plugin tolerates it.
        rt.delete(netconf, cid, bed.netns_path(ns), "eth0")
        tl.log("chained DEL (twice) ok")
        bed.stop_vxfedd()


if __name__ == "__main__":
    tl.main_wrapper(main)
