#!/usr/bin/env bash
# The README's main job: installs what is missing, builds, then runs the demo.
# For now the demo lists this machine's compute devices and writes a small model of the
# project's own, then inspects it (later: transcribe a synthesised sentence).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
bash scripts/build.sh >/dev/null
./build/tools/oxinfer/oxinfer devices
./build/tools/oxinfer/oxinfer demo
