#!/usr/bin/env python3
"""Every CNI code path against the spec, at every version it applies to, in real namespaces
with host-local and the unit-level fake vxfedd (tests/cni/fake_vxfedd); cni_spec checks what a
successful ADD/CHECK/DEL builds at 0.4.0, 1.0.0 and 1.1.0, this test the answers around it:

- the spec's "incompatible CNI version" (code 1) for GC and STATUS below 1.1.0, CHECK below
  0.4.0 and versions the plugin does not know, every error in the spec's shape (cniVersion of
  the request, code, msg) on stdout with exit status 1;
- per version (0.4.0, 1.0.0, 1.1.0): vxfedd down -> ADD and CHECK 11, DEL 0 (queued); the
  dataplane not connected -> ADD 11 naming the dataplane, CHECK 11 (a transient state, not 103);
  the dataplane refusing the pod -> ADD 105 with its reason, CHECK 105; every failed ADD leaves
  nothing (interface, address, record, endpoint);
- a MAC and an IP requested in each of the three ways runtimes pass them (CNI_ARGS MAC=/IP=,
  runtimeConfig mac/ips, args.cni mac/ips): in the pod, in the result and in vxfedd."""

import json

import vxfed_harness as tl
from vxfed_harness.cni_bed import CniBed, expect_error

VERSIONS = ["0.4.0", "1.0.0", "1.1.0"]


def main():
    tl.require_root()
    with tl.Topology("cnimatrix") as topo:
        bed = CniBed(topo)
        bed.start_vxfedd()
        rt = bed.runtime
        ns = bed.pod("m")
        netns = bed.netns_path(ns)
        # The failing ADDs go to a pod of their own (one attachment per network per pod).
        bad_ns = bed.pod("mbad")
        bad_netns = bed.netns_path(bad_ns)

        def raw(conf, command, cid="", ifname="", args=""):
            return rt.exec_raw(rt.find("vxfed"), command, json.dumps(conf), container_id=cid,
                               netns=netns if cid else "", ifname=ifname, args=args)

        def spec_error(proc, version, code, words, what):
            assert proc.returncode == 1, f"{what}: exit {proc.returncode}, stdout {proc.stdout!r}"
            out = json.loads(proc.stdout)
            assert out.get("code") == code and words in out.get("msg", ""), f"{what}: {out}"
            assert out.get("cniVersion") == version and set(out) <= {"cniVersion", "code", "msg", "details"}, out
            tl.log(f"ok: {what} -> {code} {out['msg']}")

        # -- incompatible versions: code 1 --
        for version in ("0.4.0", "1.0.0"):
            spec_error(raw(bed.conf(version), "GC"), version, 1, "1.1.0", f"GC at {version}")
            spec_error(raw(bed.conf(version), "STATUS"), version, 1, "1.1.0", f"STATUS at {version}")
        spec_error(raw(bed.conf("0.3.1"), "CHECK", bed.cid("old"), "eth0"), "0.3.1", 1, "0.4.0", "CHECK at 0.3.1")
        for version in ("0.2.0", "2.0.0"):
            p = raw(bed.conf(version), "ADD", bed.cid("unknown"), "eth0")
            out = json.loads(p.stdout)
            assert p.returncode == 1 and out["code"] == 1 and version in out["msg"], (p.stdout, p.stderr)
            tl.log(f"ok: ADD at {version} -> 1 {out['msg']}")
        bed.assert_clean([(bed.cid("old"), "eth0"), (bed.cid("unknown"), "eth0")], "refused versions")

        # -- vxfedd and the dataplane unavailable or refusing, per version --
        for i, version in enumerate(VERSIONS):
            conf = bed.conf(version)
            ok_cid = bed.cid(f"ok{i}")
            rt.add(conf, ok_cid, netns, "eth0")
            bad_cid = bed.cid(f"bad{i}")
            kept = (bed.records(), bed.ipam_reservations())  # the live pod's
            bed.stop_vxfedd()
            expect_error(lambda: rt.add(conf, bad_cid, bad_netns, "eth0"), 11, "not reachable", f"ADD at {version}, vxfedd down")
            expect_error(lambda: rt.check(conf, ok_cid, netns, "eth0"), 11, "not reachable", f"CHECK at {version}, vxfedd down")
            bed.start_vxfedd("--not-ready")
            expect_error(lambda: rt.add(conf, bad_cid, bad_netns, "eth0"), 11, "dataplane", f"ADD at {version}, no dataplane")
            expect_error(lambda: rt.check(conf, ok_cid, netns, "eth0"), 11, "dataplane", f"CHECK at {version}, no dataplane")
            bed.start_vxfedd("--dataplane-refuses-prefix", "bad")
            e = expect_error(lambda: rt.add(conf, bad_cid, bad_netns, "eth0"), 105, "pod ports",
                             f"ADD at {version}, the dataplane refuses the pod")
            assert e.details == "DATAPLANE_REFUSED", e.details
            left = bed.leftovers([(bad_cid, "eth0")])
            assert not left["links"] and not left["endpoints"] and not left["tmpfiles"], left
            assert (bed.records(), bed.ipam_reservations()) == kept, f"failed ADDs at {version} left {left}"
            assert [l["ifname"] for l in json.loads(bad_ns.run(["ip", "-j", "link"]).stdout)] == ["lo"]
            bed.start_vxfedd()
            rt.check(conf, ok_cid, netns, "eth0")
            # DEL with vxfedd down succeeds (queued); the next call replays it.
            bed.stop_vxfedd()
            rt.delete(conf, ok_cid, netns, "eth0")
            assert [q["containerID"] for q in bed.queue()] == [ok_cid], bed.queue()
            bed.start_vxfedd()
            rt.status(bed.conf("1.1.0"))
            bed.assert_clean([(ok_cid, "eth0")], f"DEL at {version} with vxfedd down, replayed")
            tl.log(f"{version}: vxfedd down 11/11/0, no dataplane 11/11, refused 105, nothing left")

        # CHECK of a pod the dataplane refuses after its ADD (e.g. its interface went away and
        # the dataplane restarted): 105 with the reason, not 103.
        conf = bed.conf("1.1.0")
        late = bed.cid("badlate")
        rt.add(conf, late, netns, "eth0")
        bed.start_vxfedd("--dataplane-refuses-prefix", "badlate")
        expect_error(lambda: rt.check(conf, late, netns, "eth0"), 105, "refused", "CHECK of a pod the dataplane refused")
        bed.start_vxfedd()
        rt.delete(conf, late, netns, "eth0")
        bed.assert_clean([(late, "eth0")], "DEL after a refused CHECK")

        # -- a MAC and an IP requested three ways --
        ways = [
            ("CNI_ARGS", dict(args={"MAC": "0a:58:0a:f4:01:31", "IP": "10.244.1.131"})),
            ("runtimeConfig", dict(runtime_config={"mac": "0a:58:0a:f4:01:32", "ips": ["10.244.1.132/16"]})),
            ("args.cni", dict(extra={"args": {"cni": {"mac": "0a:58:0a:f4:01:33", "ips": ["10.244.1.133/16"]}}})),
        ]
        for j, (way, kw) in enumerate(ways):
            mac, ip = f"0a:58:0a:f4:01:3{j + 1}", f"10.244.1.13{j + 1}"
            for version in VERSIONS:
                conf = bed.conf(version, **kw.get("extra", {}))
                cid = bed.cid(f"w{j}{version.replace('.', '')}")
                res = rt.add(conf, cid, netns, "eth0", args=kw.get("args"), runtime_config=kw.get("runtime_config"))
                link = json.loads(ns.run(["ip", "-j", "link", "show", "dev", "eth0"]).stdout)[0]
                addrs = [a["local"] for a in json.loads(ns.run(["ip", "-j", "-4", "addr", "show", "dev", "eth0"]).stdout)[0]["addr_info"]]
                ep = [e for e in bed.endpoints() if e["container_id"] == cid]
                assert link["address"] == mac and addrs == [ip], (way, version, link["address"], addrs)
                assert res["interfaces"][1]["mac"] == mac and res["ips"][0]["address"] == f"{ip}/16", (way, version, res)
                assert len(ep) == 1 and ep[0]["mac"] == mac and ep[0]["ip"] == ip, (way, version, ep)
                rt.check(conf, cid, netns, "eth0")
                rt.delete(conf, cid, netns, "eth0")
                bed.assert_clean([(cid, "eth0")], f"{way} at {version}")
            tl.log(f"MAC and IP through {way}: in the pod, the result and vxfedd at {', '.join(VERSIONS)}")
        bed.stop_vxfedd()


if __name__ == "__main__":
    tl.main_wrapper(main)
