#!/usr/bin/env python3
"""The vxfed CNI plugin against the spec, in real network namespaces, with the reference
host-local/static IPAM plugins and the unit-level fake vxfedd (tests/cni/fake_vxfedd):
VERSION; ADD/CHECK/DEL at 0.4.0, 1.0.0, 1.1.0; what ADD builds (interface, MTU, MAC, address,
routes, host end, endpoint); Multus delegate; DEL idempotency (twice, no netns, no prevResult,
after a failed ADD, vxfedd down -> queued -> replayed); CHECK finding drift; GC; STATUS."""

import json
import subprocess

import vxfed_harness as tl
from vxfed_harness.cni_bed import CniBed, detach_endpoint, expect_error
from vxfed_harness.cni_runtime import fnv_host_iface


def ns_json(ns, *args):
    return json.loads(ns.run(["ip", "-j", *args]).stdout)


def verify_attachment(bed: CniBed, ns, cid: str, ifname: str, result: dict, version: str, mac=None):
    link = ns_json(ns, "-d", "link", "show", "dev", ifname)[0]
    assert link["mtu"] == 8950, f"pod MTU {link['mtu']}"
    assert "UP" in link["flags"], link["flags"]
    assert link["linkinfo"]["info_kind"] == "veth"
    if mac:
        assert link["address"] == mac, f"MAC {link['address']} != {mac}"
    feats = ns.run(["ethtool", "-k", ifname]).stdout
    # Left on by ADD (the dataplane takes the pod's super-packets: docs/pod-ports.md).
    for feature in ("tx-checksumming: on", "tcp-segmentation-offload: on", "generic-segmentation-offload: on"):
        assert feature in feats, f"{feature!r} not in ethtool -k output"
    addrs = [f"{a['local']}/{a['prefixlen']}" for a in ns_json(ns, "-4", "addr", "show", "dev", ifname)[0]["addr_info"]]
    assert len(addrs) == 1 and addrs[0].startswith("10.244."), addrs
    routes = {r["dst"]: r.get("gateway") for r in ns_json(ns, "-4", "route", "show", "dev", ifname)}
    assert routes.get("10.244.0.0/16") == "10.244.0.1", routes
    assert routes.get("10.245.0.0/16") == "10.244.0.1", routes
    assert "10.244.0.1" in routes, f"no on-link gateway route: {routes}"
    # The node's kernel beside the dataplane (cni/node_path.hpp): on-link both ways.
    assert "169.254.118.1" in routes and routes["169.254.118.1"] is None, f"no on-link route to the node: {routes}"
    host = fnv_host_iface(cid, ifname)
    hl = json.loads(subprocess.run(["ip", "-j", "link", "show", "dev", host], capture_output=True, text=True, check=True).stdout)[0]
    assert hl["mtu"] == 9000 and "UP" in hl["flags"], hl
    host_addrs = [f"{a['local']}/{a['prefixlen']}" for a in json.loads(subprocess.run(
        ["ip", "-j", "-4", "addr", "show", "dev", host], capture_output=True, text=True, check=True).stdout)[0]["addr_info"]]
    assert host_addrs == ["169.254.118.1/32"], host_addrs
    node_route = subprocess.run(["ip", "-4", "route", "show", addrs[0].split("/")[0]], capture_output=True, text=True).stdout
    assert f"dev {host} scope link" in node_route, f"the node has no route to the pod through {host}: {node_route}"
    # result layout
    assert result["cniVersion"] == version
    ifaces = result["interfaces"]
    assert ifaces[0]["name"] == host and "sandbox" not in ifaces[0]
    assert ifaces[1]["name"] == ifname and ifaces[1]["sandbox"] == bed.netns_path(ns)
    assert ifaces[1]["mac"] == link["address"]
    assert ("mtu" in ifaces[1]) == (version == "1.1.0")
    ip = result["ips"][0]
    assert ip["address"] == addrs[0] and ip["interface"] == 1 and ip["gateway"] == "10.244.0.1", ip
    assert ("version" in ip) == (version == "0.4.0"), ip
    assert {r["dst"] for r in result["routes"]} == {"169.254.118.1/32", "10.244.0.0/16", "10.245.0.0/16"}, result["routes"]
    eps = [e for e in bed.endpoints() if e["container_id"] == cid and e["ifname"] == ifname]
    assert len(eps) == 1, bed.endpoints()
    assert eps[0]["host_iface"] == host and eps[0]["ip"] == addrs[0].split("/")[0] and eps[0]["mac"] == link["address"], eps
    assert eps[0]["netns"] == bed.netns_path(ns)
    return eps[0]


def main():
    tl.require_root()
    with tl.Topology("cnispec") as topo:
        bed = CniBed(topo)
        bed.start_vxfedd()
        rt = bed.runtime

        info = rt.version("vxfed")
        assert {"0.4.0", "1.0.0", "1.1.0"} <= set(info["supportedVersions"]), info
        assert rt.version("vxfed", "0.4.0")["cniVersion"] == "0.4.0"
        tl.log("VERSION ok")

        # ADD / CHECK / DEL per version.
        for i, version in enumerate(["0.4.0", "1.0.0", "1.1.0"]):
            ns = bed.pod(f"v{i}")
            cid = bed.cid(f"ver{i}")
            conf = bed.conf(version)
            result = rt.add(conf, cid, bed.netns_path(ns), "eth0")
            verify_attachment(bed, ns, cid, "eth0", result, version)
            rt.check(conf, cid, bed.netns_path(ns), "eth0")
            rt.delete(conf, cid, bed.netns_path(ns), "eth0")
            assert not ns_json(ns, "link", "show") or all(l["ifname"] == "lo" for l in ns_json(ns, "link", "show"))
            bed.assert_clean([(cid, "eth0")], f"DEL at {version}")
            tl.log(f"ADD/CHECK/DEL at {version} ok")

        # Multus delegate: net1, K8S_POD_* args, runtimeConfig mac and ips with static IPAM.
        ns = bed.pod("multus")
        cid = bed.cid("multus")
        conf = bed.conf("1.0.0", ipam={"type": "static"})
        args = {"IgnoreUnknown": "true", "K8S_POD_NAMESPACE": "training", "K8S_POD_NAME": "trainer-0",
                "K8S_POD_INFRA_CONTAINER_ID": cid, "K8S_POD_UID": "6f0e3a2b-1111-2222-3333-444455556666"}
        rc = {"mac": "0a:58:0a:f4:07:07", "ips": ["10.244.7.7/16"]}
        result = rt.add(conf, cid, bed.netns_path(ns), "net1", args=args, runtime_config=rc)
        ep = verify_attachment(bed, ns, cid, "net1", result, "1.0.0", mac="0a:58:0a:f4:07:07")
        assert result["ips"][0]["address"] == "10.244.7.7/16", result
        assert ep["pod"]["K8S_POD_NAME"] == "trainer-0" and ep["pod"]["K8S_POD_UID"].startswith("6f0e"), ep
        # What Multus's network-status needs: the interface with a sandbox, its mac, and its ips.
        sandboxed = [i for i, f in enumerate(result["interfaces"]) if f.get("sandbox")]
        assert sandboxed == [1] and [ip["interface"] for ip in result["ips"]] == [1]
        rt.check(conf, cid, bed.netns_path(ns), "net1")
        tl.log("Multus delegate ADD/CHECK ok")

        # CHECK finds drift: address removed; endpoint gone from vxfedd.
        ns.run(["ip", "addr", "del", "10.244.7.7/16", "dev", "net1"])
        expect_error(lambda: rt.check(conf, cid, bed.netns_path(ns), "net1"), 103, "lacks address", "CHECK after address removal")
        # Removing the last address flushed the routes too: put everything back as ADD made it.
        ns.run(["ip", "addr", "add", "10.244.7.7/16", "dev", "net1"])
        ns.run(["ip", "route", "del", "10.244.0.0/16", "dev", "net1"])
        ns.run(["ip", "route", "add", "10.244.0.1", "dev", "net1", "scope", "link"])
        ns.run(["ip", "route", "add", "10.244.0.0/16", "via", "10.244.0.1", "dev", "net1"])
        ns.run(["ip", "route", "add", "10.245.0.0/16", "via", "10.244.0.1", "dev", "net1"])
        expect_error(lambda: rt.check(conf, cid, bed.netns_path(ns), "net1"), 103, "route 169.254.118.1/32",
                     "CHECK without the pod's route to the node")
        ns.run(["ip", "route", "add", "169.254.118.1", "dev", "net1", "scope", "link"])
        rt.check(conf, cid, bed.netns_path(ns), "net1")
        # The node side: its route to the pod through the host end.
        subprocess.run(["ip", "route", "del", "10.244.7.7/32"], check=True)
        expect_error(lambda: rt.check(conf, cid, bed.netns_path(ns), "net1"), 103, "no route 10.244.7.7/32",
                     "CHECK without the node's route to the pod")
        subprocess.run(["ip", "route", "add", "10.244.7.7/32", "dev", fnv_host_iface(cid, "net1"), "scope", "link"], check=True)
        rt.check(conf, cid, bed.netns_path(ns), "net1")
        ns.run(["ip", "route", "del", "10.245.0.0/16", "dev", "net1"], check=False)
        expect_error(lambda: rt.check(conf, cid, bed.netns_path(ns), "net1"), 103, "route 10.245.0.0/16", "CHECK with a route missing")
        ns.run(["ip", "route", "add", "10.245.0.0/16", "via", "10.244.0.1", "dev", "net1"])
        rt.check(conf, cid, bed.netns_path(ns), "net1")
        ns.run(["ethtool", "-K", "net1", "tso", "off"])
        expect_error(lambda: rt.check(conf, cid, bed.netns_path(ns), "net1"), 103, "offload off", "CHECK with TSO turned off")
        ns.run(["ethtool", "-K", "net1", "tso", "on"])
        rt.check(conf, cid, bed.netns_path(ns), "net1")
        assert detach_endpoint(bed.socket, cid, "net1") == 0
        expect_error(lambda: rt.check(conf, cid, bed.netns_path(ns), "net1"), 103, "vxfedd has no endpoint", "CHECK after vxfedd lost it")
        subprocess.run(["ip", "link", "set", fnv_host_iface(cid, "net1"), "down"], check=True)
        expect_error(lambda: rt.check(conf, cid, bed.netns_path(ns), "net1"), 103, "is down", "CHECK with host end down")

        # DEL twice, then DEL without netns, DEL without prevResult.
        rt.delete(conf, cid, bed.netns_path(ns), "net1")
        rt.delete(conf, cid, bed.netns_path(ns), "net1")
        rt.delete(conf, cid, "", "net1")
        bed.assert_clean([(cid, "net1")], "DEL twice / without netns")
        tl.log("CHECK drift detection and DEL twice/without netns ok")

        ns = bed.pod("noprev")
        cid = bed.cid("noprev")
        conf = bed.conf("1.1.0")
        rt.add(conf, cid, bed.netns_path(ns), "eth0")
        # A runtime that lost its cache: no prevResult, and the netns already gone.
        bed.runtime.cache_path(conf, cid, "eth0").unlink()
        tl.run(["ip", "netns", "del", ns.name])
        topo.namespaces.remove(ns)
        rt.delete(conf, cid, "", "eth0")
        bed.assert_clean([(cid, "eth0")], "DEL with empty prevResult and no netns")
        tl.log("DEL without prevResult after the netns vanished ok")

        # vxfedd down: DEL succeeds, detach is queued, replayed by the next invocation.
        ns = bed.pod("down")
        cid = bed.cid("down")
        rt.add(conf, cid, bed.netns_path(ns), "eth0")
        bed.stop_vxfedd()
        expect_error(lambda: rt.status(conf), 50, "not reachable", "STATUS with vxfedd down")
        expect_error(lambda: rt.add(conf, bed.cid("down2"), bed.netns_path(ns), "eth1"), 11, "not reachable", "ADD with vxfedd down")
        rt.delete(conf, cid, bed.netns_path(ns), "eth0")
        q = bed.queue()
        assert [(e["containerID"], e["ifname"]) for e in q] == [(cid, "eth0")], q
        assert not bed.host_link_exists(fnv_host_iface(cid, "eth0"))
        bed.start_vxfedd()   # the fake keeps its endpoints across restarts, like vxfedd
        assert any(e["container_id"] == cid for e in bed.endpoints()), "endpoint should still be in vxfedd"
        rt.status(conf)      # any invocation that reaches vxfedd replays the queue
        assert bed.queue() == [], bed.queue()
        bed.assert_clean([(cid, "eth0"), (bed.cid("down2"), "eth1")], "replayed detach")
        tl.log("DEL with vxfedd down: queued, then replayed ok")

        # STATUS with a dataplane that is not ready.
        bed.start_vxfedd("--not-ready")
        expect_error(lambda: rt.status(conf), 50, "dataplane", "STATUS with dataplane not ready")
        expect_error(lambda: rt.status(bed.conf("1.0.0")), 1, "1.1.0", "STATUS at 1.0.0")
        bed.start_vxfedd()
        rt.status(conf)
        tl.log("STATUS ok")

        # GC: three attachments, one valid; the two others go (links, IPs, records, endpoints).
        pods = [(bed.pod(f"gc{i}"), bed.cid(f"gc{i}")) for i in range(3)]
        for p, c in pods:
            rt.add(conf, c, bed.netns_path(p), "eth0")
        other_conf = bed.conf("1.1.0", name="other-cfg", network="fed-a")
        po = bed.pod("gcother")
        rt.add(other_conf, bed.cid("gcother"), bed.netns_path(po), "eth0")
        rt.gc(conf, [(pods[0][1], "eth0")])
        assert bed.host_link_exists(fnv_host_iface(pods[0][1], "eth0"))
        assert bed.host_link_exists(fnv_host_iface(bed.cid("gcother"), "eth0")), "GC touched another config's attachment"
        eps = {(e["container_id"], e["ifname"]) for e in bed.endpoints()}
        assert (pods[0][1], "eth0") in eps and (bed.cid("gcother"), "eth0") in eps, eps
        left = bed.leftovers([(c, "eth0") for _, c in pods[1:]])
        assert not left["links"] and not left["endpoints"], left
        assert len(bed.records()) == 2 and len(bed.ipam_reservations()) == 2, (bed.records(), bed.ipam_reservations())
        rt.check(conf, pods[0][1], bed.netns_path(pods[0][0]), "eth0")
        rt.gc(conf, [])
        rt.delete(other_conf, bed.cid("gcother"), bed.netns_path(po), "eth0")
        bed.assert_clean([(c, "eth0") for _, c in pods] + [(bed.cid("gcother"), "eth0")], "GC")
        tl.log("GC ok")
        bed.stop_vxfedd()


if __name__ == "__main__":
    tl.main_wrapper(main)
