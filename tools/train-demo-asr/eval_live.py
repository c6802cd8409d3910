"""Word error rate and latency of oxiwhisper's LIVE path on the demo model's held-out sentences
(docs/live.md: latency budget against word error rate).

    /usr/bin/python3 tools/train-demo-asr/eval_live.py --model examples/demo-asr \
        --audio /tmp/demo-asr-test --sentences 40 --latency 1500 3000 6000 [--full-window]

The first N held-out WAVs (made by make_testset_audio.py when --audio lacks them) are joined
with 1 s of silence between them into one file, which one gst-launch-1.0 pipeline replays in
real time (`identity sync=true`) into one live oxiwhisper element per latency budget (tee),
each with VAD on and its text written by oxisubenc as JSON lines. With --full-window a second
element per budget runs with encode-audio-only=false (the encoder over the zero-padded
window), to show what encoding the buffered audio only costs. Reported per element: WER of
all its committed text against the joined references, and its last oxiwhisper-stats
(max-observed-delay, p99-delay, rtf). Standard library + sox + gst-launch-1.0 only.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

from eval_cpp import normalise, wer_counts  # noqa: E402


def banded_wer_counts(ref, hyp, band=400):
    """Levenshtein word errors restricted to |i*len(h)/len(r) - j| <= band: exact whenever the
    best alignment stays inside the band (hours of replay drift by a few words, not hundreds),
    and O(len * band) instead of the full table's O(len^2)."""
    r, h = ref.split(), hyp.split()
    big = len(r) + len(h) + 1
    prev = {j: j for j in range(0, min(len(h), band) + 1)}
    for i in range(1, len(r) + 1):
        centre = round(i * len(h) / max(len(r), 1))
        cur = {}
        for j in range(max(0, centre - band), min(len(h), centre + band) + 1):
            best = prev.get(j, big) + 1
            if j > 0:
                best = min(best, cur.get(j - 1, big) + 1,
                           prev.get(j - 1, big) + (r[i - 1] != h[j - 1]))
            cur[j] = best
        prev = cur
    return prev.get(len(h), big), len(r)


def repeat_to_duration(rows, audio_dir, seconds):
    """The rows cycled in order until their audio plus 1 s of silence each lasts `seconds`."""
    durations = []
    for name, _ in rows:
        with wave.open(os.path.join(audio_dir, name)) as w:
            durations.append(w.getnframes() / w.getframerate() + 1.0)
    out, total = [], 0.0
    while total < seconds:
        k = len(out) % len(rows)
        out.append(rows[k])
        total += durations[k]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "examples", "demo-asr"))
    ap.add_argument("--audio", default="/tmp/demo-asr-test")
    ap.add_argument("--sentences", type=int, default=40)
    ap.add_argument("--minutes", type=float, default=0,
                    help="repeat the sentences (in order, 1 s of silence after each) until the "
                         "joined audio lasts this long: the hour-long replay of the latency bound")
    ap.add_argument("--latency", type=int, nargs="+", default=[1500, 3000, 6000])
    ap.add_argument("--full-window", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="per element")
    ap.add_argument("--condition-on-previous-text", action="store_true",
                    help="keep the element's default prompt of committed text (the demo model "
                         "was not trained with prompts, so the default here is off)")
    ap.add_argument("--vad-model", default=os.path.join(
        os.environ.get("OXINFER_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data")),
        "vad", "silero_vad_16k.safetensors"))
    ap.add_argument("--out", default="")
    a = ap.parse_args()

    tsv = os.path.join(a.audio, "transcripts.tsv")
    if not os.path.exists(tsv):
        subprocess.run([sys.executable, os.path.join(HERE, "make_testset_audio.py"), a.audio],
                       check=True)
    rows = [line.rstrip("\n").split("\t") for line in open(tsv, encoding="utf-8")][: a.sentences]
    if a.minutes > 0:
        rows = repeat_to_duration(rows, a.audio, a.minutes * 60.0)
    reference = " ".join(text for _, text in rows)
    # The full Levenshtein table of an hour's words (~7000 x 7000) is too slow in Python.
    count_errors = banded_wer_counts if len(reference.split()) > 3000 else wer_counts
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(ROOT, "build", "elements"))
    elements = [(lat, True) for lat in a.latency]
    if a.full_window:
        elements += [(lat, False) for lat in a.latency]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        joined = os.path.join(tmp, "joined.wav")
        silence = os.path.join(tmp, "silence.wav")
        subprocess.run(["sox", "-R", "-n", "-r", "16000", "-c", "1", "-b", "16", silence, "trim", "0",
                        "1.0"], check=True)
        parts = []
        for name, _ in rows:
            parts += [os.path.join(a.audio, name), silence]
        subprocess.run(["sox", "-R", *parts, joined], check=True)
        caps = "audio/x-raw,format=F32LE,rate=16000,channels=1"
        cmd = ["gst-launch-1.0", "-m", "filesrc", f"location={joined}", "!", "wavparse", "!",
               "audioconvert", "!", "audioresample", "!", caps, "!", "identity", "sync=true", "!",
               "tee", "name=t"]
        for k, (lat, audio_only) in enumerate(elements):
            cmd += ["t.", "!", "queue", "!", "oxiwhisper", f"name=w{k}", "mode=live",
                    f"latency={lat}", f"encode-audio-only={'true' if audio_only else 'false'}",
                    "vad=on", f"vad-model={a.vad_model}", f"model={a.model}",
                    f"threads={a.threads}", "stats-interval=1000",
                    "condition-on-previous-text="
                    + ("true" if a.condition_on_previous_text else "false"), "!", "oxisubenc",
                    "format=json", "!", "filesink", f"location={os.path.join(tmp, f'w{k}.json')}"]
        log = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
        stats = {}
        for line in log.splitlines():
            m = re.search(r'from element "(w\d+)" \(element\): oxiwhisper-stats, (.*)', line)
            if m:
                stats[m.group(1)] = m.group(2)
        for k, (lat, audio_only) in enumerate(elements):
            texts = [json.loads(line)["text"] for line in
                     open(os.path.join(tmp, f"w{k}.json"), encoding="utf-8") if line.strip()]
            hyp = normalise(" ".join(texts))
            errors, words = count_errors(reference, hyp)
            s = stats.get(f"w{k}", "")

            def field(name):
                m = re.search(name + r"=\(\w+\)([0-9.e+-]+)", s)
                return float(m.group(1)) if m else None
            results.append({"latency_ms": lat, "encode_audio_only": audio_only,
                            "wer": errors / words, "errors": errors, "words": words,
                            "max_observed_delay_ms": field("max-observed-delay"),
                            "p99_delay_ms": field("p99-delay"), "rtf": field("rtf")})
    for r in results:
        print(json.dumps(r))
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump({"sentences": len(rows), "model": a.model, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
