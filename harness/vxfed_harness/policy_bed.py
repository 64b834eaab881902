"""A network-policy bed: a FederationBed (two clusters, real FRR, etcd, vxfed-dataplane and
vxfedd per node) whose pods are Kubernetes pods by name (namespace/name, given to the CNI
plugin as K8S_POD_NAMESPACE/K8S_POD_NAME, so vxfedd knows which pod each endpoint is), with a
reachability agent in each (harness/vxfed_harness/probe_agent.py: TCP and UDP echo servers,
probes on request), and the policy objects written per cluster with `vxfedctl policy`.

    bed = PolicyBed(topo, nodes_per_cluster=2, tcp_ports=(80, 81), udp_ports=(53, 80))
    bed.up()
    pod = bed.add_pod("cluster-a", "alpha", "a", node="a1")
    bed.apply("cluster-a", [namespace_obj, pod_obj, policy_obj])   # vxfedctl policy apply -f
    bed.delete("cluster-a", "policy", ["alpha/deny-all"])            # vxfedctl policy delete
    ok = bed.probe([(src, dst, "tcp", 80), ...], timeout=0.5)       # every probe at once
    runs = bed.series([(src, dst, "tcp", 80)], seconds=2.5)         # a probe every 20 ms

A probe is asked of the source pod's agent; each agent gets its probes in one request, and the
agents work side by side, so a matrix of a few thousand probes with 0.5 s timeouts takes about
a timeout (plus the machine's time to run them).
"""

from __future__ import annotations

import json
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .federation_bed import FederationBed, node_cni_config
from .proc import PartUnavailable
from .topology import Namespace, Topology

AGENT = Path(__file__).with_name("probe_agent.py")
PYTHON = "/usr/bin/python3"   # the system's: the agent needs the standard library only


@dataclass
class PolicyPod:
    """A pod by its Kubernetes names, where it runs and its agent."""
    cluster: str
    namespace: str
    name: str
    node: object           # vxfed_harness.node.Node
    ns: Namespace
    ip: str
    container_id: str
    agent: Optional[subprocess.Popen] = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    seq: int = 0

    @property
    def key(self) -> str:
        """cluster/namespace/name, unique in the bed."""
        return f"{self.cluster}/{self.namespace}/{self.name}"

    @property
    def short(self) -> str:
        """a:alpha/a (cluster letter, namespace, name): what a matrix prints."""
        return f"{self.cluster[-1]}:{self.namespace}/{self.name}"

    def ask(self, probes: list[tuple], timeout: float) -> dict:
        """Runs probes (destination address, tcp|udp, port[, delay s]) from this pod, all at
        once; the agent's answer ({"ok": [...], "ms": [...], "sent": [...]})."""
        assert self.agent is not None and self.agent.stdin and self.agent.stdout
        with self.lock:
            self.seq += 1
            req = {"id": self.seq, "timeout": timeout, "probes": [list(p) for p in probes]}
            self.agent.stdin.write(json.dumps(req) + "\n")
            self.agent.stdin.flush()
            line = self.agent.stdout.readline()
        if not line:
            raise RuntimeError(f"the agent of {self.key} exited (code {self.agent.poll()})")
        ans = json.loads(line)
        assert ans["id"] == self.seq, f"{self.key}: answer {ans['id']} to request {self.seq}"
        return ans


class PolicyBed:
    def __init__(self, topo: Topology, nodes_per_cluster: int = 2, tcp_ports=(80,), udp_ports=(80,)):
        self.topo = topo
        self.fed = FederationBed(topo, clusters=2, nodes_per_cluster=nodes_per_cluster)
        self.tcp_ports = tuple(tcp_ports)
        self.udp_ports = tuple(udp_ports)
        self.pods: list[PolicyPod] = []
        self.applies = 0

    # ------------------------------------------------------------------ bring-up
    def up(self, timeout: float = 180) -> None:
        self.fed.up(timeout=timeout)

    @property
    def nodes(self):
        return self.fed.nodes

    def cluster_nodes(self, cluster: str) -> list:
        return [n for n in self.fed.nodes.values() if n.cluster == cluster]

    def add_pod(self, cluster: str, namespace: str, name: str, node: str) -> PolicyPod:
        """CNI ADD of pod namespace/name on node (short name, of cluster), as a runtime runs it
        for a Kubernetes pod, then its agent started."""
        n = self.fed.nodes[node]
        assert n.cluster == cluster, f"node {node} is in {n.cluster}, not {cluster}"
        ns = self.topo.netns(f"{node}{namespace[:5]}{name}")
        cid = f"polbed-{self.topo.suffix}-{node}-{namespace}-{name}"
        try:
            res = self.fed.runtimes[node].add(
                node_cni_config(n), cid, ns.path, "eth0",
                args={"IgnoreUnknown": 1, "K8S_POD_NAMESPACE": namespace, "K8S_POD_NAME": name})
        except subprocess.TimeoutExpired:
            raise PartUnavailable("vxfed CNI plugin", f"ADD {cid} did not return in time") from None
        ip = res["ips"][0]["address"].split("/")[0]
        pod = PolicyPod(cluster, namespace, name, n, ns, ip, cid)
        self._start_agent(pod)
        self.pods.append(pod)
        return pod

    def _start_agent(self, pod: PolicyPod) -> None:
        err = open(self.topo.workdir / f"agent-{pod.cluster}-{pod.namespace}-{pod.name}.log", "w")
        args = [*pod.ns.prefix(), PYTHON, str(AGENT), "--tcp", ",".join(map(str, self.tcp_ports)),
                "--udp", ",".join(map(str, self.udp_ports))]
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True)
        err.close()
        self.topo.processes.append((f"agent {pod.key}", proc))
        first = proc.stdout.readline()
        if not first or not json.loads(first).get("ready"):
            raise RuntimeError(f"the agent of {pod.key} did not start: {first!r} (code {proc.poll()})")
        pod.agent = proc

    def check_alive(self) -> None:
        self.fed.check_alive()
        for p in self.pods:
            if p.agent is not None and p.agent.poll() is not None:
                raise RuntimeError(f"the agent of {p.key} exited with {p.agent.returncode}")

    # ------------------------------------------------------------------ policy objects
    def _ctl(self, cluster: str, *args: str) -> subprocess.CompletedProcess:
        """vxfedctl on the first node of cluster (a policy is stored for the cluster of the node
        it is applied on: docs/policy.md, "Applying policy")."""
        n = self.cluster_nodes(cluster)[0]
        r = n.vxfedd.ctl(*args, timeout=15)
        if r.returncode != 0:
            raise RuntimeError(f"vxfedctl {' '.join(args)} on {n.short} ({cluster}): exit {r.returncode}: "
                               f"{r.stderr.strip()}")
        return r

    def apply(self, cluster: str, objects: list[dict]) -> str:
        """`vxfedctl policy apply -f` of objects (a kind: List, written as JSON, which is YAML) on
        a node of cluster; returns its output."""
        self.applies += 1
        path = self.topo.workdir / f"apply-{self.applies:03d}-{cluster}.yaml"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=1) + "\n")
        return self._ctl(cluster, "policy", "apply", "-f", str(path)).stdout

    def delete(self, cluster: str, kind: str, names: list[str]) -> str:
        """`vxfedctl policy delete KIND NAME...` on a node of cluster."""
        return self._ctl(cluster, "policy", "delete", kind, *names).stdout

    # ------------------------------------------------------------------ probes
    def _by_source(self, probes: list[tuple], timeout: float) -> list[dict]:
        """probes: (source pod, destination pod, tcp|udp, port[, delay]); one request per source
        agent, the agents side by side. Returns per probe {"ok", "ms", "sent"}."""
        by_src: dict[str, list[int]] = {}
        for i, p in enumerate(probes):
            by_src.setdefault(p[0].key, []).append(i)
        out: list[dict] = [{}] * len(probes)
        errors: list[str] = []

        def run_source(indexes: list[int]) -> None:
            src = probes[indexes[0]][0]
            try:
                ans = src.ask([(probes[i][1].ip, *probes[i][2:]) for i in indexes], timeout)
            except Exception as exc:  # noqa: BLE001 - reported after every thread is done
                errors.append(f"{src.key}: {exc}")
                return
            for k, i in enumerate(indexes):
                out[i] = {"ok": ans["ok"][k], "ms": ans["ms"][k], "sent": ans["sent"][k]}
        threads = [threading.Thread(target=run_source, args=(ix,)) for ix in by_src.values()]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if errors:
            raise RuntimeError("probe agents failed: " + "; ".join(errors))
        return out

    def probe(self, probes: list[tuple["PolicyPod", "PolicyPod", str, int]], timeout: float = 0.5) -> list[bool]:
        """Every probe (source pod, destination pod, tcp|udp, port) at once. Returns ok per probe."""
        return [r["ok"] for r in self._by_source(probes, timeout)]

    def series(self, probes: list[tuple["PolicyPod", "PolicyPod", str, int]], seconds: float,
               interval: float = 0.02, timeout: float = 0.5, ready: Optional[threading.Event] = None
               ) -> list[list[tuple[float, bool]]]:
        """For each probe, a series sent every `interval` s for `seconds` s from now (each with
        its own timeout): per probe the list of (send time on time.monotonic(), ok). Blocks until
        the series are done; run it on a thread to act meanwhile (ready is set when the requests
        are on their way)."""
        steps = int(seconds / interval)
        flat = [(*p, round(k * interval, 4)) for p in probes for k in range(steps)]
        if ready is not None:
            threading.Timer(0.05, ready.set).start()
        res = self._by_source(flat, timeout)
        out: list[list[tuple[float, bool]]] = []
        for j in range(len(probes)):
            out.append(sorted((r["sent"], r["ok"]) for r in res[j * steps:(j + 1) * steps]))
        return out


def flip_time(series: list[tuple[float, bool]], want: bool) -> Optional[float]:
    """The send time from which every probe of a series gave `want` (None: the last did not)."""
    if not series or series[-1][1] != want:
        return None
    t = series[-1][0]
    for sent, ok in reversed(series):
        if ok != want:
            break
        t = sent
    return t
