#!/usr/bin/env bash
# The main job: two simulated Kubernetes clusters on this machine (network namespaces), joined
# by an MTU 9000 underlay, each node running FRR, vxfedd and vxfed-dataplane, pods made by the
# vxfed CNI plugin, routes learned over eBGP; then the latency suite (iperf3, sockperf) between
# a pod in cluster A and a pod in cluster B, over vxfed ("ours"), over the Linux kernel's
# VXLAN path on an identical topology ("kernel") and over no overlay at all ("underlay": the
# same pods routed node to node), printed as ours / kernel / ratio and each overlay's overhead
# against the underlay.
#
#   usage: sudo scripts/demo.sh [latency suite options]     (see docs/demo.md)
#          sudo VXFED_BUILD_DIR=$PWD/build-me scripts/demo.sh   build and use another build dir
#          sudo scripts/demo.sh --variants kernel            the kernel baseline alone
#          sudo scripts/demo.sh --runs 3 --duration 10       medians of three rounds
#
# Installs dependencies (scripts/install-deps.sh), builds (scripts/build.sh), runs
# perf/latency/latency_suite.py twice: a quiet pass, then a loaded one (the latency suites with
# two CPU-bound processes beside them, --background-load 2). Writes
# perf/results/latency-<time>.json and PNG plots for each.
# Exit status: 0 all SLOs met; 1 an SLO failed; 3 a part of vxfed is missing or did not come
# up (the message names it; the kernel baseline is still measured and shown); 4 a measurement
# failed or something was left behind; 5 the build failed. Everything it creates (namespaces,
# interfaces, processes, mounts) is removed on exit, Ctrl-C or failure.
set -uo pipefail
cd "$(dirname "$0")/.."

# --help answers before anything is installed or built (and without root): this header, then
# the latency suite's own options, which need only Debian's python3 and harness/.
for arg in "$@"; do
  if [[ $arg == -h || $arg == --help ]]; then
    sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
    echo
    echo "The latency suite's options (perf/latency/latency_suite.py):"
    PYTHONPATH="$PWD/harness${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 perf/latency/latency_suite.py --help
    exit $?
  fi
done

if [[ $(id -u) -ne 0 ]]; then
  echo "demo: must run as root (it creates network namespaces and runs DPDK)" >&2
  exit 1
fi

echo "demo: [1/3] installing dependencies (scripts/install-deps.sh)"
scripts/install-deps.sh || { echo "demo: installing dependencies failed" >&2; exit 1; }

# VXFED_BUILD_DIR: build there instead of ./build (engineers sharing one checkout each have
# their own build dir); default: scripts/build.sh into ./build.
build_dir=${VXFED_BUILD_DIR:-$PWD/build}
build() {
  if [[ -z "${VXFED_BUILD_DIR:-}" ]]; then scripts/build.sh; return; fi
  [[ -f "$build_dir/build.ninja" ]] || meson setup "$build_dir" --buildtype=debugoptimized || return
  meson compile -C "$build_dir"
}
if [[ -n "${VXFED_BUILD_DIR:-}" ]]; then
  echo "demo: [2/3] building (meson compile -C $build_dir)"
else
  echo "demo: [2/3] building (scripts/build.sh)"
fi
build_status=0
if ! build; then
  build_status=5
  # The kernel baseline needs nothing from the build: still measure and show it; the vxfed
  # variant then names every part that is missing.
  echo "demo: the build FAILED; continuing so that the report shows the kernel baseline and" \
       "names the vxfed parts that are missing" >&2
fi

echo "demo: [3/3] two-cluster demo and latency report (perf/latency/latency_suite.py $*)"
# Debian's python3: the suite needs only its standard library and this checkout's harness
# package (harness/README.md).
PYTHONPATH="$PWD/harness${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 perf/latency/latency_suite.py \
  --build-dir "$build_dir" "$@"
status=$?
# A node that runs training jobs is never idle: the latency figures again with two CPU-bound
# processes beside both variants (docs/demo.md, "A busy node"). Its SLOs count as the quiet
# pass's do; the options given to the demo apply to it too (after the pass's own).
echo
echo "demo: the loaded pass: the latency suites with 2 CPU-bound processes beside them (--background-load 2)"
PYTHONPATH="$PWD/harness${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 perf/latency/latency_suite.py \
  --build-dir "$build_dir" --suites latency --same-cluster-suites none --background-load 2 "$@"
loaded_status=$?
if ((status == 0 || (status == 1 && loaded_status > 1))); then status=$loaded_status; fi
if ((status == 0 && build_status != 0)); then status=$build_status; fi
case $status in
  0) echo "demo: done; every SLO met" ;;
  1) echo "demo: done; an SLO was NOT met (see the SLO lines above)" >&2 ;;
  3) echo "demo: the vxfed variant could not run: a part is missing or did not come up (named above)" >&2 ;;
  5) echo "demo: the build failed (see above)" >&2 ;;
  130|143) echo "demo: interrupted; everything was torn down" >&2 ;;
  *) echo "demo: failed with status $status (see above)" >&2 ;;
esac
exit $status
