#!/usr/bin/env bash
# Configures (once) and builds oxinfer in ./build. Extra arguments go to `meson setup`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if [ ! -f build/build.ninja ]; then
  meson setup build "$@"
fi
ninja -C build -j"$(nproc)"
