#!/usr/bin/env python3
"""Packet capture (`vxfed-dpctl capture`, docs/dataplane.md "Packet capture") on the forwarder
topology, read back with scapy's pcap reader:

  1. Pod A's port, both directions, --count 8 while pod A pings pod B: exactly 8 packets, the
     echo requests as received from pod A and the replies as sent to it, in time order, with
     timestamps of now; the capture ends by itself (max_packets).
  2. The uplink, sent only, --seconds 2: VXLAN from VTEP A to VTEP B with VNI 100 around pod
     A's echo requests, nothing received; ends by itself (duration) in about 2 s.
  3. --snaplen 128 with 1000-byte pings: 128 bytes kept, the original length recorded.
  4. Refusals name what is wrong: an unknown port, a second capture while one runs, a snaplen
     out of range; the running capture is unaffected.
  5. SIGINT stops a long capture (ended: stopped) with a valid file; a capture of a pod whose
     endpoint is removed ends (port_removed).
  6. Forwarding is unchanged by all this: no drop counted, pings all answered.
"""

import json
import signal
import subprocess
import time

import vxfed_harness as t
from vxfed_harness import forwarder as d

from scapy.all import ICMP, IP, UDP, VXLAN, rdpcap  # noqa: E402  (python3-scapy)


def capture(f, label: str, *args: str) -> subprocess.Popen:
    return f.node_a.spawn([str(t.require_binary("dataplane/runtime/vxfed-dpctl")), "--socket", f.socket, "capture",
                           *args], name=f"capture-{label}")


def finish(topo, proc: subprocess.Popen, ended: str, timeout: float = 20) -> str:
    """Waits for a capture client to end by itself; checks it exited 0 saying why `ended`.
    Returns its summary line."""
    proc.wait(timeout=timeout)
    out = topo.log_of_process(proc)
    assert proc.returncode == 0, f"capture exited {proc.returncode}: {out}"
    assert f"ended: {ended}" in out, f"expected ended: {ended}: {out}"
    return out.strip().splitlines()[-1]


def run_dpctl(f, *args: str) -> subprocess.CompletedProcess:
    return f.node_a.run([str(t.require_binary("dataplane/runtime/vxfed-dpctl")), "--socket", f.socket, *args],
                        check=False)


def wait_capturing(topo, proc: subprocess.Popen) -> None:
    """The capture client's capture runs (it says so once the dataplane accepted it)."""
    t.wait_for(lambda: "capturing" in topo.log_of_process(proc) or proc.poll() is not None, 10,
               "the capture to start")
    assert proc.poll() is None, topo.log_of_process(proc)


def main() -> None:
    t.require_root()
    with t.Topology("dpcap") as topo:
        f = d.ForwarderTopology(topo)
        f.up()
        # Pod A's kernel sends IPv6 (MLD reports, router solicitations) for a while after its
        # link came up; the captures below count IPv4 packets of pod A's pings.
        f.pod_a.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.eth0.disable_ipv6=1"])
        drops_before = d.drop_map(f.counters())

        # 1. pod A's port, 8 packets.
        pcap = topo.workdir / "podA.pcap"
        cap = capture(f, "count", "--port", "hA", "--out", str(pcap), "--count", "8", "--seconds", "30")
        wait_capturing(topo, cap)
        started = time.time()
        r = f.pod_a.run(["ping", "-n", "-c", "6", "-i", "0.2", "-p", "c0ffee", d.POD_B], check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        t.log(finish(topo, cap, "max_packets"))
        pkts = rdpcap(str(pcap))
        assert len(pkts) == 8, [p.summary() for p in pkts]
        icmp = [p for p in pkts if ICMP in p]
        requests = [p for p in icmp if p[IP].src == d.POD_A and p[IP].dst == d.POD_B and p[ICMP].type == 8]
        replies = [p for p in icmp if p[IP].src == d.POD_B and p[IP].dst == d.POD_A and p[ICMP].type == 0]
        assert len(requests) >= 3 and len(replies) >= 3, [p.summary() for p in pkts]
        # A request precedes its reply; seqs of the replies are those of the requests.
        for rep in replies:
            req = [q for q in requests if q[ICMP].seq == rep[ICMP].seq]
            assert req and float(req[0].time) <= float(rep.time), (rep.summary(), [q.summary() for q in requests])
        times = [float(p.time) for p in pkts]
        assert times == sorted(times), times
        assert started - 5 < times[0] < time.time() + 1, (started, times[0])
        assert all(bytes(p[ICMP].payload).count(b"\xc0\xff\xee") > 3 for p in icmp), "payload pattern"
        t.log(f"pod port: 8 packets, {len(requests)} requests received from pod A, {len(replies)} replies sent to it, "
              f"{times[-1] - times[0]:.3f} s from first to last")

        # 2. the uplink, sent only, 2 s.
        upcap = topo.workdir / "uplink.pcap"
        t0 = time.monotonic()
        cap = capture(f, "uplink", "--port", "uplink", "--out", str(upcap), "--direction", "sent", "--seconds", "2",
                      "--count", "100000")
        wait_capturing(topo, cap)
        f.pod_a.run(["ping", "-n", "-c", "5", "-i", "0.1", d.POD_B], check=False)
        t.log(finish(topo, cap, "duration"))
        took = time.monotonic() - t0
        assert 1.5 < took < 10, took
        ups = rdpcap(str(upcap))
        vx = [p for p in ups if UDP in p and p[UDP].dport == 4789]
        assert len(vx) >= 5, [p.summary() for p in ups]
        for p in vx:
            assert p[IP].src == d.VTEP_A and p[IP].dst == d.VTEP_B, p.summary()
            assert p[VXLAN].vni == d.VNI, p.summary()
        inner = [p[VXLAN].payload for p in vx if ICMP in p[VXLAN].payload]
        assert any(i[IP].src == d.POD_A and i[ICMP].type == 8 for i in inner), [p.summary() for p in vx]
        assert not [p for p in ups if IP in p and p[IP].src == d.VTEP_B], "sent only: nothing from node B"
        t.log(f"uplink, sent: {len(vx)} VXLAN frames VNI {d.VNI} {d.VTEP_A} -> {d.VTEP_B}; ended after {took:.2f} s")

        # 3. snaplen.
        snap = topo.workdir / "snap.pcap"
        cap = capture(f, "snaplen", "--port", "hA", "--out", str(snap), "--snaplen", "128", "--count", "2",
                      "--direction", "received")
        wait_capturing(topo, cap)
        f.pod_a.run(["ping", "-n", "-c", "3", "-i", "0.2", "-s", "1000", d.POD_B], check=False)
        finish(topo, cap, "max_packets")
        sp = rdpcap(str(snap))
        assert len(sp) == 2 and all(len(bytes(p)) == 128 and p.wirelen == 14 + 20 + 8 + 1000 for p in sp), \
            [(len(bytes(p)), p.wirelen) for p in sp]

        # 4. refusals.
        r = run_dpctl(f, "capture", "--port", "nosuch0", "--out", "/dev/null")
        assert r.returncode == 1 and "port: 'nosuch0'" in r.stderr, r.stderr
        r = run_dpctl(f, "capture", "--port", "hA", "--out", "/dev/null", "--snaplen", "10")
        assert r.returncode == 1 and "snaplen: 10" in r.stderr, r.stderr
        r = run_dpctl(f, "capture", "--port", "hA", "--out", "/dev/null", "--seconds", "7200")
        assert r.returncode == 1 and "duration_ms" in r.stderr, r.stderr

        # 5. SIGINT, then a pod that goes away.
        long_pcap = topo.workdir / "long.pcap"
        cap = capture(f, "sigint", "--port", "hA", "--out", str(long_pcap), "--seconds", "600", "--count", "1000000")
        wait_capturing(topo, cap)
        r = run_dpctl(f, "capture", "--port", "uplink", "--out", "/dev/null")
        assert r.returncode == 1 and "a capture of hA is running" in r.stderr, r.stderr
        f.pod_a.run(["ping", "-n", "-c", "3", "-i", "0.2", d.POD_B], check=False)
        cap.send_signal(signal.SIGINT)
        finish(topo, cap, "stopped")
        lp = rdpcap(str(long_pcap))
        assert len([p for p in lp if ICMP in p]) >= 6, [p.summary() for p in lp]

        gone_pcap = topo.workdir / "gone.pcap"
        cap = capture(f, "gone", "--port", "hA", "--out", str(gone_pcap), "--seconds", "600", "--count", "1000000")
        wait_capturing(topo, cap)
        without = d.tables(generation=2)
        without["tables"]["endpoints"] = []
        f.send_snapshot(without)
        finish(topo, cap, "port_removed")
        f.send_snapshot(d.tables(generation=3))
        f.wait_reachable()

        # 6. forwarding unchanged.
        r = f.pod_a.run(["ping", "-n", "-c", "10", "-i", "0.1", d.POD_B], check=False)
        assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout
        drops_after = d.drop_map(f.counters())
        grown = {k: v - drops_before.get(k, 0) for k, v in drops_after.items() if v != drops_before.get(k, 0)}
        # The endpoint's removal in step 5 makes pod A's packets in flight unknown to the tables.
        grown.pop("unknown_pod_interface", None)
        # IPv6 from the namespaces' kernels (router solicitations, MLD after a link change).
        grown.pop("not_ipv4", None)
        grown.pop("inner_not_ipv4", None)
        assert not grown, f"drops counted during the captures: {json.dumps(grown)}"
        rc, log = f.stop()
        assert rc == 0, log
        for reason in ("max_packets", "duration", "stopped", "port_removed"):
            assert f"ended ({reason})" in log, f"the dataplane's log names no capture ended by {reason}:\n{log[-3000:]}"
        t.log("captures ended by max_packets, duration, SIGINT (stopped) and the pod's removal (port_removed)")


if __name__ == "__main__":
    t.main_wrapper(main)
