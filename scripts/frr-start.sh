#!/usr/bin/env bash
# Starts one FRR instance (zebra with the FPM module, bgpd, optionally bfdd and staticd) with
# its own config, pid and vty paths, optionally inside a network namespace, so that several
# instances run side by side on one machine (tests, demos). On a real node use the
# distribution's FRR service instead (docs/bgp.md, "Running FRR on a node").
#
#   usage: scripts/frr-start.sh --dir DIR [--netns NS] [--bfdd] [--staticd] [--only DAEMON]
#
# --only DAEMON (e.g. bgpd): start just that daemon again in a running instance (after
# `frr-stop.sh --only DAEMON`) and load frr.conf into it alone; the others are left as they are.
# DIR holds everything of the instance: frr.conf (the integrated config; vxfedd writes it),
# vtysh.conf, the daemons' empty per-daemon configs, pid files, vty sockets, zserv.api and logs.
# If DIR/frr.conf exists it is loaded with `vtysh -b` once the daemons are up, as FRR's own
# service does. Talk to the instance with:  vtysh --vty_socket DIR --config_dir DIR
set -euo pipefail

dir="" netns="" bfdd=0 staticd=0 only=""
while (($#)); do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --netns) netns="$2"; shift 2 ;;
    --bfdd) bfdd=1; shift ;;
    --staticd) staticd=1; shift ;;
    --only) only="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "frr-start: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$dir" ]] || { echo "frr-start: --dir is required" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "frr-start: must run as root" >&2; exit 1; }
FRR_LIB=${FRR_LIB:-/usr/lib/frr}
[[ -x "$FRR_LIB/zebra" ]] || { echo "frr-start: $FRR_LIB/zebra not found (apt-get install frr)" >&2; exit 1; }

# The daemons drop privileges to frr:frr; they create their pid files and sockets in DIR, so
# DIR must be theirs. Each path component above must be traversable by frr (o+x).
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
chown frr:frr "$dir"
chmod 0770 "$dir"
p="$dir"
while [[ "$p" != "/" ]]; do p=$(dirname "$p"); chmod o+x "$p" 2>/dev/null || true; done

# vtysh and frr-reload expect the integrated config mode.
[[ -f "$dir/vtysh.conf" ]] || echo "service integrated-vtysh-config" > "$dir/vtysh.conf"

ns=()
[[ -n "$netns" ]] && ns=(ip netns exec "$netns")

daemons=(zebra bgpd)
((staticd)) && daemons+=(staticd)
((bfdd)) && daemons+=(bfdd)
if [[ -n "$only" ]]; then
  case "$only" in zebra|bgpd|staticd|bfdd) ;; *) echo "frr-start: --only: unknown daemon $only" >&2; exit 2 ;; esac
  daemons=("$only")
fi

for d in "${daemons[@]}"; do
  : > "$dir/$d.conf"
  chown frr:frr "$dir/$d.conf"
  extra=()
  [[ "$d" == zebra ]] && extra=(-M dplane_fpm_nl)
  # bmp: a node's bgpd feeds vxfedd over BMP (docs/bgp.md); loaded, it does nothing unconfigured.
  [[ "$d" == bgpd ]] && extra=(-M bmp)
  [[ "$d" == bfdd ]] && extra=(--bfdctl "$dir/bfdd.sock")
  # -P 0: no TCP vty port (instances would collide); --log file: per-instance log.
  [[ "$d" == zebra ]] && rm -f "$dir/zserv.api"
  "${ns[@]}" "$FRR_LIB/$d" -d -u frr -g frr -P 0 \
    -f "$dir/$d.conf" -i "$dir/$d.pid" -z "$dir/zserv.api" --vty_socket "$dir" \
    --log "file:$dir/$d.log" "${extra[@]}"
  # The others connect to zebra: start them once its API socket is there (it comes after
  # the vty socket). A daemon that finds no zebra retries 10 s later, and FRR 8.4's bgpd
  # meanwhile drops what it sends zebra, a BFD session request included, for good.
  if [[ "$d" == zebra ]]; then
    for _ in $(seq 1 200); do [[ -S "$dir/zserv.api" ]] && break; sleep 0.05; done
    [[ -S "$dir/zserv.api" ]] || { echo "frr-start: zebra made no API socket; see $dir/zebra.log" >&2; exit 1; }
  fi
done

# Wait until every daemon answers on its vty socket.
for _ in $(seq 1 100); do
  ok=1
  for d in "${daemons[@]}"; do [[ -S "$dir/$d.vty" ]] || ok=0; done
  ((ok)) && break
  sleep 0.05
done
for d in "${daemons[@]}"; do
  [[ -S "$dir/$d.vty" ]] || { echo "frr-start: $d did not come up; see $dir/$d.log" >&2; exit 1; }
done

if [[ -s "$dir/frr.conf" ]]; then
  # --only: -d sends the config to that daemon alone (re-executing e.g. zebra's `fpm address`
  # would reconnect its FPM session).
  only_args=()
  [[ -n "$only" ]] && only_args=(-d "$only")
  "${ns[@]}" vtysh --vty_socket "$dir" --config_dir "$dir" -b "${only_args[@]}" >/dev/null
fi
echo "frr-start: ${daemons[*]} up in ${netns:-the host namespace}, dir $dir"
