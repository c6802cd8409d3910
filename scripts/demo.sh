#!/usr/bin/env bash
# The README's main job: installs what is missing, builds, then runs `oxinfer demo`: a sentence
# spoken by espeak-ng is transcribed by a GStreamer pipeline ending in oxiwhisper, offline with
# the project's demo model (examples/demo-asr). Arguments go to `oxinfer demo`, e.g.
#   bash scripts/demo.sh model=openai/whisper-base text="set a timer for ten minutes"
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
bash scripts/build.sh >/dev/null
./build/tools/oxinfer/oxinfer devices
./build/tools/oxinfer/oxinfer demo "$@"
