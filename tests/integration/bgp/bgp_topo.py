"""Helpers for the BGP integration tests: FRR instances per namespace (the harness's Frr, on
scripts/frr-start.sh), the adapter hosted by vxfed-bgp-driver, and reading what it learned.

A node here is one network namespace with an underlay address, an FRR instance and
(optionally) a driver. Everything lives under the Topology's workdir and is removed with it.
"""
from __future__ import annotations

import json
import time

import vxfed_harness as t
from vxfed_harness.frr import Frr
from vxfed_harness.vxfedd import with_feed_from_env


class Node:
    def __init__(self, topo: t.Topology, short: str, asn: int, underlay: str, vtep: str):
        self.topo = topo
        self.short = short
        self.asn = asn
        self.underlay = underlay
        self.vtep = vtep
        self.ns = topo.netns(short)
        self.dir = topo.workdir / short
        self.frr_dir = self.dir / "frr"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.frr = Frr(self.ns, self.frr_dir)
        self.state_path = self.dir / "state.json"
        self.events_path = self.dir / "events.jsonl"
        self.polls_path = self.dir / "polls.jsonl"   # the driver's peer polls (--polls)
        self.config_path = self.dir / "bgp.yaml"
        self.driver = None

    # -- FRR --
    def start_frr(self) -> float:
        return self.frr.start()

    def stop_frr(self, kill: bool = False, only: str = "") -> None:
        self.frr.stop(kill=kill, only=only)

    def vtysh(self, *commands: str, check: bool = True) -> str:
        return self.frr.vtysh(*commands, check=check)

    def router_bgp(self, *commands: str, check: bool = True) -> str:
        """`commands` inside bgpd's instance, in config mode: `router bgp ASN`, or `router bgp ASN
        view V` when bgpd runs as the view of the BMP feed (a bare `router bgp ASN` would make a
        second, default instance there)."""
        view = self.frr.bgp_view()
        instance = f"router bgp {self.asn}" + (f" view {view}" if view else "")
        return self.vtysh("configure terminal", instance, *commands, check=check)

    def feed(self) -> str:
        """The driver's route feed as its config says: "fpm" (zebra's FPM stream) or "bmp"."""
        try:
            return json.loads(self.config_path.read_text())["bgp"].get("feed", "bmp")
        except (OSError, ValueError, KeyError):
            return "fpm"

    def write_frr_conf(self, text: str) -> None:
        """For plain FRR peers without a driver: frr-start.sh loads DIR/frr.conf."""
        self.frr.write_conf(text)

    # -- driver --
    def write_config(self, bgp: dict) -> None:
        """The driver's config: the `bgp:` section alone (JSON is YAML)."""
        bgp = with_feed_from_env(dict(bgp, frr=self.frr.adapter_section(**bgp.get("frr", {}))))
        self.config_path.write_text(json.dumps({"bgp": bgp}, indent=1))

    def start_driver(self, advertise: list[str], networks: dict[str, int]) -> None:
        binary = t.require_binary("tests/integration/bgp/vxfed-bgp-driver")
        # A previous driver's state must not be read as this one's.
        self.state_path.unlink(missing_ok=True)
        args = [str(binary), "--config", str(self.config_path), "--vtep", self.vtep,
                "--state", str(self.state_path), "--events", str(self.events_path), "--polls", str(self.polls_path)]
        for a in advertise:
            args += ["--advertise", a]
        for n, v in networks.items():
            args += ["--network", f"{n}={v}"]
        self.driver = self.ns.spawn(args, name=f"driver-{self.short}")

    def reload_driver(self) -> None:
        import signal
        self.driver.send_signal(signal.SIGHUP)

    def stop_driver(self) -> None:
        if self.driver and self.driver.poll() is None:
            self.driver.terminate()
            self.driver.wait(timeout=15)

    # -- observations --
    def state(self) -> dict:
        return json.loads(self.state_path.read_text())

    def routes(self) -> dict[str, dict]:
        try:
            return {r["prefix"]: r for r in self.state()["routes"]}
        except (OSError, ValueError, KeyError):
            return {}

    def peer(self, address: str) -> dict:
        for p in self.state()["peers"]:
            if p["address"] == address:
                return p
        raise KeyError(address)

    def events(self) -> list[dict]:
        if not self.events_path.exists():
            return []
        out = []
        for line in self.events_path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def ever_learned(self) -> set[str]:
        return {r["prefix"] for e in self.events() for r in e["upserts"]}

    def removal_times(self, prefix: str) -> list[float]:
        """Wall-clock ms of every event that took `prefix` away (removal, or a full update without it)."""
        out = []
        for e in self.events():
            if any(k["prefix"] == prefix for k in e["removals"]):
                out.append(e["t_ms"])
            elif e["full"] and prefix not in {r["prefix"] for r in e["upserts"]}:
                out.append(e["t_ms"])
        return out

    def check_alive(self) -> None:
        if self.driver is not None and self.driver.poll() is not None:
            raise RuntimeError(f"driver of {self.short} exited with {self.driver.returncode}:\n"
                               + self.topo.log_of(f"driver-{self.short}")[-3000:])

    def wait_route(self, prefix: str, timeout: float, present: bool = True) -> float:
        t0 = time.monotonic()

        def ok() -> bool:
            self.check_alive()
            return (prefix in self.routes()) == present

        t.wait_for(ok, timeout, f"{prefix} {'in' if present else 'gone from'} {self.short}'s routes")
        return time.monotonic() - t0


def underlay(topo: t.Topology, a: Node, b: Node, prefix_len: int = 24) -> None:
    """The underlay veth `ul0` between two nodes: each side gets its underlay address and its
    VTEP address (a second address on the same link, so `set ip next-hop <vtep>` is a
    third-party next hop the receiving side can resolve)."""
    def addrs(n: Node) -> list[str]:
        return [f"{n.underlay}/{prefix_len}"] + ([f"{n.vtep}/{prefix_len}"] if n.vtep != n.underlay else [])
    topo.wire(a.ns, addrs(a), b.ns, addrs(b), ifname="ul0")


def link(topo: t.Topology, a: Node, a_addr: str, b: Node, b_addr: str, ifname: str, prefix_len: int = 24) -> None:
    """An extra point-to-point veth between two nodes (e.g. to a plain FRR peer)."""
    topo.wire(a.ns, [f"{a_addr}/{prefix_len}"], b.ns, [f"{b_addr}/{prefix_len}"], ifname=ifname)
