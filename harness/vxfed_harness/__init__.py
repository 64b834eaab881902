"""vxfed_harness: the test and benchmark harness of vxfed, one package for tests/, perf/ and
the demos (harness/README.md has the map).

How Python finds it (one mechanism, no sys.path edits anywhere):
- `harness/` is on the import path. Meson's integration tests get it as PYTHONPATH
  (tests/integration/meson.build); so do our shell launchers (scripts/demo.sh,
  scripts/forwarder-demo.sh).
- For the scripts a person runs by path (perf/latency/latency_suite.py, perf/testpmd/compare.py,
  perf/cni/cni_bench.py, ...; they run under /usr/bin/python3, Debian's, where python3-scapy
  is), scripts/install-deps.sh installs one `vxfed-harness.pth` into that Python's
  site-packages naming this checkout's `harness/` directory, as `pip install -e` does.

With several checkouts on one machine the .pth names the last one that ran
scripts/install-deps.sh; a script of another checkout would silently run this checkout's
harness, so importing it from there is refused with the fix (below).

The names every test uses are here at the top (`import vxfed_harness as t`: t.Topology,
t.run, t.wait_for, t.require_binary, t.skip, t.log, ...); the rest by module:
`vxfed_harness.dataplane`, `.vxfedd`, `.frr`, `.node`, ...
"""

from __future__ import annotations

import sys
from pathlib import Path

from .env import (BUILD_DIR, SCRIPTS_DIR, SKIP_EXIT, SOURCE_DIR, binary, log, main_wrapper, require_binary,
                  require_program, require_root, skip)
from .proc import PartUnavailable, cpu_seconds, run, stop_process, wait_for, wait_path, wait_until
from .topology import Namespace, Topology, unique_suffix

__all__ = ["BUILD_DIR", "SCRIPTS_DIR", "SKIP_EXIT", "SOURCE_DIR", "binary", "log", "main_wrapper", "require_binary",
           "require_program", "require_root", "skip", "PartUnavailable", "cpu_seconds", "run", "stop_process", "wait_for",
           "wait_path", "wait_until", "Namespace", "Topology", "unique_suffix"]


def _refuse_other_checkout() -> None:
    """The main script belongs to another vxfed checkout than this package: say so."""
    main = sys.argv[0] if sys.argv and sys.argv[0] not in ("", "-c", "-m") else ""
    if not main:
        return
    ours = Path(__file__).resolve().parents[2]
    for d in Path(main).resolve().parents:
        if (d / "harness" / "vxfed_harness" / "__init__.py").is_file():
            if d != ours:
                raise ImportError(
                    f"{main} belongs to the checkout {d}, but vxfed_harness was found in {ours} "
                    f"(the vxfed-harness.pth of the last scripts/install-deps.sh). Run "
                    f"{d}/scripts/install-deps.sh, or run the script with PYTHONPATH={d}/harness")
            return


_refuse_other_checkout()
