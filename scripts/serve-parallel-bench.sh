#!/bin/bash
# Aggregate generation throughput of `oxinfer serve --parallel NP` with NREQ requests at once:
#   scripts/serve-parallel-bench.sh MODEL NP NREQ NTOK [PORT]
# Each request is a /completion of NTOK tokens (ignore_eos, greedy); prints the generated tokens
# over the wall time from the first request to the last reply, and the server's count of shared
# passes (docs/benchmarks.md, sixty-second session).
set -euo pipefail
model=$1 np=$2 nreq=$3 ntok=$4 port=${5:-18080}
bin=${OXINFER:-build/tools/oxinfer/oxinfer}
out=$(mktemp -d)
"$bin" serve -m "$model" --threads 2 --ctx 2048 --parallel "$np" --port "$port" >"$out/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 100); do curl -s "localhost:$port/health" >/dev/null && break; sleep 0.2; done
curl -s "localhost:$port/completion" -d '{"prompt": "warm", "n_predict": 4}' >/dev/null
start=$(date +%s.%N)
clients=()
for i in $(seq "$nreq"); do
  curl -s "localhost:$port/completion" -d "{\"prompt\": \"Story number $i begins\", \
\"n_predict\": $ntok, \"ignore_eos\": true, \"temperature\": 0}" >"$out/$i.json" &
  clients+=($!)
done
wait "${clients[@]}"
end=$(date +%s.%N)
kill -INT $server
wait $server 2>/dev/null || true
python3 - "$out" "$nreq" "$start" "$end" "$np" <<'PY'
import json, sys
out, nreq, start, end, np = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
n = sum(json.load(open(f"{out}/{i}.json"))["tokens_predicted"] for i in range(1, nreq + 1))
print(f"parallel={np} requests={nreq} tokens={n} wall={end - start:.2f} s aggregate={n / (end - start):.1f} tok/s")
PY
grep "shared passes" "$out/serve.log" || true
