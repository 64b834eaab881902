#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of vxfed from Debian 12's archive.
# Idempotent: packages already present are skipped by apt; safe to run on every CI start.
set -euo pipefail

PACKAGES=(
  # build
  build-essential meson ninja-build pkg-config git
  # dataplane
  dpdk dpdk-dev libnuma-dev libpcap-dev
  # eBPF
  libbpf-dev bpftool libxdp-dev clang llvm libelf-dev zlib1g-dev
  # control plane
  libboost-dev libboost-system-dev libprotobuf-dev protobuf-compiler
  # federation store: etcd v3 over gRPC (the tests run a real etcd cluster)
  libgrpc++-dev protobuf-compiler-grpc etcd-server etcd-client
  # a blackholed etcd member in the tests: iptables DROP in its namespace
  iptables
  libspdlog-dev libfmt-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  # CNI plugin (rtnetlink)
  libmnl-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev libclang-rt-14-dev valgrind
  iproute2 iputils-ping tcpdump python3-scapy gnuplot-nox iperf3 sockperf openssl
  containernetworking-plugins procps psmisc kmod ethtool
  # BGP; exabgp plays many nodes' BGP speakers in perf/federation/scale.py and cluster_scale
  frr frr-pythontools exabgp
  # the container image (scripts/build-image.sh) and the tests that run it; podman's CNI
  # backend as a real runtime for the CNI tests (harness/vxfed_harness/podman.py), whose
  # image is a busybox-static root filesystem
  mmdebstrap podman runc busybox-static
  # the manifests' validation against the Kubernetes API types (tests/deploy)
  python3-yaml python3-kubernetes
  # monitoring: a real Prometheus scrapes a node in the integration test; promtool checks the
  # scraped text and unit-tests the alert rules (deploy/monitoring/)
  prometheus curl
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: all ${#PACKAGES[@]} packages present"
fi

# The test and benchmark harness (harness/vxfed_harness) for the scripts a person runs by path
# (perf/latency/latency_suite.py, perf/testpmd/compare.py, ...) under Debian's python3: one .pth
# naming this checkout's harness/ directory, as `pip install -e` does (harness/README.md).
root=$(cd "$(dirname "$0")/.." && pwd)
site=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
mkdir -p "$site"
echo "$root/harness" > "$site/vxfed-harness.pth"
echo "install-deps: $site/vxfed-harness.pth -> $root/harness"

# FRR's Debian service must not fight our per-namespace instances in tests.
if systemctl is-active --quiet frr 2>/dev/null; then systemctl stop frr || true; fi
# Debian starts an etcd on 127.0.0.1:2379 at install; the tests run their own clusters.
if systemctl is-active --quiet etcd 2>/dev/null; then systemctl stop etcd || true; fi
# Debian's Prometheus service is not needed: the tests run their own, in their namespaces.
if systemctl is-active --quiet prometheus 2>/dev/null; then systemctl stop prometheus || true; fi
