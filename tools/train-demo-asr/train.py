"""Train the oxinfer demo ASR model (a tiny Whisper) end to end.

    /usr/bin/python3 tools/train-demo-asr/train.py --out examples/demo-asr

Stages: espeak-ng synthesis (prepare.py) -> BPE tokenizer -> training ->
greedy WER on the held-out test set -> Hugging Face export (export.py).
Deterministic given the seeds (single process, fixed RNG streams).
"""
import argparse
import json
import math
import os
import random
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import data as D  # noqa: E402
import features as FE  # noqa: E402
import tokenizer as TK  # noqa: E402
from model import Whisper  # noqa: E402

CHUNK_LENGTH = 8  # seconds; window = 128000 samples = 800 frames = 400 encoder positions

MODEL_CFG = dict(
    d_model=128, encoder_layers=3, decoder_layers=2, encoder_attention_heads=4,
    decoder_attention_heads=4, encoder_ffn_dim=512, decoder_ffn_dim=512, num_mel_bins=80,
    max_source_positions=CHUNK_LENGTH * 50, max_target_positions=64,
)


def log_to(path):
    f = open(path, "a")

    def log(msg):
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        f.write(line + "\n")
        f.flush()
    return log


def load_split(data_dir, name):
    z = np.load(os.path.join(data_dir, f"{name}.npz"), allow_pickle=True)
    return z["audio"], z["offs"], list(z["meta"])


def join_training_sets(audio, offs, meta, extra_dirs, log=print):
    """One training split followed by each further set's (prepare.py --extra), joined with a
    single copy of the audio."""
    audios, all_offs, meta = [audio], [offs], list(meta)
    end = len(audio)
    for d in extra_dirs:
        a, o, m = load_split(d, "train")
        all_offs.append(o[1:] + end)
        audios.append(a)
        end += len(a)
        meta += m
        log(f"+ {len(m)} train utterances from {d}")
    return np.concatenate(audios), np.concatenate(all_offs), meta


def build_tokenizer(train_meta):
    words = D.load_words()
    counts = Counter(w for m in train_meta for w in m[4].split())
    return TK.Tokenizer(TK.train_bpe(words, counts), CHUNK_LENGTH)


class Batcher:
    """Augmentation + features + token targets, deterministic per step."""

    def __init__(self, audio, offs, meta, tok, seed, ts_frac=0.3, noise_prob=0.8,
                 specaug_prob=0.8):
        self.audio, self.offs, self.meta, self.tok = audio, offs, meta, tok
        self.seed = seed
        self.ts_frac = ts_frac
        self.noise_prob, self.specaug_prob = noise_prob, specaug_prob
        self.n_samples = CHUNK_LENGTH * D.SR
        self.filters = torch.from_numpy(FE.mel_filters(MODEL_CFG["num_mel_bins"]))
        self.text_ids = [tok.encode(" " + m[4]) for m in meta]

    def epoch_batches(self, epoch, bs):
        rng = random.Random(self.seed * 1000 + epoch)
        idx = list(range(len(self.meta)))
        rng.shuffle(idx)
        batches = []
        lens = self.offs[1:] - self.offs[:-1]
        for g in range(0, len(idx), bs * 32):  # length-sorted pools -> compact crops
            pool = sorted(idx[g:g + bs * 32], key=lambda i: lens[i])
            batches += [pool[k:k + bs] for k in range(0, len(pool), bs) if len(pool[k:k + bs]) == bs]
        rng.shuffle(batches)
        return batches

    def example(self, i, rng):
        x = self.audio[self.offs[i]:self.offs[i + 1]].astype(np.float32) / 32768.0
        b0, b1 = int(self.meta[i][5]), int(self.meta[i][6])
        N = self.n_samples
        if rng.rand() < 0.5:  # trim the natural espeak silence
            s0 = max(0, b0 - rng.randint(0, 800))
            s1 = min(len(x), b1 + rng.randint(0, 1600))
            x = x[s0:s1]
            b1 -= s0
        room = N - 320 - len(x)
        lead = rng.randint(0, max(1, min(room, int(0.8 * D.SR)))) if room > 0 and rng.rand() < 0.7 else 0
        room -= lead
        trail = rng.randint(0, max(1, min(room, int(0.6 * D.SR)))) if room > 0 and rng.rand() < 0.5 else 0
        y = np.concatenate([np.zeros(lead, np.float32), x, np.zeros(trail, np.float32)])
        y *= 10 ** (rng.uniform(-12, 6) / 20)
        if rng.rand() < self.noise_prob:
            sp = y[lead:lead + b1]
            rms = np.sqrt(np.mean(sp.astype(np.float64) ** 2) + 1e-12)
            snr = rng.uniform(15, 40)
            n = rng.randn(len(y))
            if rng.rand() < 0.5:  # pink
                f = np.fft.rfft(n)
                f /= np.sqrt(np.maximum(np.arange(len(f)), 1.0))
                n = np.fft.irfft(f, len(y))
            n *= rms / (np.sqrt(np.mean(n ** 2)) + 1e-12) * 10 ** (-snr / 20)
            y = y + n.astype(np.float32)
        y = np.clip(y, -1.0, 1.0)[:N]
        end = min((lead + b1) / D.SR, CHUNK_LENGTH)
        return y, end

    def tokens(self, i, end, rng):
        tok = self.tok
        text = self.text_ids[i]
        if rng.rand() < self.ts_frac:
            seq = [tok.sot, tok.en, tok.transcribe, tok.ts_token(0.0)] + text + \
                [tok.ts_token(round(end / 0.02) * 0.02), tok.eot]
            first_loss = 2  # also learn to emit <|0.00|> after <|transcribe|>
        else:
            seq = [tok.sot, tok.en, tok.transcribe, tok.no_timestamps] + text + [tok.eot]
            first_loss = 3
        inp, tgt = seq[:-1], seq[1:]
        tgt = [t if j >= first_loss else -100 for j, t in enumerate(tgt)]
        return inp, tgt

    def batch(self, ids, step, full_window, specaug=True):
        rng = np.random.RandomState((self.seed * 7919 + step) % (2 ** 31))
        ys, inps, tgts, maxlen = [], [], [], 0
        for k, i in enumerate(ids):
            y, end = self.example(i, rng)
            ys.append(y)
            maxlen = max(maxlen, len(y))
            a, b = self.tokens(i, end, rng)
            inps.append(a)
            tgts.append(b)
        frames = self.n_samples // FE.HOP
        if not full_window:
            # curriculum: crop the zero padding.  The features of the kept frames are
            # identical to the full-window ones (the crop keeps >= 2 all-zero frames).
            frames = maxlen // FE.HOP + 2 + rng.randint(10, 80)
            frames = min(self.n_samples // FE.HOP, frames + frames % 2)
        wav = torch.zeros(len(ids), frames * FE.HOP)
        for k, y in enumerate(ys):
            wav[k, :len(y)] = torch.from_numpy(y)
        mel = FE.log_mel_torch(wav, self.filters)
        if specaug:
            B, M, T = mel.shape
            for k in range(B):
                if rng.rand() < self.specaug_prob:
                    fill = mel[k].mean()
                    for _ in range(2):
                        w = rng.randint(0, 9)
                        f0 = rng.randint(0, M - w)
                        mel[k, f0:f0 + w] = fill
                    for _ in range(2):
                        w = rng.randint(0, 25)
                        t0 = rng.randint(0, max(1, min(T, maxlen // FE.HOP) - w))
                        mel[k, :, t0:t0 + w] = fill
        L = max(len(a) for a in inps)
        inp = torch.full((len(ids), L), self.tok.eot, dtype=torch.long)
        tgt = torch.full((len(ids), L), -100, dtype=torch.long)
        for k, (a, b) in enumerate(zip(inps, tgts)):
            inp[k, :len(a)] = torch.tensor(a)
            tgt[k, :len(b)] = torch.tensor(b)
        return mel, inp, tgt


_BATCHER = None


def _init_batch_worker(batcher):
    global _BATCHER
    _BATCHER = batcher
    torch.set_num_threads(1)


def _make_batch(ids, step, full_window):
    return _BATCHER.batch(ids, step, full_window)


class Prefetcher:
    """Builds the next batches (augmentation, log-mel) in one forked worker process while
    the main process trains: on 2 cores the BLAS calls leave gaps the worker fills.
    Batches depend only on (ids, step, full_window), so results equal the serial ones."""

    def __init__(self, batcher, depth=2):
        import multiprocessing as mp
        # fork before torch starts its thread pools; the audio arrays are shared, not copied
        self.pool = mp.get_context("fork").Pool(1, _init_batch_worker, (batcher,))
        self.depth = depth
        self.pending = {}

    def get(self, step, plan):
        """plan(s) -> (ids, full_window) for step s."""
        for s in range(step, step + self.depth):
            if s not in self.pending:
                ids, full = plan(s)
                self.pending[s] = self.pool.apply_async(_make_batch, (ids, s, full))
        return self.pending.pop(step).get()

    def close(self):
        self.pool.terminate()


def lr_at_prog(step, prog, peak, warmup):
    """linear warmup over `warmup` steps, then cosine over the schedule progress to 5%."""
    w = min(1.0, (step + 1) / warmup)
    return w * peak * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, prog))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="examples/demo-asr")
    ap.add_argument("--data", default="/tmp/demo-asr-data")
    ap.add_argument("--steps", type=int, default=1400)
    ap.add_argument("--full-window-from", type=float, default=0.6,
                    help="fraction of steps after which every batch uses the full 8 s window")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2, help="0 = adaptive (1 or 2 by load)")
    ap.add_argument("--n-train", type=int, default=12000)
    ap.add_argument("--extra-data", action="append", default=[], metavar="DIR",
                    help="a further training set written by prepare.py --extra (repeatable); "
                         "its utterances join --data's, the tokenizer stays --data's")
    ap.add_argument("--time-budget", type=float, default=0,
                    help="minutes; if >0 the schedule progress is max(step/steps, "
                         "elapsed/budget), so training anneals and ends within the budget "
                         "(the result then depends on the machine speed). 0 = fully "
                         "deterministic step schedule")
    ap.add_argument("--total-budget", type=float, default=0,
                    help="minutes for the whole command (synthesis, training, export): sets "
                         "--time-budget to what is left when training starts, less "
                         "--export-minutes")
    ap.add_argument("--export-minutes", type=float, default=2.0)
    ap.add_argument("--testset", metavar="TSV",
                    help="prepare DATA for this fixed held-out set (examples/demo-asr/testset.tsv): "
                         "--n-train utterances with every training voice variant and the clock "
                         "templates (the one-run recipe). Without it DATA is prepared as for the "
                         "committed weights' first run")
    ap.add_argument("--noise-prob", type=float, default=0.8,
                    help="share of utterances with white/pink noise added")
    ap.add_argument("--specaug-prob", type=float, default=0.8,
                    help="share of utterances with SpecAugment masks")
    ap.add_argument("--half-batch-until", type=float, default=0.0,
                    help="schedule progress (0-1) until which each batch is split into two "
                         "updates of half the batch size. 0 = off")
    ap.add_argument("--bf16", action="store_true",
                    help="matrix products in bfloat16 (torch.autocast through oneDNN; weights, "
                         "optimizer state and losses stay float32): ~1.7x faster training "
                         "steps on the 2-core AMD Zen 4 (AVX512-BF16), much slower on CPUs "
                         "without AVX512-BF16 or AMX")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--new-schedule", action="store_true",
                    help="with --resume: keep the weights and optimizer state but start a new "
                         "warm-up + cosine schedule (and time budget) from the checkpoint's step "
                         "to --steps")
    ap.add_argument("--ctc-weight", type=float, default=0.3,
                    help="weight of an auxiliary CTC loss on the encoder output (a training-only "
                         "head, not exported); it makes the encoder learn the alignment early, "
                         "which the attention decoder alone was slow to find (hybrid "
                         "CTC/attention, Watanabe et al. 2017). 0 = off")
    a = ap.parse_args()
    t_start = time.time()

    torch.set_num_threads(a.threads or 1)
    # oneDNN (mkldnn) conv1d backward in Debian's torch 1.13 returned garbage weight
    # gradients (1e6..inf) on this machine; the native im2col+BLAS path is correct.
    # With --bf16 oneDNN is needed for the bf16 matrix products, and the convolutions are
    # computed as matrix products instead (model.conv1d_as_matmul).
    torch.backends.mkldnn.enabled = a.bf16
    torch.manual_seed(a.seed)
    os.makedirs(a.data, exist_ok=True)
    log = log_to(os.path.join(a.data, "train.log"))
    FE.check_mel_filters()
    if not os.path.exists(os.path.join(a.data, "train.npz")):
        import prepare
        if a.testset:
            prepare.prepare_with_testset(a.data, a.testset, a.n_train, seed=a.seed, log=log)
        else:
            prepare.prepare(a.data, a.n_train, seed=a.seed, log=log)
    audio, offs, meta = load_split(a.data, "train")
    tok = build_tokenizer(meta)  # DATA's sentences only, whatever further sets join them
    if a.extra_data:
        audio, offs, meta = join_training_sets(audio, offs, meta, a.extra_data, log)
    cfg = dict(MODEL_CFG, vocab_size=tok.vocab_size)
    batcher = Batcher(audio, offs, meta, tok, a.seed, noise_prob=a.noise_prob,
                      specaug_prob=a.specaug_prob)
    prefetch = Prefetcher(batcher)  # forked before the model exists
    if a.total_budget:
        a.time_budget = a.total_budget - (time.time() - t_start) / 60 - a.export_minutes
        log(f"{(time.time() - t_start) / 60:.1f} min spent before training; "
            f"training budget {a.time_budget:.1f} min")
    log(f"{len(meta)} train utterances, vocab {tok.vocab_size} ({tok.n_text} BPE), cfg {cfg}")

    model = Whisper(cfg)
    model.model.encoder.conv_as_matmul = a.bf16
    # Training-only CTC head over the text tokens plus a blank (id n_text).
    ctc_head = torch.nn.Linear(cfg["d_model"], tok.n_text + 1)
    model.add_module("ctc_head", ctc_head)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"parameters: {n_params / 1e6:.2f} M")
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.98), eps=1e-6)
    ckpt_path = os.path.join(a.data, "ckpt.pt")
    step = 0
    step0 = 0  # first step of the current schedule
    minutes0 = 0.0  # schedule minutes already spent
    if a.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step = ck["step"]
        if a.new_schedule:
            step0 = step
        else:
            step0, minutes0 = ck.get("step0", 0), ck.get("minutes", 0.0)
        log(f"resumed at step {step}, schedule from step {step0}")

    n_bad = 0
    n_updates = 0
    epochs = {}

    def batch_ids(s):
        epoch, k = divmod(s, per_epoch)
        if epoch not in epochs:
            epochs.clear()
            epochs[epoch] = batcher.epoch_batches(epoch, a.batch)
        return epochs[epoch][k]

    def progress(s):
        prog = (s - step0) / (a.steps - step0)
        if a.time_budget:
            prog = max(prog, (time.time() - t0) / 60 / a.time_budget)
        return prog

    def update(mel, inp, tgt):
        """One optimizer update on (mel, inp, tgt); returns loss, logits, grad norm and the
        names of tensors whose gradient was dropped."""
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            enc = model.model.encoder(mel)
            logits = model.model.decoder(inp, enc)
            ctc_logits = ctc_head(enc) if a.ctc_weight > 0 else None
        logits = logits.float()
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1),
                               ignore_index=-100, label_smoothing=0.1)
        if a.ctc_weight > 0:
            # CTC targets: each utterance's text tokens (no specials, no timestamps).
            ctc_tgt = [t[(t >= 0) & (t < tok.n_text)] for t in tgt]
            lp = F.log_softmax(ctc_logits.float(), dim=-1).transpose(0, 1)  # (T, B, C)
            in_len = torch.full((lp.shape[1],), lp.shape[0], dtype=torch.long)
            tgt_len = torch.tensor([len(t) for t in ctc_tgt], dtype=torch.long)
            ctc = F.ctc_loss(lp, torch.cat(ctc_tgt), in_len, tgt_len, blank=tok.n_text,
                             zero_infinity=True)
            loss = (1 - a.ctc_weight) * loss + a.ctc_weight * ctc
        opt.zero_grad()
        loss.backward()
        # On the development machine (torch 1.13 + OpenBLAS 0.3.21, AMD EPYC) some
        # steps produced a garbage (1e6..inf) gradient in a single tensor that is
        # not reproducible when the same batch is recomputed.  Such tensors are
        # dropped from the update instead of letting them dominate the clipping.
        bad = []
        for n_, p_ in model.named_parameters():
            if p_.grad is not None:
                g_ = p_.grad.norm()
                if not torch.isfinite(g_) or g_ > 1e3:
                    bad.append(n_)
                    p_.grad.zero_()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if torch.isfinite(gn):
            opt.step()
        return loss, logits, gn, bad

    per_epoch = len(batcher.epoch_batches(0, a.batch))
    t0 = time.time() - minutes0 * 60  # a resumed run keeps the schedule clock
    train_time = 0.0
    model.train()
    while step < a.steps:
        if a.threads == 0 and step % 10 == 0:
            # adaptive: under heavy CPU contention (other jobs) one thread is much faster
            torch.set_num_threads(2 if os.getloadavg()[0] < 3.5 else 1)
        epoch = step // per_epoch
        prog = progress(step)
        if prog >= 1.0:
            break
        ts = time.time()
        mel, inp, tgt = prefetch.get(step, lambda s: (batch_ids(s),
                                                      progress(s) >= a.full_window_from))
        for g in opt.param_groups:
            g["lr"] = lr_at_prog(step - step0, prog, a.lr, a.warmup)
        # Early on, each batch is split into two updates of half the size: what the model
        # first needs is many updates (the decoder takes ~2000 before it follows the audio),
        # and half batches cost about half as much.
        halves = prog < a.half_batch_until
        parts = [(mel[h::2], inp[h::2], tgt[h::2]) for h in (0, 1)] if halves else [(mel, inp, tgt)]
        for mel_, inp_, tgt_ in parts:
            loss, logits, gn, bad = update(mel_, inp_, tgt_)
            n_updates += 1
            if bad:
                n_bad += 1
                log(f"step {step}: dropped garbage gradient of {bad}")
            if not torch.isfinite(gn):
                log(f"step {step}: non-finite gradient norm, update skipped")
        tgt = tgt_
        step += 1
        train_time += time.time() - ts
        if step % 10 == 0 or step == 1:
            with torch.no_grad():
                m = tgt != -100
                acc = (logits.argmax(-1)[m] == tgt[m]).float().mean().item()
            log(f"step {step}/{a.steps} upd {n_updates} ep {epoch} loss {loss.item():.3f} acc {acc:.3f} "
                f"gn {gn:.2f} lr {opt.param_groups[0]['lr']:.2e} frames {mel.shape[-1]} "
                f"thr {torch.get_num_threads()} "
                f"{(time.time() - t0) / 60:.1f} min")
        if step % 100 == 0 or step == a.steps:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                        "cfg": cfg, "minutes": (time.time() - t0) / 60, "step0": step0}, ckpt_path)
    prefetch.close()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                "cfg": cfg, "minutes": (time.time() - t0) / 60, "step0": step0}, ckpt_path)
    info = {"steps": step, "planned_steps": a.steps, "time_budget_min": a.time_budget,
            "train_minutes": round((time.time() - t0) / 60, 1), "n_train": len(meta),
            "batch": a.batch, "updates": n_updates, "bf16": a.bf16,
            "half_batch_until": a.half_batch_until, "n_params": n_params, "steps_with_dropped_gradients": n_bad,
            "minutes_since_start": round((time.time() - t_start) / 60, 1)}
    with open(os.path.join(a.data, "train_info.json"), "w") as f:
        json.dump(info, f, indent=1)
    log(f"training done: {info}")
    import export
    torch.backends.mkldnn.enabled = False  # evaluation runs the float32 model as exported
    export.export(a.data, a.out, log=log)


if __name__ == "__main__":
    main()
