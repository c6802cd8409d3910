#!/usr/bin/env bash
# What a second live oxiwhisper element on the same model adds to the process's resident
# memory (docs/live.md): replays ../shared/data/vad/speech-with-pauses.wav in real time into
# 0, 1 and 2 live elements (tee branches, VAD on) and prints the RSS of each pipeline after 40 s
# and its peak RSS up to then (VmHWM: the passes' working memory comes and goes, so the RSS at
# one instant depends on which passes were running).
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
  sleep 40
  echo "$n elements: $(ps -o rss= -p $pid) KiB, peak $(awk '/VmHWM/ {print $2}' /proc/$pid/status) KiB"
  kill $pid
  wait $pid 2>/dev/null
done
