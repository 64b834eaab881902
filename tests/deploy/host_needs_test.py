#!/usr/bin/python3
"""What a host needs is where a user looks: README.md and the two commands' --help.

1. README.md has "What the host needs" right after the two commands: the kernel it is tested
   on (the one docs/conventions.md names), 6.6 for the tc ingress drop and 6.2 for the UDP
   super-packets with what falls back before them, the CPU baseline (meson_options.txt's
   default, when that option exists) and `apt-get install git` for the clone.
2. `scripts/demo.sh --help` and `scripts/test.sh --help` answer at once with their usage,
   run as an unprivileged user: a script that installed or built before answering would stop
   at its root check instead (and could not install anything as that user).
"""

import os
import re
import subprocess
import sys

import vxfed_harness as t
from vxfed_harness.env import SOURCE_DIR

failures = []


def fail(msg: str) -> None:
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def host_section(readme: str) -> str:
    m = re.search(r"^## What the host needs\n(.*?)(?=^## )", readme, re.M | re.S)
    return m.group(1) if m else ""


def readme_problems(readme: str, conventions: str, options: str) -> list:
    errs = []
    fail = errs.append
    sec = host_section(readme)
    if not sec:
        return ["README.md: no '## What the host needs' section"]
    # Right after the two commands: no other section between the commands' block and it.
    before = readme[:readme.index("## What the host needs")]
    if "scripts/test.sh" not in before or re.search(r"^## ", before, re.M):
        fail("README.md: 'What the host needs' is not right after the two commands")
    m = re.search(r"The kernel \((\d+\.\d+)\)", conventions)
    tested = m.group(1) if m else None
    if not tested:
        fail("docs/conventions.md: no 'The kernel (X.Y)' to compare the README with")
    elif not re.search(r"test machines run " + re.escape(tested) + r"\b", sec):
        fail(f"README.md: does not say the test machines run {tested} (docs/conventions.md)")
    for needle, why in ((r"6\.6", "the kernel the tc ingress drop needs (TCX)"),
                        (r"TCX", "why 6.6"),
                        (r"6\.1", "what a fresh Debian 12 runs"),
                        (r"6\.2", "the kernel the UDP super-packets need"),
                        (r"warning", "that the fallbacks warn"),
                        (r"apt-get install git", "git for the clone")):
        if not re.search(needle, sec):
            fail(f"README.md 'What the host needs': no '{needle}' ({why})")
    m = re.search(r"option\('cpu_baseline'.*?value\s*:\s*'([^']+)'", options, re.S)
    if m and m.group(1) not in sec:
        fail(f"README.md 'What the host needs': meson's cpu_baseline default is {m.group(1)}, the README does not name it")
    return errs


def unprivileged(argv):
    """argv as nobody when we are root (setpriv from util-linux, Essential on Debian)."""
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + argv


def check_help(script: str) -> None:
    path = SOURCE_DIR / "scripts" / script
    try:
        r = subprocess.run(unprivileged([str(path), "--help"]), capture_output=True, text=True, timeout=30,
                           cwd="/", env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    except subprocess.TimeoutExpired:
        fail(f"scripts/{script} --help: no answer in 30 s")
        return
    out = r.stdout + r.stderr
    if r.returncode != 0 or "usage:" not in r.stdout:
        fail(f"scripts/{script} --help as an unprivileged user exited {r.returncode} without its usage: {out.strip()[-400:]}")
    else:
        t.log(f"scripts/{script} --help: {len(r.stdout.splitlines())} lines of usage, exit 0")


def main():
    readme = (SOURCE_DIR / "README.md").read_text()
    conventions = (SOURCE_DIR / "docs" / "conventions.md").read_text()
    opts = SOURCE_DIR / "meson_options.txt"
    for e in readme_problems(readme, conventions, opts.read_text() if opts.exists() else ""):
        fail(e)
    # Controls: a README without the section, or naming another tested kernel, is refused.
    if not readme_problems(readme.replace("## What the host needs", "## Elsewhere"), conventions, ""):
        fail("control: a README without 'What the host needs' passes")
    if not readme_problems(readme, conventions.replace("The kernel (", "The kernel (9.9"), ""):
        fail("control: a README naming another kernel than docs/conventions.md passes")
    check_help("demo.sh")
    check_help("test.sh")
    if failures:
        print(f"{len(failures)} problem(s)", file=sys.stderr)
        sys.exit(1)
    t.log("README.md names what the host needs; demo.sh and test.sh answer --help at once")


if __name__ == "__main__":
    main()
