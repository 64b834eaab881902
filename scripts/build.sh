#!/usr/bin/env bash
# Configures (once) and builds vxfed into ./build. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build/build.ninja ]]; then
  meson setup build --buildtype=debugoptimized
fi
meson compile -C build
