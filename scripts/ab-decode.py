#!/usr/bin/env python3
"""A/B of LLM decode speed between builds of oxinfer, each run from several file copies.

On the development VM a binary's decode speed depends on which physical pages its code landed
on in the page cache (kernels/formats/prefetch.h): byte-identical copies of one build decoded
Q4_K_M at 61-62 % of the read bandwidth from one file and 74-81 % from four others. So every
binary is copied N times (each copy gets pages of its own) and the rounds alternate between all
copies of all binaries; the summary is the mean per binary over copies and rounds.

  scripts/ab-decode.py -m model.gguf --copies 4 --rounds 2 OLD_BINARY NEW_BINARY

Each run is `BINARY bench llm -m MODEL --pp 0 --tg 128 --reps 2 --threads 2 --json`; a line per
run gives decode_bandwidth_pct, the read limit, the generation's tok/s and each product kind's
GB/s as a share of the limit.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def short_kind(kind):
    first = kind.split(" + ")[0]
    name, shape = first.split(" [")
    return ("+" if " + " in kind else "") + name + "[" + shape.rstrip("]").replace(" x ", "x") + "]"


def run(binary, args):
    cmd = [binary, "bench", "llm", "-m", args.model, "--pp", "0", "--tg", str(args.tg), "--reps",
           "2", "--threads", str(args.threads), "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{binary}: exit {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-m", "--model", required=True)
    p.add_argument("--copies", type=int, default=4)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--tg", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("binaries", nargs="+")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="ab-decode-") as tmp:
        runs = []  # (copy, binary index, label, path of the copy)
        for b, binary in enumerate(args.binaries):
            for c in range(args.copies):
                path = os.path.join(tmp, f"b{b}_c{c}")
                shutil.copyfile(binary, path)
                os.chmod(path, 0o755)
                runs.append((c, b, f"{b}:{os.path.basename(binary)}#{c}", path))
        runs.sort()  # copies of different binaries alternate: b0#0, b1#0, b0#1, b1#1, ...
        results = {b: [] for b in range(len(args.binaries))}
        for r in range(args.rounds):
            for _, b, label, path in runs:
                d = run(path, args)
                limit = d["read_bandwidth_gbs"]
                kinds = " ".join(f"{short_kind(k['kind'])}={k['gbs'] / limit * 100:.0f}"
                                 for k in d.get("decode_products_by_kind", []))
                results[b].append(d["decode_bandwidth_pct"])
                print(f"round {r} {label:24s} decode {d['decode_bandwidth_pct']:5.1f} % "
                      f"limit {limit:5.1f} GB/s tg {d[f'tg{args.tg}_tok_s']:6.1f} | {kinds}",
                      flush=True)
        print()
        for b, binary in enumerate(args.binaries):
            v = results[b]
            print(f"{binary}: decode {statistics.mean(v):.1f} % of the limit (min {min(v):.1f}, "
                  f"max {max(v):.1f}, {len(v)} runs)")


if __name__ == "__main__":
    main()
