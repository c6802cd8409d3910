#!/usr/bin/env bash
# Live soak test of oxiwhisper (docs/live.md): replays ../shared/data/vad/speech-with-pauses.wav
# in real time, looped to MINUTES, into TWO live oxiwhisper elements that share one model (and
# one VAD model), and records the process's resident memory every second and the elements'
# oxiwhisper-stats messages.
#   bash scripts/live-soak.sh [MINUTES=30] [MODEL=examples/demo-asr] [OUT=/tmp/oxinfer-soak]
# Prints the resident-memory drift (the mean of the last minute against the mean of the third:
# the live elements give their working memory back between passes, so single samples depend
# on which passes were running) and each element's last stats.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
minutes=${1:-30}
model=${2:-$root/examples/demo-asr}
out=${3:-/tmp/oxinfer-soak}
shared=${OXINFER_SHARED_DATA:-$root/../shared/data}
vad=$shared/vad/silero_vad_16k.safetensors
mkdir -p "$out"
files=()
for ((i = 0; i < minutes; i++)); do files+=("$shared/vad/speech-with-pauses.wav"); done
sox "${files[@]}" "$out/soak.wav"

export GST_PLUGIN_PATH=$root/build/elements
caps="audio/x-raw,format=F32LE,rate=16000,channels=1"
whisper="oxiwhisper mode=live vad=on vad-model=$vad model=$model threads=1 stats-interval=10000"
gst-launch-1.0 -m filesrc location="$out/soak.wav" ! wavparse ! audioconvert ! audioresample ! \
  $caps ! identity sync=true ! tee name=t \
  t. ! queue ! $whisper name=a ! fakesink sync=false \
  t. ! queue ! $whisper name=b ! fakesink sync=false > "$out/gst.log" 2>&1 &
pid=$!
: > "$out/rss.tsv"
while kill -0 $pid 2>/dev/null; do
  echo "$(date +%s) $(ps -o rss= -p $pid 2>/dev/null || echo 0)" >> "$out/rss.tsv"
  sleep 1
done
wait $pid || true
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
rows = [tuple(map(int, l.split())) for l in open(f"{out}/rss.tsv") if len(l.split()) == 2 and l.split()[1] != "0"]
t0 = rows[0][0]
steady = [(t - t0, r) for t, r in rows if t - t0 >= 120]
if steady:
    end = steady[-1][0]
    third = [r for t, r in steady if t < 180]
    final = [r for t, r in steady if t > end - 60]
    a, b = sum(third) / len(third), sum(final) / len(final)
    print(f"resident memory: mean of minute 3 {a/1024:.1f} MiB, mean of the last minute "
          f"{b/1024:.1f} MiB, drift {100*(b-a)/a:+.2f} %; largest sample after 2 min "
          f"{max(r for _, r in steady)/1024:.1f} MiB")
last = {}
for line in open(f"{out}/gst.log"):
    m = re.search(r'from element "(\w+)" \(element\): oxiwhisper-stats, (.*)', line)
    if m: last[m.group(1)] = m.group(2)
for name, stats in sorted(last.items()):
    print(f"{name}: {stats}")
PY
