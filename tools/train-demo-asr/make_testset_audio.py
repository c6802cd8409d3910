"""Regenerate the 200 held-out test utterances of the demo ASR model.

    /usr/bin/python3 tools/train-demo-asr/make_testset_audio.py OUTDIR [--tsv examples/demo-asr/testset.tsv]

For every row (id, voice, speed, pitch, text) of testset.tsv it runs exactly

    espeak-ng -v VOICE -s SPEED -p PITCH -w OUTDIR/ID.raw.wav "TEXT"
    sox OUTDIR/ID.raw.wav -r 16000 -c 1 -b 16 OUTDIR/ID.wav

(no noise, no gain, no extra silence: the raw espeak-ng output resampled to 16 kHz
mono 16-bit) and writes OUTDIR/transcripts.tsv ("ID.wav<TAB>text").
These are the same WAVs the torch WER in examples/demo-asr/README.md was measured on.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import data as D  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--tsv", default=os.path.join(HERE, "..", "..", "examples", "demo-asr", "testset.tsv"))
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    rows = D.read_testset(a.tsv)
    jobs = [(v, sp, pi, text, os.path.join(a.outdir, f"{i}.wav")) for (i, v, sp, pi, text) in rows]
    D.synth_many(jobs, a.workers, print)
    with open(os.path.join(a.outdir, "transcripts.tsv"), "w", encoding="utf-8") as f:
        for (i, _, _, _, text) in rows:
            f.write(f"{i}.wav\t{text}\n")
    print(f"wrote {len(rows)} WAVs and transcripts.tsv to {a.outdir}")


if __name__ == "__main__":
    main()
