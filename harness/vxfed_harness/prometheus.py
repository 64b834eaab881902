"""A real Prometheus (Debian's `prometheus` package) for tests: started in a namespace,
scraping targets there every second, with optional rule files; queried through its HTTP API
(with curl inside the namespace, since its port is bound there). `promtool` checks scraped
text and rule files. Its data directory lives in the topology's workdir and goes with it.

    prom = Prometheus(node.ns, topo.workdir / "prom", targets=["127.0.0.1:9472"])
    prom.start()
    prom.wait_scraped(30)
    value = prom.value('sum(vxfed_dataplane_drops_total)')
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from pathlib import Path
from typing import Callable, Iterable, Optional

from .env import require_program
from .proc import PartUnavailable, wait_until
from .topology import Namespace

PORT = 9090


def require_prometheus() -> None:
    for p in ("prometheus", "promtool", "curl"):
        require_program(p)


def promtool(*args: str, stdin: Optional[str] = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """promtool ARGS (text output, not checked: callers read returncode and output)."""
    return subprocess.run(["promtool", *args], input=stdin, capture_output=True, text=True, timeout=timeout)


def check_metrics(text: str) -> list[str]:
    """`promtool check metrics` on an exposition: the problems it names (empty: clean)."""
    r = promtool("check", "metrics", stdin=text)
    problems = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    if r.returncode != 0 and not problems:
        problems = [f"promtool check metrics exited {r.returncode}"]
    return problems


def fetch(ns: Namespace, url: str, method: str = "GET", timeout: float = 10) -> tuple[int, str]:
    """HTTP status and body of url, fetched from inside ns."""
    r = ns.run(["curl", "-sS", "-X", method, "-o", "-", "-w", "\n%{http_code}", "--max-time", str(timeout), url],
               check=False, timeout=timeout + 5)
    if r.returncode != 0:
        raise RuntimeError(f"curl {url}: {r.stderr.strip()}")
    body, _, code = r.stdout.rpartition("\n")
    return int(code), body


class Prometheus:
    def __init__(self, ns: Namespace, workdir: Path, targets: Iterable[str], job: str = "vxfed",
                 rule_files: Iterable[Path] = (), scrape_interval: str = "1s", port: int = PORT):
        self.ns = ns
        self.dir = Path(workdir)
        self.targets = list(targets)
        self.job = job
        self.rule_files = [Path(p) for p in rule_files]
        self.scrape_interval = scrape_interval
        self.port = port
        self.proc: Optional[subprocess.Popen] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self) -> dict:
        """prometheus.yml (as JSON, which is YAML)."""
        return {
            "global": {"scrape_interval": self.scrape_interval, "evaluation_interval": self.scrape_interval,
                       "scrape_timeout": self.scrape_interval},
            "rule_files": [str(p) for p in self.rule_files],
            "scrape_configs": [{"job_name": self.job, "static_configs": [{"targets": self.targets}]}],
        }

    def start(self, timeout: float = 60) -> float:
        """Starts Prometheus and waits until it is ready; returns the seconds that took."""
        self.dir.mkdir(parents=True, exist_ok=True)
        cfg = self.dir / "prometheus.yml"
        cfg.write_text(json.dumps(self.config(), indent=1))
        r = promtool("check", "config", str(cfg))
        if r.returncode != 0:
            raise RuntimeError(f"promtool check config {cfg}:\n{r.stdout}{r.stderr}")
        self.proc = self.ns.spawn(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={self.dir / 'data'}",
                                   f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1h",
                                   "--log.level=warn"], name="prometheus")
        return wait_until(lambda: fetch(self.ns, self.url + "/-/ready")[0] == 200, timeout, "Prometheus to be ready",
                          self.check_alive)

    def check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise PartUnavailable("prometheus", f"exited with {self.proc.returncode}:\n"
                                  + self.ns.topo.log_of_process(self.proc)[-3000:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def api(self, path: str, **params: str) -> dict:
        """GET /api/v1/<path>?params; the `data` of a successful answer."""
        query = urllib.parse.urlencode(params)
        code, body = fetch(self.ns, f"{self.url}/api/v1/{path}" + (f"?{query}" if query else ""))
        answer = json.loads(body) if body else {}
        if code != 200 or answer.get("status") != "success":
            raise RuntimeError(f"Prometheus /api/v1/{path} {params}: HTTP {code}: {body[:500]}")
        return answer["data"]

    def query(self, expr: str) -> list[dict]:
        """An instant query's result vector: [{"metric": {...}, "value": [t, "v"]}, ...]."""
        data = self.api("query", query=expr)
        if data["resultType"] != "vector":
            raise RuntimeError(f"{expr}: a {data['resultType']}, not a vector")
        return data["result"]

    def value(self, expr: str) -> Optional[float]:
        """The one value of a query that returns at most one series (None: no series)."""
        result = self.query(expr)
        if len(result) > 1:
            raise RuntimeError(f"{expr}: {len(result)} series, expected at most one: {result[:3]}")
        return float(result[0]["value"][1]) if result else None

    def wait_value(self, expr: str, ok: Callable[[float], bool], timeout: float, what: str,
                   check_alive: Callable[[], None] = lambda: None) -> float:
        """Waits until the query's one value satisfies ok(); returns that value."""
        seen: list[Optional[float]] = [None]

        def test() -> bool:
            seen[0] = self.value(expr)
            return seen[0] is not None and ok(seen[0])

        def alive() -> None:
            self.check_alive()
            check_alive()
        try:
            wait_until(test, timeout, what, alive, interval=0.5)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc} (query {expr!r}: last value {seen[0]})") from None
        return seen[0]

    def targets_health(self) -> list[dict]:
        return self.api("targets")["activeTargets"]

    def rules(self) -> list[dict]:
        """Every loaded rule with its health and last error."""
        out = []
        for group in self.api("rules")["groups"]:
            out.extend(group["rules"])
        return out

    def wait_scraped(self, timeout: float, check_alive: Callable[[], None] = lambda: None) -> None:
        """Until every target was scraped successfully at least once."""
        def all_up() -> bool:
            ts = self.targets_health()
            return bool(ts) and all(t["health"] == "up" for t in ts)
        try:
            wait_until(all_up, timeout, "Prometheus to scrape every target", lambda: (self.check_alive(), check_alive()))
        except TimeoutError:
            raise TimeoutError(f"targets not up: {self.targets_health()}") from None
