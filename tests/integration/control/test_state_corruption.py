#!/usr/bin/env python3
"""vxfedd's state files damaged while it is stopped (docs/control.md, "Persistence"): it refuses
to start with a message naming the file and what is wrong, or it recovers with a logged note;
it never gives a network another VNI.

vxfedd alone (no dataplane: it serves its API and keeps retrying the dataplane socket), its
state dir in this test's temp dir. A first run stores: network `fed` from the config (VNI 1000,
pinned), `red` over the API (VNI 1001 from the pool), `blue` over the API (pinned 1500), one
endpoint on `red`. Then, each case from a copy of that state dir:

  file                 damage                          expected
  vnis.journal         a byte of the last record       refused: the file, "corrupt"
  vnis.journal         the last record cut             refused: a stored network has no VNI
  vnis.journal         emptied (0 bytes)               refused: a stored network has no VNI
  vnis.snap            garbage written                 refused: the file, "corrupt"
  networks.journal     a byte of the last record       refused: the file, "corrupt"
  networks.journal     the last record (blue) cut      starts: blue's VNI 1500 held down, noted; fed, red keep theirs
  endpoints.journal    a byte of the record            refused: the file, "corrupt"
  endpoints.journal    the record cut                  starts: the cut record noted (an interrupted write
                                                       looks the same); every VNI as it was
  blocks.journal       its header garbled              refused: the file, "corrupt"
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import vxfed_harness as t

VXFEDD = t.require_binary("control/vxfedd")
VXFEDCTL = t.require_binary("control/vxfedctl")
STORED = {"fed": 1000, "red": 1001, "blue": 1500}


class Daemon:
    def __init__(self, work: Path, state: Path):
        self.work, self.state = work, state
        self.sock = work / "d.sock"
        self.cfg = work / "vxfedd.yaml"
        self.cfg.write_text(json.dumps({
            "node": {"name": "n1", "vtep_ip": "198.18.0.1", "uplink": "ul0", "underlay_mtu": 9000},
            "cluster": {"name": "c1", "pod_cidrs": ["10.244.0.0/16"]},
            "daemon": {"metrics_listen": "", "socket": str(self.sock), "state_dir": str(state)},
            "dataplane": {"socket": str(work / "dp.sock")},
            "networks": [{"name": "fed", "vni": 1000, "subnet": "10.244.0.0/24"}]}))
        self.env = dict(os.environ, VXFED_BPF_PIN_ROOT=str(work / "bpf"))
        self.proc: subprocess.Popen | None = None
        self.log = ""

    def start(self) -> bool:
        """True once it serves; False if it exited (self.log has its output)."""
        if self.sock.exists():
            self.sock.unlink()
        self.proc = subprocess.Popen([str(VXFEDD), "--config", str(self.cfg), "--foreground"], env=self.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log = self.proc.stdout.read()
                return False
            if self.sock.exists() and self.ctl("status").returncode in (0, 4):
                return True
            time.sleep(0.05)
        raise TimeoutError(f"vxfedd neither served nor exited within 20 s (state {self.state})")

    def stop(self) -> None:
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=15)
        self.log = out

    def ctl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(VXFEDCTL), "--socket", str(self.sock), *args], capture_output=True, text=True,
                              timeout=15)

    def ok(self, *args: str) -> str:
        res = self.ctl(*args)
        assert res.returncode == 0, f"vxfedctl {' '.join(args)}: {res.stdout}{res.stderr}"
        return res.stdout

    def vnis(self) -> dict:
        return {(v.get("network"), v["vni"]): v.get("state") for v in json.loads(self.ok("--json", "vnis"))["vnis"]}


def last_record_offset(data: bytes) -> int:
    """Offset of the journal's last record (records start with the magic "JREC")."""
    at = data.rfind(b"JREC")
    assert at >= 16, "the journal has no record"
    return at


def flip_last_record(data: bytes) -> bytes:
    i = len(data) - 3                       # in the last record's value: its checksum no longer matches
    return data[:i] + bytes([data[i] ^ 0x5A]) + data[i + 1:]


def cut_last_record(data: bytes) -> bytes:
    return data[:last_record_offset(data) + 20]


CASES = [  # file, damage, what: refused with these words in the error | started (check)
    ("vnis.journal", flip_last_record, ("refused", ["vnis.journal", "corrupt"])),
    ("vnis.journal", cut_last_record, ("refused", ["vnis.journal has no VNI for network 'blue'",
                                                    "refusing to start rather than give the network a new VNI"])),
    ("vnis.journal", lambda d: b"", ("refused", ["vnis.journal has no VNI for network"])),
    ("vnis.snap", lambda d: b"VXFSNAP1 garbage, not a snapshot", ("refused", ["vnis.snap is corrupt"])),
    ("networks.journal", flip_last_record, ("refused", ["networks.journal", "corrupt"])),
    ("networks.journal", cut_last_record, ("started", "blue_held")),
    ("endpoints.journal", flip_last_record, ("refused", ["endpoints.journal", "corrupt"])),
    ("endpoints.journal", cut_last_record, ("started", "endpoint_cut")),
    ("blocks.journal", lambda d: b"XXXXXXXX" + d[8:], ("refused", ["blocks.journal is corrupt"])),
]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="vxfed-statecorrupt-") as tmp:
        work = Path(tmp)
        golden = work / "golden"
        d = Daemon(work, golden)
        assert d.start(), f"vxfedd did not start on an empty state dir:\n{d.log}"
        d.ok("add-network", "red", "--subnet", "10.244.1.0/24")
        d.ok("add-network", "blue", "--subnet", "10.244.2.0/24", "--vni", "1500")
        d.ok("attach", "ctr-red-1", "--network", "red", "--ip", "10.244.1.11", "--mac", "02:00:0a:f4:01:0b",
             "--host-iface", "vxfcA1")
        got = d.vnis()
        assert {n: v for n, v in got} == STORED, f"unexpected VNIs after the first run: {got}"
        d.stop()
        failures = []
        for i, (name, damage, (outcome, expect)) in enumerate(CASES):
            state = work / f"case{i}"
            shutil.copytree(golden, state)
            path = state / name
            path.write_bytes(damage(path.read_bytes() if path.exists() else b""))
            c = Daemon(work, state)
            started = c.start()
            label = f"{name} ({damage.__name__ if damage.__name__ != '<lambda>' else 'rewritten'})"
            if outcome == "refused":
                if started:
                    failures.append(f"{label}: vxfedd started; VNIs {c.vnis()}")
                    c.stop()
                    continue
                missing = [w for w in expect if w not in c.log]
                if missing or str(state) not in c.log:
                    failures.append(f"{label}: refused, but the message lacks {missing or [str(state)]}:\n{c.log[-600:]}")
                t.log(f"{label}: refused: {c.log.strip().splitlines()[-1][-300:]}")
                continue
            if not started:
                failures.append(f"{label}: vxfedd refused to start:\n{c.log[-600:]}")
                continue
            vnis = c.vnis()
            endpoints = json.loads(c.ok("--json", "endpoints"))["endpoints"]
            c.stop()
            live = {n: v for (n, v), st in vnis.items() if st != "held"}
            if expect == "blue_held":
                want_live = {"fed": 1000, "red": 1001}
                ok = live == want_live and any(v == 1500 and st == "held" for (_, v), st in vnis.items()) and "VNI 1500 had no network" in c.log
            else:
                want_live = STORED
                ok = live == STORED and not endpoints and "discarded" in c.log and "endpoints.journal" in c.log
            if not ok:
                failures.append(f"{label}: started, but VNIs {vnis} (live expected {want_live}), endpoints "
                                f"{len(endpoints)}; log:\n{c.log[-800:]}")
            t.log(f"{label}: started; VNIs {sorted(vnis)}; {len(endpoints)} endpoints")
        assert not failures, "\n".join(failures)


if __name__ == "__main__":
    t.main_wrapper(main)
