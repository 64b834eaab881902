#!/usr/bin/env bash
# Builds the previous release (N-1) beside this checkout, for the tests that run two versions
# at once (tests/integration/upgrade/: a federation mid-roll, a node upgraded in place).
#
# The release is named in deploy/previous-release (a version and the commit it was cut from);
# its tree comes out of this clone's own history (`git archive`; a shallow clone fetches that one
# commit from origin), and only the daemons, their CLIs and the CNI plugin are built (vxfedd,
# vxfedctl, vxfed-dataplane, vxfed-dpctl, cni/vxfed). The result is kept under OUT (default build/previous) and reused
# while the commit stays the same. The last line printed is the build directory.
#
#   usage: scripts/build-previous.sh [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

out=build/previous
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
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

src=$out/src
bld=$out/build
if [[ -f $out/stamp && $(cat "$out/stamp") == "$commit" && -x $bld/control/vxfedd ]]; then
  echo "build-previous.sh: $version ($commit) already built" >&2
  echo "$PWD/$bld"
  exit 0
fi

rm -rf "$out"
mkdir -p "$src"
git archive "$commit" | tar -x -C "$src"
echo "build-previous.sh: building $version ($commit) into $bld" >&2
meson setup "$bld" "$src" --buildtype=debugoptimized >"$out/setup.log" 2>&1 || {
  tail -30 "$out/setup.log" >&2; exit 1; }
ninja -C "$bld" control/vxfedd control/vxfedctl dataplane/vxfed-dataplane dataplane/runtime/vxfed-dpctl \
  cni/vxfed >"$out/build.log" 2>&1 || { tail -40 "$out/build.log" >&2; exit 1; }
# What the tests compare against: the version these binaries report.
reported=$("$bld/control/vxfedd" --version | tail -1)
if [[ $reported != *"$version"* ]]; then
  echo "build-previous.sh: $bld/control/vxfedd reports '$reported', deploy/previous-release says $version" >&2
  exit 1
fi
echo "$commit" >"$out/stamp"
echo "$PWD/$bld"
