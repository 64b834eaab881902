"""A 100 Hz ping from a pod's namespace, its replies' timestamps read at the end: the longest
gap between two replies is the outage a pod saw (restarts, upgrades).

    stream = PingStream(pod_ns, "10.245.0.2", name="ping-upgrade")
    ...                                  # the event
    gap, replies = stream.stop()
"""

from __future__ import annotations

import re
import signal

from .topology import Namespace

REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from", re.M)


class PingStream:
    def __init__(self, ns: Namespace, dest: str, name: str):
        self.ns = ns
        self.proc = ns.spawn(["ping", "-n", "-D", "-i", "0.01", "-W", "1", dest], name=name)

    def stop(self, min_replies: int = 20) -> tuple[float, int]:
        """(longest gap between replies in s, replies); AssertionError if fewer than
        min_replies came back."""
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=10)
        out = self.ns.topo.log_of_process(self.proc)
        replies = [float(x) for x in REPLY.findall(out)]
        if len(replies) < min_replies:
            raise AssertionError(f"ping {self.proc.args[-1]}: {len(replies)} replies:\n{out[-2000:]}")
        return max(b - a for a, b in zip(replies, replies[1:])), len(replies)
