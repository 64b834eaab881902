"""A real etcd cluster for tests: N members on loopback ports of this host (or, with ns= and
host=, on that address of a namespace of the topology, for nodes in their own namespaces; or,
with places=[(ns, address), ...], each member in a namespace of its own, reached from ns).

Members are Debian's etcd (etcd-server) processes started through a `Topology` (so they are
killed when the test ends) with their data under the topology's work directory. Ports are
picked free at start. Elections are tuned fast (heartbeat 50 ms, election 500 ms) so that a
killed member or a restarted cluster settles in about a second.

    from vxfed_harness.etcd_cluster import EtcdCluster
    cluster = EtcdCluster(topo, members=3)
    cluster.start()                      # waits until every member is healthy
    cluster.endpoints                    # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
    cluster.kill(0); cluster.restart(0)  # one member
    cluster.leader()                     # which member leads now (None without quorum)
    cluster.stop_all(); cluster.start_all()
    cluster.wipe()                       # lose everything: a new, empty cluster on the same ports
    cluster.get_prefix("/vxfed/v1/")     # {key: value} through etcdctl
    cluster.blackhole(1); cluster.heal(1)  # (places=) member 1's packets dropped, not refused

With `tls=make_pki(dir)` the members serve clients over TLS only and require a client
certificate signed by the test CA (etcd's --client-cert-auth); `cluster.tls` has the files.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import signal
import socket
import subprocess
from pathlib import Path

from .env import require_program
from .proc import run, wait_for
from .topology import Namespace, Topology


def make_pki(directory: Path) -> dict[str, str]:
    """A throw-away CA, a server certificate for 127.0.0.1 and a client certificate, made with
    the openssl command; returns {"ca", "server_cert", "server_key", "client_cert", "client_key"}."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ossl = require_program("openssl")
    files = {k: str(d / f"{k}.pem") for k in ("ca", "ca_key", "server_cert", "server_key", "client_cert", "client_key")}
    run([ossl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
         "-subj", "/CN=vxfed test CA", "-keyout", files["ca_key"], "-out", files["ca"]])
    for who, subject, ext in (("server", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"),
                              ("client", "/CN=vxfed-node", "extendedKeyUsage=clientAuth")):
        csr = str(d / f"{who}.csr")
        extfile = d / f"{who}.ext"
        extfile.write_text(ext + "\n")
        run([ossl, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", subject,
             "-keyout", files[f"{who}_key"], "-out", csr])
        run([ossl, "x509", "-req", "-in", csr, "-CA", files["ca"], "-CAkey", files["ca_key"], "-CAcreateserial",
             "-days", "2", "-extfile", str(extfile), "-out", files[f"{who}_cert"]])
    return files


# Ports handed out by this process, so that two members never get the same one.
_ports_given: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A TCP port for a member to listen on later, taken from below the kernel's ephemeral
    range. Asking the kernel for port 0 would hand out an ephemeral port, and between this
    call and etcd's bind() the members' own outgoing peer connections (and etcdctl's) draw
    their source ports from that same range: a CI run lost the demo to "bind: address already
    in use" that way. Below the range no connect() ever picks it."""
    low, _ = _ephemeral_range()
    first = 20000 if low > 21000 else 1024
    for _ in range(1000):
        port = random.randrange(first, low)
        if port in _ports_given:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ports_given.add(port)
        return port
    raise RuntimeError(f"no free TCP port in {first}-{low - 1}")


class EtcdCluster:
    def __init__(self, topo: Topology, members: int = 3, name: str = "etcd", tls: dict[str, str] | None = None,
                 ns: Namespace | None = None, host: str = "127.0.0.1",
                 places: list[tuple[Namespace, str]] | None = None, pre_vote: bool = False):
        """ns/host: the members run in that namespace and listen on host (an address it has);
        TLS needs the default (the test certificate names 127.0.0.1). places: member i runs in
        places[i][0] and listens on places[i][1]; ns is where etcdctl runs (it must reach them).
        pre_vote: etcd's --pre-vote (off by default in 3.4): a member that was cut off does not
        unseat the leader when it comes back (docs/federation.md, "Running etcd for vxfed")."""
        assert tls is None or (host == "127.0.0.1" and places is None), "the test PKI's server certificate is for 127.0.0.1"
        assert places is None or len(places) == members, "one place per member"
        self.topo = topo
        self.ns = ns or topo.host
        self.host = host
        self.places = places or [(self.ns, host)] * members
        self.tls = tls
        self.pre_vote = pre_vote
        self.scheme = "https" if tls else "http"
        self.name = name
        self.etcd = require_program("etcd")
        self.etcdctl = require_program("etcdctl")
        self.size = members
        # Members with an address of their own take etcd's own ports (the same in every run,
        # so an address list is too); on a shared address, free ones.
        own = places is not None
        self.client_ports = [2379 if own else free_port() for _ in range(members)]
        self.peer_ports = [2380 if own else free_port() for _ in range(members)]
        self.dirs = [topo.workdir / f"{name}-m{i}" for i in range(members)]
        self.procs: list[subprocess.Popen | None] = [None] * members
        self.generation = 0  # bumped by wipe(): a new cluster token, so a new cluster id

    @property
    def endpoints(self) -> str:
        return ",".join(self.endpoint(i) for i in range(self.size))

    def endpoint(self, i: int) -> str:
        return f"{self.places[i][1]}:{self.client_ports[i]}"

    def _args(self, i: int) -> list[str]:
        h = self.places[i][1]
        initial = ",".join(f"m{j}=http://{self.places[j][1]}:{p}" for j, p in enumerate(self.peer_ports))
        return [self.etcd, "--name", f"m{i}", "--data-dir", str(self.dirs[i]),
                "--listen-client-urls", f"{self.scheme}://{h}:{self.client_ports[i]}",
                "--advertise-client-urls", f"{self.scheme}://{h}:{self.client_ports[i]}",
                "--listen-peer-urls", f"http://{h}:{self.peer_ports[i]}",
                "--initial-advertise-peer-urls", f"http://{h}:{self.peer_ports[i]}",
                "--initial-cluster", initial, "--initial-cluster-state", "new",
                "--initial-cluster-token", f"vxfed-{self.topo.suffix}-{self.generation}",
                "--heartbeat-interval", "50", "--election-timeout", "500",
                "--logger", "zap", "--log-level", "warn", *(["--pre-vote"] if self.pre_vote else []),
                *self._tls_args()]

    def _tls_args(self) -> list[str]:
        if not self.tls:
            return []
        return ["--cert-file", self.tls["server_cert"], "--key-file", self.tls["server_key"],
                "--trusted-ca-file", self.tls["ca"], "--client-cert-auth"]

    def _ctl_tls(self) -> list[str]:
        if not self.tls:
            return []
        return ["--cacert", self.tls["ca"], "--cert", self.tls["client_cert"], "--key", self.tls["client_key"]]

    def start_member(self, i: int) -> None:
        self.procs[i] = self.places[i][0].spawn(self._args(i), name=f"{self.name}-m{i}-g{self.generation}")

    def start(self, timeout: float = 30) -> None:
        for i in range(self.size):
            self.start_member(i)
        self.wait_healthy(range(self.size), timeout)

    start_all = start

    def healthy(self, i: int) -> bool:
        proc = self.procs[i]
        if proc is None or proc.poll() is not None:
            return False
        r = run([*self.ns.prefix(), self.etcdctl, "--endpoints", self.endpoint(i), "--command-timeout", "1s", *self._ctl_tls(),
                 "endpoint", "health"], check=False, timeout=5, env=self._env())
        return r.returncode == 0

    def wait_healthy(self, members, timeout: float = 30) -> None:
        members = list(members)
        wait_for(lambda: all(self.healthy(i) for i in members), timeout,
                   f"etcd members {members} healthy")

    def kill(self, i: int) -> None:
        proc = self.procs[i]
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        self.procs[i] = None

    def restart(self, i: int, timeout: float = 30) -> None:
        self.kill(i)
        self.start_member(i)
        self.wait_healthy([i], timeout)

    def leader(self) -> int | None:
        """The index of the member that is the leader now, or None (no quorum, or no answer)."""
        r = run([*self.ns.prefix(), self.etcdctl, "--endpoints", self.endpoints, "--command-timeout", "2s",
                 *self._ctl_tls(), "endpoint", "status", "-w", "json"], check=False, timeout=10, env=self._env())
        try:
            statuses = json.loads(r.stdout) if r.stdout.strip() else []
        except ValueError:
            return None
        for st in statuses:
            s = st.get("Status", {})
            if s.get("leader") and s.get("header", {}).get("member_id") == s.get("leader"):
                address = st.get("Endpoint", "").split("://")[-1]
                if address in self.endpoints.split(","):
                    return self.endpoints.split(",").index(address)
        return None

    def _own_namespace(self, i: int) -> Namespace:
        ns = self.places[i][0]
        assert ns.name is not None and sum(p[0] is ns for p in self.places) == 1 and ns is not self.ns, \
            "blackhole() needs each member in a namespace of its own (places=)"
        return ns

    def blackhole(self, i: int) -> None:
        """Member i keeps running, but every packet to or from it (other than its own loopback)
        is dropped, not refused: iptables DROP in its namespace. Clients and peers see silence."""
        ns = self._own_namespace(i)
        iptables = require_program("iptables")
        ns.run([iptables, "-w", "-I", "INPUT", "!", "-i", "lo", "-j", "DROP"])
        ns.run([iptables, "-w", "-I", "OUTPUT", "!", "-o", "lo", "-j", "DROP"])

    def heal(self, i: int) -> None:
        """Undoes blackhole(i)."""
        ns = self._own_namespace(i)
        iptables = require_program("iptables")
        ns.run([iptables, "-w", "-D", "INPUT", "!", "-i", "lo", "-j", "DROP"])
        ns.run([iptables, "-w", "-D", "OUTPUT", "!", "-o", "lo", "-j", "DROP"])

    def running(self, i: int) -> bool:
        proc = self.procs[i]
        return proc is not None and proc.poll() is None

    def stop_all(self) -> None:
        for i in range(self.size):
            self.kill(i)

    def wipe(self, timeout: float = 30) -> None:
        """Every member lost with its data: a new, empty cluster on the same endpoints."""
        self.stop_all()
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)
        self.generation += 1
        self.start(timeout)

    def _env(self) -> dict:
        env = dict(os.environ)
        env["ETCDCTL_API"] = "3"
        return env

    def ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run([*self.ns.prefix(), self.etcdctl, "--endpoints", self.endpoints, "--command-timeout", "5s", *self._ctl_tls(), *args],
                     check=check, timeout=15, env=self._env())

    def get_prefix(self, prefix: str) -> dict[str, str]:
        out = self.ctl("get", "--prefix", prefix, "-w", "json").stdout
        data = json.loads(out) if out.strip() else {}
        return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", "")).decode()
                for kv in data.get("kvs", [])}

    def member_log(self, i: int) -> str:
        return self.topo.log_of(f"{self.name}-m{i}-g{self.generation}")
