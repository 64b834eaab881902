"""The soak's verdicts and its terminal table, from the figures soak.py gathered. No I/O.

Checks (each passes or fails; the run passes when every one does):
  misdelivered          no probe datagram arrived at a pod it was not sent to;
  leaks <node>          every inventory item at the end equals the start (inventory.py);
  rss/fds <daemon>      flat (growth.py): "grows" and "not judged" both fail;
  pod churn <node>      no churned pod left behind and no ADD/DEL failed outside a restart's window;
  route churn           every reload's static routes were in place within 10 s;
  restarts              every restart's nodes were ready again within the recovery timeout.
"""

from __future__ import annotations

from . import growth


def _check(name: str, ok: bool, detail: str) -> dict:
    return {"check": name, "pass": bool(ok), "detail": detail}


def _leak_detail(diff: dict) -> str:
    bad = {k: v for k, v in diff.items() if v["added"] or v["gone"]}
    if not bad:
        return "; ".join(f"{k} {v['start']}" for k, v in diff.items())
    return "; ".join(f"{k}: {v['start']} -> {v['end']}, added {v['added'][:3]}, gone {v['gone'][:3]}"
                     for k, v in bad.items())


def _growth_detail(j: dict, unit: str) -> str:
    judged = [s for s in j["segments"] if s["verdict"] != growth.NOT_JUDGED]
    if not judged:
        reasons = "; ".join(s.get("reason", "") for s in j["segments"]) or "no samples"
        return f"not judged ({reasons})"
    worst = max(judged, key=lambda s: s["growth"] - s["allowed"])
    return (f"{len(judged)}/{len(j['segments'])} segment(s) judged; worst: {worst['first_median']:.0f} -> "
            f"{worst['last_median']:.0f} {unit} (growth {worst['growth']:+.0f}, allowed {worst['allowed']:.0f}; "
            f"slope {worst['slope_per_hour']:+.0f} {unit}/h)")


def checks(misdelivered: int, leaks: dict, grow: dict, churn: dict, in_event, routes: dict, events: list) -> list[dict]:
    out = [_check("misdelivered", misdelivered == 0, f"{misdelivered} datagram(s) at the wrong pod")]
    for node, diff in leaks.items():
        ok = all(not v["added"] and not v["gone"] for v in diff.values())
        out.append(_check(f"leaks node {node}", ok, _leak_detail(diff)))
    for daemon, j in grow.items():
        out.append(_check(f"rss {daemon}", j["rss"]["verdict"] == growth.FLAT, _growth_detail(j["rss"], "KiB")))
        out.append(_check(f"fds {daemon}", j["fds"]["verdict"] == growth.FLAT, _growth_detail(j["fds"], "fds")))
    for node, c in churn.items():
        outside = [e for e in c["errors"] if not in_event(e["t"])]
        ok = not c["left"] and not outside
        detail = (f"{c['added']} added, {c['deleted']} deleted ({c['pods_per_s']} pods/s), "
                  f"{len(c['errors']) - len(outside)} failure(s) during restarts, {len(outside)} outside")
        if c["left"]:
            detail += f", left behind: {c['left'][:5]}"
        if outside:
            detail += f", first: {outside[0]['op']} {outside[0]['pod']}: {outside[0]['error'][:160]}"
        out.append(_check(f"pod churn node {node}", ok, detail))
    out.append(_check("route churn", not routes["errors"],
                      f"{routes['reloads']} reloads" + (f", {len(routes['errors'])} failed: "
                                                        f"{routes['errors'][0]['error'][:160]}" if routes["errors"] else "")))
    bad = [e for e in events if e["ready_s"] is None]
    out.append(_check("restarts", not bad, f"{len(events)} restart(s): "
                      + ", ".join(f"{e['kind']} at {e['at_s']:.0f} s ready in "
                                  + ("-" if e["ready_s"] is None else f"{e['ready_s']:.1f} s")
                                  + (f" ({e['error'][:80]})" if e["error"] else "") for e in events)))
    return out


def table(rows: list[dict]) -> str:
    width = max(len(r["check"]) for r in rows)
    return "\n".join(f"{r['check']:<{width}}  {'pass' if r['pass'] else 'FAIL'}  {r['detail']}" for r in rows)


def series_table(grow: dict, series: dict) -> str:
    """Per daemon: samples, restarts, RSS and fds at the first and last sample, the verdicts."""
    lines = [f"{'daemon':<22} {'samples':>7} {'restarts':>8} {'rss KiB first/last/max':>26} "
             f"{'fds first/last':>14}  rss / fds"]
    for name, rows in series.items():
        got = [r for r in rows if r[1] is not None]
        if got:
            rss = f"{got[0][2]}/{got[-1][2]}/{max(r[2] for r in got)}"
            fds = f"{got[0][3]}/{got[-1][3]}"
        else:
            rss = fds = "-"
        j = grow[name]
        lines.append(f"{name:<22} {len(got):>7} {j['rss']['restarts']:>8} {rss:>26} {fds:>14}  "
                     f"{j['rss']['verdict']} / {j['fds']['verdict']}")
    return "\n".join(lines)


def tables_line(tables: dict) -> str:
    """The dataplanes' own figure for their forwarding tables, first/last/max (MiB)."""
    parts = []
    for name, rows in tables.items():
        got = [b for _, b in rows if b is not None]
        parts.append(f"{name} " + (f"{got[0] / 2**20:.1f}/{got[-1] / 2**20:.1f}/{max(got) / 2**20:.1f}"
                                   if got else "- (no answer)"))
    return "dataplane tables MiB first/last/max (its status tables_bytes): " + "; ".join(parts)
