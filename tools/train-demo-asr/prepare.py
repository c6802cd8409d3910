"""Stage 1: sentences + espeak-ng synthesis -> packed 16 kHz audio (numpy).

Writes DATA/train.npz and DATA/test.npz (+ DATA/testset.tsv).  Safe to re-run:
already synthesised WAVs are reused.
"""
import argparse
import os
import random
import time

import numpy as np
from concurrent.futures import ThreadPoolExecutor

import data as D

N_TEST = 200
MAX_TEST_SEC = 7.5      # raw espeak-ng output incl. its own silences (window is 8 s)
MAX_TRAIN_SPEECH = 7.0
GROUP = 8  # speech part of a training utterance


def prepare(data_dir, n_train, seed=1234, workers=2, log=print):
    os.makedirs(os.path.join(data_dir, "wav"), exist_ok=True)
    words = D.load_words()
    train_s, test_s = D.make_sentences(n_train, N_TEST + 40, seed, words)
    train_jobs = group_jobs(data_dir, train_s, random.Random(seed + 1))
    train_settings = {(v, sp, pi) for (v, sp, pi, _, _) in train_jobs}
    rng = random.Random(seed + 2)
    test_jobs = []
    for i, s in enumerate(test_s):
        while True:  # first half held-out variants, second half training variants
            v, sp, pi = D.voice_settings(rng, heldout=(i % 2 == 0))
            if (v, sp, pi) not in train_settings:
                break
        test_jobs.append((v, sp, pi, s, os.path.join(data_dir, "wav", f"test{i:03d}.wav")))
    t0 = time.time()
    D.synth_many(test_jobs, workers, log)
    log(f"test synthesis done in {time.time() - t0:.0f} s")
    train_auds, train_meta = synth_groups(train_jobs, workers, log)
    log(f"synthesis done in {time.time() - t0:.0f} s")

    auds, meta = [], []
    for (v, sp, pi, s, path) in test_jobs:
        x = D.read_wav(path)
        b0, b1 = D.speech_bounds(x)
        if len(x) / D.SR > MAX_TEST_SEC:
            continue
        auds.append(x)
        meta.append((os.path.basename(path)[:-4], v, sp, pi, s, b0, b1))
    save_test(data_dir, auds[:N_TEST], meta[:N_TEST])
    save_train(data_dir, train_auds, train_meta, log)
    log(f"{N_TEST} test utterances")


def prepare_with_testset(data_dir, testset_tsv, n_train, seed=1234, workers=2, log=print,
                         variants=None):
    """One training set for a fixed held-out test set (the committed testset.tsv).

    The 200 test utterances are synthesised exactly as make_testset_audio.py makes them
    (raw espeak-ng output, one call each) into DATA/test.npz; the training sentences never
    equal a test sentence, and no training group uses a test (voice, speed, pitch) setting.
    Training voices are every training variant plus EXTRA_VARIANTS, never a held-out one."""
    os.makedirs(os.path.join(data_dir, "wav"), exist_ok=True)
    test = D.read_testset(testset_tsv)
    t0 = time.time()
    test_jobs = [(v, sp, pi, text, os.path.join(data_dir, "wav", f"{i}.wav"))
                 for (i, v, sp, pi, text) in test]
    D.synth_many(test_jobs, workers, log)
    auds, meta = [], []
    for (i, v, sp, pi, text) in test:
        x = D.read_wav(os.path.join(data_dir, "wav", f"{i}.wav"))
        b0, b1 = D.speech_bounds(x)
        auds.append(x)
        meta.append((i, v, sp, pi, text, b0, b1))
    save_test(data_dir, auds, meta)
    log(f"{len(test)} test utterances synthesised in {time.time() - t0:.0f} s")
    save_train_avoiding(data_dir, test, n_train, seed, workers, log,
                        templates=D.TEMPLATES + D.CLOCK_TEMPLATES, variants=variants, t0=t0)


def group_jobs(data_dir, sentences, rng, variants=None, avoid=()):
    """Training synthesis jobs: groups of GROUP sentences share one (voice, speed, pitch)
    and one espeak-ng call (much cheaper than one process per sentence)."""
    jobs = []
    for g in range(0, len(sentences), GROUP):
        while True:
            v, sp, pi = D.voice_settings(rng, heldout=False, variants=variants)
            if (v, sp, pi) not in avoid:
                break
        jobs.append((v, sp, pi, sentences[g:g + GROUP],
                     os.path.join(data_dir, "wav", f"group{g // GROUP:05d}.wav")))
    return jobs


def synth_groups(jobs, workers, log):
    auds, meta, failed = [], [], 0
    with ThreadPoolExecutor(workers) as ex:
        for k, (job, segs) in enumerate(zip(jobs, ex.map(D.synth_group, jobs))):
            if k % 500 == 0:
                log(f"group {k}/{len(jobs)}")
            if segs is None:
                failed += 1
                continue
            v, sp, pi, texts, _ = job
            for j, (x, t) in enumerate(zip(segs, texts)):
                b0, b1 = D.speech_bounds(x)
                if (b1 - b0) / D.SR > MAX_TRAIN_SPEECH:
                    continue
                auds.append(to_int16(x))  # as int16 at once: 64k utterances are 11 GB in f32
                meta.append((f"g{k:05d}_{j}", v, sp, pi, t, b0, b1))
    log(f"{failed} groups failed to split")
    return auds, meta


def to_int16(x):
    return (x * 32768.0).round().clip(-32768, 32767).astype(np.int16)


def concat_utterances(auds):
    """int16 utterances -> one int16 array and the offsets of each utterance in it."""
    lens = np.array([len(x) for x in auds], dtype=np.int64)
    return np.concatenate(auds), np.concatenate([[0], np.cumsum(lens)])


def save_train(data_dir, auds, meta, log):
    """auds: int16 arrays (synth_groups)."""
    a, o = concat_utterances(auds)
    np.savez(os.path.join(data_dir, "train.npz"), audio=a, offs=o,
             meta=np.array(meta, dtype=object), allow_pickle=True)
    log(f"packed {len(meta)} train utterances ({len(a) / D.SR / 3600:.2f} h)")


def save_test(data_dir, auds, meta):
    """DATA/test.npz and DATA/testset.tsv; auds: float arrays, meta: (id, voice, speed, pitch,
    text, speech start, speech end) per utterance."""
    a, o = concat_utterances([to_int16(x) for x in auds])
    np.savez(os.path.join(data_dir, "test.npz"), audio=a, offs=o,
             meta=np.array(meta, dtype=object), allow_pickle=True)
    with open(os.path.join(data_dir, "testset.tsv"), "w") as f:
        f.write("id\tvoice\tspeed\tpitch\ttext\n")
        for (i, v, sp, pi, text, _, _) in meta:
            f.write(f"{i}\t{v}\t{sp}\t{pi}\t{text}\n")


def save_train_avoiding(data_dir, test, n_train, seed, workers, log, templates=D.TEMPLATES,
                        variants=None, t0=None):
    """DATA/train.npz: n_train new sentences (never one of the test rows' sentences), spoken
    by the training voice variants plus EXTRA_VARIANTS (never a held-out one) with no
    (voice, speed, pitch) setting of the test rows (id, voice, speed, pitch, text)."""
    words = D.load_words()
    test_sentences = {text for (_, _, _, _, text) in test}
    test_settings = {(v, sp, pi) for (_, v, sp, pi, _) in test}
    rng = random.Random(seed)
    sentences = []
    while len(sentences) < n_train:
        s = D.make_sentence(rng, words, templates)
        if s not in test_sentences:
            sentences.append(s)
    jobs = group_jobs(data_dir, sentences, random.Random(seed + 1),
                      variants=variants or D.TRAIN_VARIANTS + D.EXTRA_VARIANTS,
                      avoid=test_settings)
    t0 = time.time() if t0 is None else t0
    auds, meta = synth_groups(jobs, workers, log)
    log(f"synthesis done in {time.time() - t0:.0f} s")
    save_train(data_dir, auds, meta, log)


def prepare_extra(data_dir, base_dir, n_train, seed, workers=2, log=print):
    """A further training set beside BASE_DIR's: new sentences (never one of BASE_DIR's
    test sentences), the training voice variants plus EXTRA_VARIANTS (never a held-out
    one), and no (voice, speed, pitch) setting of BASE_DIR's test set.  train.py takes it
    with --extra-data; the tokenizer stays the one trained on BASE_DIR's sentences."""
    os.makedirs(os.path.join(data_dir, "wav"), exist_ok=True)
    test = D.read_testset(os.path.join(base_dir, "testset.tsv"))
    save_train_avoiding(data_dir, test, n_train, seed, workers, log)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/tmp/demo-asr-data")
    ap.add_argument("--n-train", type=int, default=12000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--extra", metavar="BASE_DIR",
                    help="write a further training set into --data, beside BASE_DIR's")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    if a.extra:
        prepare_extra(a.data, a.extra, a.n_train, a.seed, workers=a.workers)
    else:
        prepare(a.data, a.n_train, seed=a.seed, workers=a.workers)
