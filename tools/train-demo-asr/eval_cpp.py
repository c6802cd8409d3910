"""Word error rate of a Whisper model on the 200 held-out sentences, measured through the C++
engine (`oxinfer transcribe`), as the demo model's card reports it.

    /usr/bin/python3 tools/train-demo-asr/eval_cpp.py --oxinfer build/tools/oxinfer/oxinfer \
        --model examples/demo-asr --audio /tmp/demo-asr-test [--out eval_cpp.json]

--audio is a directory made by make_testset_audio.py (ID.wav + transcripts.tsv); it is made
there first when it lacks transcripts.tsv. Hypotheses are lower-cased and stripped of
punctuation before scoring (the references are lower-case words without punctuation).
Only the Python standard library is used.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def wer_counts(ref, hyp):
    r, h = ref.split(), hyp.split()
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
            prev, d[j] = d[j], cur
    return d[len(h)], len(r)


def normalise(text):
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--oxinfer", default=os.path.join(HERE, "..", "..", "build", "tools", "oxinfer", "oxinfer"))
    ap.add_argument("--model", default=os.path.join(HERE, "..", "..", "examples", "demo-asr"))
    ap.add_argument("--audio", default="/tmp/demo-asr-test")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="")
    ap.add_argument("--extra", nargs="*", default=[], help="more oxinfer transcribe options")
    a = ap.parse_args()

    tsv = os.path.join(a.audio, "transcripts.tsv")
    if not os.path.exists(tsv):
        subprocess.run([sys.executable, os.path.join(HERE, "make_testset_audio.py"), a.audio], check=True)
    rows = [line.rstrip("\n").split("\t") for line in open(tsv, encoding="utf-8")]
    files = [os.path.join(a.audio, name) for name, _ in rows]
    with tempfile.TemporaryDirectory() as out_dir:
        subprocess.run([a.oxinfer, "transcribe", *files, "-m", a.model, "--language", "en",
                        "--format", "json", "--threads", str(a.threads), "-o", out_dir, *a.extra],
                       check=True, stdout=subprocess.DEVNULL)
        hyps = {}
        for name, _ in rows:
            stem = os.path.splitext(name)[0]
            with open(os.path.join(out_dir, stem + ".json"), encoding="utf-8") as f:
                hyps[name] = normalise(json.load(f)["text"])
    errors = words = correct = 0
    per = []
    for name, ref in rows:
        e, n = wer_counts(ref, hyps[name])
        errors, words, correct = errors + e, words + n, correct + (e == 0)
        per.append({"file": name, "ref": ref, "hyp": hyps[name], "errors": e})
    result = {"wer": errors / words, "errors": errors, "words": words,
              "sentence_accuracy": correct / len(rows), "sentences": len(rows)}
    print(json.dumps(result))
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(dict(result, utterances=per), f, indent=1)


if __name__ == "__main__":
    main()
