#!/usr/bin/env bash
# What a second live oxiwhisper element on the same model adds to the process's resident
# memory (docs/live.md): replays ../shared/data/vad/speech-with-pauses.wav in real time into
# 0, 1 and 2 live elements (tee branches, VAD on) and samples the pipeline's RSS four times a
# second from 10 s to 40 s: it prints the mean and the largest sample, and the peak (VmHWM).
# A pass's working memory comes and goes, so one sample depends on which passes were running;
# the mean over 120 samples does not.
#   bash scripts/second-element-memory.sh [MODEL=examples/demo-asr] [THREADS=1] [PROPERTIES]
# PROPERTIES: more oxiwhisper properties, e.g. "kv-cache=f32".
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
model=${1:-$root/examples/demo-asr}
threads=${2:-1}
extra=${3:-}
shared=${OXINFER_SHARED_DATA:-$root/../shared/data}
vad=$shared/vad/silero_vad_16k.safetensors
export GST_PLUGIN_PATH=$root/build/elements
caps="audio/x-raw,format=F32LE,rate=16000,channels=1"
whisper="oxiwhisper mode=live vad=on vad-model=$vad model=$model threads=$threads $extra"
for n in 0 1 2; do
  branches=()
  [ "$n" = 0 ] && branches=(t. ! queue ! fakesink sync=false)
  for ((i = 0; i < n; i++)); do branches+=(t. ! queue ! $whisper ! fakesink sync=false); done
  gst-launch-1.0 -q filesrc location="$shared/vad/speech-with-pauses.wav" ! wavparse ! \
    audioconvert ! audioresample ! $caps ! identity sync=true ! tee name=t "${branches[@]}" \
    > /dev/null 2>&1 &
  pid=$!
  sleep 10
  samples=()
  for ((s = 0; s < 120; s++)); do
    samples+=("$(awk '/VmRSS/ {print $2}' /proc/$pid/status)")
    sleep 0.25
  done
  printf '%s\n' "${samples[@]}" | awk -v n="$n" -v hwm="$(awk '/VmHWM/ {print $2}' /proc/$pid/status)" \
    '{ sum += $1; if ($1 > max) max = $1 } END {
       printf "%d elements: RSS mean %.0f KiB, largest sample %d KiB, peak %d KiB\n", n, sum / NR, max, hwm }'
  kill $pid
  wait $pid 2>/dev/null
done
