"""Two releases at once: the previous one (N-1, deploy/previous-release) built beside this
checkout, and a node's daemons replaced make-before-break by another build's, as a DaemonSet's
rolling update with maxSurge does it (docs/deploy.md, "Upgrade").

    prev = previous_release()                  # scripts/build-previous.sh: version, build dir
    nxt = stand_by(node, BUILD_DIR, "next")     # the next dataplane and vxfedd, standing by
    hand_over(node, nxt, first="vxfedd")        # SIGTERM the old ones, one kind at a time
"""

from __future__ import annotations

import json

import dataclasses
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from .dataplane import Dataplane, canonical_tables
from .env import SCRIPTS_DIR, log
from .node import Node
from .proc import PartUnavailable, wait_until
from .vxfedd import Vxfedd


@dataclass
class Release:
    version: str
    build_dir: Path


def release_version(build_dir: Path) -> str:
    """The version a build's vxfedd reports (`vxfedd --version`)."""
    res = subprocess.run([str(build_dir / "control" / "vxfedd"), "--version"], capture_output=True, text=True,
                         timeout=30, check=True)
    return res.stdout.strip().split()[-1]


def previous_release(timeout: float = 1800) -> Release:
    """Builds (or finds built) the release deploy/previous-release names (the script checks that
    its binaries report that version); PartUnavailable with the script's words if it cannot (its
    commit out of reach, a failed build)."""
    res = subprocess.run([str(SCRIPTS_DIR / "build-previous.sh")], capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise PartUnavailable("the previous release's build (scripts/build-previous.sh)", res.stderr.strip()[-2000:])
    build_dir = Path(res.stdout.strip().splitlines()[-1])
    return Release(release_version(build_dir), build_dir)


@dataclass
class NextPair:
    """The next vxfed-dataplane and vxfedd of a node, started on its sockets, state dir and
    config while the serving ones still run."""
    dataplane: Dataplane
    vxfedd: Vxfedd


def stand_by(node: Node, build_dir: Path, tag: str, timeout: float = 60, config: Optional[dict] = None) -> NextPair:
    """Starts build_dir's dataplane and vxfedd on node's API sockets (the serving lock makes them
    wait: common/serving_lock.hpp) and returns once both say they are standing by. The next
    dataplane has its own DPDK file prefix, as the new pod's container has its own run dir.
    config: the next vxfedd's own config (the next release's ConfigMap, written beside the old
    one as vxfedd-<tag>.yaml); default: the one the serving vxfedd reads."""
    old_dp, old_vx = node.dataplane, node.vxfedd
    launch = dataclasses.replace(old_dp.launch, file_prefix=f"{old_dp.launch.file_prefix[:20]}{tag}")
    dp = Dataplane(node.ns, launch, build_dir=build_dir, name=f"dataplane-{tag}")
    config_path = old_vx.config_path if config is None else old_vx.config_path.with_name(f"vxfedd-{tag}.yaml")
    vx = Vxfedd(node.ns, config_path, old_vx.socket, config, build_dir=build_dir, name=f"vxfedd-{tag}",
                env=old_vx.env, args=old_vx.args)
    if config is not None:
        vx.write_config()
    # Not Dataplane.start()/Vxfedd.start(): those remove a socket they take for a dead run's.
    dp.proc = node.ns.spawn(launch.argv(dp.program), name=dp.name)
    vx.proc = node.ns.spawn([str(vx.program), "--config", str(vx.config_path), "--foreground", *vx.args],
                            name=vx.name, env=vx.env)
    for part, what in ((dp, "dataplane"), (vx, "vxfedd")):
        wait_until(lambda part=part: "standing by" in part.log(), timeout, f"{node.short}: the next {what} standing by",
                   lambda part=part, what=what: _still_running(part, f"{node.short}'s next {what}"))
    return NextPair(dp, vx)


def _still_running(part, what: str) -> None:
    if part.proc.poll() is not None:
        raise PartUnavailable(what, f"exited with status {part.proc.returncode}:\n{part.log()[-2000:]}")


def hand_over(node: Node, nxt: NextPair, first: str, between: Optional[Callable[[], None]] = None,
              timeout: float = 60) -> None:
    """SIGTERM node's serving `first` ("vxfedd" or "dataplane"), wait for the next one to serve
    (and, for a dataplane, for vxfedd to have programmed it), run `between` (the two versions
    now serve side by side on this node), then the same for the other kind. The old ones must
    exit 0; node.dataplane / node.vxfedd are the new ones afterwards."""
    assert first in ("vxfedd", "dataplane")
    for kind in (first, "dataplane" if first == "vxfedd" else "vxfedd"):
        old = node.vxfedd if kind == "vxfedd" else node.dataplane
        new = nxt.vxfedd if kind == "vxfedd" else nxt.dataplane
        entries = table_keys(node.dataplane.dump())
        old.proc.send_signal(signal.SIGTERM)
        rc = old.proc.wait(timeout=30)
        old.stopped = True
        if rc != 0:
            raise AssertionError(f"{node.short}: the old {kind} exited with {rc}:\n{old.log()[-2000:]}")
        if kind == "vxfedd":
            node.vxfedd = new
        else:
            node.dataplane = new
        # Serving: the dataplane listens (and vxfedd has sent it the tables), vxfedd reports its
        # dataplane ready.
        node.wait_until(lambda: "API listening" in new.log() or kind == "vxfedd", timeout,
                        f"{node.short}: the next {kind} serving")
        node.vxfedd.wait_ready(timeout)
        node.wait_until(lambda: _keys_or_none(node.dataplane) == entries, timeout,
                        f"{node.short}: the same table entries in the dataplane after the next {kind} took over")
        log(f"{node.short}: the next {kind} serves")
        if between is not None and kind == first:
            between()


def table_keys(dump: dict) -> dict[str, list[str]]:
    """Which entries vxfedd gave a dataplane (networks, endpoints, routes, VTEPs), by their keys
    only: two releases may print an entry's details differently. Neighbours are left out: each
    dataplane resolves its own. So are VTEP entries without VNIs: they only say the VTEP takes
    VXLAN-GBP, which this release's vxfedd sends and the previous one's does not (docs/bgp.md,
    "The GBP mark")."""
    tables = canonical_tables(dump)
    tables["vteps"] = {ip: e for ip, e in tables.get("vteps", {}).items() if json.loads(e).get("vnis")}
    return {kind: sorted(entries) for kind, entries in tables.items() if kind != "neighbors"}


def _keys_or_none(dp: Dataplane) -> Optional[dict]:
    try:
        return table_keys(dp.dump())
    except Exception:  # noqa: BLE001 - a dataplane taking over may not answer yet
        return None
