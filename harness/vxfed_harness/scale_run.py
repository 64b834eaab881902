"""One run on a ScaleBed (scale_bed.py): the speaker's burst into the node's dataplane, then one
new node block, each timed where it happens. perf/federation/scale.py repeats it; the
integration test cluster_scale runs it once at small scale and checks what arrived.

Clocks: every time is CLOCK_REALTIME. Wire times are tcpdump's capture times: on each
reflector's uplink (an UPDATE's arrival there, the reflector's UPDATEs to the node; with two
reflectors a first is the earlier of the two, a last the later), on the
node's loopback (the route feed to vxfedd: bgpd's BMP messages, or zebra's FPM frames), on the
underlay router (the node's VXLAN
packets). The dataplane's route count is polled (vxfed-dpctl status every `poll` s), so its
times are late by up to one poll plus one call.
"""

from __future__ import annotations

import ipaddress
import subprocess
import time
from dataclasses import dataclass, field
from typing import Optional

from .proc import wait_until
from .scale_bed import NODE_IP, SPK_A_IP, SPK_B_IP, ScaleBed
from .wire_capture import Capture, first_update, last_data, vxlan_inner_dst, vxlan_vni

SPEAKERS = (SPK_A_IP, SPK_B_IP)
PING_INTERVAL = 0.01


@dataclass
class Timeline:
    """Seconds since the epoch (None: not seen)."""
    speaker_started: float = 0.0
    first_update_at_rr: Optional[float] = None     # the speaker's first UPDATE reaching the reflector
    last_update_at_rr: Optional[float] = None      # its last UPDATE bytes of the burst
    rr_first_to_node: Optional[float] = None       # the reflector's first UPDATE to the node
    rr_last_to_node: Optional[float] = None
    feed_first: Optional[float] = None             # the feed's first segment to vxfedd carrying the burst
    feed_last: Optional[float] = None              # (BMP: bgpd's Route Monitoring; FPM: zebra's frames)
    dataplane_all: Optional[float] = None          # the dataplane holds every route (polled)
    dataplane_previous_poll: Optional[float] = None
    all_copies_at_node: Optional[float] = None     # two reflectors: the node's bgpd holds both copies (polled)
    new_announced: Optional[float] = None          # the API command written to the speaker
    new_update_at_rr: Optional[float] = None       # its UPDATE reaching the reflector
    new_rr_to_node: Optional[float] = None
    new_feed: Optional[float] = None
    new_in_dataplane: Optional[float] = None       # polled
    new_forwarded: Optional[float] = None          # first VXLAN packet to the new VTEP at the router
    new_forwarded_vni: Optional[int] = None
    withdrawn_all: Optional[float] = None          # speaker stopped -> dataplane back to its base
    speaker_stopped: Optional[float] = None
    timed_out: bool = False                        # the burst did not complete within the timeout
    withdraw_timed_out: bool = False               # the withdrawal did not complete within its timeout
    progress: list = field(default_factory=list)   # [seconds since the speaker started, dataplane routes], ~1/s
    memory: dict = field(default_factory=dict)
    capture_drops: dict = field(default_factory=dict)

    def since(self, a: Optional[float], b: Optional[float]) -> Optional[float]:
        return round(b - a, 4) if a is not None and b is not None else None


def poll_count(bed: ScaleBed, want: int, timeout: float, poll: float,
               progress: Optional[list] = None) -> tuple[float, float]:
    """Polls the dataplane's route count until it is `want`; returns (time it was seen, time
    of the poll before). progress: gets [seconds, count] about once a second."""
    prev = start = time.time()
    deadline = prev + timeout
    while True:
        n = bed.dataplane_routes()
        now = time.time()
        if progress is not None and (not progress or now - start - progress[-1][0] >= 1.0 or n == want):
            progress.append([round(now - start, 2), n])
        if n == want:
            return now, prev
        if now > deadline:
            raise TimeoutError(f"dataplane holds {n} routes, not {want}, after {timeout:.0f} s")
        bed.check_alive()
        prev = now
        time.sleep(poll)


def run_once(bed: ScaleBed, timeout: float = 1800, poll: float = 0.1, withdraw: bool = True,
             log=lambda _m: None, withdraw_timeout: float = 300) -> Timeline:
    """The speaker started (its whole list sent), every route into the dataplane, the new
    block announced and forwarded; with withdraw, the speaker stopped and the routes gone
    again (so the next run starts from the same state)."""
    topo = bed.topo
    tl = Timeline()
    base = bed.dataplane_routes()
    wd = topo.workdir
    bed.runs += 1
    n = bed.runs
    # Only what the timeline needs: the speaker's UPDATEs in, the reflector's out to the node
    # (what it reflects back to the speaker's client session is left out).
    rr_ips = [ip for ip, _, _ in bed.reflectors]
    rr_caps = [Capture(ns, "ul0", f"tcp port 179 and (src host {SPK_A_IP} or src host {SPK_B_IP} or "
                       f"(src host {ip} and dst host {NODE_IP}))", wd / f"rr{'' if i == 0 else i + 1}-{n}.pcap",
                       snaplen=128)
               for i, (ip, ns, _) in enumerate(bed.reflectors)]
    feed_cap = Capture(bed.node.ns, "lo", f"tcp dst port {bed.feed_port}", wd / f"{bed.feed}-{n}.pcap", snaplen=96)
    gw_cap = Capture(bed.gw_ns, "ul0", "udp dst port 4789", wd / f"gw-{n}.pcap", snaplen=128)
    for c in (*rr_caps, feed_cap, gw_cap):
        c.start()

    tl.speaker_started = time.time()
    bed.start_speaker()
    log(f"speaker started ({bed.total} routes); waiting for the dataplane to hold {base + bed.total}")
    try:
        tl.dataplane_all, tl.dataplane_previous_poll = poll_count(bed, base + bed.total, timeout, poll, tl.progress)
    except TimeoutError as exc:
        # What got through by then is the result (how far, how fast); the rest is not timed.
        log(f"{exc}; stopping this run")
        tl.timed_out = True
        tl.memory = {k: vars(v) for k, v in bed.memory().items()}
        for c in (*rr_caps, feed_cap, gw_cap):
            c.stop()
        return tl
    tl.memory = {k: vars(v) for k, v in bed.memory().items()}
    log(f"every route in the dataplane {tl.dataplane_all - tl.speaker_started:.2f} s after the speaker started")
    if len(bed.reflectors) > 1:
        # The dataplane is full once each block came through either reflector; the other's copies
        # may still be on their way. The new block is timed once the node's bgpd holds the whole
        # burst from every reflector, so that nothing of the burst passes for it (bmp_last_s is
        # then the node's bgpd's last message of both copies), and the memory is taken again
        # with both copies in.
        wait_until(lambda: min(bed.node_received()) >= bed.total, timeout,
                   "the node's bgpd to hold every block from every reflector", bed.check_alive)
        tl.all_copies_at_node = time.time()
        log(f"the node's bgpd holds every block from each of its {len(bed.reflectors)} reflectors "
            f"{tl.all_copies_at_node - tl.speaker_started:.2f} s after the speaker started")

    # The new block: the pod sends to an address in it all along; the first VXLAN packet to
    # its VTEP at the router is the moment the node forwards to it.
    prefix, new_vtep = bed.new_block
    target = str(ipaddress.IPv4Network(prefix)[1])
    ping = subprocess.Popen(bed.pod.ns.prefix() + ["ping", "-q", "-i", str(PING_INTERVAL), "-W", "1", target],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        tl.new_announced = time.time()
        bed.announce_new_block()
        tl.new_in_dataplane, _ = poll_count(bed, base + bed.total + 1, 60, 0.02)
        time.sleep(0.5)      # a few packets to it
    finally:
        ping.terminate()
        ping.wait(timeout=5)

    # Every reflector's capture in one list: a speaker's packets to either reflector count for
    # its first and last UPDATE, each reflector's own to the node are told apart by its address.
    if len(bed.reflectors) > 1:
        tl.memory = {k: vars(v) for k, v in bed.memory().items()}
    rr_pk = sorted((p for c in rr_caps for p in c.stop()), key=lambda p: p.ts)
    feed_pk, gw_pk = feed_cap.stop(), gw_cap.stop()
    tl.capture_drops = {**{"reflector" if i == 0 else f"reflector{i + 1}": c.dropped for i, c in enumerate(rr_caps)},
                        bed.feed: feed_cap.dropped, "router": gw_cap.dropped}
    burst = [p for p in rr_pk if p.ts < tl.new_announced]
    firsts = [p.ts for p in (first_update(burst, s) for s in SPEAKERS) if p]
    tl.first_update_at_rr = min(firsts) if firsts else None
    lasts = [p.ts for p in (last_data(burst, s) for s in SPEAKERS) if p]
    tl.last_update_at_rr = max(lasts) if lasts else None
    firsts = [p.ts for p in (first_update(burst, ip) for ip in rr_ips) if p]
    tl.rr_first_to_node = min(firsts) if firsts else None
    lasts = [p.ts for p in (last_data(burst, ip, dst=NODE_IP) for ip in rr_ips) if p]
    tl.rr_last_to_node = max(lasts) if lasts else None
    data = [p for p in feed_pk if p.length > 0]
    # Segments before the speaker's first UPDATE reached the reflector cannot carry a node
    # block: they are the feed's own start (a resync, BMP statistics), not the burst.
    start = tl.first_update_at_rr if tl.first_update_at_rr is not None else 0.0
    burst_feed = [p for p in data if start <= p.ts < tl.new_announced]
    tl.feed_first = burst_feed[0].ts if burst_feed else None
    tl.feed_last = burst_feed[-1].ts if burst_feed else None
    p = first_update(rr_pk, SPK_B_IP, after=tl.new_announced)
    tl.new_update_at_rr = p.ts if p else None
    firsts = [p.ts for p in (first_update(rr_pk, ip, after=tl.new_announced) for ip in rr_ips) if p]
    tl.new_rr_to_node = min(firsts) if firsts else None
    after = [p for p in data if p.ts >= tl.new_announced]
    tl.new_feed = after[0].ts if after else None
    to_new = [p for p in gw_pk if p.dst == new_vtep and vxlan_inner_dst(p) == target]
    if to_new:
        tl.new_forwarded, tl.new_forwarded_vni = to_new[0].ts, vxlan_vni(to_new[0])
    stray = [p for p in gw_pk if p.ts < tl.new_announced]
    if stray:
        raise AssertionError(f"{len(stray)} VXLAN packets left the node before the new block was announced "
                             f"(first to {stray[0].dst})")

    if withdraw:
        tl.speaker_stopped = time.time()
        bed.stop_speaker()
        try:
            tl.withdrawn_all, _ = poll_count(bed, base, withdraw_timeout, poll)
        except TimeoutError as exc:
            # The burst's figures stand; this run's withdrawal is reported as not finished.
            log(f"withdrawing: {exc}")
            tl.withdraw_timed_out = True
            return tl
        # The speaker's routes leave the reflector too before the next run starts.
        wait_until(lambda: bed.reflector_received() == 0, 120, "the reflector to drop the speaker's routes")
    return tl
