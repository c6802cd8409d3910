#!/usr/bin/env python3
"""Second reference for oxinfer's LLM engine on Hugging Face checkpoints, in plain torch.

For each case it writes a tiny random Hugging Face directory (config.json with the real HF
keys, model.safetensors written by hand, a byte-level BPE tokenizer.json and
tokenizer_config.json), asks oxinfer for the last prompt token's logits

    oxinfer generate -m DIR -p TEXT --raw --temp 0 -n 1 --dump-logits FILE --show-tokens

and runs the same prompt ids (parsed from --show-tokens, so tokenization is not under test)
through a float64 torch forward pass written from the architecture definitions of
transformers' modeling_llama / mistral / qwen2 / qwen3 / gemma3 / phi3. Needs only Debian's
python3-torch (1.13) and the standard library: no transformers, safetensors or numpy.
Each case runs two prompts: PROMPT (26-27 ids: one batch through the backend's GEMM path,
longer than every sliding window) and SHORT_PROMPT (2-3 ids: the per-token matvec path).

    /usr/bin/python3 tests/reference/llm_torch_reference.py --oxinfer build/tools/oxinfer/oxinfer
        [--arch llama|qwen2|qwen3|gemma3|phi3|all] [--keep DIR] [--perturb] [--sensitivity]

Pass: relative L2 of the logits <= 1e-4 and the same argmax, for f32, f16 and bf16 weights
(the reference runs on the very values the f16/bf16 bytes decode to, and the engine decodes
them to f32 before every product, so the half-precision storage adds no error of its own;
measured: <= 5e-7 in every case). The `--quant q8` case quantizes the matrices to Q8_0 at load
and the activations to 8 bits per product while the reference keeps the f32 weights: its bound
is relative L2 <= 0.05 (measured 0.015) and its argmax is not compared.
Exit status 0 on pass, 1 on a mismatch, 2 when oxinfer fails or cannot be run.

--perturb adds 0.1 to one element of layer 0's input_layernorm in the torch copy only; every
f32/f16/bf16 case must then fail (exit status 1), which shows that the comparison can fail
(the q8 bound is too loose to see one weight).
--sensitivity also prints, per case, how far the reference moves when each optional feature
(rope scaling, sliding window, biases, q/k norms, ...) is switched off: each must exceed the
bound by far, or the case would not be testing that feature.
"""
import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_report import verdict  # noqa: E402
from safetensors_writer import write_safetensors  # noqa: E402

# GPT-2's byte -> printable character table and one BPE merge step, from the demo model's
# tokenizer trainer.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                                "train-demo-asr"))
from tokenizer import bytes_to_unicode, merge_pair  # noqa: E402

F32_REL_BOUND = 1e-4
Q8_REL_BOUND = 0.05
PROMPT = ("The quick brown fox jumps over the lazy dog, then naps. "
          "Hello world 2025!")
# Short enough (<= 4 ids with BOS) for the backend's per-token matvec path; PROMPT takes the
# batched GEMM path and is longer than every sliding window.
SHORT_PROMPT = "hello world"
CORPUS = ("the quick brown fox jumps over the lazy dog the dog naps then the fox naps "
          "hello world hello there the world is quick and brown ") * 4

# ---------------------------------------------------------------- the cases

BASE = dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            max_position_embeddings=512, rms_norm_eps=1e-5, rope_theta=10000.0,
            tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)


def case(name, arch, model_type, dtype="F32", quant=None, add_bos=True, seed=0, **config):
    c = dict(BASE)
    c.update(config)
    c["model_type"] = model_type
    return dict(name=name, arch=arch, dtype=dtype, quant=quant, add_bos=add_bos, seed=seed,
                config=c)


CASES = [
    # Llama 3.x: llama3 rope scaling (original context 64, so that with ~25 positions every
    # band - kept, blended, slowed down - is exercised), GQA 4/2, untied lm_head.
    case("llama-f32", "llama", "llama", seed=1, architectures=["LlamaForCausalLM"],
         hidden_act="silu", attention_bias=False, mlp_bias=False,
         rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                       "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
    case("llama-q8", "llama", "llama", quant="q8", seed=1, architectures=["LlamaForCausalLM"],
         hidden_act="silu", attention_bias=False, mlp_bias=False,
         rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                       "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
    # Mistral: sliding window of 6 on every layer, GQA 8/2 with head_dim 8, linear rope scaling.
    case("mistral-f32", "llama", "mistral", seed=2, architectures=["MistralForCausalLM"],
         hidden_act="silu", num_attention_heads=8, num_key_value_heads=2, head_dim=8,
         sliding_window=6, rope_theta=1e6, rope_scaling={"rope_type": "linear", "factor": 2.0}),
    # Qwen2: q/k/v biases, tied embeddings, no BOS; sliding_window listed but
    # use_sliding_window false (HF then ignores it, and so must the engine).
    case("qwen2-f32", "qwen2", "qwen2", add_bos=False, seed=3,
         architectures=["Qwen2ForCausalLM"], hidden_act="silu", tie_word_embeddings=True,
         rope_theta=1e6, rms_norm_eps=1e-6, use_sliding_window=False, sliding_window=4,
         max_window_layers=2, bos_token_id=None),
    # Qwen2 with use_sliding_window: the window only from layer max_window_layers (1) on.
    case("qwen2-window-f32", "qwen2", "qwen2", add_bos=False, seed=9,
         architectures=["Qwen2ForCausalLM"], hidden_act="silu", tie_word_embeddings=True,
         rope_theta=1e6, rms_norm_eps=1e-6, use_sliding_window=True, sliding_window=4,
         max_window_layers=1, bos_token_id=None),
    # Llama with a sliding_window key left in its config: transformers' Llama ignores it.
    case("llama-stray-window-f32", "llama", "llama", seed=10, architectures=["LlamaForCausalLM"],
         hidden_act="silu", sliding_window=4),
    # transformers 5 layout: rope_theta and the llama3 scaling inside "rope_parameters".
    case("llama-rope-parameters-f32", "llama", "llama", seed=11,
         architectures=["LlamaForCausalLM"], hidden_act="silu", rope_theta=None,
         rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                          "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 64}),
    # Qwen3: per-head q/k RMSNorm, head_dim 32 != hidden / heads, untied.
    case("qwen3-f32", "qwen3", "qwen3", add_bos=False, seed=4,
         architectures=["Qwen3ForCausalLM"], hidden_act="silu", head_dim=32, rope_theta=1e6,
         rms_norm_eps=1e-6, attention_bias=False, use_sliding_window=False, sliding_window=None),
    # Gemma 3 (text): (1 + w) norms, scaled embeddings, q/k norms, post-attention and post-ffn
    # norms, GeGLU (tanh), MQA, query_pre_attn_scalar 24 != head_dim, layer_types
    # [sliding (window 5, base 10000), full (base 1e6, linear factor 4)], final logit
    # soft-capping, tied.
    case("gemma3-f32", "gemma3", "gemma3_text", seed=5, architectures=["Gemma3ForCausalLM"],
         hidden_activation="gelu_pytorch_tanh", num_key_value_heads=1, head_dim=32,
         rms_norm_eps=1e-6, rope_theta=1e6, rope_local_base_freq=10000.0,
         rope_scaling={"rope_type": "linear", "factor": 4.0}, sliding_window=5,
         layer_types=["sliding_attention", "full_attention"], query_pre_attn_scalar=24,
         final_logit_softcapping=3.0, attn_logit_softcapping=None, tie_word_embeddings=True,
         bos_token_id=1, eos_token_id=2, pad_token_id=0),
    # The same family in bf16 with the older sliding_window_pattern key (hidden 64: HF's
    # embed scale sqrt(64) = 8 is exact in bf16 too).
    case("gemma3-bf16", "gemma3", "gemma3_text", dtype="BF16", seed=6,
         architectures=["Gemma3ForCausalLM"], hidden_activation="gelu_pytorch_tanh",
         num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, rope_theta=1e6,
         rope_local_base_freq=10000.0, rope_scaling=None, sliding_window=4,
         sliding_window_pattern=2, query_pre_attn_scalar=16, tie_word_embeddings=True),
    # Phi-3 mini 4k: fused qkv_proj and gate_up_proj, sliding window 7.
    case("phi3-f32", "phi3", "phi3", seed=7, architectures=["Phi3ForCausalLM"],
         hidden_act="silu", sliding_window=7, original_max_position_embeddings=512,
         rope_scaling=None, bos_token_id=1, eos_token_id=2),
    # Phi-4-mini style (model_type phi3): partial_rotary_factor 0.75, f16 weights, no window.
    case("phi3-f16", "phi3", "phi3", dtype="F16", seed=8, architectures=["Phi3ForCausalLM"],
         hidden_act="silu", partial_rotary_factor=0.75, sliding_window=None,
         num_key_value_heads=1, rope_scaling=None, tie_word_embeddings=False),
]

# ---------------------------------------------------------------- tokenizer


def train_bpe(n_merges):
    """A deterministic toy BPE training on CORPUS: words are split GPT-2 style (a leading
    space belongs to the word) and the most frequent pair is merged until n_merges new tokens
    exist. Only has to give a valid tokenizer; the ids under test come from oxinfer."""
    table = bytes_to_unicode()
    words = {}
    for i, w in enumerate(CORPUS.split()):
        text = ("" if i == 0 else " ") + w
        key = tuple(table[b] for b in text.encode())
        words[key] = words.get(key, 0) + 1
    words = [[list(k), c] for k, c in sorted(words.items())]
    known = set(table.values())
    merges = []
    while len(merges) < n_merges:
        counts = {}
        for symbols, c in words:
            for a, b in zip(symbols, symbols[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + c
        candidates = sorted((-c, p) for p, c in counts.items() if p[0] + p[1] not in known)
        if not candidates:
            break
        a, b = candidates[0][1]
        merges.append((a, b))
        known.add(a + b)
        for entry in words:
            entry[0] = merge_pair(entry[0], a, b)
    k = 0
    while len(merges) < n_merges:  # corpus exhausted: pad with merges of unused byte pairs
        a, b = "Ġ", chr(ord("A") + k % 26) + "x" * (k // 26)
        k += 1
        if b in known and a + b not in known:
            merges.append((a, b))
            known.add(a + b)
        elif len(b) > 1:
            raise RuntimeError("cannot fill the vocabulary")
    return list(table.values()), merges


def write_tokenizer(directory, vocab_size, add_bos):
    specials = ["<unk>", "<s>", "</s>"]
    alphabet, merges = train_bpe(vocab_size - len(specials) - 256)
    vocab = {t: i for i, t in enumerate(specials)}
    for ch in alphabet:
        vocab[ch] = len(vocab)
    for a, b in merges:
        vocab[a + b] = len(vocab)
    assert len(vocab) == vocab_size, (len(vocab), vocab_size)
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for i, t in enumerate(specials)],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }
    with open(os.path.join(directory, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    config = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
              "add_bos_token": add_bos, "add_eos_token": False,
              "chat_template": "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}"
                               "{% endfor %}"}
    with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)


# ---------------------------------------------------------------- weights and safetensors


def is_gemma(cfg):
    return cfg["model_type"] in ("gemma3", "gemma3_text")


def make_weights(cfg, seed):
    """Random weights under HF names, as float32 tensors."""
    g = torch.Generator().manual_seed(1000 + seed)
    gemma = is_gemma(cfg)
    fused = cfg["model_type"] == "phi3"
    E, F, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    q_dim, kv_dim = H * D, KV * D
    w = {}

    def mat(name, rows, cols, std):
        w[name] = torch.randn(rows, cols, generator=g, dtype=torch.float32) * std

    def vec(name, n, center, std):
        w[name] = torch.randn(n, generator=g, dtype=torch.float32) * std + center

    norm_center = 0.0 if gemma else 1.0  # Gemma stores w of (1 + w)
    # Tied embeddings are kept small (as trained ones are), so that the last token's own
    # embedding does not dominate the logits and the layers' part stays well measured.
    embed_std = 1.0 if not cfg["tie_word_embeddings"] else 0.1 if gemma else 0.25
    mat("model.embed_tokens.weight", V, E, embed_std)
    vec("model.norm.weight", E, norm_center, 0.2)
    if not cfg["tie_word_embeddings"]:
        mat("lm_head.weight", V, E, 1.0 / math.sqrt(E))
    for il in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % il
        vec(p + "input_layernorm.weight", E, norm_center, 0.2)
        if fused:
            mat(p + "self_attn.qkv_proj.weight", q_dim + 2 * kv_dim, E, 1.0 / math.sqrt(E))
        else:
            mat(p + "self_attn.q_proj.weight", q_dim, E, 1.0 / math.sqrt(E))
            mat(p + "self_attn.k_proj.weight", kv_dim, E, 1.0 / math.sqrt(E))
            mat(p + "self_attn.v_proj.weight", kv_dim, E, 1.0 / math.sqrt(E))
        if cfg["model_type"] == "qwen2":
            vec(p + "self_attn.q_proj.bias", q_dim, 0.0, 0.3)
            vec(p + "self_attn.k_proj.bias", kv_dim, 0.0, 0.3)
            vec(p + "self_attn.v_proj.bias", kv_dim, 0.0, 0.3)
        if cfg["model_type"] == "qwen3" or gemma:
            vec(p + "self_attn.q_norm.weight", D, norm_center, 0.2)
            vec(p + "self_attn.k_norm.weight", D, norm_center, 0.2)
        mat(p + "self_attn.o_proj.weight", E, q_dim, 1.0 / math.sqrt(q_dim))
        vec(p + "post_attention_layernorm.weight", E, norm_center, 0.2)
        if gemma:
            vec(p + "pre_feedforward_layernorm.weight", E, norm_center, 0.2)
            vec(p + "post_feedforward_layernorm.weight", E, norm_center, 0.2)
        if fused:
            mat(p + "mlp.gate_up_proj.weight", 2 * F, E, 1.0 / math.sqrt(E))
        else:
            mat(p + "mlp.gate_proj.weight", F, E, 1.0 / math.sqrt(E))
            mat(p + "mlp.up_proj.weight", F, E, 1.0 / math.sqrt(E))
        mat(p + "mlp.down_proj.weight", E, F, 1.0 / math.sqrt(F))
    return w


TORCH_DTYPE = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def store(tensors, dtype):
    """The tensors as stored in dtype, and the float64 values those stored bytes hold."""
    stored = {n: t.to(TORCH_DTYPE[dtype]).contiguous() for n, t in tensors.items()}
    return stored, {n: t.to(torch.float64) for n, t in stored.items()}


def write_checkpoint(directory, c):
    os.makedirs(directory, exist_ok=True)
    cfg = c["config"]
    config = {k: v for k, v in cfg.items()}
    config["torch_dtype"] = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[c["dtype"]]
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(directory, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": cfg.get("bos_token_id"), "eos_token_id": cfg["eos_token_id"]}, f)
    write_tokenizer(directory, cfg["vocab_size"], c["add_bos"])
    weights = make_weights(cfg, c["seed"])
    stored, decoded = store(weights, c["dtype"])
    write_safetensors(os.path.join(directory, "model.safetensors"), stored)
    return decoded


# ---------------------------------------------------------------- the torch forward pass


def rms_norm(x, w, eps, gemma):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y * (1.0 + w) if gemma else y * w


def inv_freq_of(cfg, layer_sliding, features):
    """RoPE inverse frequencies, as transformers' ROPE_INIT_FUNCTIONS compute them."""
    D = cfg["head_dim"]
    rot = int(D * cfg.get("partial_rotary_factor", 1.0))
    base = cfg["rope_theta"]
    scaling = cfg.get("rope_scaling") or {}
    if cfg.get("rope_parameters"):  # transformers 5: theta and scaling in one object
        base, scaling = cfg["rope_parameters"]["rope_theta"], cfg["rope_parameters"]
    if is_gemma(cfg) and layer_sliding:
        base, scaling = cfg.get("rope_local_base_freq", 10000.0), {}  # rotary_emb_local
    inv = 1.0 / (base ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if "rope_scaling" not in features:
        kind = "default"
    if kind == "linear":
        inv = inv / scaling["factor"]
    elif kind == "llama3":
        factor, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > old / lo, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old / hi) & (wavelen <= old / lo)
        inv = torch.where(medium, smoothed, scaled)
    elif kind != "default":
        raise ValueError("rope_type " + kind)
    return inv


def apply_rope(x, inv, positions):
    """x: (heads, T, D); rotate_half over the first 2 * len(inv) dims, the rest passes."""
    rot = 2 * inv.numel()
    freqs = positions[:, None] * inv[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos(), emb.sin()
    xr, xp = x[..., :rot], x[..., rot:]
    half = rot // 2
    rotated = torch.cat([-xr[..., half:], xr[..., :half]], dim=-1)
    return torch.cat([xr * cos + rotated * sin, xp], dim=-1)


def layer_is_sliding(cfg, il):
    mt = cfg["model_type"]
    if is_gemma(cfg):
        if cfg.get("layer_types"):
            return cfg["layer_types"][il] == "sliding_attention"
        return (il + 1) % cfg.get("sliding_window_pattern", 6) != 0
    if mt in ("qwen2", "qwen3"):
        return bool(cfg.get("use_sliding_window")) and cfg.get("sliding_window") is not None \
            and il >= cfg.get("max_window_layers", 28)
    if mt in ("mistral", "phi3"):
        return cfg.get("sliding_window") is not None
    return False  # llama ignores sliding_window


ALL_FEATURES = ("rope_scaling", "sliding_window", "qkv_bias", "qk_norm", "post_norms",
                "embed_scale", "softcap", "query_pre_attn_scalar", "rope_local_base",
                "partial_rotary")


def forward(cfg, w, ids, features=ALL_FEATURES):
    """Float64 logits of the last position. `features` lets --sensitivity switch parts off."""
    gemma = is_gemma(cfg)
    mt = cfg["model_type"]
    E, F = cfg["hidden_size"], cfg["intermediate_size"]
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    T = len(ids)
    positions = torch.arange(T, dtype=torch.float64)
    if "partial_rotary" not in features:
        cfg = dict(cfg, partial_rotary_factor=1.0)
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]
    if gemma and "embed_scale" in features:
        x = x * math.sqrt(E)
    i = torch.arange(T)
    causal = i[None, :] <= i[:, None]
    for il in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % il
        sliding = layer_is_sliding(cfg, il)
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps, gemma)
        if mt == "phi3":
            qkv = h @ w[p + "self_attn.qkv_proj.weight"].T
            q, k, v = qkv.split([H * D, KV * D, KV * D], dim=-1)
        else:
            q = h @ w[p + "self_attn.q_proj.weight"].T
            k = h @ w[p + "self_attn.k_proj.weight"].T
            v = h @ w[p + "self_attn.v_proj.weight"].T
        if mt == "qwen2" and "qkv_bias" in features:
            q = q + w[p + "self_attn.q_proj.bias"]
            k = k + w[p + "self_attn.k_proj.bias"]
            v = v + w[p + "self_attn.v_proj.bias"]
        q = q.view(T, H, D).transpose(0, 1)   # (H, T, D)
        k = k.view(T, KV, D).transpose(0, 1)
        v = v.view(T, KV, D).transpose(0, 1)
        if (mt == "qwen3" or gemma) and "qk_norm" in features:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps, gemma)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps, gemma)
        rope_sliding = sliding and "rope_local_base" in features
        inv = inv_freq_of(cfg, rope_sliding, features)
        q, k = apply_rope(q, inv, positions), apply_rope(k, inv, positions)
        k = k.repeat_interleave(H // KV, dim=0)  # head h reads kv head h // (H / KV)
        v = v.repeat_interleave(H // KV, dim=0)
        if gemma and "query_pre_attn_scalar" in features:
            scale = cfg["query_pre_attn_scalar"] ** -0.5
        else:
            scale = D ** -0.5
        scores = (q @ k.transpose(1, 2)) * scale
        allowed = causal
        if sliding and "sliding_window" in features:
            allowed = causal & (i[None, :] > i[:, None] - cfg["sliding_window"])
        scores = scores.masked_fill(~allowed, float("-inf"))
        attn = torch.softmax(scores, dim=-1) @ v          # (H, T, D)
        o = attn.transpose(0, 1).reshape(T, H * D) @ w[p + "self_attn.o_proj.weight"].T
        if gemma:
            if "post_norms" in features:
                o = rms_norm(o, w[p + "post_attention_layernorm.weight"], eps, gemma)
            x = x + o
            h = rms_norm(x, w[p + "pre_feedforward_layernorm.weight"], eps, gemma)
        else:
            x = x + o
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps, gemma)
        if mt == "phi3":
            gate, up = (h @ w[p + "mlp.gate_up_proj.weight"].T).chunk(2, dim=-1)
        else:
            gate = h @ w[p + "mlp.gate_proj.weight"].T
            up = h @ w[p + "mlp.up_proj.weight"].T
        act = cfg.get("hidden_activation") or cfg.get("hidden_act", "silu")
        if act == "gelu_pytorch_tanh":
            gate = 0.5 * gate * (1 + torch.tanh(math.sqrt(2 / math.pi)
                                                * (gate + 0.044715 * gate.pow(3))))
        elif act == "silu":
            gate = gate * torch.sigmoid(gate)
        else:
            raise ValueError("activation " + act)
        down = (gate * up) @ w[p + "mlp.down_proj.weight"].T
        if gemma and "post_norms" in features:
            down = rms_norm(down, w[p + "post_feedforward_layernorm.weight"], eps, gemma)
        x = x + down
    x = rms_norm(x[-1], w["model.norm.weight"], eps, gemma)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    logits = head @ x
    cap = cfg.get("final_logit_softcapping")
    if cap and "softcap" in features:
        logits = torch.tanh(logits / cap) * cap
    return logits


def relevant_features(cfg):
    """The optional features a case's config switches on (for --sensitivity)."""
    mt, gemma = cfg["model_type"], is_gemma(cfg)
    out = []
    if cfg.get("rope_scaling"):
        out.append("rope_scaling")
    if any(layer_is_sliding(cfg, il) for il in range(cfg["num_hidden_layers"])):
        out.append("sliding_window")
        if gemma:
            out.append("rope_local_base")
    if mt == "qwen2":
        out.append("qkv_bias")
    if mt == "qwen3" or gemma:
        out.append("qk_norm")
    if gemma:
        out += ["post_norms", "embed_scale"]
        if cfg.get("query_pre_attn_scalar", cfg["head_dim"]) != cfg["head_dim"]:
            out.append("query_pre_attn_scalar")
        if cfg.get("final_logit_softcapping"):
            out.append("softcap")
    if cfg.get("partial_rotary_factor", 1.0) != 1.0:
        out.append("partial_rotary")
    return out


# ---------------------------------------------------------------- oxinfer


class OxinferFailed(Exception):
    pass


def run_oxinfer(oxinfer, directory, quant, prompt, work):
    dump = os.path.join(work, "logits.f32")
    if os.path.exists(dump):
        os.remove(dump)
    cmd = [oxinfer, "generate", "-m", directory, "-p", prompt, "--raw", "--temp", "0",
           "--repeat-penalty", "1", "-n", "1", "--dump-logits", dump, "--show-tokens",
           "-t", "1"]
    if quant:
        cmd += ["--quant", quant]
    # stdout holds the generated piece, which may be a lone byte of a UTF-8 sequence
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    r.stderr = r.stderr.decode("utf-8", errors="replace")
    if r.returncode != 0:
        raise OxinferFailed("%s\nexit %d\nstderr:\n%s" % (" ".join(cmd), r.returncode, r.stderr))
    prompt_ids = generated = None
    for line in r.stderr.splitlines():
        if line.startswith("prompt tokens:"):
            prompt_ids = [int(t) for t in line.split(":", 1)[1].split()]
        elif line.startswith("generated tokens:"):
            generated = [int(t) for t in line.split(":", 1)[1].split()]
    if not prompt_ids:
        raise OxinferFailed("no 'prompt tokens:' line on stderr:\n" + r.stderr)
    with open(dump, "rb") as f:
        raw = f.read()
    logits = torch.tensor(struct.unpack("<%df" % (len(raw) // 4), raw), dtype=torch.float64)
    return prompt_ids, generated or [], logits


# ---------------------------------------------------------------- main


def compare(c, ref, got):
    diff = (got - ref).abs()
    rel = ((got - ref).norm() / ref.norm()).item()
    max_abs = diff.max().item()
    rms = ref.pow(2).mean().sqrt().item()
    top2 = torch.topk(ref, 2).values
    ref_arg, got_arg = int(ref.argmax()), int(got.argmax())
    bound = Q8_REL_BOUND if c["quant"] else F32_REL_BOUND
    problems = []
    if not (rel <= bound):
        problems.append("relative L2 %.3g > %.3g" % (rel, bound))
    if not c["quant"] and ref_arg != got_arg:
        gap = (top2[0] - top2[1]).item()
        if gap > 10 * max_abs:  # not a near-tie that the rounding could flip
            problems.append("argmax %d != reference %d (reference gap %.3g)"
                            % (got_arg, ref_arg, gap))
    return rel, max_abs, rms, ref_arg, got_arg, bound, problems


def check_prompt(args, c, directory, weights, prompt, label, root):
    """One oxinfer run against the reference; returns None on pass, else what went wrong."""
    cfg = c["config"]
    ids, generated, got = run_oxinfer(args.oxinfer, directory, c["quant"], prompt, root)
    if len(got) != cfg["vocab_size"]:
        print("%-18s FAIL logits file holds %d values, vocab_size is %d"
              % (label, len(got), cfg["vocab_size"]))
        return "size"
    ref = forward(cfg, weights, ids)
    rel, max_abs, rms, ref_arg, got_arg, bound, problems = compare(c, ref, got)
    if generated and not c["quant"] and generated[0] != got_arg:
        problems.append("greedy token %d != argmax of the dumped logits %d"
                        % (generated[0], got_arg))
    print("%-18s %-4s %2d tokens  max abs %.3g  rel L2 %.3g (bound %.0e)  rms(logits) %.3g  "
          "argmax %d/%d%s"
          % (label, "FAIL" if problems else "ok", len(ids), max_abs, rel, bound, rms, got_arg,
             ref_arg, "" if not problems else "  <- " + "; ".join(problems)))
    if args.sensitivity and prompt == PROMPT:
        parts = []
        for feat in relevant_features(cfg):
            off = forward(cfg, weights, ids, [f for f in ALL_FEATURES if f != feat])
            parts.append("%s %.3g" % (feat, ((off - ref).norm() / ref.norm()).item()))
        if cfg.get("sliding_window") and "sliding_window" not in relevant_features(cfg):
            # a listed but unused window (qwen2 without use_sliding_window): how far the logits
            # would move if it were wrongly applied to every layer
            on = forward(dict(cfg, use_sliding_window=True, max_window_layers=0), weights, ids)
            parts.append("(unused window applied: %.3g)" % ((on - ref).norm() / ref.norm()).item())
        print("%-18s      without: %s" % ("", ", ".join(parts) or "(none)"))
    return "; ".join(problems) or None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oxinfer", required=True, help="the oxinfer binary")
    ap.add_argument("--arch", default="all",
                    choices=["all", "llama", "qwen2", "qwen3", "gemma3", "phi3"])
    ap.add_argument("--keep", metavar="DIR",
                    help="write the checkpoints under DIR and keep them")
    ap.add_argument("--perturb", action="store_true",
                    help="perturb one weight on the torch side only: the f32/f16/bf16 cases "
                         "must fail")
    ap.add_argument("--sensitivity", action="store_true",
                    help="also print how far the reference moves with each feature switched off")
    args = ap.parse_args()
    if not os.access(args.oxinfer, os.X_OK):
        print("error: %s is not an executable" % args.oxinfer, file=sys.stderr)
        return 2
    torch.manual_seed(0)
    torch.set_num_threads(1)
    root = args.keep or tempfile.mkdtemp(prefix="oxi_llm_ref_")
    os.makedirs(root, exist_ok=True)
    cases = [c for c in CASES if args.arch in ("all", c["arch"])]
    failures, oxinfer_errors, runs = [], [], 0
    start = time.time()
    try:
        for c in cases:
            directory = os.path.join(root, c["name"].replace("-q8", "-f32"))
            weights = write_checkpoint(directory, c)
            if args.perturb:
                weights["model.layers.0.input_layernorm.weight"][5] += 0.1
            for prompt, suffix in ((PROMPT, ""), (SHORT_PROMPT, "/short")):
                label = c["name"] + suffix
                runs += 1
                try:
                    if check_prompt(args, c, directory, weights, prompt, label, root):
                        failures.append(label)
                except (OxinferFailed, subprocess.TimeoutExpired) as e:
                    print("%-18s ERROR oxinfer failed: %s" % (label, e))
                    oxinfer_errors.append(label)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("%d cases, %d runs in %.1f s" % (len(cases), runs, time.time() - start))
    return verdict(oxinfer_errors, failures)


if __name__ == "__main__":
    sys.exit(main())
