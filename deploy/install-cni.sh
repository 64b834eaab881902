#!/bin/sh
# Installs the vxfed CNI plugin and its network configuration onto a node, atomically: every
# file is written under a temporary name in its destination directory, synced, then renamed
# over the old one, so a container runtime never executes a half-written binary nor reads half
# a config. Run by the DaemonSet's init container (deploy/vxfed-daemonset.yaml); idempotent.
#
#   install-cni.sh [--check] [--bin-src F] [--bin-dir D] [--conf-src F] [--conf-dir D] [--conf-name N]
#
# --conf-src "" installs the binary alone (Multus networks come from NADs instead).
# The conflist is installed as it is, the same on every node: its host-local section has no
# ranges, and the plugin hands host-local this node's block from vxfedd (GetNetwork's
# node_block, docs/cni.md). --check: check the arguments, that the binary runs and that the
# conflist is one the plugin accepts (`vxfed --check`), print what would be installed and exit
# 0 (2 when something is wrong); nothing is written.
set -eu

BIN_SRC=/opt/vxfed/bin/vxfed
BIN_DIR=/host/opt/cni/bin
CONF_SRC=/etc/vxfed/cni/10-vxfed.conflist
CONF_DIR=/host/etc/cni/net.d
CONF_NAME=10-vxfed.conflist
CHECK=0

usage_error() { echo "install-cni.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --check) CHECK=1; shift; continue ;;
    --bin-src|--bin-dir|--conf-src|--conf-dir|--conf-name)
      [ $# -ge 2 ] || usage_error "$1 needs a value" ;;
    *) usage_error "unknown option $1" ;;
  esac
  case "$1" in
    --bin-src) BIN_SRC=$2 ;;
    --bin-dir) BIN_DIR=$2 ;;
    --conf-src) CONF_SRC=$2 ;;
    --conf-dir) CONF_DIR=$2 ;;
    --conf-name) CONF_NAME=$2 ;;
  esac
  shift 2
done
case "$CONF_NAME" in
  */*|"") usage_error "--conf-name '$CONF_NAME' must be a file name" ;;
  *.conflist|*.conf|*.json) ;;
  *) usage_error "--conf-name '$CONF_NAME': runtimes read only *.conflist, *.conf and *.json" ;;
esac
for d in "$BIN_DIR" "$CONF_DIR"; do
  case "$d" in /*) ;; *) usage_error "'$d' must be an absolute directory" ;; esac
done

# The binary must answer VERSION before it is put where runtimes look.
[ -f "$BIN_SRC" ] || { echo "install-cni.sh: $BIN_SRC does not exist" >&2; exit 2; }
CNI_COMMAND=VERSION "$BIN_SRC" </dev/null >/dev/null || { echo "install-cni.sh: $BIN_SRC does not run" >&2; exit 2; }

render() {
  cat "$CONF_SRC"
}
if [ -n "$CONF_SRC" ]; then
  [ -f "$CONF_SRC" ] || { echo "install-cni.sh: --conf-src $CONF_SRC does not exist" >&2; exit 2; }
  render | "$BIN_SRC" --check - >/dev/null || { echo "install-cni.sh: $CONF_SRC is not a configuration vxfed accepts (above)" >&2; exit 2; }
fi

if [ "$CHECK" = 1 ]; then
  echo "install-cni.sh --check: valid: $BIN_SRC -> $BIN_DIR/vxfed${CONF_SRC:+, $CONF_SRC -> $CONF_DIR/$CONF_NAME}"
  exit 0
fi

# install_atomic SRC DIR NAME MODE
install_atomic() {
  src=$1 dir=$2 name=$3 mode=$4
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

install_atomic "$BIN_SRC" "$BIN_DIR" vxfed 0755
if [ -n "$CONF_SRC" ]; then
  rendered=$(mktemp)
  render > "$rendered"
  install_atomic "$rendered" "$CONF_DIR" "$CONF_NAME" 0644
  rm -f "$rendered"
fi
