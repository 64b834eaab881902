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

TAG=fd$$
NS_PODA=$TAG-podA NS_NODEA=$TAG-nodeA NS_NODEB=$TAG-nodeB NS_PODB=$TAG-podB
WORK=$(mktemp -d /tmp/vxfed-forwarder-demo.XXXXXX)
SOCK=$WORK/dp.sock
DP_PID=""
VNI=100 GW_MAC=02:00:00:00:01:01 PODA_MAC=02:00:0a:f4:01:02

cleanup() {
  set +e
  if [[ -n $DP_PID ]] && kill -0 "$DP_PID" 2>/dev/null; then
    kill -TERM "$DP_PID"; wait "$DP_PID" 2>/dev/null
  fi
  for ns in $NS_PODA $NS_NODEA $NS_NODEB $NS_PODB; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$WORK" "/var/run/dpdk/$TAG"
}
trap cleanup EXIT
trap 'echo "forwarder-demo: interrupted" >&2; exit 130' INT TERM

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
step() { printf '\n== %s\n' "$*"; }

step "topology: namespaces $NS_PODA $NS_NODEA $NS_NODEB $NS_PODB"
for ns in $NS_PODA $NS_NODEA $NS_NODEB $NS_PODB; do ip netns add "$ns"; in_ns "$ns" ip link set lo up; done
pair() {  # pair NS_A IF_A NS_B IF_B
  ip link add "${TAG}a" mtu 9000 type veth peer name "${TAG}b" mtu 9000
  ip link set "${TAG}a" netns "$1"; in_ns "$1" ip link set "${TAG}a" name "$2"; in_ns "$1" ip link set "$2" up
  ip link set "${TAG}b" netns "$3"; in_ns "$3" ip link set "${TAG}b" name "$4"; in_ns "$3" ip link set "$4" up
}
pair "$NS_NODEA" up0 "$NS_NODEB" up1
pair "$NS_PODA" eth0 "$NS_NODEA" hA
pair "$NS_PODB" eth0 "$NS_NODEB" hB

# Pod A, behind vxfed-dataplane: MTU 8950, everything via its gateway 10.244.0.1, offloads off
# (the dataplane reads the veth's host end with af_packet: it needs finished checksums).
in_ns "$NS_PODA" ip link set eth0 mtu 8950 address $PODA_MAC
in_ns "$NS_PODA" ip addr add 10.244.1.2/16 dev eth0
in_ns "$NS_PODA" ip route del 10.244.0.0/16 dev eth0
in_ns "$NS_PODA" ip route add 10.244.0.1/32 dev eth0 scope link
in_ns "$NS_PODA" ip route add default via 10.244.0.1 dev eth0
in_ns "$NS_PODA" ethtool -K eth0 tx off tso off gso off >/dev/null

# Node B: a plain Linux VXLAN node routing for pod B.
in_ns "$NS_NODEB" sysctl -qw net.ipv4.ip_forward=1
in_ns "$NS_NODEB" ip addr add 198.18.0.2/24 dev up1
in_ns "$NS_NODEB" ethtool -K up1 tx off tso off gso off >/dev/null
in_ns "$NS_NODEB" ip link add vxlan0 type vxlan id $VNI local 198.18.0.2 dstport 4789 dev up1 nolearning
in_ns "$NS_NODEB" ip link set vxlan0 address $GW_MAC mtu 8950 up
in_ns "$NS_NODEB" bridge fdb append 00:00:00:00:00:00 dev vxlan0 dst 198.18.0.1
in_ns "$NS_NODEB" ip route add 10.244.0.0/16 via 10.244.0.1 dev vxlan0 onlink
in_ns "$NS_NODEB" ip neigh replace 10.244.0.1 lladdr $GW_MAC dev vxlan0 nud permanent
in_ns "$NS_NODEB" ip addr add 10.245.0.1/16 dev hB
in_ns "$NS_NODEB" ip link set hB mtu 8950
in_ns "$NS_PODB" ip link set eth0 mtu 8950
in_ns "$NS_PODB" ip addr add 10.245.1.2/16 dev eth0
in_ns "$NS_PODB" ip route add default via 10.245.0.1
in_ns "$NS_PODB" ethtool -K eth0 tx off tso off gso off >/dev/null

step "vxfed-dataplane in $NS_NODEA (uplink af_packet on up0, 1 worker, no hugepages)"
cat > "$WORK/tables.json" <<JSON
{"generation": 1, "tables": {
  "networks":  [{"vni": $VNI, "gateway_ip": "10.244.0.1", "gateway_mac": "$GW_MAC"}],
  "endpoints": [{"id": "podA/eth0", "vni": $VNI, "ip": "10.244.1.2", "mac": "$PODA_MAC", "iface": "hA"}],
  "routes":    [{"vni": $VNI, "prefix": "10.245.0.0/16", "next_hops": [{"vtep": "198.18.0.2"}]}]}}
JSON
# The command line is the harness's, the one the integration tests run (harness/vxfed_harness/dataplane.py).
DP_ARGS=$(PYTHONPATH="$ROOT/harness" /usr/bin/python3 -m vxfed_harness.dataplane --build-dir "$BUILD_DIR" \
  --file-prefix "$TAG" --uplink-iface up0 --vtep-ip 198.18.0.1 --api-socket "$SOCK")
mapfile -t DP_CMD <<<"$DP_ARGS"
echo "${DP_CMD[*]}"
ip netns exec "$NS_NODEA" "${DP_CMD[@]}" >"$WORK/dataplane.log" 2>&1 &
DP_PID=$!
for _ in $(seq 100); do [[ -S $SOCK ]] && break; kill -0 $DP_PID 2>/dev/null || break; sleep 0.1; done
[[ -S $SOCK ]] || { cat "$WORK/dataplane.log"; echo "forwarder-demo: the dataplane did not start" >&2; exit 1; }
echo "status before tables: $("$DPCTL" --socket "$SOCK" status | tr -d '\n ' | head -c 200)"
"$DPCTL" --socket "$SOCK" snapshot "$WORK/tables.json" >/dev/null
echo "snapshot applied:     $("$DPCTL" --socket "$SOCK" status | tr -d '\n ' | head -c 200)"
for _ in $(seq 50); do in_ns "$NS_PODA" ping -c1 -W1 10.245.1.2 >/dev/null 2>&1 && break; sleep 0.2; done

summary_ping() {  # prints "loss% / avg ms"
  awk -F'[ /,]+' '/packet loss/ {for (i=1;i<=NF;i++) if ($i ~ /%$/) loss=$i}
                  /^rtt/ {print loss " loss, rtt min/avg/max " $7 "/" $8 "/" $9 " ms"}'
}
step "ping pod A -> pod B and back (64 bytes and 8950-byte frames with DF set)"
R_PING_AB=$(in_ns "$NS_PODA" ping -n -c 20 -i 0.05 10.245.1.2 | summary_ping)
R_PING_BA=$(in_ns "$NS_PODB" ping -n -c 20 -i 0.05 10.244.1.2 | summary_ping)
R_JUMBO_AB=$(in_ns "$NS_PODA" ping -n -M do -s 8922 -c 10 -i 0.05 10.245.1.2 | summary_ping)
R_JUMBO_BA=$(in_ns "$NS_PODB" ping -n -M do -s 8922 -c 10 -i 0.05 10.244.1.2 | summary_ping)
echo "A->B 64B: $R_PING_AB"; echo "B->A 64B: $R_PING_BA"
echo "A->B 8950B DF: $R_JUMBO_AB"; echo "B->A 8950B DF: $R_JUMBO_BA"
step "latency: 1000 pings A -> B, 2 ms apart"
R_LAT=$(in_ns "$NS_PODA" ping -n -q -c 1000 -i 0.002 10.245.1.2 | summary_ping)
echo "$R_LAT"

iperf() {  # iperf NS_SERVER NS_CLIENT DEST
  in_ns "$1" iperf3 -s -1 >/dev/null 2>&1 &
  local srv=$!
  sleep 0.5
  in_ns "$2" iperf3 -c "$3" -t "$SECONDS_IPERF" -J > "$WORK/iperf.json"
  wait $srv || true
  python3 - "$WORK/iperf.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["end"]
print("%.2f Gbit/s, %d retransmits" % (e["sum_received"]["bits_per_second"] / 1e9, e["sum_sent"].get("retransmits", 0)))
PY
}
step "iperf3 TCP, one stream, ${SECONDS_IPERF}s each way"
R_TCP_AB=$(iperf "$NS_PODB" "$NS_PODA" 10.245.1.2); echo "A->B: $R_TCP_AB"
R_TCP_BA=$(iperf "$NS_PODA" "$NS_PODB" 10.244.1.2); echo "B->A: $R_TCP_BA"

step "dataplane counters (vxfed-dpctl counters)"
"$DPCTL" --socket "$SOCK" counters > "$WORK/counters.json"
python3 - "$WORK/counters.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
for p in c["ports"]:
    print(f"  port {p['name']:<7} queue {p['queue']}: rx {int(p['rx_packets']):>9} tx {int(p['tx_packets']):>9} drops {int(p['drops'])}")
for v in c["vnis"]:
    print(f"  vni {v['vni']}: encap {int(v['encap_packets'])} pkts / {int(v['encap_bytes'])} B, "
          f"decap {int(v['decap_packets'])} pkts / {int(v['decap_bytes'])} B")
nz = {d['reason']: int(d['packets']) for d in c["drops"] if int(d['packets'])}
print(f"  drops by reason ({len(c['drops'])} reasons, non-zero shown): {nz or 'none'}")
PY

step "SIGTERM: the dataplane stops and prints its final counters"
kill -TERM $DP_PID
RC=0; wait $DP_PID || RC=$?
DP_PID=""
sed -n '/final counters/,$p' "$WORK/dataplane.log"
echo "exit code: $RC"

cat <<REPORT

================ vxfed forwarder demo: report ================
 pod A (behind vxfed-dataplane) <-> pod B (behind Linux kernel vxlan), VNI $VNI, underlay MTU 9000
 ping 64 B        A->B: $R_PING_AB
                  B->A: $R_PING_BA
 ping 8950 B, DF  A->B: $R_JUMBO_AB
                  B->A: $R_JUMBO_BA
 latency (1000 pings, 2 ms apart) A->B: $R_LAT
 iperf3 TCP 1 stream  A->B: $R_TCP_AB
                      B->A: $R_TCP_BA
 dataplane exit code on SIGTERM: $RC
==============================================================
REPORT
