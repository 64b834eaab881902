#!/usr/bin/python3
"""scripts/build-previous.sh can make what an N-1 image needs, and says where it put it.

The previous release's real build takes ~14 CPU-minutes (scripts/test.sh runs it for the
upgrade tests); this test gives the script an OUT it has "already built" instead: the stamp
of deploy/previous-release's commit and a stand-in build.ninja whose rules write small
executables (vxfedd prints the release's version). So it checks the script's own logic:

1. The targets are every build/ file of that release's deploy/image/layout (its
   scripts/build-image.sh copies them all; the reflector was missing), and a build dir made
   by an earlier run without one of them gets it added, not skipped as "already built".
2. The last line is the build directory as an absolute path, for an absolute --out and for
   one relative to the caller's directory (it was printed with $PWD in front of either).
"""

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import vxfed_harness as t
from vxfed_harness.env import SOURCE_DIR

failures = []


def fail(msg: str) -> None:
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def release():
    for line in (SOURCE_DIR / "deploy" / "previous-release").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            version, commit = line.split()[:2]
            return version, commit
    raise AssertionError("deploy/previous-release names no release")


def layout_targets(commit: str):
    r = subprocess.run(["git", "-C", str(SOURCE_DIR), "show", f"{commit}:deploy/image/layout"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        t.skip(f"the previous release's commit {commit} is not in this clone: {r.stderr.strip()}")
    out = []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 3 and not line.startswith("#") and f[2].startswith("build/"):
            out.append(f[2][len("build/"):])
    return out


def fake_out(out: Path, version: str, commit: str, targets, leave_out: str) -> None:
    """OUT as an earlier run left it: stamp, build.ninja, every target but `leave_out`."""
    bld = out / "build"
    bld.mkdir(parents=True)
    (out / "stamp").write_text(commit + "\n")
    lines = ["rule make", f"  command = printf '#!/bin/sh\\necho $$0 {version}\\n' > $out && chmod +x $out", ""]
    for tgt in targets:
        lines.append(f"build {tgt}: make")
    (bld / "build.ninja").write_text("\n".join(lines) + "\n")
    for tgt in targets:
        if tgt != leave_out:
            p = bld / tgt
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"#!/bin/sh\necho {tgt} {version}\n")
            p.chmod(0o755)


def run(args, cwd):
    # Its own process group, killed whole on a timeout: a script that misread OUT would start
    # the real 14-minute build somewhere else.
    p = subprocess.Popen([str(SOURCE_DIR / "scripts" / "build-previous.sh")] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=cwd, start_new_session=True)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return -1, "", "timed out after 60 s: it started a real build"
    return p.returncode, out.strip().splitlines()[-1] if out.strip() else "", err.strip()


def main():
    version, commit = release()
    targets = layout_targets(commit)
    if "bgp/vxfed-reflector" not in targets:
        fail(f"the previous release's image layout has no bgp/vxfed-reflector ({targets}): this test's premise changed")
    with tempfile.TemporaryDirectory(prefix="vxfed-build-previous-") as w:
        w = Path(w)
        # 1 + 2, absolute --out: the reflector is added; the path printed as given.
        out = w / "abs" / "previous"
        fake_out(out, version, commit, targets, "bgp/vxfed-reflector")
        rc, last, err = run(["--out", str(out)], cwd=str(w))
        if rc != 0:
            fail(f"build-previous.sh --out {out} exited {rc}: {err[-600:]}")
        if last != str(out / "build"):
            fail(f"build-previous.sh --out {out}: printed '{last}', expected {out / 'build'}")
        for tgt in targets:
            if not (out / "build" / tgt).exists():
                fail(f"build-previous.sh did not build {tgt}, which the release's image needs (its deploy/image/layout)")
        if failures:   # a script that gets absolute paths wrong must not be given a relative one
            print(f"{len(failures)} problem(s)", file=sys.stderr)
            sys.exit(1)
        # 2, relative --out: from the caller's directory.
        rel = w / "rel" / "previous"
        fake_out(rel, version, commit, targets, leave_out="")
        rc, last, err = run(["--out", "rel/previous"], cwd=str(w))
        if rc != 0 or last != str(rel / "build"):
            fail(f"build-previous.sh --out rel/previous from {w}: exit {rc}, printed '{last}', expected {rel / 'build'}"
                 f" ({err[-300:]})")
        elif "already built" not in err:
            fail(f"build-previous.sh rebuilt a complete build: {err[-300:]}")
    if failures:
        print(f"{len(failures)} problem(s)", file=sys.stderr)
        sys.exit(1)
    t.log(f"build-previous.sh: builds the {len(targets)} binaries of {version}'s image layout, prints absolute paths")


if __name__ == "__main__":
    main()
