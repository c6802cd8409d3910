"""Sentence generation and espeak-ng synthesis for the oxinfer demo ASR model.

Everything here is deterministic given the seeds (and the espeak-ng / sox
versions installed).
"""
import os
import random
import subprocess
import wave
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SR = 16000

# espeak-ng voices (all ship with espeak-ng-data; no mbrola).
BASE_VOICES = ["en", "en-us", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp",
               "en-gb-x-gbcwmd", "en-029", "en-us-nyc"]
TRAIN_VARIANTS = ["", "+m1", "+m2", "+m3", "+m4", "+m5", "+m7",
                  "+f1", "+f2", "+f3", "+f5", "+klatt", "+klatt2", "+klatt3"]
# variants that never occur in training (used for half of the test set)
HELDOUT_VARIANTS = ["+f4", "+m6", "+klatt4"]
# more espeak-ng variants for the further training sets (prepare.py --extra): other
# speakers' formant settings, none of them a held-out variant
EXTRA_VARIANTS = ["+m8", "+Alex", "+Andy", "+Annie", "+Denis", "+Jacky", "+Lee", "+Mike",
                  "+Michael", "+adam", "+anika", "+belinda", "+benjamin", "+caleb", "+david",
                  "+edward", "+john", "+linda", "+max", "+paul", "+robert", "+steph",
                  "+travis", "+zac", "+Gene", "+norbert", "+quincy", "+shelby", "+victor"]
SPEED_RANGE = (120, 200)   # words per minute
PITCH_RANGE = (20, 80)


def load_words(path=None):
    path = path or os.path.join(HERE, "words.txt")
    words = []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line not in words:
            words.append(line)
    return words


UNITS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
         "seventeen", "eighteen", "nineteen"]
TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def number_words(n):
    """0..999 as words from the vocabulary (no 'and')."""
    if n == 0:
        return "zero"
    out = []
    if n >= 100:
        out += [UNITS[n // 100 - 1], "hundred"]
        n %= 100
    if n >= 20:
        out.append(TENS[n // 10 - 2])
        n %= 10
        if n:
            out.append(UNITS[n - 1])
    elif n >= 10:
        out.append(TEENS[n - 10])
    elif n > 0:
        out.append(UNITS[n - 1])
    return " ".join(out)


SLOTS = {
    "DEV": ["light", "lights", "music", "radio", "alarm", "timer", "camera", "screen",
            "computer", "video", "phone", "power"],
    "ROOM": ["kitchen", "bedroom", "office", "garden", "house", "room", "car"],
    "ACT": ["start", "stop", "play", "pause", "open", "close", "skip", "resume", "record",
            "mute", "save", "delete", "cancel", "repeat", "check", "select", "search"],
    "OBJ": ["door", "window", "file", "message", "email", "song", "video", "book", "page",
            "list", "picture", "story", "game", "news", "weather", "alarm", "timer"],
    "DIR": ["up", "down", "left", "right", "back", "next"],
    "DAY": ["today", "tomorrow", "yesterday", "monday", "tuesday", "wednesday", "thursday",
            "friday", "saturday", "sunday"],
    "PART": ["morning", "afternoon", "evening", "night"],
    "UNIT": ["seconds", "minutes", "hours", "degrees", "percent"],
    "ADJ": ["good", "bad", "big", "small", "new", "old", "long", "short", "hot", "cold",
            "warm", "fast", "slow", "red", "green", "blue", "black", "white", "yellow",
            "bright", "dark", "quiet", "loud", "full", "empty", "clean", "ready", "happy"],
    "NOUN": ["friend", "family", "mother", "father", "man", "woman", "child", "dog", "cat",
             "bird", "tree", "city", "street", "school", "team", "shop", "market", "train",
             "bus", "car", "coffee", "tea", "dinner", "lunch", "breakfast", "water", "food"],
    "VERB": ["make", "take", "get", "give", "see", "find", "bring", "buy", "need", "want",
             "like", "love", "use", "keep", "watch", "read", "write", "call", "meet"],
    "PRON": ["i", "you", "we", "they", "he", "she"],
}

TEMPLATES = [
    "turn on the DEV in the ROOM",
    "turn off the DEV",
    "turn the volume up",
    "turn the volume down please",
    "ACT the OBJ",
    "please ACT the OBJ now",
    "can you ACT the OBJ for me",
    "set a timer for NUM UNIT",
    "set the alarm for NUM o'clock DAY",
    "set the temperature to NUM degrees",
    "move DIR NUM times",
    "go DIR and then go DIR",
    "play the next song",
    "go back to the last page",
    "what is the weather DAY",
    "what time is it now",
    "call my NOUN DAY PART",
    "send a message to my NOUN",
    "PRON VERB the ADJ NOUN",
    "PRON will VERB the NOUN DAY",
    "the NOUN is very ADJ",
    "the ADJ NOUN and the ADJ NOUN",
    "PRON need NUM NOUN before PART",
    "there are NUM people in the ROOM",
    "the price is NUM",
    "it is NUM percent",
    "read the news from DAY",
    "show me the OBJ from DAY",
    "yes please",
    "no thank you",
    "okay stop",
    "open the door and turn on the light",
    "how many NOUN are there",
    "where is the NOUN",
    "when does the NOUN start",
    "PRON should not VERB the NOUN",
    "hello how are you DAY",
    "thanks for your help",
    "page NUM of NUM",
    "skip NUM seconds",
]

# Clock times and day phrases as people say them in commands: the one-run recipe
# (prepare.prepare_with_testset) adds these; the committed weights' sets were made without them.
CLOCK_TEMPLATES = [
    "please turn on the ROOM DEV at TIME",
    "turn on the ROOM DEV",
    "turn off the DEV in the ROOM at TIME",
    "set the alarm for TIME",
    "call my NOUN on DAY PART",
    "call me at TIME",
    "what is the weather like DAY",
    "meet me at TIME on DAY",
    "PRON will VERB the NOUN at TIME",
]


def clock_time(rng):
    """A clock time as spoken: 'seven', 'seven o'clock', 'seven thirty', 'ten forty five'."""
    hour = number_words(rng.randint(1, 12))
    r = rng.random()
    if r < 0.2:
        return hour
    if r < 0.45:
        return hour + " o'clock"
    minute = rng.choice([15, 30, 30, 45, 5, 10, 20, 25, 35, 40, 50, 55])
    return hour + " " + number_words(minute)


def fill_template(t, rng):
    out = []
    for tok in t.split():
        if tok == "TIME":
            out.append(clock_time(rng))
        elif tok == "NUM":
            r = rng.random()
            n = rng.randint(0, 20) if r < 0.5 else (rng.randint(21, 99) if r < 0.85 else rng.randint(100, 999))
            out.append(number_words(n))
        elif tok in SLOTS:
            out.append(rng.choice(SLOTS[tok]))
        else:
            out.append(tok)
    return " ".join(out)


def make_sentence(rng, words, templates=TEMPLATES):
    r = rng.random()
    if r < 0.45:
        s = fill_template(rng.choice(templates), rng)
        # sometimes chain two templates
        if rng.random() < 0.25:
            s = s + " " + fill_template(rng.choice(templates), rng)
    elif r < 0.55:
        s = " ".join(number_words(rng.randint(0, 999)) for _ in range(rng.randint(1, 4)))
    else:
        s = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
    ws = s.split()
    if len(ws) < 3:
        ws = ws + [rng.choice(words) for _ in range(3 - len(ws))]
    ws = ws[:12]
    for w in ws:
        assert w in words, w
    return " ".join(ws)


def make_sentences(n_train, n_test, seed, words):
    """Train and test sentences; test sentences never appear in training."""
    rng = random.Random(seed)
    test, seen = [], set()
    while len(test) < n_test:
        s = make_sentence(rng, words)
        if s not in seen:
            seen.add(s)
            test.append(s)
    train = []
    while len(train) < n_train:
        s = make_sentence(rng, words)
        if s not in seen:  # excludes test sentences (duplicates inside train are allowed)
            train.append(s)
    return train, test


def voice_settings(rng, heldout, variants=None):
    base = rng.choice(BASE_VOICES)
    var = rng.choice(HELDOUT_VARIANTS if heldout else (variants or TRAIN_VARIANTS))
    speed = rng.randint(*SPEED_RANGE)
    pitch = rng.randint(*PITCH_RANGE)
    return base + var, speed, pitch


def espeak_cmd(voice, speed, pitch, text, raw_wav):
    return ["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-w", raw_wav, text]


def sox_cmd(raw_wav, out_wav):
    # -R: sox seeds its dither with a fixed number, so the same input gives the same WAV.
    return ["sox", "-R", raw_wav, "-r", "16000", "-c", "1", "-b", "16", out_wav]


def synth_one(args):
    voice, speed, pitch, text, out_wav = args
    if os.path.exists(out_wav) and os.path.getsize(out_wav) > 1000:
        return out_wav
    raw = out_wav + ".raw.wav"
    subprocess.run(espeak_cmd(voice, speed, pitch, text, raw), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(sox_cmd(raw, out_wav), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.remove(raw)
    return out_wav


def synth_group(args):
    """Several sentences with one voice setting in one espeak-ng call (SSML breaks
    between them), resampled once by sox, then split at the long pauses.
    Returns a list of float32 arrays (one per sentence) or None if the split failed."""
    voice, speed, pitch, texts, out_wav = args
    if not (os.path.exists(out_wav) and os.path.getsize(out_wav) > 1000):
        raw = out_wav + ".raw.wav"
        ssml = "<speak>" + ' <break time="1500ms"/> '.join(texts) + "</speak>"
        subprocess.run(["espeak-ng", "-m", "-v", voice, "-s", str(speed), "-p", str(pitch),
                        "-w", raw, ssml], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(sox_cmd(raw, out_wav), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.remove(raw)
    return split_group(read_wav(out_wav), len(texts))


def split_group(x, n_expected, min_gap=80):
    hop = 160
    n = len(x) // hop
    loud = np.abs(x[: n * hop].reshape(n, hop)).max(axis=1) > 1e-3
    idx = np.nonzero(loud)[0]
    if len(idx) == 0:
        return None
    segs, start, prev = [], idx[0], idx[0]
    for i in idx[1:]:
        if i - prev > min_gap:
            segs.append((start, prev + 1))
            start = i
        prev = i
    segs.append((start, prev + 1))
    if len(segs) != n_expected:
        return None
    out = []
    for a, b in segs:
        a = max(0, (a - 10) * hop)      # keep 0.1 s before and 0.2 s after the speech
        b = min(len(x), (b + 20) * hop)
        out.append(x[a:b].copy())
    return out


def synth_many(jobs, workers=2, log=None):
    done = 0
    with ThreadPoolExecutor(workers) as ex:
        for _ in ex.map(synth_one, jobs):
            done += 1
            if log and done % 500 == 0:
                log(f"synthesised {done}/{len(jobs)}")


def read_testset(path):
    """The rows (id, voice, speed, pitch, text) of a testset.tsv that prepare.py wrote."""
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        assert header == ["id", "voice", "speed", "pitch", "text"], header
        for line in f:
            i, v, sp, pi, text = line.rstrip("\n").split("\t")
            rows.append((i, v, int(sp), int(pi), text))
    return rows


def read_wav(path):
    with wave.open(path, "rb") as w:
        assert w.getframerate() == SR and w.getnchannels() == 1 and w.getsampwidth() == 2
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return x.astype(np.float32) / 32768.0


def speech_bounds(x, thr_db=-40.0):
    """First and last sample of speech (10 ms frames above max-40 dB)."""
    hop = 160
    n = len(x) // hop
    if n == 0:
        return 0, len(x)
    e = np.sqrt(np.mean(x[: n * hop].reshape(n, hop).astype(np.float64) ** 2, axis=1) + 1e-12)
    db = 20 * np.log10(e)
    idx = np.nonzero(db > db.max() + thr_db)[0]
    if len(idx) == 0:
        return 0, len(x)
    return int(idx[0] * hop), int(min(len(x), (idx[-1] + 1) * hop))
