#!/usr/bin/python3
"""The binaries the image ships (deploy/image/layout) run on any CPU of the documented baseline
(meson option cpu_baseline, docs/conventions.md "CPU baseline"), not only on the build machine's.

1. The build's configured baseline is a portable one (x86-64-v2 or -v3), never `native`.
2. For x86-64-v2, no shipped binary has an AVX, AVX2 or AVX-512 instruction (none names a ymm
   or zmm register). Under -march=native on the AVX-512 test machines, proto/dataplane.pb.cc
   alone compiled to 126 such instructions (0 for x86-64-v2), and a node with an older CPU
   died with an illegal instruction.
3. Each binary starts (`--help`) through the baseline check its main() runs first.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import vxfed_harness as t

failures = []


def fail(msg: str) -> None:
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def main() -> None:
    build = Path(t.BUILD_DIR)
    t.require_program("objdump")
    options = json.loads(subprocess.run(["meson", "introspect", "--buildoptions", str(build)],
                                         check=True, capture_output=True, text=True).stdout)
    baseline = next(o["value"] for o in options if o["name"] == "cpu_baseline")
    t.log(f"configured cpu_baseline: {baseline}")
    if baseline == "native":
        fail("the build is configured with cpu_baseline=native: its binaries run only on this machine's CPU family")
    layout = Path(t.SOURCE_DIR) / "deploy/image/layout"
    binaries = [line.split()[2][len("build/"):] for line in layout.read_text().splitlines()
                if line.strip() and not line.startswith("#") and line.split()[2].startswith("build/")]
    assert binaries, "no binaries in deploy/image/layout"
    wide = re.compile(r"%[yz]mm\d")
    for rel in binaries:
        path = build / rel
        if not path.exists():
            fail(f"{rel} is not built")
            continue
        disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(path)], check=True,
                                     capture_output=True, text=True).stdout
        avx = [l.strip() for l in disassembly.splitlines() if wide.search(l)]
        t.log(f"{rel}: {len(avx)} instructions on ymm/zmm registers")
        if baseline == "x86-64-v2" and avx:
            fail(f"{rel} uses AVX registers (x86-64-v2 has none), e.g. {avx[0]}")
        r = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=30)
        if r.returncode != 0 or "this build needs" in r.stderr:
            fail(f"{rel} --help: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
