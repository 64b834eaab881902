#!/usr/bin/env python3
"""Static checks of deploy/monitoring/ (suite unit; no Prometheus needed):

- every alert of vxfed.rules.yaml has a promtool test case in which it fires
  (tests/monitoring/vxfed.rules.test.yaml; `promtool test rules` runs them: monitoring_rules);
- prometheusrule.yaml's spec is vxfed.rules.yaml's groups, unchanged;
- every vxfed metric the rules and the dashboard name is one vxfedd serves (a family the
  renderers in control/metrics/metrics_*.cpp declare), so a typo cannot hide in a query;
- the dashboard is valid JSON whose every panel has at least one query;
- scrape-config.yaml passes `promtool check config` with its kubernetes_sd_configs replaced
  by a static target (Debian's Prometheus is built without Kubernetes discovery), so its
  relabelling is checked.

The dashboard's queries are also run against a real Prometheus by
tests/integration/monitoring/test_prometheus.py.
"""
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MON = ROOT / "deploy" / "monitoring"


def served_families() -> set[str]:
    names = set()
    for src in (ROOT / "control" / "metrics").glob("metrics_*.cpp"):
        names |= set(re.findall(r'"(vxfedd?_[a-z0-9_]+)"', src.read_text()))
    return names


def metric_names(expr: str) -> set[str]:
    return set(re.findall(r"\b(vxfedd?_[a-z0-9_]+)", expr))


def family_of(name: str, families: set[str]) -> bool:
    if name in families:
        return True
    return any(name == f + suffix for f in families for suffix in ("_bucket", "_sum", "_count"))


def check_scrape_config() -> list[str]:
    if shutil.which("promtool") is None:
        return ["promtool missing: apt-get install prometheus (scripts/install-deps.sh)"]
    text = (MON / "scrape-config.yaml").read_text()
    sd = re.compile(r"^    kubernetes_sd_configs:\n(      .*\n)+", re.M)
    if not sd.search(text):
        return ["scrape-config.yaml has no kubernetes_sd_configs block"]
    static = sd.sub("    static_configs:\n      - targets: ['192.0.2.1:9472']\n", text)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(static)
        f.flush()
        r = subprocess.run(["promtool", "check", "config", f.name], capture_output=True, text=True)
    return [] if r.returncode == 0 else [f"scrape-config.yaml: promtool check config:\n{r.stdout}{r.stderr}"]


def main() -> int:
    problems = []
    rules_text = (MON / "vxfed.rules.yaml").read_text()
    tests_text = (ROOT / "tests" / "monitoring" / "vxfed.rules.test.yaml").read_text()
    alerts = re.findall(r"^\s*- alert: (\w+)$", rules_text, re.M)
    if len(alerts) < 10:
        problems.append(f"only {len(alerts)} alerts found in vxfed.rules.yaml")
    # A firing case: "alertname: X" followed (before the next alertname) by an exp_labels entry.
    cases = re.split(r"^\s*alertname: ", tests_text, flags=re.M)[1:]
    firing = {c.split()[0] for c in cases if "exp_labels:" in c.split("alertname:")[0]}
    quiet = {c.split()[0] for c in cases if re.match(r"\w+\s*\n\s*exp_alerts: \[\]", c)}
    for a in alerts:
        if a not in firing:
            problems.append(f"alert {a} has no promtool test case in which it fires")
    never_quiet = [a for a in alerts if a not in quiet]
    print(f"{len(alerts)} alerts, each with a firing case; {len(alerts) - len(never_quiet)} also with an explicit "
          f"quiet case at eval time (the others have series that must not fire beside the firing ones)")

    pr = (MON / "prometheusrule.yaml").read_text().splitlines()
    spec = pr[pr.index("spec:") + 1:]
    dedented = "\n".join(line[2:] if line.startswith("  ") else line for line in spec).strip()
    groups = rules_text[rules_text.index("groups:"):].strip()
    if dedented != groups:
        problems.append("prometheusrule.yaml's spec differs from vxfed.rules.yaml's groups (regenerate it)")

    families = served_families()
    if len(families) < 60:
        problems.append(f"only {len(families)} metric families found in control/metrics/metrics_*.cpp")
    exprs = re.findall(r"^\s*expr: (.+)$", rules_text, re.M)
    dash = json.loads((MON / "vxfed-dashboard.json").read_text())
    for p in dash["panels"]:
        targets = [t["expr"] for t in p.get("targets", []) if t.get("expr")]
        if not targets:
            problems.append(f"dashboard panel {p.get('title')!r} has no query")
        exprs += targets
    exprs.append(dash["templating"]["list"][1]["definition"])
    for e in exprs:
        for name in metric_names(e):
            if not family_of(name, families):
                problems.append(f"{name} (in {e!r}) is not a metric vxfedd serves")
    print(f"{len(exprs)} queries checked against {len(families)} served families; "
          f"{len(dash['panels'])} dashboard panels")
    problems += check_scrape_config()
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
