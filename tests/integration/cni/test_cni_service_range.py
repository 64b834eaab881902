#!/usr/bin/env python3
"""The global services' VIP range in the pod (the CNI config's serviceCidrs, docs/cni.md): the
real plugin with the reference host-local (and, chained, tuning and portmap) in real namespaces,
the fake vxfedd (tests/cni/fake_vxfedd) describing network fed-a with the remote cluster CIDR
10.245.0.0/16 and this node's block 10.244.7.0/24.

- A Multus-style config at 0.4.0 and 1.1.0: every service CIDR is in the pod's table via the
  network's gateway (like the remote CIDR), the kernel's lookup of a VIP answers that gateway,
  the result lists the routes; CHECK passes, fails (103, naming the route) once one is deleted,
  passes once it is back; DEL leaves nothing.
- A pod attached without serviceCidrs fails CHECK under a config that has them, naming the field.
- The chained conflist of docs/cni.md plus serviceCidrs (its IPAM's default route goes to the node
  hop 169.254.118.1): a VIP still goes via the gateway, other addresses to the node hop. On the
  wire, read on the host end: a ping to a VIP makes the pod ask for the gateway's MAC (ARP: its
  frames go to the dataplane, which answers for the gateway); with the service route deleted the
  same ping leaves as an IPv4 frame to the node hop's MAC (the node's kernel), and CHECK fails.
- Refused, naming the field, with nothing left behind: a range overlapping the remote cluster's
  CIDR or this cluster's subnet (ADD, code 7, before IPAM), a prefix with host bits set (ADD and
  `vxfed --check`), the field spelt serviceCIDRs.
- The range vxfedd hands over (GetNetwork's service_cidrs; network fed-s): routed with no
  serviceCidrs in the config (CHECK fails once its route is deleted, and for a pod attached
  while vxfedd handed none over, naming vxfedd's range), merged with the config's (each
  destination once); one that
  overlaps the remote cluster's CIDR (fed-bad) refused naming it."""

import ipaddress
import json
import socket
import struct
import subprocess
import time

import vxfed_harness as tl
from vxfed_harness.cni_bed import CniBed, documented_chain, expect_error
from vxfed_harness.cni_runtime import CniError, fnv_host_iface

NODE_BLOCK = "10.244.7.0/24"
GATEWAY = "10.244.0.1"
S_GATEWAY = "10.246.0.1"
NODE_HOP = "169.254.118.1"
SERVICE_CIDRS = ["10.96.0.0/24", "10.100.8.0/22"]
VIP = "10.96.0.10"
ETH_P_ALL = 0x0003


def pod_routes(ns, ifname: str) -> dict:
    """dst -> gateway (None: on-link) of the pod's IPv4 routes on ifname."""
    return {r["dst"]: r.get("gateway") for r in json.loads(ns.run(["ip", "-j", "-4", "route", "show", "dev", ifname]).stdout)}


def route_get(ns, dst: str) -> dict:
    """The pod kernel's own lookup for dst: the route a packet to it takes."""
    return json.loads(ns.run(["ip", "-j", "-4", "route", "get", dst]).stdout)[0]


def assert_service_routes(ns, ifname: str, result: dict, what: str) -> None:
    routes = pod_routes(ns, ifname)
    for cidr in SERVICE_CIDRS + ["10.245.0.0/16"]:
        assert routes.get(cidr) == GATEWAY, f"{what}: {cidr} is not routed via {GATEWAY}: {routes}"
    got = route_get(ns, VIP)
    assert got.get("gateway") == GATEWAY and got.get("dev") == ifname, f"{what}: the pod routes {VIP} as {got}"
    listed = {r["dst"]: r.get("gw") for r in result["routes"]}
    for cidr in SERVICE_CIDRS:
        assert listed.get(cidr) == GATEWAY, f"{what}: the result does not list {cidr} via {GATEWAY}: {result['routes']}"


def frames_after_ping(ns, host_end: str, dst: str) -> list[bytes]:
    """The frames the pod sends on its veth, read on the host end, while it pings dst once."""
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL)) as s:
        s.bind((host_end, 0))
        s.settimeout(0.2)
        ns.run(["ping", "-n", "-c", "1", "-W", "1", dst], check=False, timeout=10)
        frames, deadline = [], time.monotonic() + 1.5
        while time.monotonic() < deadline:
            try:
                data, addr = s.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] != socket.PACKET_OUTGOING:  # sent by the pod, received on the host end
                frames.append(data)
        return frames


def arp_requests_for(frames: list[bytes], target: str) -> int:
    want = socket.inet_aton(target)
    return sum(1 for f in frames if len(f) >= 42 and f[12:14] == b"\x08\x06" and struct.unpack("!H", f[20:22])[0] == 1
               and f[38:42] == want)


def ipv4_frames_to(frames: list[bytes], dst: str) -> list[bytes]:
    want = socket.inet_aton(dst)
    return [f for f in frames if len(f) >= 34 and f[12:14] == b"\x08\x00" and f[30:34] == want]


def check_fails_naming(rt, conf, cid, netns, ifname, words: str, what: str) -> None:
    try:
        rt.check(conf, cid, netns, ifname)
    except CniError as e:
        if e.plugin != "vxfed" or e.code != 103 or words not in e.msg:
            raise AssertionError(f"{what}: expected vxfed's 103 naming {words!r}, got {e.plugin} {e.code}: {e.msg}")
        tl.log(f"ok: {what} -> {e.code} {e.msg}")
        return
    raise AssertionError(f"{what}: CHECK passed")


def check_chain(rt, conf, cid, netns, ifname) -> None:
    """CHECK through the chain; Debian's portmap 1.1.1 fails it for IPv4-only pods (upstream
    containernetworking/plugins#819): exactly that failure is accepted, after vxfed and tuning passed."""
    try:
        rt.check(conf, cid, netns, ifname)
    except CniError as e:
        if not (e.plugin == "portmap" and "ipv6 dnat" in e.msg):
            raise


def main():
    tl.require_root()
    with tl.Topology("cnisvc") as topo:
        bed = CniBed(topo, networks=[{"name": "fed-a", "subnet": "10.244.0.0/16", "gateway": GATEWAY,
                                      "mtu": 8950, "vni": 1001, "remote_cidrs": ["10.245.0.0/16"],
                                      "node_block": NODE_BLOCK},
                                     {"name": "fed-s", "subnet": "10.246.0.0/16", "gateway": S_GATEWAY,
                                      "mtu": 8950, "vni": 1002, "remote_cidrs": ["10.245.0.0/16"],
                                      "node_block": "10.246.7.0/24", "service_cidrs": [SERVICE_CIDRS[0]]},
                                     {"name": "fed-bad", "subnet": "10.247.0.0/16", "gateway": "10.247.0.1",
                                      "mtu": 8950, "vni": 1003, "remote_cidrs": ["10.245.0.0/16"],
                                      "node_block": "10.247.7.0/24", "service_cidrs": ["10.245.0.0/20"]}])
        bed.start_vxfedd()
        rt = bed.runtime
        host_local = {"type": "host-local", "dataDir": bed.ipam_dir}  # vxfed fills in the node's block

        # A Multus-style config, at the oldest version with CHECK and at the newest.
        for version in ("0.4.0", "1.1.0"):
            ns = bed.pod(f"m{version[0]}")
            netns = bed.netns_path(ns)
            cid = bed.cid(f"svc{version.replace('.', '')}")
            conf = bed.conf(version, ipam=host_local, serviceCidrs=SERVICE_CIDRS)
            result = rt.add(conf, cid, netns, "net1")
            assert_service_routes(ns, "net1", result, f"ADD at {version}")
            rt.check(conf, cid, netns, "net1")
            ns.run(["ip", "route", "del", SERVICE_CIDRS[1], "dev", "net1"])
            check_fails_naming(rt, conf, cid, netns, "net1", f"route {SERVICE_CIDRS[1]} via {GATEWAY} is missing",
                               f"CHECK at {version} without the route to {SERVICE_CIDRS[1]}")
            ns.run(["ip", "route", "add", SERVICE_CIDRS[1], "via", GATEWAY, "dev", "net1"])
            rt.check(conf, cid, netns, "net1")
            rt.delete(conf, cid, netns, "net1")
            assert SERVICE_CIDRS[0] not in pod_routes_or_none(ns, "net1")
            bed.assert_clean([(cid, "net1")], f"DEL at {version}")
            tl.log(f"{version}: service CIDRs routed via the gateway, in the result, checked by CHECK; DEL clean")

        # A pod attached before the service range was configured: CHECK under the new config says so.
        ns = bed.pod("old")
        netns = bed.netns_path(ns)
        cid = bed.cid("old")
        before = bed.conf("1.1.0", ipam=host_local)
        result = rt.add(before, cid, netns, "net1")
        assert not {r["dst"] for r in result["routes"]} & set(SERVICE_CIDRS), result["routes"]
        rt.check(before, cid, netns, "net1")
        check_fails_naming(rt, bed.conf("1.1.0", ipam=host_local, serviceCidrs=SERVICE_CIDRS), cid, netns, "net1",
                           f"route {SERVICE_CIDRS[0]} via {GATEWAY} (serviceCidrs[0]) is missing",
                           "CHECK of a pod attached without serviceCidrs under a config with them")
        rt.delete(before, cid, netns, "net1")
        bed.assert_clean([(cid, "net1")], "DEL of the pod attached without serviceCidrs")

        # The chained install: the IPAM's default route goes to the node hop; VIPs do not.
        chain = documented_chain()
        vx = chain["plugins"][0]
        vx.update({"socket": bed.socket, "stateDir": bed.state_dir, "logLevel": "info", "serviceCidrs": SERVICE_CIDRS})
        vx["ipam"]["dataDir"] = bed.ipam_dir
        r = subprocess.run([rt.find("vxfed"), "--check", "-"], input=json.dumps(chain), capture_output=True, text=True)
        assert r.returncode == 0 and "service range 10.96.0.0/24 10.100.8.0/22" in r.stdout, r.stdout + r.stderr
        ns = bed.pod("chain")
        netns = bed.netns_path(ns)
        cid = bed.cid("chain")
        result = rt.add(chain, cid, netns, "eth0")
        assert ipaddress.ip_interface(result["ips"][0]["address"]).ip in ipaddress.ip_network(NODE_BLOCK), result
        assert_service_routes(ns, "eth0", result, "chained ADD")
        other = route_get(ns, "192.0.2.1")
        assert other.get("gateway") == NODE_HOP, f"the chained pod's default route is not the node hop: {other}"
        check_chain(rt, chain, cid, netns, "eth0")

        host_end = fnv_host_iface(cid, "eth0")
        host_mac = bytes.fromhex(json.loads(subprocess.run(["ip", "-j", "link", "show", "dev", host_end],
                                                           capture_output=True, text=True, check=True).stdout)[0]
                                 ["address"].replace(":", ""))
        frames = frames_after_ping(ns, host_end, VIP)
        asked = arp_requests_for(frames, GATEWAY)
        assert asked >= 1 and not ipv4_frames_to(frames, VIP), \
            f"a ping to {VIP}: {asked} ARP requests for {GATEWAY}, {len(ipv4_frames_to(frames, VIP))} IPv4 frames to the VIP"
        tl.log(f"chained: a ping to {VIP} asks for the gateway {GATEWAY} ({asked} ARP requests), nothing to the node hop")

        # Control: without the service route the VIP falls to the default route, into the node's kernel.
        ns.run(["ip", "route", "del", SERVICE_CIDRS[0], "dev", "eth0"])
        check_fails_naming(rt, chain, cid, netns, "eth0", f"route {SERVICE_CIDRS[0]} via {GATEWAY} is missing",
                           "chained CHECK without the route to the service range")
        frames = frames_after_ping(ns, host_end, VIP)
        to_node = ipv4_frames_to(frames, VIP)
        assert to_node and all(f[0:6] == host_mac for f in to_node), \
            f"without the service route a ping to {VIP} should leave for the node hop's MAC: {len(to_node)} frames"
        tl.log(f"control: without the route, {VIP} leaves as IPv4 to the node hop's MAC ({len(to_node)} frames)")
        ns.run(["ip", "route", "add", SERVICE_CIDRS[0], "via", GATEWAY, "dev", "eth0"])
        check_chain(rt, chain, cid, netns, "eth0")
        rt.delete(chain, cid, netns, "eth0")
        bed.assert_clean([(cid, "eth0")], "chained DEL")
        tl.log("chained: VIPs via the gateway beside the default route to the node hop; CHECK; DEL clean")

        # Refused, naming the field, before anything is made.
        ns = bed.pod("bad")
        netns = bed.netns_path(ns)
        cid = bed.cid("bad")
        for cidrs, words in ((["10.96.0.0/24", "10.245.0.0/20"], "serviceCidrs[1]: 10.245.0.0/20 overlaps 10.245.0.0/16"),
                             (["10.244.0.0/16"], "serviceCidrs[0]: 10.244.0.0/16 overlaps vxfed network \"fed-a\"'s subnet"),
                             (["10.96.0.1/24"], "serviceCidrs[0]: ")):
            expect_error(lambda: rt.add(bed.conf("1.1.0", ipam=host_local, serviceCidrs=cidrs), cid, netns, "net1"),
                         7, words, f"ADD with serviceCidrs {cidrs}")
            bed.assert_clean([(cid, "net1")], f"refused ADD with serviceCidrs {cidrs}")
        # Kubernetes' spelling would otherwise be an unknown key, ignored: no route, no error.
        expect_error(lambda: rt.add(bed.conf("1.1.0", ipam=host_local, serviceCIDRs=SERVICE_CIDRS), cid, netns, "net1"),
                     7, '"serviceCIDRs" is not a vxfed field', "ADD with serviceCIDRs")
        bed.assert_clean([(cid, "net1")], "refused ADD with serviceCIDRs")
        bad_chain = json.loads(json.dumps(chain))
        bad_chain["plugins"][0]["serviceCidrs"] = ["10.96.0.1/24"]
        r = subprocess.run([rt.find("vxfed"), "--check", "-"], input=json.dumps(bad_chain), capture_output=True, text=True)
        assert r.returncode == 2 and "plugins[0]: serviceCidrs[0]: " in r.stderr, r.stdout + r.stderr
        tl.log("bad serviceCidrs refused naming the field; nothing left")
        vxfedd_hands_over_the_range(bed, rt)
        bed.stop_vxfedd()


def vxfedd_hands_over_the_range(bed: CniBed, rt) -> None:
    """Network fed-s, whose GetNetwork reply carries the service range (service_cidrs, as vxfedd
    sends it for the network services.network names): routed via its gateway with no
    serviceCidrs in the config; with a config that repeats it and adds one, each destination
    once; fed-bad, whose handed-over range overlaps the remote cluster's CIDR: refused naming it."""
    host_local = {"type": "host-local", "dataDir": bed.ipam_dir}
    for cidrs in (None, SERVICE_CIDRS):
        ns = bed.pod("hand" + ("c" if cidrs else "n"))
        netns = bed.netns_path(ns)
        cid = bed.cid("hand" + ("c" if cidrs else "n"))
        conf = bed.conf("1.1.0", name="fed-s", ipam=host_local, **({"serviceCidrs": cidrs} if cidrs else {}))
        result = rt.add(conf, cid, netns, "net1")
        want = SERVICE_CIDRS if cidrs else [SERVICE_CIDRS[0]]
        routes = pod_routes(ns, "net1")
        for cidr in want + ["10.245.0.0/16"]:
            assert routes.get(cidr) == S_GATEWAY, f"fed-s {cidrs}: {cidr} is not routed via {S_GATEWAY}: {routes}"
        if not cidrs:
            assert SERVICE_CIDRS[1] not in routes, routes
        got = route_get(ns, VIP)
        assert got.get("gateway") == S_GATEWAY, f"fed-s: the pod routes {VIP} as {got}"
        listed = [r["dst"] for r in result["routes"]]
        for cidr in want:
            assert listed.count(cidr) == 1, f"fed-s {cidrs}: {cidr} listed {listed.count(cidr)} times: {result['routes']}"
        rt.check(conf, cid, netns, "net1")
        if not cidrs:
            ns.run(["ip", "route", "del", SERVICE_CIDRS[0], "dev", "net1"])
            check_fails_naming(rt, conf, cid, netns, "net1", f"route {SERVICE_CIDRS[0]} via {S_GATEWAY}",
                               "CHECK on fed-s without the route to vxfedd's range")
            ns.run(["ip", "route", "add", SERVICE_CIDRS[0], "via", S_GATEWAY, "dev", "net1"])
            rt.check(conf, cid, netns, "net1")
        rt.delete(conf, cid, netns, "net1")
        bed.assert_clean([(cid, "net1")], f"DEL on fed-s with serviceCidrs {cidrs}")
        tl.log(f"fed-s, config serviceCidrs {cidrs}: vxfedd's range {SERVICE_CIDRS[0]} routed via {S_GATEWAY}, "
               f"each destination once in the result ({listed})")
    # A pod attached while vxfedd handed no range over (its prevResult has no such route):
    # CHECK asks vxfedd and names the route to the range it hands over now.
    networks_file = bed.work / "networks.json"
    with_range = networks_file.read_text()
    without = json.loads(with_range)
    for n in without["networks"]:
        n.pop("service_cidrs", None)
    bed.stop_vxfedd()
    networks_file.write_text(json.dumps(without))
    bed.start_vxfedd()
    ns = bed.pod("handold")
    netns = bed.netns_path(ns)
    cid = bed.cid("handold")
    conf = bed.conf("1.1.0", name="fed-s", ipam=host_local)
    result = rt.add(conf, cid, netns, "net1")
    assert SERVICE_CIDRS[0] not in [r["dst"] for r in result["routes"]], result["routes"]
    bed.stop_vxfedd()
    networks_file.write_text(with_range)
    bed.start_vxfedd()
    check_fails_naming(rt, conf, cid, netns, "net1",
                       f"route {SERVICE_CIDRS[0]} via {S_GATEWAY} (vxfedd's service range (GetNetwork service_cidrs[0])) "
                       "is missing", "CHECK of a pod attached before vxfedd handed the range over")
    rt.delete(conf, cid, netns, "net1")
    bed.assert_clean([(cid, "net1")], "DEL of the pod attached before vxfedd handed the range over")

    ns = bed.pod("handbad")
    netns = bed.netns_path(ns)
    cid = bed.cid("handbad")
    expect_error(lambda: rt.add(bed.conf("1.1.0", name="fed-bad", ipam=host_local), cid, netns, "net1"), 7,
                 "vxfedd's service range (GetNetwork service_cidrs[0]): 10.245.0.0/20 overlaps 10.245.0.0/16",
                 "ADD on a network whose handed-over range overlaps the remote CIDR")
    bed.assert_clean([(cid, "net1")], "refused ADD on fed-bad")


def pod_routes_or_none(ns, ifname: str) -> dict:
    """The routes on ifname, or none when DEL took the interface away."""
    r = ns.run(["ip", "-j", "-4", "route", "show", "dev", ifname], check=False)
    return {x["dst"]: x.get("gateway") for x in json.loads(r.stdout)} if r.returncode == 0 and r.stdout.strip() else {}


if __name__ == "__main__":
    tl.main_wrapper(main)
