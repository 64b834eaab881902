#!/bin/bash
# The FRR container's entrypoint (deploy/vxfed-daemonset.yaml): zebra with the FPM module
# (dplane_fpm_nl: it streams the selected routes to vxfedd), bgpd and the other daemons asked
# for, in the foreground as children of this script, so that the container ends (and the
# kubelet restarts it) when any of them dies. vxfedd renders frr.conf into the shared config
# directory and applies it with frr-reload.py through the vty sockets in the run directory;
# a frr.conf already there (a container restart) is loaded once the daemons are up, and
# RUN_DIR/frr-node.load says how far that load is ("loading", then "loaded <bgpd's pid>"):
# vxfedd's first apply to a new bgpd waits for it (bgp/frr_apply.hpp, BgpdLoad).
#
#   frr-node.sh [--check] [--conf-dir DIR] [--run-dir DIR] [--daemons zebra,bgpd[,bfdd][,staticd]]
#               [--serving-lock FILE]
#
# Defaults: --conf-dir /etc/frr, --run-dir /run/frr, --daemons zebra,bgpd,bfdd, no lock.
# --serving-lock: one FRR per node (bgpd's port 179, zebra's routes): while another
# frr-node.sh holds FILE (flock) this one stands by, and starts the daemons once it is free
# (a rolling update's new pod starts before the old one stops: DaemonSet maxSurge).
# --check: check the arguments and that FRR (the daemons, the FPM module, vtysh, the frr
# user) is there, print what would run and exit 0 (2 when something is wrong); nothing is
# written or started. SIGTERM/SIGINT stop the daemons and exit 0.
set -euo pipefail

conf_dir=/etc/frr
run_dir=/run/frr
daemons=zebra,bgpd,bfdd
serving_lock=
check=0
FRR_LIB=${FRR_LIB:-/usr/lib/frr}
FRR_MODULES=${FRR_MODULES:-/usr/lib/x86_64-linux-gnu/frr/modules}

usage_error() { echo "frr-node.sh: $*" >&2; exit 2; }
while (($#)); do
  case "$1" in
    --check) check=1; shift ;;
    --conf-dir|--run-dir|--daemons|--serving-lock)
      (($# >= 2)) || usage_error "$1 needs a value"
      case "$1" in --conf-dir) conf_dir=$2 ;; --run-dir) run_dir=$2 ;; --daemons) daemons=$2 ;;
                   --serving-lock) serving_lock=$2 ;; esac
      shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) usage_error "unknown argument $1" ;;
  esac
done
for d in "$conf_dir" "$run_dir" ${serving_lock:+"$serving_lock"}; do
  [[ $d == /* ]] || usage_error "'$d' must be an absolute path"
done
IFS=, read -r -a list <<<"$daemons"
[[ ${list[0]:-} == zebra ]] || usage_error "--daemons '$daemons': zebra must come first (the others connect to it)"
declare -A seen=()
for d in "${list[@]}"; do
  case "$d" in zebra|bgpd|bfdd|staticd) ;; *) usage_error "--daemons: unknown daemon '$d' (zebra, bgpd, bfdd, staticd)" ;; esac
  [[ -z ${seen[$d]:-} ]] || usage_error "--daemons: $d is listed twice"
  seen[$d]=1
done

missing() { echo "frr-node.sh: $* (is FRR installed? the image has Debian's frr)" >&2; exit 2; }
for d in "${list[@]}"; do [[ -x $FRR_LIB/$d ]] || missing "$FRR_LIB/$d not found"; done
[[ -f $FRR_MODULES/dplane_fpm_nl.so ]] || missing "zebra's FPM module $FRR_MODULES/dplane_fpm_nl.so not found"
[[ -f $FRR_MODULES/bgpd_bmp.so ]] || missing "bgpd's BMP module $FRR_MODULES/bgpd_bmp.so not found"
command -v vtysh >/dev/null || missing "vtysh not found"
getent passwd frr >/dev/null || missing "there is no user frr"
[[ -z $serving_lock ]] || command -v flock >/dev/null || missing "flock (util-linux) not found, needed by --serving-lock"

if ((check)); then
  echo "frr-node.sh --check: valid: ${list[*]} with config $conf_dir/frr.conf, sockets in $run_dir${serving_lock:+, serving lock $serving_lock}"
  exit 0
fi

if [[ -n $serving_lock ]]; then
  mkdir -p "$(dirname "$serving_lock")"
  # The daemons inherit the descriptor: the lock is free only once the last of them is gone.
  exec {lock_fd}>"$serving_lock"
  if ! flock -n "$lock_fd"; then
    echo "frr-node.sh: another FRR serves this node ($serving_lock): standing by until it stops"
    trap 'echo "frr-node.sh: stopped while standing by: never served"; exit 0' TERM INT
    # Polled, so that SIGTERM is handled between tries.
    until flock -n "$lock_fd"; do sleep 0.05; done
    trap - TERM INT
    echo "frr-node.sh: took over $serving_lock"
  fi
fi

# The daemons drop privileges to frr:frr and then create their sockets and pid files in the run
# directory; vxfedd writes frr.conf into the config directory (root, mode 0640: it may hold
# BGP passwords), which the daemons read through vtysh.
#
# The container's root has CAP_CHOWN but neither CAP_FOWNER nor CAP_DAC_OVERRIDE: it may not
# chmod, or write into, what frr owns (found running the container under podman; a restarted
# container finds the run directory as the last run left it, owned by frr). So the directory
# is taken back first, prepared, and handed to frr last.
mkdir -p "$run_dir" "$conf_dir"
chown root:root "$run_dir"
chmod 0755 "$run_dir"
# Root's own file, rewritten in place below (the run directory is frr's by then).
load_marker=$run_dir/frr-node.load
rm -f "$load_marker"
echo loading > "$load_marker"
for d in "${list[@]}"; do
  # Each daemon's own config file is empty: the configuration is frr.conf, applied via vtysh.
  rm -f "$run_dir/$d.conf"
  : > "$run_dir/$d.conf"
  chown frr:frr "$run_dir/$d.conf"
done
chown frr:frr "$run_dir"
# The daemons' crash logs and per-thread log buffers (they warn "crashlog ... unavailable"
# without it; the image has no /var/tmp/frr).
{ mkdir -p /var/tmp/frr && chown frr:frr /var/tmp/frr; } 2>/dev/null ||
  echo "frr-node.sh: cannot prepare /var/tmp/frr: the daemons run without crash logs" >&2
# vtysh and frr-reload.py expect the integrated config (one frr.conf).
[[ -f $conf_dir/vtysh.conf ]] || echo "service integrated-vtysh-config" > "$conf_dir/vtysh.conf"

pids=()
bgpd_pid=
# The daemons run as frr and the container has no CAP_KILL, on purpose: these signals do not
# reach them; when this script exits the runtime kills what is left of the container with
# SIGKILL (0.6 s for a whole node's containers under podman). For bgpd that is a restart its
# peers ride through with graceful restart; a SIGTERM-ed bgpd sends a Cease and the reflector
# withdraws the node's blocks at once (measured under podman: the pods of the two nodes cut
# off for more than 30 s, against none after a SIGKILL).
# The wait below ends only at the runtime's SIGKILL, a grace period later (30 s in the
# manifest): exiting at once here made a whole-pod roll lose 5.2-5.9 s of pings in 3 of 14
# runs under podman (docs/testing.md, test_deploy_podman_cluster), so it stays until that is
# understood. (The marker is left as it is: while the daemons still run, an apply to them
# is valid, and one to their successor waits for that one's "loaded".)
stop() {  # stop STATUS
  trap - TERM INT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait || true
  exit "$1"
}
trap 'stop 0' TERM INT

for d in "${list[@]}"; do
  extra=()
  case "$d" in
    zebra) extra=(-M dplane_fpm_nl -s 90000000) ;;   # FPM; a netlink buffer for full tables
    bgpd) extra=(-M bmp) ;;                           # BMP, for bgp.feed: bmp (idle unconfigured)
    bfdd) extra=(--bfdctl "$run_dir/bfdd.sock") ;;
  esac
  # -P 0: no TCP vty; --log stdout: the container's log.
  # zebra's API socket is made after its vty socket: a stale one (a previous zebra's, in a
  # reused run directory) would let the wait below pass too early.
  [[ $d == zebra ]] && rm -f "$run_dir/zserv.api"
  "$FRR_LIB/$d" -u frr -g frr -P 0 -f "$run_dir/$d.conf" -i "$run_dir/$d.pid" -z "$run_dir/zserv.api" \
    --vty_socket "$run_dir" --log stdout "${extra[@]}" &
  pids+=($!)
  [[ $d == bgpd ]] && bgpd_pid=$!
  # The next daemon connects to zebra: wait for its vty socket and, for zebra, its API socket
  # (at most 10 s). A daemon that finds no zebra retries only 10 s later, and until then FRR
  # 8.4's bgpd drops what it sends zebra: a BFD session it asks for then is never asked for
  # again (lib/bfd.c replays installed sessions only), so the node had no BFD toward its
  # reflector — seen after an FRR restart in podman_cluster_test.
  # Alive: its /proc entry (not `kill -0`: the daemon runs as frr, and without CAP_KILL root
  # may not signal it, so kill -0 failed at once on a machine where zebra was slow to start).
  ready() { [[ -S $run_dir/$d.vty ]] && { [[ $d != zebra ]] || [[ -S $run_dir/zserv.api ]]; }; }
  for _ in $(seq 200); do ready && break; [[ -d /proc/$! ]] || break; sleep 0.05; done
  ready || { echo "frr-node.sh: $d did not come up" >&2; stop 1; }
done
echo "frr-node.sh: ${list[*]} up (sockets in $run_dir)"
if [[ -s $conf_dir/frr.conf ]]; then
  vtysh --vty_socket "$run_dir" --config_dir "$conf_dir" -b >/dev/null &&
    echo "frr-node.sh: loaded $conf_dir/frr.conf" || echo "frr-node.sh: loading $conf_dir/frr.conf failed; vxfedd applies it again" >&2
fi
# Done with bgpd, loaded or not: vxfedd's first apply to it may go now. (bgpd's pid as its pid
# file has it: the container shares the host's PIDs, and vxfedd compares it with that file.)
echo "loaded $bgpd_pid" > "$load_marker" ||
  echo "frr-node.sh: cannot write $load_marker: vxfedd's first apply waits its bound (10 s)" >&2

# Any daemon ending ends the container: the kubelet restarts it whole.
set +e
wait -n "${pids[@]}"
rc=$?
echo "frr-node.sh: a daemon exited (status $rc); stopping the others" >&2
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
wait
exit 1
