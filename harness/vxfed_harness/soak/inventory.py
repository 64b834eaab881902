"""What a node holds that churn must not leave behind, taken at the start and at the end of
the soak and compared: links and addresses in the node's namespace (the host ends of pod
veths), pinned eBPF programs under the node's pin root, host-local IPAM reservations, the CNI
plugin's attachment records and pending detaches, vxfedd's records over its API (VNIs in use,
networks, endpoints, routes) and the dataplane's tables (networks, endpoints, routes).

Every item is a sorted list of strings, so two inventories compare item by item and a
difference names what was added or is gone. A part that cannot be read raises
InventoryError naming it: a leak check that could not look is not a pass.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

from ..dataplane import canonical_tables


class InventoryError(RuntimeError):
    pass


def _files(root: Path, what: str) -> list[str]:
    if not root.is_dir():
        raise InventoryError(f"{what}: {root} is not a directory")
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def ipam_reservations(data_dir: Path) -> list[str]:
    """host-local keeps one file per reserved address, named by the address, under
    <dataDir>/<network>/ (its lock and last_reserved_ip.* files are bookkeeping, not reservations)."""
    return [f for f in _files(data_dir, "host-local IPAM data dir") if _is_ip(Path(f).name)]


def cni_records(state_dir: Path) -> list[str]:
    """The plugin's attachment records (docs/cni.md: <stateDir>/attachments/<host iface>.json)
    and the detaches it still owes (<stateDir>/pending-detach.json)."""
    out = [f"attachment {f}" for f in _files(state_dir / "attachments", "CNI attachment records")] \
        if (state_dir / "attachments").exists() else []
    pending = state_dir / "pending-detach.json"
    if pending.exists():
        try:
            queued = json.loads(pending.read_text() or "[]")
        except ValueError as exc:
            raise InventoryError(f"{pending}: not JSON: {exc}") from None
        if not isinstance(queued, list):         # cni/records.cpp writes a JSON array
            raise InventoryError(f"{pending}: not a JSON array")
        out += [f"pending-detach {json.dumps(e, sort_keys=True)}" for e in queued]
    return sorted(out)


def _ns_lines(node, args: list[str]) -> list[str]:
    res = node.ns.run(args, check=False)
    if res.returncode != 0:
        raise InventoryError(f"{' '.join(args)} in {node.ns}: {res.stderr.strip()[-200:]}")
    return res.stdout.splitlines()


def links(node) -> list[str]:
    out = []
    for line in _ns_lines(node, ["ip", "-o", "link", "show"]):
        parts = line.split(":")
        if len(parts) > 1:
            out.append(parts[1].strip().split("@")[0])
    return sorted(out)


def addresses(node) -> list[str]:
    out = []
    for line in _ns_lines(node, ["ip", "-o", "addr", "show"]):
        f = line.split()
        if len(f) >= 4:
            out.append(f"{f[1]} {f[3]}")
    return sorted(out)


def _held(entry: dict) -> bool:
    return any("held" in k.lower() and v not in (0, "0", None, False, "") for k, v in entry.items())


def vxfedd_records(node) -> tuple[dict[str, list[str]], int]:
    """What vxfedd holds, through vxfedctl. VNIs held down after a network was removed are
    left out (they expire after the hold-down time, as they must) and counted separately."""
    try:
        vnis = node.vxfedctl("vnis")["vnis"]
        nets = node.vxfedctl("networks")["networks"]
        eps = node.vxfedctl("endpoints")["endpoints"]
        routes = node.vxfedctl("routes")["routes"]
    except (RuntimeError, ValueError, KeyError, OSError) as exc:
        raise InventoryError(f"vxfedd on node {node.short}: {exc}") from None
    return {
        "vxfedd vnis": sorted(json.dumps(v, sort_keys=True) for v in vnis if not _held(v)),
        "vxfedd networks": sorted(n.get("spec", {}).get("name", "?") for n in nets),
        "vxfedd endpoints": sorted(f'{e["container_id"]} {e["ifname"]} {e["ip"]}' for e in eps),
        "vxfedd routes": sorted(f'{r.get("network")} {r.get("prefix")} {r.get("source")}' for r in routes),
    }, sum(1 for v in vnis if _held(v))


def dataplane_tables(node) -> dict[str, list[str]]:
    try:
        tables = canonical_tables(node.dataplane.dump())
    except (RuntimeError, ValueError, KeyError, OSError) as exc:
        raise InventoryError(f"vxfed-dataplane on node {node.short}: {exc}") from None
    return {f"dataplane {k}": sorted(tables[k]) for k in ("networks", "endpoints", "routes")}


def take(node, ipam_dir: Path, cni_state_dir: Path, bpf_pin_root: Path) -> dict:
    """The node's inventory: {"items": {name: [...]}, "info": {...}} (info is reported, not compared)."""
    records, held = vxfedd_records(node)
    items = {"links": links(node), "addresses": addresses(node),
             "pinned bpf": _files(bpf_pin_root, "eBPF pin root"),
             "ipam reservations": ipam_reservations(ipam_dir), "cni records": cni_records(cni_state_dir),
             **records, **dataplane_tables(node)}
    state_bytes = sum(p.stat().st_size for p in (node.dir / "state").rglob("*") if p.is_file())
    return {"items": items, "info": {"vnis held down": held, "state dir bytes": state_bytes}}


def compare(start: dict, end: dict) -> dict:
    """Per item: {"start": n, "end": n, "added": [...], "gone": [...]}."""
    out = {}
    for name, before in start["items"].items():
        after = end["items"].get(name, [])
        out[name] = {"start": len(before), "end": len(after),
                     "added": sorted(set(after) - set(before)), "gone": sorted(set(before) - set(after))}
    return out
