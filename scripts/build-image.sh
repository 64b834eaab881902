#!/usr/bin/env bash
# Builds the vxfed container image from Debian 12's archive and the project's build directory,
# with no container registry involved: mmdebstrap makes a root filesystem of the Essential:yes
# set plus deploy/image/packages (FRR and the binaries' runtime libraries; no compilers), at
# exactly the versions in deploy/image/packages.lock; the files of deploy/image/layout (the
# binaries, stripped; the CNI install step) are added; `podman import` turns it into an OCI
# image tagged localhost/vxfed:<meson project version>. The last line printed is the image
# reference.
#
#   usage: scripts/build-image.sh [--build-dir DIR] [--update-lock] [--lock FILE] [--keep-rootfs]
#                                 [--tag REF]
#
#   --build-dir DIR  the meson build directory with the binaries (default ./build)
#   --update-lock    resolve deploy/image/packages afresh against the archive and rewrite
#                    deploy/image/packages.lock (commit it), then build with it
#   --lock FILE      read (or with --update-lock write) this lock instead
#   --keep-rootfs    leave the root filesystem in DIR/image/rootfs for inspection
#   --tag REF        tag the image REF instead of localhost/vxfed:<version> (two checkouts
#                    on one machine, or a second build to test against, keep their own)
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian), DEBIAN_SECURITY_MIRROR
# (default http://deb.debian.org/debian-security).
#
# Fails, naming the packages, when the archive no longer has a locked version (Debian's
# mirrors keep only the newest version of each package: after a point release or a security
# update, run with --update-lock, review the diff of packages.lock, commit it): exit status 3.
# Must run as root (mmdebstrap's root mode, podman's system storage).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

build_dir=$ROOT/build
update_lock=0
keep_rootfs=0
lock_arg=""
tag=""
while (($#)); do
  case "$1" in
    --build-dir) build_dir=$(cd "$2" && pwd); shift 2 ;;
    --update-lock) update_lock=1; shift ;;
    --keep-rootfs) keep_rootfs=1; shift ;;
    --lock) lock_arg=$2; shift 2 ;;
    --tag) [[ -n ${2:-} ]] || { echo "build-image: --tag needs an image reference" >&2; exit 2; }
           tag=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "build-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

say() { echo "build-image: $*" >&2; }
die() { echo "build-image: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (mmdebstrap, podman)"
for tool in mmdebstrap podman strip tar python3; do
  command -v "$tool" >/dev/null || die "$tool is not installed (scripts/install-deps.sh)"
done
[[ -f $build_dir/build.ninja ]] || die "$build_dir is not a meson build directory (scripts/build.sh)"

PACKAGES=$ROOT/deploy/image/packages
LOCK=${lock_arg:-$ROOT/deploy/image/packages.lock}
LAYOUT=$ROOT/deploy/image/layout
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm

version=$(meson introspect --projectinfo "$build_dir" | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
[[ -n $version ]] || die "cannot read the project version from $build_dir"
image_ref=${tag:-localhost/vxfed:$version}

# The layout's sources must all exist before anything is downloaded.
layout_lines=()
while read -r path mode src; do
  [[ -z $path || $path == \#* ]] && continue
  case "$src" in
    deploy/image/packages.lock) file=$LOCK ;;
    build/*) file=$build_dir/${src#build/} ;;
    *) file=$ROOT/$src ;;
  esac
  if [[ ! -f $file ]]; then
    [[ $file == "$LOCK" && $update_lock -eq 1 ]] || die "$src (for $path) does not exist; build first (scripts/build.sh)"
  fi
  layout_lines+=("$path $mode $file")
done < "$LAYOUT"

work=$build_dir/image
rootfs=$work/rootfs
mkdir -p "$work"
rm -rf "$rootfs"
cleanup() { ((keep_rootfs)) || rm -rf "$rootfs"; }
trap cleanup EXIT

# What to install: the top-level names (--update-lock) or every locked name=version.
includes=()
if ((update_lock)); then
  while read -r line; do
    line=${line%%#*}; line=${line//[[:space:]]/}
    [[ -n $line ]] && includes+=("$line")
  done < "$PACKAGES"
else
  [[ -f $LOCK ]] || die "$LOCK does not exist: run scripts/build-image.sh --update-lock"
  while read -r line; do
    [[ -z $line || $line == \#* ]] && continue
    includes+=("$line")
  done < "$LOCK"
fi
((${#includes[@]})) || die "no packages to install"
include_arg=$(IFS=,; echo "${includes[*]}")

# Left out of the root filesystem: documentation (copyright files stay), translations, and FRR
# daemons for protocols vxfed does not use. gconv: iconv's character set modules, unused by
# every program here.
dpkg_opts=(
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*'
  --dpkgopt='path-exclude=/usr/lib/x86_64-linux-gnu/gconv/*'
)
for d in ospfd ospf6d isisd pimd pim6d fabricd ldpd eigrpd ripd ripngd nhrpd babeld pathd vrrpd pbrd ospfclient.py; do
  dpkg_opts+=(--dpkgopt="path-exclude=/usr/lib/frr/$d")
done

# Reproducible file times: the commit's time.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

say "root filesystem: Debian $SUITE, ${#includes[@]} packages $( ((update_lock)) && echo "(resolving afresh)" || echo "(pinned by deploy/image/packages.lock)")"
t0=$(date +%s)
log=$work/mmdebstrap.log
# merged-usr hook: /bin, /lib, /sbin as symlinks into /usr (Debian 12's layout) without the
# usrmerge package, which would pull in perl.
if ! mmdebstrap --variant=essential --mode=root --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --include="$include_arg" "${dpkg_opts[@]}" \
    "$SUITE" "$rootfs" \
    "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" "deb $SECURITY $SUITE-security main" \
    >"$log" 2>&1; then
  missing=$(grep -oE "Version '[^']+' for '[^']+' was not found" "$log" | sed -E "s/Version '([^']+)' for '([^']+)'.*/\2=\1/" || true)
  if [[ -n $missing ]]; then
    say "the archive no longer has these locked package versions:"
    echo "$missing" | sed 's/^/  /' >&2
    say "refresh the lock: scripts/build-image.sh --update-lock, review and commit deploy/image/packages.lock"
    exit 3
  fi
  tail -30 "$log" >&2
  die "mmdebstrap failed (log: $log)"
fi
t1=$(date +%s)
say "root filesystem built in $((t1 - t0)) s"

resolved=$(chroot "$rootfs" dpkg-query -W -f='${Package}=${Version}\n' | LC_ALL=C sort)
if ((update_lock)); then
  {
    echo "# Every Debian package of the vxfed image, at the version scripts/build-image.sh installs."
    echo "# Generated by scripts/build-image.sh --update-lock from deploy/image/packages on $(date -u +%Y-%m-%d);"
    echo "# the build fails when the archive no longer has one of these versions."
    echo "$resolved"
  } > "$LOCK"
  say "wrote $LOCK ($(echo "$resolved" | wc -l) packages)"
else
  locked=$(grep -v '^#' "$LOCK" | grep -v '^$' | LC_ALL=C sort)
  if [[ "$resolved" != "$locked" ]]; then
    say "the root filesystem's packages differ from deploy/image/packages.lock (< locked, > installed):"
    diff <(echo "$locked") <(echo "$resolved") | grep '^[<>]' >&2 || true
    say "the archive resolved differently; run scripts/build-image.sh --update-lock and review"
    exit 3
  fi
fi

# No toolchain in the image.
# (gcc-12-base is only the directory libgcc-s1 and libstdc++6 depend on.)
if echo "$resolved" | grep -E '^(gcc|g\+\+|cpp|clang|llvm|lld)(-[0-9]+)?=|^(binutils|libc6-dev|libstdc\+\+-[0-9]+-dev|make)=' >&2; then
  die "a compiler or toolchain package ended up in the image (above); fix deploy/image/packages"
fi
for tool in cc c++ gcc g++ clang ld as; do
  [[ ! -e $rootfs/usr/bin/$tool ]] || die "/usr/bin/$tool is in the image: no toolchain belongs there"
done

# The project's files.
for line in "${layout_lines[@]}"; do
  read -r path mode file <<<"$line"
  mkdir -p "$rootfs$(dirname "$path")"
  if [[ $file == "$build_dir"/* ]]; then
    strip --strip-unneeded -o "$rootfs$path" "$file"
  else
    cp "$file" "$rootfs$path"
  fi
  chmod "$mode" "$rootfs$path"
  touch -h -d "@$SOURCE_DATE_EPOCH" "$rootfs$path"
done

# Every binary finds its libraries inside the image, and runs.
for line in "${layout_lines[@]}"; do
  read -r path mode file <<<"$line"
  [[ $file == "$build_dir"/* ]] || continue
  if chroot "$rootfs" ldd "$path" | grep 'not found' >&2; then
    die "$path needs libraries the image lacks (above); add their packages to deploy/image/packages"
  fi
done
chroot "$rootfs" /opt/vxfed/bin/vxfedd --version >/dev/null || die "vxfedd does not run in the image"
chroot "$rootfs" /opt/vxfed/bin/vxfed-dataplane --help >/dev/null || die "vxfed-dataplane does not run in the image"
chroot "$rootfs" /opt/vxfed/bin/vxfed-reflector --help >/dev/null || die "vxfed-reflector does not run in the image"
[[ -x $rootfs/usr/lib/frr/zebra && -x $rootfs/usr/lib/frr/bgpd && -x $rootfs/usr/lib/frr/frr-reload.py ]] ||
  die "FRR is incomplete in the image"

# Leftovers that have no place in an image: apt's state, logs of the installation, the
# machine's identity (the runtime provides hostname, hosts and resolv.conf).
rm -rf "$rootfs"/var/cache/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* "$rootfs"/tmp/*
: > "$rootfs/etc/machine-id"
rm -f "$rootfs/etc/hostname" "$rootfs/etc/resolv.conf"

# A label ties the image to the build's binaries: tests refuse to run a stale image.
content_id=$(for line in "${layout_lines[@]}"; do read -r path mode file <<<"$line"; echo "$path $(sha256sum < "$file" | cut -d' ' -f1)"; done | sha256sum | cut -d' ' -f1)

say "importing into podman as $image_ref"
previous_id=$(podman image inspect --format '{{.Id}}' "$image_ref" 2>/dev/null || true)
tar --sort=name --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime -C "$rootfs" -c . |
  podman import --quiet \
    --change "LABEL org.opencontainers.image.title=vxfed" \
    --change "LABEL org.opencontainers.image.version=$version" \
    --change "LABEL io.vxfed.content-id=$content_id" \
    --change "ENV PATH=/opt/vxfed/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "CMD [\"/opt/vxfed/bin/vxfedd\", \"--help\"]" \
    --message "vxfed $version from Debian $SUITE packages (deploy/image/packages.lock)" \
    - "$image_ref" >/dev/null
# The image this one replaces under the same tag: removed unless a container still uses it.
if [[ -n $previous_id && $previous_id != "$(podman image inspect --format '{{.Id}}' "$image_ref")" ]]; then
  podman rmi "$previous_id" >/dev/null 2>&1 || true
fi
size=$(podman image inspect --format '{{.Size}}' "$image_ref")
say "image $image_ref: $((size / 1000000)) MB uncompressed ($size bytes), $(echo "$resolved" | wc -l) packages, built in $(( $(date +%s) - t0 )) s"
echo "$image_ref" > "$work/image-ref"
echo "$image_ref"
