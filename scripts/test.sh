#!/usr/bin/env bash
# Runs every vxfed test on this machine: installs dependencies from Debian's archive, builds,
# and runs the unit, packet, fuzz and integration suites (integration tests start their own
# services: FRR daemons, vxfedd and vxfed-dataplane inside network namespaces).
# Must run as root (network namespaces, BPF). Exits non-zero on any failure, and on any
# skipped test: every test is meant to run here. Without arguments the unit, packet and fuzz
# suites run two at a time, then the integration suite one at a time; with arguments (a suite,
# test names, meson test options) one meson test run, one test at a time.
#
#   usage: sudo scripts/test.sh [--suite unit|packet|fuzz|integration] [meson test args...]
#          scripts/test.sh --help     this text, at once (nothing installed or built)
set -euo pipefail
cd "$(dirname "$0")/.."

for arg in "$@"; do
  if [[ $arg == -h || $arg == --help ]]; then
    sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
    exit 0
  fi
done

if [[ $(id -u) -ne 0 ]]; then
  echo "test.sh: must run as root (network namespaces, eBPF, DPDK)" >&2
  exit 1
fi

scripts/install-deps.sh
scripts/build.sh
# The previous release (deploy/previous-release), for the tests that run two versions at once:
# built while the image is (that is mostly package unpacking); a failure is reported here and
# again, with the script's words, by the tests that need it.
scripts/build-previous.sh >build/previous-release.log 2>&1 &
previous_pid=$!

# The container image (deploy/): built from Debian's archive at the versions of
# deploy/image/packages.lock. When the archive has moved on (a point release or a security
# update replaced a locked version: exit 3), the tests still run, on an image resolved afresh
# into build/image/, and the stale lock is reported loudly; refreshing the committed lock is a
# reviewed change (scripts/build-image.sh --update-lock).
image_status=0
image_ref=$(scripts/build-image.sh --build-dir build | tail -1) || image_status=$?
if ((image_status == 3)); then
  echo "test.sh: WARNING: deploy/image/packages.lock no longer matches Debian's archive;" \
       "building the test image from a fresh resolution (build/image/packages.lock)" >&2
  cp deploy/image/packages.lock build/image/packages.lock
  image_ref=$(scripts/build-image.sh --build-dir build --update-lock --lock build/image/packages.lock | tail -1)
elif ((image_status != 0)); then
  echo "test.sh: scripts/build-image.sh failed" >&2
  exit 1
fi
export VXFED_IMAGE=$image_ref
if ! wait "$previous_pid"; then
  echo "test.sh: scripts/build-previous.sh failed (build/previous-release.log):" >&2
  tail -20 build/previous-release.log >&2
fi

# Tests read this to turn "cannot run here" (exit 77) into a failure.
export VXFED_REQUIRE_ALL=1
export VXFED_BUILD_DIR="$PWD/build"

status=0
if (($#)); then
  # A chosen suite or tests: one at a time, as asked.
  meson test -C build --print-errorlogs --num-processes 1 "$@" || status=$?
else
  # Everything, in two runs. The unit, packet and fuzz suites are CPU-only and independent
  # (each fuzzer has its own scratch corpus; the few tests that must run alone say
  # is_parallel : false): two at a time, one per core. The integration suite builds network
  # namespaces, starts daemons on fixed addresses and measures timings: one at a time.
  # Each run writes its own log; testlog.json/.txt is both, for the checks below and for
  # whoever reads build/meson-logs afterwards.
  rm -f build/meson-logs/testlog-cpu.* build/meson-logs/testlog-integration.*
  meson test -C build --print-errorlogs --num-processes 2 --no-suite integration \
    --logbase testlog-cpu || status=$?
  meson test -C build --print-errorlogs --num-processes 1 --suite integration \
    --logbase testlog-integration || status=$?
  for ext in json txt; do
    cat build/meson-logs/testlog-{cpu,integration}.$ext >build/meson-logs/testlog.$ext || status=1
  done
fi

# meson reports skipped tests as success; every test must run here.
skipped=$(python3 - <<'PY'
import json
n = 0
for line in open("build/meson-logs/testlog.json"):
    rec = json.loads(line)
    if rec.get("result") == "SKIP":
        print("skipped:", rec.get("name"), flush=True)
        n += 1
PY
)
if [[ -n "$skipped" ]]; then
  echo "$skipped" >&2
  echo "test.sh: tests were skipped; every test must run on this machine" >&2
  status=1
fi

python3 - <<'PY'
import json
counts = {"OK": 0, "FAIL": 0, "SKIP": 0, "TIMEOUT": 0, "EXPECTEDFAIL": 0, "UNEXPECTEDPASS": 0, "ERROR": 0}
for line in open("build/meson-logs/testlog.json"):
    rec = json.loads(line)
    counts[rec.get("result", "ERROR")] = counts.get(rec.get("result", "ERROR"), 0) + 1
failed = counts["FAIL"] + counts["TIMEOUT"] + counts["ERROR"] + counts["UNEXPECTEDPASS"]
print(f"{counts['OK'] + counts['EXPECTEDFAIL']} passed, {failed} failed, {counts['SKIP']} skipped")
PY
exit $status
