#!/usr/bin/env python3
"""Bad input to the vxfed CNI plugin gets the right CNI error code and a message a person can
act on, and leaves nothing behind (no links, endpoints, records, IPAM reservations): invalid
JSON, missing fields, bad CNI_IFNAME / CNI_CONTAINERID, an unknown network, a type or IPAM type
naming a path, unsupported versions, invalid bandwidth, a netns that is missing or not a network
namespace (a regular file, a directory, another kind: 3, not a netlink failure), IPAM exhaustion, and
vxfedd refusing the endpoint (ADD rolls back, IPAM included; DEL after the failed ADD)."""

import json

import vxfed_harness as tl
from vxfed_harness.cni_bed import CniBed, expect_error
from vxfed_harness.cni_runtime import CniError


def main():
    tl.require_root()
    with tl.Topology("cnibad") as topo:
        bed = CniBed(topo)
        bed.start_vxfedd("--refuse-attach-prefix", "refuse")
        rt = bed.runtime
        plugin = str(bed.plugin)
        ns = bed.pod("p")
        netns = bed.netns_path(ns)
        cid = bed.cid("bad")
        touched = [(cid, "eth0"), (cid, "net1")]

        def raw(stdin: str, command="ADD", **env):
            kw = dict(container_id=cid, netns=netns, ifname="eth0")
            kw.update(env)
            proc = rt.exec_raw(plugin, command, stdin, **kw)
            if proc.returncode == 0:
                raise AssertionError(f"succeeded: {proc.stdout}")
            if proc.stdout.count("\n") != 1:
                raise AssertionError(f"stdout must be exactly one JSON error: {proc.stdout!r}")
            payload = json.loads(proc.stdout)
            raise CniError("vxfed", command, proc.returncode, payload, proc.stderr)

        good = bed.conf("1.0.0")
        not_netns = topo.workdir / "not-a-netns"
        not_netns.write_text("")
        prev_result = {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": str(not_netns)}],
                       "ips": [{"address": "10.244.1.9/16", "interface": 0}]}

        def with_(**kv):
            c = dict(good)
            for k, v in kv.items():
                if v is None:
                    c.pop(k, None)
                else:
                    c[k] = v
            return json.dumps(c)

        cases = [
            ("invalid JSON", lambda: raw('{"cniVersion": "1.0.0", "name": '), 6, "not valid JSON"),
            ("empty stdin", lambda: raw(""), 6, "not valid JSON"),
            ("missing name", lambda: raw(with_(name=None)), 7, "no \"name\""),
            ("missing type", lambda: raw(with_(type=None)), 7, "no \"type\""),
            ("missing cniVersion", lambda: raw(with_(cniVersion=None)), 7, "cniVersion"),
            ("unsupported cniVersion", lambda: raw(with_(cniVersion="9.9.9")), 1, "not supported"),
            ("missing ipam", lambda: raw(with_(ipam=None)), 7, "no \"ipam\""),
            ("ifname over 15", lambda: raw(with_(), ifname="eth0123456789abc"), 4, "at most 15"),
            ("ifname with slash", lambda: raw(with_(), ifname="eth/0"), 4, "'/'"),
            ("container id with odd characters", lambda: raw(with_(), container_id="abc;rm -rf"), 4, "contains ';'"),
            ("container id with slash", lambda: raw(with_(), container_id="../../etc"), 4, "must start"),
            ("missing CNI_NETNS", lambda: raw(with_(), env_override={"CNI_NETNS": None}), 4, "CNI_NETNS"),
            ("missing CNI_COMMAND", lambda: raw(with_(), env_override={"CNI_COMMAND": None}), 4, "CNI_COMMAND"),
            ("unknown CNI_ARGS key", lambda: raw(with_(), args="FOO=1"), 4, "IgnoreUnknown"),
            ("netns does not exist", lambda: raw(with_(), netns="/var/run/netns/vxf-no-such-ns"), 3, "does not exist"),
            # What a netns file is after its namespace was unmounted: no namespace, nothing to clean up.
            ("netns is a regular file", lambda: raw(with_(), netns=str(not_netns)), 3,
             f"{not_netns} (CNI_NETNS) is not a network namespace: it is a regular file"),
            ("netns is a directory", lambda: raw(with_(), netns=str(topo.workdir)), 3, "it is a directory"),
            ("netns is another kind of namespace", lambda: raw(with_(), netns="/proc/self/ns/uts"), 3,
             "a namespace of another kind"),
            ("CHECK with a regular file as netns", lambda: raw(with_(prevResult=prev_result), command="CHECK",
                                                               netns=str(not_netns)), 3, "is not a network namespace"),
            ("unknown network", lambda: raw(with_(network="no-such-net")), 7, "does not exist on this node"),
            ("type is a path", lambda: raw(with_(type="/usr/lib/cni/vxfed")), 7, "names a path"),
            ("ipam type is a path", lambda: raw(with_(ipam={"type": "/usr/lib/cni/host-local"})), 7, "names a path"),
            ("ipam type climbs", lambda: raw(with_(ipam={"type": "../host-local"})), 7, "names a path"),
            ("ipam plugin missing", lambda: raw(with_(ipam={"type": "no-such-ipam"})), 7, "not found in CNI_PATH"),
            ("mtu above the network's", lambda: raw(with_(mtu=9000)), 7, "exceeds"),
            ("bad runtime mac", lambda: raw(with_(runtimeConfig={"mac": "01:02:03:04:05:06"})), 7, "unicast MAC"),
            ("negative bandwidth", lambda: raw(with_(runtimeConfig={"bandwidth": {"ingressRate": -1, "ingressBurst": 100}})), 7, "negative"),
            ("rate without burst", lambda: raw(with_(runtimeConfig={"bandwidth": {"egressRate": 1000000}})), 7, "burst must also be set"),
            ("IPv6 from IPAM", lambda: raw(with_(ipam={"type": "static", "addresses": [{"address": "fd00::5/64"}]})), 2, "IPv4 only"),
            ("address outside the subnet", lambda: raw(with_(ipam={"type": "static", "addresses": [{"address": "10.99.0.5/16"}]})), 7, "outside"),
            ("CHECK without prevResult", lambda: raw(with_(), command="CHECK"), 7, "prevResult"),
            ("GC at 1.0.0", lambda: raw(with_(), command="GC"), 1, "1.1.0"),
        ]
        if bed.bandwidth_enforced():
            # bpf/'s own limits are stricter than the reference plugin's: 8000 bit/s minimum.
            cases.append(("rate below what eBPF enforces",
                          lambda: raw(with_(runtimeConfig={"bandwidth": {"ingressRate": 100, "ingressBurst": 100000}})),
                          7, "ingressRate"))
        for what, fn, code, part in cases:
            expect_error(fn, code, part, what)
            bed.assert_clean(touched, what)

        # vxfedd refuses the endpoint after IPAM, the veth and routes were made: all rolled back.
        rcid = bed.cid("refuse")
        expect_error(lambda: rt.add(good, rcid, netns, "eth0"), 100, "refus", "vxfedd refuses the endpoint")
        bed.assert_clean([(rcid, "eth0")], "rollback after vxfedd refused")
        assert [l["ifname"] for l in json.loads(ns.run(["ip", "-j", "link"]).stdout)] == ["lo"], "pod end left behind"
        rt.delete(good, rcid, netns, "eth0")  # DEL after a failed ADD
        bed.assert_clean([(rcid, "eth0")], "DEL after failed ADD")
        tl.log("rollback of a refused ADD and DEL after it ok")

        # The pod already has CNI_IFNAME: refused, and the existing interface is not touched.
        ns.run(["ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0peer"])
        expect_error(lambda: rt.add(good, cid, netns, "eth0"), 101, "already has an interface named eth0", "ifname taken")
        assert "eth0" in ns.run(["ip", "link"]).stdout
        ns.run(["ip", "link", "del", "eth0"])
        bed.assert_clean(touched, "ifname taken")

        # IPAM exhaustion: a range of two addresses; the third ADD fails and leaves nothing.
        small = bed.conf("1.0.0", name="tiny", network="fed-a", ipam=bed.host_local("10.244.9.2", "10.244.9.3"))
        pods = [(bed.pod(f"ex{i}"), bed.cid(f"ex{i}")) for i in range(3)]
        for p, c in pods[:2]:
            rt.add(small, c, bed.netns_path(p), "eth0")
        e = expect_error(lambda: rt.add(small, pods[2][1], bed.netns_path(pods[2][0]), "eth0"), 102,
                         "no IP addresses available", "IPAM exhaustion")
        assert "host-local" in e.msg
        left = bed.leftovers([(pods[2][1], "eth0")])
        assert not left["links"] and not left["endpoints"] and len(left["records"]) == 2 and len(left["ipam"]) == 2, left
        for p, c in pods[:2]:
            rt.delete(small, c, bed.netns_path(p), "eth0")
        bed.assert_clean([(c, "eth0") for _, c in pods], "after exhaustion")
        tl.log("IPAM exhaustion ok")
        bed.stop_vxfedd()


if __name__ == "__main__":
    tl.main_wrapper(main)
