#!/usr/bin/env bash
# Stops an FRR instance started by scripts/frr-start.sh.
#
#   usage: scripts/frr-stop.sh --dir DIR [--kill] [--only DAEMON]
#
# Default: SIGTERM (bgpd sends a NOTIFICATION to its peers). --kill: SIGKILL, as a crash does
# (no NOTIFICATION: peers with graceful restart keep our routes). --only bgpd stops one daemon.
set -euo pipefail

dir="" sig=TERM only=""
while (($#)); do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --kill) sig=KILL; shift ;;
    --only) only="$2"; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "frr-stop: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$dir" ]] || { echo "frr-stop: --dir is required" >&2; exit 2; }

daemons=(bfdd staticd bgpd zebra)
[[ -n "$only" ]] && daemons=("$only")
pids=()
for d in "${daemons[@]}"; do
  f="$dir/$d.pid"
  [[ -f "$f" ]] || continue
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "-$sig" "$pid" 2>/dev/null || true
    pids+=("$pid")
  fi
  rm -f "$f"
done
# Wait (up to 10 s) so that a restart does not race the old instance's sockets.
for pid in "${pids[@]}"; do
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
done
for d in "${daemons[@]}"; do rm -f "$dir/$d.vty"; done
[[ -z "$only" || "$only" == zebra ]] && rm -f "$dir/zserv.api"
echo "frr-stop: stopped ${#pids[@]} daemon(s) in $dir"
