#!/usr/bin/env python3
"""Runs a libFuzzer binary for a fixed time from a copy of its seed corpus, so that new
inputs land in a temporary directory and never in the source tree.

usage: run_fuzz.py FUZZER SEED_DIR SECONDS
"""
import os
import shutil
import subprocess
import sys
import tempfile

fuzzer, seeds, seconds = sys.argv[1], sys.argv[2], sys.argv[3]
with tempfile.TemporaryDirectory(prefix="vxfed-bgp-fuzz-") as tmp:
    corpus = os.path.join(tmp, "corpus")
    shutil.copytree(seeds, corpus)
    # libFuzzer exits 77 on a crash by default, which meson reads as a skip: make it a failure.
    args = [fuzzer, f"-max_total_time={seconds}", f"-artifact_prefix={tmp}/", "-error_exitcode=1", "-timeout_exitcode=1",
            "-print_final_stats=1", "-rss_limit_mb=1024", corpus]
    proc = subprocess.run(args)
    if proc.returncode != 0:
        for name in os.listdir(tmp):
            if name.startswith(("crash-", "leak-", "timeout-", "oom-")):
                path = os.path.join(tmp, name)
                data = open(path, "rb").read()
                print(f"fuzz: {name} ({len(data)} bytes): {data.hex()}", file=sys.stderr)
    sys.exit(proc.returncode)
