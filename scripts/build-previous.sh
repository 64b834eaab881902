#!/usr/bin/env bash
# Builds the previous release (N-1) beside this checkout, for the tests that run two versions
# at once (tests/integration/upgrade/: a federation mid-roll, a node upgraded in place).
#
# The release is named in deploy/previous-release (a version and the commit it was cut from);
# its tree comes out of this clone's own history (`git archive`; a shallow clone fetches that one
# commit from origin), and only the binaries that release's image holds are built (every
# build/ file of its deploy/image/layout: the daemons, their CLIs, the CNI plugin, the
# reflector). The result is kept under OUT (default build/previous in this checkout; a relative
# OUT is taken from the current directory) and reused while the commit stays the same. The
# last line printed is the build directory, an absolute path.
#
# The release's image, from its own tree and recipe (it tags localhost/vxfed:<its version>):
#   OUT/src/scripts/build-image.sh --build-dir OUT/build
#
#   usage: scripts/build-previous.sh [--out DIR]
set -euo pipefail
start=$PWD
cd "$(dirname "$0")/.."

out=$PWD/build/previous
while (($#)); do
  case $1 in
    --out) [[ -n ${2:-} ]] || { echo "build-previous.sh: --out needs a directory" >&2; exit 2; }
           case $2 in /*) out=$2 ;; *) out=$start/$2 ;; esac
           shift 2 ;;
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-previous.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done

read -r version commit < <(grep -v '^#' deploy/previous-release | grep -v '^[[:space:]]*$')
if [[ -z ${version:-} || -z ${commit:-} ]]; then
  echo "build-previous.sh: deploy/previous-release names no 'VERSION COMMIT'" >&2
  exit 1
fi
if ! git cat-file -e "${commit}^{commit}" 2>/dev/null; then
  # A shallow clone: ask the repository it was cloned from for that one commit.
  echo "build-previous.sh: $commit is not in this clone's history; fetching it from origin" >&2
  git fetch -q --depth 1 origin "$commit" 2>&1 | tail -3 >&2 || true
fi
if ! git cat-file -e "${commit}^{commit}" 2>/dev/null; then
  echo "build-previous.sh: the previous release $version (commit $commit) is not in this clone's" \
       "history and origin did not give it (git fetch --unshallow)" >&2
  exit 1
fi

out=${out%/}
src=$out/src
bld=$out/build
# The targets: what the tests run, and every binary that release's image holds (its layout's
# build/ sources), so its own scripts/build-image.sh finds them all.
image_targets() {
  git show "$commit:deploy/image/layout" 2>/dev/null | awk '!/^#/ && $3 ~ /^build\// {print substr($3, 7)}'
}
mapfile -t targets < <({ printf '%s\n' control/vxfedd control/vxfedctl dataplane/vxfed-dataplane \
  dataplane/runtime/vxfed-dpctl cni/vxfed; image_targets; } | sort -u)
all_built() {
  local t
  for t in "${targets[@]}"; do [[ -x $bld/$t ]] || return 1; done
}
if [[ -f $out/stamp && $(cat "$out/stamp") == "$commit" ]] && all_built; then
  echo "build-previous.sh: $version ($commit) already built" >&2
  echo "$bld"
  exit 0
fi

if [[ -f $out/stamp && $(cat "$out/stamp") == "$commit" && -f $bld/build.ninja ]]; then
  # Built by an earlier version of this script, with fewer targets: add the missing ones.
  echo "build-previous.sh: adding to $version ($commit) in $bld: ${targets[*]}" >&2
  rm -f "$out/stamp"
else
  rm -rf "$out"
  mkdir -p "$src"
  git archive "$commit" | tar -x -C "$src"
  echo "build-previous.sh: building $version ($commit) into $bld" >&2
  # As the release's own default build (debugoptimized: -O2) but without debug info: only the
  # upgrade tests run these binaries, and -g is ~15 % of the compile (docs/testing.md).
  meson setup "$bld" "$src" -Doptimization=2 -Ddebug=false >"$out/setup.log" 2>&1 || {
    tail -30 "$out/setup.log" >&2; exit 1; }
fi
ninja -C "$bld" "${targets[@]}" >"$out/build.log" 2>&1 || { tail -40 "$out/build.log" >&2; exit 1; }
# What the tests compare against: the version these binaries report.
reported=$("$bld/control/vxfedd" --version | tail -1)
if [[ $reported != *"$version"* ]]; then
  echo "build-previous.sh: $bld/control/vxfedd reports '$reported', deploy/previous-release says $version" >&2
  exit 1
fi
echo "$commit" >"$out/stamp"
echo "$bld"
