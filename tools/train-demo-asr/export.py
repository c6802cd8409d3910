"""Held-out evaluation (greedy WER) and Hugging Face Whisper export.

    /usr/bin/python3 tools/train-demo-asr/export.py --out examples/demo-asr
(uses DATA/ckpt.pt written by train.py)
"""
import argparse
import json
import os
import shutil
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import data as D  # noqa: E402
import features as FE  # noqa: E402
import train as TR  # noqa: E402
from eval_cpp import wer_counts  # noqa: E402
from model import Whisper  # noqa: E402

TRANSFORMERS_VERSION = "4.40.0"


def write_safetensors(path, tensors, metadata=None):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        dt = {torch.float32: "F32", torch.float16: "F16"}[t.dtype]
        b = t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = metadata or {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        dt = {"F32": "<f4", "F16": "<f2"}[v["dtype"]]
        out[k] = torch.from_numpy(np.frombuffer(data[a:b], dtype=dt).reshape(v["shape"]).copy())
    return out


def test_features(data_dir, n_mels=80):
    audio, offs, meta = TR.load_split(data_dir, "test")
    N = TR.CHUNK_LENGTH * D.SR
    mels = [FE.log_mel_np(audio[offs[i]:offs[i + 1]].astype(np.float32) / 32768.0, N, n_mels)
            for i in range(len(meta))]
    return torch.from_numpy(np.stack(mels)), meta


def alignment_heads(model, mels, tok, hyps, cfg):
    """Decoder cross-attention heads whose argmax over encoder frames moves most
    monotonically with the text tokens (mean Spearman-like correlation)."""
    L, H = cfg["decoder_layers"], cfg["decoder_attention_heads"]
    scores = np.zeros((L, H))
    n = 0
    with torch.no_grad():
        for k in range(len(hyps)):
            text = hyps[k][: cfg["max_target_positions"] - 5]
            if len(text) < 4:
                continue
            prefix = [tok.sot, tok.en, tok.transcribe, tok.no_timestamps]
            toks = torch.tensor([prefix + text + [tok.eot]])
            enc = model.model.encoder(mels[k:k + 1])
            _, ws = model.model.decoder(toks, enc, return_weights=True)
            for l in range(L):
                for h in range(H):
                    w = ws[l][0, h, len(prefix) - 1:len(prefix) - 1 + len(text)]  # predicting text
                    pos = (w * torch.arange(w.shape[-1]).float()).sum(-1).numpy()  # centroid
                    idx = np.arange(len(pos))
                    c = np.corrcoef(idx, pos)[0, 1] if pos.std() > 0 else 0.0
                    scores[l, h] += 0.0 if np.isnan(c) else c
            n += 1
    scores /= max(1, n)
    order = sorted(((scores[l, h], l, h) for l in range(L) for h in range(H)), reverse=True)
    best = order[0][0]
    heads = [[l, h] for s, l, h in order if s >= max(0.5, best - 0.1)][:4]
    if not heads:
        heads = [[order[0][1], order[0][2]]]
    return heads, scores


def export(data_dir, out, log=print):
    t0 = time.time()
    ck = torch.load(os.path.join(data_dir, "ckpt.pt"))
    cfg = ck["cfg"]
    _, _, train_meta = TR.load_split(data_dir, "train")
    tok = TR.build_tokenizer(train_meta)
    assert tok.vocab_size == cfg["vocab_size"]
    model = Whisper(cfg)
    model.load_state_dict({k: v for k, v in ck["model"].items() if not k.startswith("ctc_head.")})
    model.eval()
    state = {k: v for k, v in model.state_dict().items()}
    os.makedirs(out, exist_ok=True)

    # ---- evaluation on the 200 held-out sentences (full 8 s windows, numpy features)
    mels, meta = test_features(data_dir, cfg["num_mel_bins"])
    prefix = [tok.sot, tok.en, tok.transcribe, tok.no_timestamps]
    space = tok.vocab["Ġ"]
    hyps, encs = [], []
    with torch.no_grad():
        for b in range(0, len(meta), 50):
            enc = model.model.encoder(mels[b:b + 50])
            encs.append(enc)
            hyps += model.greedy(None, prefix, tok.eot, cfg["max_target_positions"],
                                 begin_suppress=[space, tok.eot], enc=enc)
    encs = torch.cat(encs)
    errs = words = 0
    per_group = {"heldout_variant": [0, 0], "train_variant": [0, 0]}
    rows = []
    for (m, h) in zip(meta, hyps):
        hyp = tok.decode([t for t in h if t < tok.n_text]).strip()
        e, n = wer_counts(m[4], hyp)
        errs += e
        words += n
        g = "heldout_variant" if any(m[1].endswith(v) for v in D.HELDOUT_VARIANTS) else "train_variant"
        per_group[g][0] += e
        per_group[g][1] += n
        rows.append({"id": m[0], "voice": m[1], "ref": m[4], "hyp": hyp, "errors": e})
    wer = errs / words
    sent_acc = sum(r["errors"] == 0 for r in rows) / len(rows)
    log(f"held-out WER {100 * wer:.2f}% ({errs}/{words}), sentence accuracy {100 * sent_acc:.1f}%, "
        + ", ".join(f"{k} {100 * a / max(1, b):.2f}%" for k, (a, b) in per_group.items()))
    for r in rows[:8]:
        log(f"  {r['id']} REF: {r['ref']} | HYP: {r['hyp']}")

    # timestamp mode on a few utterances
    ts_rows = []
    with torch.no_grad():
        for k in range(min(8, len(meta))):
            h = model.greedy(None, [tok.sot, tok.en, tok.transcribe], tok.eot,
                             cfg["max_target_positions"], begin_suppress=[space, tok.eot],
                             enc=encs[k:k + 1])[0]
            ts_rows.append({"id": meta[k][0], "tokens": [tok.id_to_tok[t] if t >= tok.n_text
                                                         else t for t in h],
                            "speech_end_s": round(int(meta[k][6]) / D.SR, 2),
                            "text": tok.decode([t for t in h if t < tok.n_text]).strip()})
    for r in ts_rows[:4]:
        log(f"  timestamps {r['id']}: {[t for t in r['tokens'] if isinstance(t, str)]} "
            f"(energy end {r['speech_end_s']} s) {r['text']}")

    heads, head_scores = alignment_heads(model, mels[:24], tok, hyps[:24], cfg)
    log(f"alignment heads {heads}; scores {np.round(head_scores, 3).tolist()}")

    # ---- files
    eot, sot = tok.eot, tok.sot
    config = {
        "_name_or_path": "oxinfer/demo-asr",
        "activation_dropout": 0.0,
        "activation_function": "gelu",
        "apply_spec_augment": False,
        "architectures": ["WhisperForConditionalGeneration"],
        "attention_dropout": 0.0,
        "begin_suppress_tokens": [space, eot],
        "bos_token_id": eot,
        "classifier_proj_size": 256,
        "d_model": cfg["d_model"],
        "decoder_attention_heads": cfg["decoder_attention_heads"],
        "decoder_ffn_dim": cfg["decoder_ffn_dim"],
        "decoder_layerdrop": 0.0,
        "decoder_layers": cfg["decoder_layers"],
        "decoder_start_token_id": sot,
        "dropout": 0.0,
        "encoder_attention_heads": cfg["encoder_attention_heads"],
        "encoder_ffn_dim": cfg["encoder_ffn_dim"],
        "encoder_layerdrop": 0.0,
        "encoder_layers": cfg["encoder_layers"],
        "eos_token_id": eot,
        "init_std": 0.02,
        "is_encoder_decoder": True,
        "max_length": cfg["max_target_positions"],
        "max_source_positions": cfg["max_source_positions"],
        "max_target_positions": cfg["max_target_positions"],
        "median_filter_width": 7,
        "model_type": "whisper",
        "num_hidden_layers": cfg["encoder_layers"],
        "num_mel_bins": cfg["num_mel_bins"],
        "pad_token_id": eot,
        "scale_embedding": False,
        "suppress_tokens": [],
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "transformers_version": TRANSFORMERS_VERSION,
        "use_cache": True,
        "use_weighted_layer_sum": False,
        "vocab_size": cfg["vocab_size"],
    }
    gen = {
        "alignment_heads": heads,
        "begin_suppress_tokens": [space, eot],
        "bos_token_id": eot,
        "decoder_start_token_id": sot,
        "eos_token_id": eot,
        "forced_decoder_ids": None,
        "is_multilingual": True,
        "lang_to_id": {"<|en|>": tok.en},
        "max_initial_timestamp_index": 50,
        "max_length": cfg["max_target_positions"],
        "no_timestamps_token_id": tok.no_timestamps,
        "pad_token_id": eot,
        "prev_sot_token_id": tok.special["<|startofprev|>"],
        "return_timestamps": False,
        "suppress_tokens": [],
        "task_to_id": {"transcribe": tok.transcribe, "translate": tok.translate},
        "transformers_version": TRANSFORMERS_VERSION,
    }
    N = TR.CHUNK_LENGTH * D.SR
    pre = {
        "chunk_length": TR.CHUNK_LENGTH,
        "feature_extractor_type": "WhisperFeatureExtractor",
        "feature_size": cfg["num_mel_bins"],
        "hop_length": FE.HOP,
        "n_fft": FE.N_FFT,
        "n_samples": N,
        "nb_max_frames": N // FE.HOP,
        "padding_side": "right",
        "padding_value": 0.0,
        "processor_class": "WhisperProcessor",
        "return_attention_mask": False,
        "sampling_rate": D.SR,
    }
    for name, obj in [("config.json", config), ("generation_config.json", gen),
                      ("preprocessor_config.json", pre)]:
        with open(os.path.join(out, name), "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")
    tok.save_hf(out, cfg["max_target_positions"])
    write_safetensors(os.path.join(out, "model.safetensors"), state)
    # round trip check
    back = read_safetensors(os.path.join(out, "model.safetensors"))
    assert set(back) == set(state)
    assert all(torch.equal(back[k], state[k]) for k in state)
    shutil.copy(os.path.join(data_dir, "testset.tsv"), os.path.join(out, "testset.tsv"))

    # ---- reference outputs for the C++ engine
    ref = {"description": "torch reference: features = numpy log-mel of the WAV written by "
                          "make_testset_audio.py, padded to the 8 s window; encoder_output = "
                          "model.encoder last_hidden_state (after the final layer_norm), shape "
                          f"[{cfg['max_source_positions']}, {cfg['d_model']}]; greedy decoding "
                          "with prompt <|startoftranscript|><|en|><|transcribe|><|notimestamps|>, "
                          "begin_suppress_tokens applied at the first generated step",
           "utterances": []}
    for k in [0, 1, 2]:
        with torch.no_grad():
            logits0 = model.model.decoder(torch.tensor([prefix]), encs[k:k + 1])[0, -1]
        ref["utterances"].append({
            "id": meta[k][0], "voice": meta[k][1], "speed": int(meta[k][2]),
            "pitch": int(meta[k][3]), "text": meta[k][4],
            "log_mel_first10": [round(float(x), 6) for x in mels[k, 0, :10]],
            "encoder_output_first10": [round(float(x), 6) for x in encs[k, 0, :10]],
            "encoder_output_pos100_first10": [round(float(x), 6) for x in encs[k, 100, :10]],
            "first_step_logits_first10": [round(float(x), 5) for x in logits0[:10]],
            "greedy_token_ids": prefix + hyps[k] + [eot],
            "greedy_text": tok.decode([t for t in hyps[k] if t < tok.n_text]),
        })
    with open(os.path.join(out, "reference_logits.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    info = {"wer": wer, "errors": errs, "words": words, "sentence_accuracy": sent_acc,
            "per_group": per_group, "alignment_heads": heads, "timestamps": ts_rows,
            "special": tok.special, "timestamp_begin": tok.timestamp_begin,
            "vocab_size": tok.vocab_size, "n_text": tok.n_text, "rows": rows}
    with open(os.path.join(data_dir, "eval.json"), "w") as f:
        json.dump(info, f, indent=1)
    size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    log(f"exported to {out} ({size / 1e6:.2f} MB) in {time.time() - t0:.0f} s")
    return info


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="examples/demo-asr")
    ap.add_argument("--data", default="/tmp/demo-asr-data")
    a = ap.parse_args()
    torch.set_num_threads(2)
    torch.backends.mkldnn.enabled = False
    export(a.data, a.out, log=TR.log_to(os.path.join(a.data, "train.log")))
