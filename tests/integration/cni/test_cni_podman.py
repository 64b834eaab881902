#!/usr/bin/env python3
"""vxfed under a real container runtime: Debian's podman 4.3 with its CNI backend
(harness/vxfed_harness/podman.py), on a node namespace with the real vxfed-dataplane and
vxfedd, the conflist of deploy/10-vxfed.conflist (vxfed, then tuning).

podman passes a requested MAC and IP only in CNI_ARGS (`IgnoreUnknown=1;K8S_POD_NAME=..;
MAC=..;IP=..`), no runtimeConfig. Checked:
- `podman run --mac-address M --ip I`: the pod's interface has M and I, vxfedd (so the
  dataplane) delivers to M, and the pods ping each other both ways. (Before the fix vxfed
  ignored MAC=, registered the kernel's MAC, tuning then set M: traffic lost both ways.)
- A plugin later in a chain that changes the MAC (tuning's own "mac"): CHECK fails naming the
  MAC, instead of passing for a pod the dataplane cannot reach.
- `podman rm` runs DEL: no endpoint, link or record is left.
- The list at cniVersion 1.1.0: podman 4.3's libcni (before 1.2) reports the ADD as failed
  ('unsupported CNI result version "1.1.0"') after vxfed's ADD succeeded, and DELs it: what
  docs/cni.md and `vxfed --check`'s warning say."""

import json
import subprocess

import vxfed_harness as tl
from vxfed_harness.cni_bed import REFERENCE_PLUGINS
from vxfed_harness.cni_runtime import CniError, Runtime
from vxfed_harness.node import Node
from vxfed_harness.podman import Podman, plugins_in_namespace

NETWORK = "fed-a"
MAC_A = "0a:58:0a:f4:01:99"
IP_A = "10.244.1.99"
MAC_TUNED = "0a:58:0a:f4:02:02"


def main():
    tl.require_root()
    plugin = tl.require_binary("cni/vxfed")
    if not (REFERENCE_PLUGINS / "tuning").exists():
        tl.skip("containernetworking-plugins is not installed")
    with tl.Topology("cnipm") as topo:
        w = topo.workdir
        n = Node(topo, "node", "198.18.0.1", "10.244.0.0/16", asn=65001)
        peer = topo.netns("ulpeer")
        topo.wire(n.ns, ["198.18.0.1/24"], peer, ["198.18.0.2/24"], ifname="ul0", b_ifname="ul1")
        n.start_dataplane(timeout=60)
        n.start_vxfedd(n.vxfedd_config(networks=[{"name": NETWORK, "vni": 1001, "subnet": "10.244.0.0/16",
                                                  "gateway": "10.244.0.1"}]))
        n.vxfedd.wait_ready()
        bin_dir = w / "bin"
        plugins_in_namespace(bin_dir, {"vxfed": plugin}, n.ns)
        vxfed = {"type": "vxfed", "network": NETWORK, "socket": str(n.vxfedd.socket), "stateDir": str(w / "cni-state"),
                 "logFile": str(w / "vxfed-cni.log"), "logLevel": "info",
                 "capabilities": {"mac": True, "ips": True},
                 "ipam": {"type": "host-local", "dataDir": str(w / "ipam"),
                          "ranges": [[{"subnet": "10.244.0.0/16", "rangeStart": "10.244.1.2",
                                       "rangeEnd": "10.244.1.250", "gateway": "10.244.0.1"}]]}}
        tuning = {"type": "tuning", "sysctl": {"net.ipv4.conf.eth0.arp_notify": "1"}}
        pm = Podman(topo, cni_plugin_dirs=[bin_dir, REFERENCE_PLUGINS])
        image = pm.import_busybox()
        pm.add_network({"cniVersion": "1.0.0", "name": NETWORK, "plugins": [vxfed, tuning]})

        a = pm.run_container("a", image, network=NETWORK, mac=MAC_A, ip=IP_A)
        b = pm.run_container("b", image, network=NETWORK)
        b_ip = b.network(NETWORK)["IPAddress"]
        a_link = a.exec("ip", "link", "show", "eth0").stdout
        a_addr = a.exec("ip", "-4", "addr", "show", "eth0").stdout
        tl.log(f"container a: {a_link.split('link/ether')[1].split()[0]} {IP_A}; b: {b_ip}")
        failures = []
        if f"link/ether {MAC_A}" not in a_link:
            failures.append(f"a's eth0 does not have the requested MAC {MAC_A}: {a_link}")
        if f"inet {IP_A}/" not in a_addr:
            failures.append(f"a's eth0 does not have the requested IP {IP_A}: {a_addr}")
        eps = {e["container_id"]: e for e in n.vxfedd.endpoints()}
        ep_a = eps.get(a.container_id, {})
        if ep_a.get("mac") != MAC_A:
            failures.append(f"vxfedd delivers a's traffic to MAC {ep_a.get('mac')}, the pod has {MAC_A}")
        if ep_a.get("ip") != IP_A:
            failures.append(f"vxfedd has IP {ep_a.get('ip')} for a, podman asked for {IP_A}")
        for src, dst, what in ((a, b_ip, "a -> b"), (b, IP_A, "b -> a")):
            r = src.ping(dst, count=3)
            tl.log(f"ping {what}: rc {r.returncode} {r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr}")
            if r.returncode != 0:
                failures.append(f"ping {what} failed")
        if failures:
            raise AssertionError("; ".join(failures))
        tl.log("podman --mac-address/--ip: the pod, vxfedd and the dataplane agree; both ways ping")

        # CHECK sees a MAC changed behind vxfed's back (tuning's own "mac" after vxfed).
        rt = Runtime([str(bin_dir), str(REFERENCE_PLUGINS)], w / "cache")
        chain = {"cniVersion": "1.0.0", "name": NETWORK, "plugins": [vxfed, dict(tuning, mac=MAC_TUNED)]}
        pod = topo.netns("tuned")
        cid = f"tuned-{topo.suffix}"
        rt.add(chain, cid, pod.path, "eth0")
        try:
            rt.check(chain, cid, pod.path, "eth0")
            raise AssertionError("CHECK passed although the pod's MAC is not the one the dataplane delivers to")
        except CniError as e:
            if e.plugin != "vxfed" or e.code != 103 or MAC_TUNED not in e.msg:
                raise AssertionError(f"CHECK: expected vxfed's code 103 naming {MAC_TUNED}, got {e}") from None
            tl.log(f"CHECK after tuning changed the MAC: {e.code} {e.msg}")
        rt.delete(chain, cid, pod.path, "eth0")

        # The same list at cniVersion 1.1.0 (docs/cni.md, "cniVersion 1.1.0 and older runtimes"):
        # podman's libcni predates 1.2, so vxfed's ADD succeeds and podman cannot read its result,
        # reports the ADD as failed and DELs what vxfed made.
        adds_before = (w / "vxfed-cni.log").read_text().count("info ADD: ADD ")
        pm.add_network({"cniVersion": "1.1.0", "name": f"{NETWORK}-v11", "plugins": [dict(vxfed, network=NETWORK)]})
        r = pm.run_container("v11", image, network=f"{NETWORK}-v11", check=False)
        if not isinstance(r, subprocess.CompletedProcess) or 'unsupported CNI result version "1.1.0"' not in r.stderr:
            raise AssertionError(f"podman with a 1.1.0 list: expected libcni's 'unsupported CNI result version', got {r}")
        log = (w / "vxfed-cni.log").read_text()
        if log.count("info ADD: ADD ") != adds_before + 1:
            raise AssertionError(f"podman with a 1.1.0 list failed before vxfed's ADD succeeded: {log[-1500:]}")
        tl.log(f"podman with cniVersion 1.1.0: vxfed's ADD succeeded, podman says: {r.stderr.strip().splitlines()[-1]}")

        a.remove()
        b.remove()
        left = n.vxfedd.endpoints()
        links = [l["ifname"] for l in json.loads(n.ns.run(["ip", "-j", "link"]).stdout) if l["ifname"].startswith("vxf")]
        records = list((w / "cni-state" / "attachments").iterdir())
        if left or links or records:
            raise AssertionError(f"podman rm left endpoints {left}, links {links}, records {records}")
        tl.log("podman rm: DEL left nothing behind")


if __name__ == "__main__":
    tl.main_wrapper(main)
