#!/bin/sh
# Installs the vxfed CNI plugin and its network configuration onto a node, atomically: every
# file is written under a temporary name in its destination directory, synced, then renamed
# over the old one, so a container runtime never executes a half-written binary nor reads half
# a config. Run by the DaemonSet's init container (deploy/vxfed-daemonset.yaml); idempotent.
#
#   install-cni.sh [--bin-src F] [--bin-dir D] [--conf-src F] [--conf-dir D] [--conf-name N]
set -eu

BIN_SRC=/opt/vxfed/bin/vxfed
BIN_DIR=/host/opt/cni/bin
CONF_SRC=/etc/vxfed/cni/10-vxfed.conflist
CONF_DIR=/host/etc/cni/net.d
CONF_NAME=10-vxfed.conflist

while [ $# -gt 0 ]; do
  case "$1" in
    --bin-src) BIN_SRC=$2; shift 2 ;;
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --conf-src) CONF_SRC=$2; shift 2 ;;
    --conf-dir) CONF_DIR=$2; shift 2 ;;
    --conf-name) CONF_NAME=$2; shift 2 ;;
    *) echo "install-cni.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

# install_atomic SRC DIR NAME MODE
install_atomic() {
  src=$1 dir=$2 name=$3 mode=$4
  [ -f "$src" ] || { echo "install-cni.sh: $src does not exist" >&2; exit 1; }
  mkdir -p "$dir"
  tmp="$dir/.$name.tmp.$$"
  trap 'rm -f "$tmp"' EXIT INT TERM
  cp "$src" "$tmp"
  chmod "$mode" "$tmp"
  sync "$tmp" 2>/dev/null || sync
  mv -f "$tmp" "$dir/$name"      # rename(2): atomic within one filesystem
  trap - EXIT INT TERM
  echo "install-cni.sh: installed $dir/$name"
}

# The binary must answer VERSION before it is put where runtimes look.
CNI_COMMAND=VERSION "$BIN_SRC" </dev/null >/dev/null || { echo "install-cni.sh: $BIN_SRC does not run" >&2; exit 1; }
install_atomic "$BIN_SRC" "$BIN_DIR" vxfed 0755
if [ -n "$CONF_SRC" ] && [ -f "$CONF_SRC" ]; then
  # host-local hands out addresses per node: the range comes from the node (the DaemonSet sets
  # these from a per-node source); whereabouts needs no substitution (docs/cni.md).
  rendered=$(mktemp)
  sed -e "s|@RANGE_START@|${VXFED_IPAM_RANGE_START:-10.244.1.2}|g" \
      -e "s|@RANGE_END@|${VXFED_IPAM_RANGE_END:-10.244.1.254}|g" "$CONF_SRC" > "$rendered"
  install_atomic "$rendered" "$CONF_DIR" "$CONF_NAME" 0644
  rm -f "$rendered"
fi
