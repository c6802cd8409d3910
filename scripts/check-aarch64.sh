#!/usr/bin/env bash
# Cross-builds oxinfer for 64-bit ARM in ./build-aarch64 (Debian 12's aarch64 toolchain, the
# arm64 libraries installed beside the host's, scripts/cross/aarch64-linux-gnu.ini) and runs
# test suites through qemu-user: by default the kernels' and the backends'; pass test names to
# run others (`meson test -C build-aarch64 --list` lists them). Installs what is missing (apt,
# as root or through sudo). The GStreamer plugin is left out. Emulated, so slow; not part of
# .ci/run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
  $sudo apt-get update -q
fi
libs=(libtbb-dev libspdlog-dev libcurl4-openssl-dev libavformat-dev libavcodec-dev libavutil-dev
  libswresample-dev libswscale-dev libgtest-dev libgmock-dev libxsimd-dev)
wanted=(g++-aarch64-linux-gnu qemu-user nlohmann-json3-dev meson ninja-build pkg-config)
for l in "${libs[@]}"; do wanted+=("$l:arm64"); done
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ ! -f build-aarch64/build.ninja ]; then
  meson setup build-aarch64 --cross-file scripts/cross/aarch64-linux-gnu.ini \
    -Dbuildtype=release -Dgstreamer=disabled
fi
ninja -C build-aarch64 -j"$(nproc)"
[ $# -eq 0 ] && set -- kernel-formats kernel-arch-symbols kernel-math backends
meson test -C build-aarch64 --no-rebuild --print-errorlogs --timeout-multiplier 10 "$@"
