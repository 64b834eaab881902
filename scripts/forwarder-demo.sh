#!/usr/bin/env bash
# The forwarder demo: on a fresh Debian 12 machine, as root, installs the dependencies, builds
# vxfed, and shows vxfed-dataplane carrying pod traffic to and from a Linux kernel VXLAN node:
#
#   podA (10.244.1.2) -- veth -- [nodeA: vxfed-dataplane, VTEP 198.18.0.1]
#                                   || underlay veth, MTU 9000, VXLAN VNI 100
#   podB (10.245.1.2) -- veth -- [nodeB: Linux kernel vxlan0, VTEP 198.18.0.2]
#
# It pings (also 8950-byte frames with DF set), measures iperf3 throughput and ping latency
# both ways, reads the dataplane's counters over its API, prints a short report, and removes
# everything it created on exit, Ctrl-C or failure.
#
#   usage: sudo scripts/forwarder-demo.sh [--no-build] [--seconds N]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

BUILD=1
SECONDS_IPERF=5
while (($#)); do
  case $1 in
    --no-build) BUILD=0 ;;
    --seconds) SECONDS_IPERF=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "forwarder-demo: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [[ $(id -u) -ne 0 ]]; then
  echo "forwarder-demo: run as root (network namespaces, DPDK)" >&2
  exit 1
fi

if ((BUILD)); then
  scripts/install-deps.sh
  scripts/build.sh
fi
BUILD_DIR=${VXFED_BUILD_DIR:-$ROOT/build}  # scripts/build.sh builds ./build
DP=$BUILD_DIR/dataplane/vxfed-dataplane
DPCTL=$BUILD_DIR/dataplane/runtime/vxfed-dpctl
for b in "$DP" "$DPCTL"; do
  [[ -x $b ]] || { echo "forwarder-demo: $b is not built (scripts/build.sh)" >&2; exit 1; }
done

# The topology, the dataplane's command line, the measurements and the report are the
# harness's (harness/vxfed_harness/forwarder_demo.py, on the topology the dataplane
# integration tests use); it removes everything it created on exit, Ctrl-C or failure.
PYTHONPATH="$ROOT/harness${PYTHONPATH:+:$PYTHONPATH}" exec /usr/bin/python3 -m vxfed_harness.forwarder_demo \
  --build-dir "$BUILD_DIR" --seconds "$SECONDS_IPERF"
