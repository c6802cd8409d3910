#!/usr/bin/env python3
"""Second reference for oxinfer's Whisper engine: log-mel, encoder and first decoder step in torch.

For each case it writes a tiny random Whisper (the real structure: conv1 + GELU, conv2 stride 2
+ GELU, sinusoidal positions, pre-LN encoder blocks, ln_post; decoder with learned positions,
causal self-attention, cross-attention, GELU (erf) MLP, final LN, logits tied to the token
embedding; k projections without bias) in one of the formats the engine loads:

  hf    a Hugging Face directory: config.json, preprocessor_config.json and model.safetensors
        (written by hand, f32 or f16) with transformers' keys and tensor names; the tokenizer
        files and generation_config.json of examples/demo-asr (the project's own HF Whisper
        checkpoint: its own BPE ranks, one language, 401 timestamps; 1401 tokens today), so
        vocab_size is whatever those files give;
  pt    an OpenAI checkpoint written by torch.save itself: {"dims": {...},
        "model_state_dict": OrderedDict of fp16 tensors under OpenAI's names}, as openai-whisper
        ships them, with Whisper's tiktoken rank file beside it, so n_vocab is a real one:
        51864 (English-only), 51865 (multilingual) or 51866 (large-v3, 128 mels);
  ggml  a whisper.cpp ggml-*.bin as convert-pt-to-ggml.py makes it from such a checkpoint
        (mel filterbank and vocabulary inside the file, no rank file beside it).

The rank files come from ../shared/data/whisper (or $OXINFER_SHARED_DATA/whisper); without them
placeholder ranks of the same count stand in (the special ids depend only on the count). Then

    oxinfer transcribe AUDIO -m MODEL --language en --no-timestamps -t 1
        --dump-mel MEL --dump-logits LOGITS

and the dumps are compared with a float64 torch computation written from openai-whisper's
definitions (audio.py, model.py, tokenizer.py, decoding.py):

  mel     log_mel_spectrogram(audio, padding=window)[:, :n_frames]: periodic Hann 400, hop 160,
          centred frames with reflect padding, |STFT|^2 without the last frame, the Slaney
          filterbank of mel_filters.npz (read here without numpy; built from librosa's formulas
          when the file is absent), log10(max(x, 1e-10)), max(x, max - 8) over the whole padded
          file, (x + 4) / 4. The window is 2 * n_audio_ctx frames (HF: preprocessor_config);
          where it is longer than the audio, the frames after it are the log-mel of the zero
          padding (transformers' feature extractor; openai's decode() on pad_or_trim(audio)).
  logits  the encoder on that window and the decoder's logits at the last position of
          <|startoftranscript|> <|en|> <|transcribe|> <|notimestamps|>: the start sequence the
          CLI's --dump-logits interface names, for every vocabulary that has those tokens. (For
          an English-only model openai's DecodingTask starts with <|startoftranscript|>
          <|notimestamps|>, and so does the engine's transcription; only the dump keeps the
          named sequence.) HF: the ids of generation_config.json (decoder_start_token_id,
          lang_to_id, task_to_id, no_timestamps_token_id), as transformers' generate forces them.

Audio: ../shared/data/audio/jfk.wav (11 s of speech, 16 kHz mono s16), read with `wave`; when
it is absent a generated 11 s signal (written as a wav beside the models) stands in.

    /usr/bin/python3 tests/reference/whisper_torch_reference.py \\
        --oxinfer build/tools/oxinfer/oxinfer [--case NAME|all] [--keep DIR] [--perturb] \\
        [--sensitivity]

Pass: mel max abs diff <= 1e-5 (the engine's STFT runs in double and it writes float32; a
float32 STFT would be off by about 1.4e-5); logits relative L2 <= 1e-4 and the same argmax (the
reference computes with exactly the values the stored f32 / f16 bytes decode to, and the engine
decodes f16 to f32 before each product). One line per (case, check); after a logits mismatch a
diagnosis line: the reference network on oxinfer's own mel (features or network?) and with the
other start sequence (prompt?). Exit status 0 on pass, 1 on a mismatch, 2 when oxinfer fails or
cannot be run. Needs only Debian's python3-torch (1.13) and the standard library.

--perturb adds 0.1 to one element of the decoder's first self-attention LayerNorm weight in the
torch copy only: every logits check must then fail (exit status 1).
--sensitivity prints, per case, how far the reference mel and logits move under the
alternatives the checks must tell apart (the other start sequence, the window one frame later,
the clamp over the window only, openai transcribe()'s zero-filled mel after the audio, f32
instead of the stored f16 sinusoids, a zero mel), so that a passing case is known to resolve
them.
"""
import argparse
import ast
import base64
import collections
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import wave
import zipfile

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_report import verdict  # noqa: E402
from safetensors_writer import tensor_bytes, write_safetensors  # noqa: E402

MEL_BOUND = 1e-5
REL_BOUND = 1e-4
SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEMO_ASR = os.path.join(ROOT, "examples", "demo-asr")


def shared_data_dir():
    env = os.environ.get("OXINFER_SHARED_DATA")
    return env if env else os.path.join(ROOT, "..", "shared", "data")


# ---------------------------------------------------------------- the cases


def case(name, fmt, dtype, seed, n_mels=80, n_audio_ctx=100, n_state=64, n_head=4,
         n_audio_layer=2, n_text_layer=2, n_text_ctx=32, n_vocab=None):
    return dict(name=name, fmt=fmt, dtype=dtype, seed=seed, n_mels=n_mels,
                n_audio_ctx=n_audio_ctx, n_state=n_state, n_head=n_head,
                n_audio_layer=n_audio_layer, n_text_layer=n_text_layer, n_text_ctx=n_text_ctx,
                n_vocab=n_vocab)


CASES = [
    # HF, f32, a 12 s window (chunk_length 12, 600 positions) longer than jfk's 11 s: the last
    # 50 frames are the log-mel of the zero padding, as transformers' feature extractor pads.
    case("hf-f32", "hf", "F32", seed=1, n_audio_ctx=600),
    # HF, f16 tensors (as fp16 exports store them), 2 heads of 32, a 3 s window inside the
    # audio (the clamp's maximum comes from the whole file).
    case("hf-f16", "hf", "F16", seed=2, n_audio_ctx=150, n_head=2, n_audio_layer=1,
         n_text_layer=2),
    # OpenAI .pt, multilingual layout (n_vocab 51865, multilingual.tiktoken), 2 s window.
    case("pt-multilingual-f16", "pt", "F16", seed=3, n_audio_ctx=100, n_head=2, n_vocab=51865),
    # OpenAI .pt, large-v3 layout: 128 mels, 100 languages (n_vocab 51866), 1.5 s window.
    case("pt-v3-f16", "pt", "F16", seed=4, n_mels=128, n_audio_ctx=75, n_head=4,
         n_audio_layer=3, n_text_layer=1, n_vocab=51866),
    # OpenAI .pt, English-only layout (n_vocab 51864, gpt2.tiktoken): openai's start sequence
    # has no language and no task token.
    case("pt-en-f16", "pt", "F16", seed=5, n_audio_ctx=50, n_head=2, n_vocab=51864),
    # whisper.cpp ggml .bin as convert-pt-to-ggml.py writes an fp16 checkpoint: the mel
    # filterbank and the vocabulary inside the file, no rank file beside it (n_vocab 51865).
    case("ggml-f16", "ggml", "F16", seed=6, n_audio_ctx=100, n_head=4, n_vocab=51865),
]

# ---------------------------------------------------------------- audio


def read_wav(path):
    """16-bit PCM mono 16 kHz -> float64 samples / 32768 (what ffmpeg's s16 -> f32 gives)."""
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != SAMPLE_RATE:
            raise ValueError("%s: expected 16 kHz mono 16-bit PCM" % path)
        raw = w.readframes(w.getnframes())
    pcm = torch.frombuffer(bytearray(raw), dtype=torch.int16)
    return pcm.to(torch.float64) / 32768.0


def generated_audio(path):
    """11 s of a deterministic stand-in: gliding harmonics in bursts, noise, a pause; written to
    path as 16-bit PCM and returned as the samples the file holds."""
    g = torch.Generator().manual_seed(7)
    n = 11 * SAMPLE_RATE
    t = torch.arange(n, dtype=torch.float64) / SAMPLE_RATE
    f0 = 120 + 60 * torch.sin(2 * math.pi * 0.3 * t)
    phase = 2 * math.pi * torch.cumsum(f0, 0) / SAMPLE_RATE
    voiced = sum(torch.sin(k * phase) / k for k in range(1, 12))
    envelope = (torch.sin(2 * math.pi * 2.5 * t).clamp(min=0) ** 0.5) * (t % 4 < 3)
    x = 0.3 * voiced * envelope + 0.01 * torch.randn(n, generator=g, dtype=torch.float64)
    pcm = (x.clamp(-1, 1) * 32767).round().to(torch.int16)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(struct.pack("<%dh" % n, *pcm.tolist()))
    return pcm.to(torch.float64) / 32768.0


# ---------------------------------------------------------------- mel filterbank


def read_npz(path):
    """{name: float64 tensor} from a .npz (a zip of .npy files) without numpy: each .npy is a
    magic, a version, a header length and a Python-literal dict (descr, fortran_order, shape)
    padded to 64 bytes, then the raw data."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            data = z.read(name)
            if data[:6] != b"\x93NUMPY":
                raise ValueError("%s/%s is not a .npy" % (path, name))
            major = data[6]
            if major == 1:
                (hlen,), start = struct.unpack("<H", data[8:10]), 10
            else:
                (hlen,), start = struct.unpack("<I", data[8:12]), 12
            header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
            dtype = {"<f4": torch.float32, "<f8": torch.float64}[header["descr"]]
            if header["fortran_order"]:
                raise ValueError("fortran order")
            values = torch.frombuffer(bytearray(data[start + hlen:]), dtype=dtype)
            out[name[:-4] if name.endswith(".npy") else name] = \
                values.reshape(header["shape"]).to(torch.float64)
    return out


def slaney_filterbank(n_mels, sr=SAMPLE_RATE, n_fft=N_FFT):
    """librosa.filters.mel(sr, n_fft, n_mels, fmin 0, fmax sr / 2, htk=False, norm='slaney')."""
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0

    def hz_to_mel(f):
        return f / f_sp if f < min_log_hz else min_log_mel + math.log(f / min_log_hz) / logstep

    def mel_to_hz(m):
        return torch.where(m >= min_log_mel, min_log_hz * torch.exp(logstep * (m - min_log_mel)),
                           f_sp * m)

    fftfreqs = torch.linspace(0, sr / 2, 1 + n_fft // 2, dtype=torch.float64)
    mel_f = mel_to_hz(torch.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2,
                                     dtype=torch.float64))
    fdiff = mel_f[1:] - mel_f[:-1]
    ramps = mel_f[:, None] - fftfreqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = torch.clamp(torch.minimum(lower, upper), min=0)
    return weights * (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]


class Filterbanks:
    """openai's mel_filters(): mel_80 / mel_128 of mel_filters.npz (float32 values), or the
    librosa construction when the file is absent."""

    def __init__(self):
        path = os.path.join(shared_data_dir(), "whisper", "mel_filters.npz")
        self.npz = read_npz(path) if os.path.isfile(path) else {}
        self.source = "mel_filters.npz" if self.npz else "built (no mel_filters.npz)"

    def get(self, n_mels):
        key = "mel_%d" % n_mels
        return self.npz[key] if key in self.npz else slaney_filterbank(n_mels)

    def agreement(self):
        """Max abs difference between the built filterbanks and the file's."""
        return max(((slaney_filterbank(int(k[4:])) - v).abs().max().item()
                    for k, v in self.npz.items()), default=None)


# ---------------------------------------------------------------- log-mel


def log_mel(audio, filters, padding):
    """openai's log_mel_spectrogram(audio, n_mels, padding) in float64, written out: zero
    padding, centred frames (reflect padding of n_fft / 2), periodic Hann, |rfft|^2 without the
    last frame, mel filterbank, log10 with the floor, clamp to max - 8, (x + 4) / 4."""
    x = torch.cat([audio, torch.zeros(padding, dtype=torch.float64)])
    half = N_FFT // 2
    x = torch.cat([x[1:half + 1].flip(0), x, x[-half - 1:-1].flip(0)])
    frames = x.unfold(0, N_FFT, HOP)
    n = torch.arange(N_FFT, dtype=torch.float64)
    hann = 0.5 - 0.5 * torch.cos(2 * math.pi * n / N_FFT)
    power = torch.fft.rfft(frames * hann, dim=-1).abs().pow(2)[:-1]   # (frames, 201)
    mel = filters @ power.T                                            # (n_mels, frames)
    return torch.log10(torch.clamp(mel, min=1e-10))


def normalise(logm, top):
    return (torch.maximum(logm, top - 8.0) + 4.0) / 4.0


def reference_mel(audio, filters, n_frames, variant=None):
    """The window the engine encodes: log_mel_spectrogram(audio, padding=window)[:, :n_frames],
    clamped with the whole padded file's maximum (openai's transcribe()). Variants for
    --sensitivity: 'window-clamp' (openai's decode() README path: pad_or_trim(audio) first, so
    the maximum is the window's), 'zero-fill' (transcribe() zero-fills the frames after the
    audio instead of the padding's log-mel), 'shift' (the window one frame later)."""
    padding = n_frames * HOP
    if variant == "window-clamp":
        clip = audio[:padding]
        logm = log_mel(clip, filters, padding - clip.numel())
        return normalise(logm, logm.max())[:, :n_frames]
    logm = log_mel(audio, filters, padding)
    mel = normalise(logm, logm.max())
    if variant == "shift":
        return mel[:, 1:n_frames + 1]
    mel = mel[:, :n_frames].clone()
    if variant == "zero-fill":
        content = audio.numel() // HOP
        if content < n_frames:
            mel[:, content:] = 0.0
    return mel


# ---------------------------------------------------------------- weights


def sinusoids(length, channels):
    """openai-whisper's sinusoids(), computed in float32 as torch does by default there."""
    inc = math.log(10000) / (channels // 2 - 1)
    inv = torch.exp(-inc * torch.arange(channels // 2, dtype=torch.float32))
    scaled = torch.arange(length, dtype=torch.float32)[:, None] * inv[None, :]
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=1)


def make_weights(c):
    """Random float32 weights under OpenAI's names, in the order of Whisper.state_dict()."""
    g = torch.Generator().manual_seed(4000 + c["seed"])
    d, m, v = c["n_state"], 4 * c["n_state"], c["n_vocab"]
    w = collections.OrderedDict()

    def randn(*shape, std=1.0, center=0.0):
        return torch.randn(*shape, generator=g, dtype=torch.float32) * std + center

    def norm(p):
        w[p + ".weight"] = randn(d, std=0.2, center=1.0)
        w[p + ".bias"] = randn(d, std=0.1)

    def linear(p, out, inp, bias=True):
        w[p + ".weight"] = randn(out, inp, std=1.0 / math.sqrt(inp))
        if bias:
            w[p + ".bias"] = randn(out, std=0.1)

    def block(p, cross):
        for a in ("attn", "cross_attn") if cross else ("attn",):
            linear(p + a + ".query", d, d)
            linear(p + a + ".key", d, d, bias=False)
            linear(p + a + ".value", d, d)
            linear(p + a + ".out", d, d)
            norm(p + a + "_ln")
        linear(p + "mlp.0", m, d)
        linear(p + "mlp.2", d, m)
        norm(p + "mlp_ln")

    w["encoder.positional_embedding"] = sinusoids(c["n_audio_ctx"], d)  # a buffer, saved too
    w["encoder.conv1.weight"] = randn(d, c["n_mels"], 3, std=1.0 / math.sqrt(3 * c["n_mels"]))
    w["encoder.conv1.bias"] = randn(d, std=0.1)
    w["encoder.conv2.weight"] = randn(d, d, 3, std=1.0 / math.sqrt(3 * d))
    w["encoder.conv2.bias"] = randn(d, std=0.1)
    for il in range(c["n_audio_layer"]):
        block("encoder.blocks.%d." % il, False)
    norm("encoder.ln_post")
    w["decoder.positional_embedding"] = randn(c["n_text_ctx"], d, std=0.05)
    # Small, as trained ones are: the prompt's own embeddings must not drown the audio's part.
    w["decoder.token_embedding.weight"] = randn(v, d, std=0.1)
    for il in range(c["n_text_layer"]):
        block("decoder.blocks.%d." % il, True)
    norm("decoder.ln")
    return w


def stored(t, dtype):
    """The tensor as the checkpoint stores it, and the float64 values those bytes hold."""
    s = t.to(torch.float16 if dtype == "F16" else torch.float32).contiguous()
    return s, s.to(torch.float64)


# ---------------------------------------------------------------- Hugging Face directory

HF_TOP = {
    "encoder.positional_embedding": "model.encoder.embed_positions.weight",
    "decoder.positional_embedding": "model.decoder.embed_positions.weight",
    "decoder.token_embedding.weight": "model.decoder.embed_tokens.weight",
}
HF_PARTS = [("encoder.ln_post.", "encoder.layer_norm."), ("decoder.ln.", "decoder.layer_norm."),
            (".blocks.", ".layers."), (".cross_attn_ln.", ".encoder_attn_layer_norm."),
            (".attn_ln.", ".self_attn_layer_norm."), (".mlp_ln.", ".final_layer_norm."),
            (".cross_attn.", ".encoder_attn."), (".attn.", ".self_attn."),
            (".query.", ".q_proj."), (".key.", ".k_proj."), (".value.", ".v_proj."),
            (".out.", ".out_proj."), (".mlp.0.", ".fc1."), (".mlp.2.", ".fc2.")]


def hf_name(openai_name):
    """transformers' WhisperForConditionalGeneration names (convert_openai_to_hf.py's map)."""
    if openai_name in HF_TOP:
        return HF_TOP[openai_name]
    name = openai_name
    for a, b in HF_PARTS:
        name = name.replace(a, b)
    return "model." + name


HF_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                      "added_tokens.json", "special_tokens_map.json")


def hf_vocabulary():
    """examples/demo-asr's generation_config.json and its vocabulary size (ranks + added)."""
    with open(os.path.join(DEMO_ASR, "generation_config.json")) as f:
        gen = json.load(f)
    with open(os.path.join(DEMO_ASR, "vocab.json"), encoding="utf-8") as f:
        n = len(json.load(f))
    with open(os.path.join(DEMO_ASR, "added_tokens.json"), encoding="utf-8") as f:
        added = json.load(f)
    return gen, added, n + len(added)


def write_hf(directory, c, weights):
    os.makedirs(directory, exist_ok=True)
    gen, _, n_vocab = hf_vocabulary()
    assert n_vocab == c["n_vocab"]
    d = c["n_state"]
    n_frames = 2 * c["n_audio_ctx"]
    config = {
        "architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper",
        "activation_function": "gelu", "d_model": d,
        "encoder_layers": c["n_audio_layer"], "encoder_attention_heads": c["n_head"],
        "encoder_ffn_dim": 4 * d, "decoder_layers": c["n_text_layer"],
        "decoder_attention_heads": c["n_head"], "decoder_ffn_dim": 4 * d,
        "num_hidden_layers": c["n_audio_layer"], "num_mel_bins": c["n_mels"],
        "max_source_positions": c["n_audio_ctx"], "max_target_positions": c["n_text_ctx"],
        "vocab_size": n_vocab, "scale_embedding": False, "tie_word_embeddings": True,
        "bos_token_id": gen["bos_token_id"], "eos_token_id": gen["eos_token_id"],
        "pad_token_id": gen["pad_token_id"],
        "decoder_start_token_id": gen["decoder_start_token_id"],
        "begin_suppress_tokens": gen["begin_suppress_tokens"], "suppress_tokens": [],
        "dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0,
        "torch_dtype": {"F32": "float32", "F16": "float16"}[c["dtype"]],
        "use_cache": True, "is_encoder_decoder": True,
    }
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    pre = {"chunk_length": n_frames * HOP // SAMPLE_RATE, "feature_extractor_type":
           "WhisperFeatureExtractor", "feature_size": c["n_mels"], "hop_length": HOP,
           "n_fft": N_FFT, "n_samples": n_frames * HOP, "nb_max_frames": n_frames,
           "padding_side": "right", "padding_value": 0.0, "processor_class": "WhisperProcessor",
           "return_attention_mask": False, "sampling_rate": SAMPLE_RATE}
    with open(os.path.join(directory, "preprocessor_config.json"), "w") as f:
        json.dump(pre, f, indent=2)
    gen = dict(gen, alignment_heads=[[c["n_text_layer"] - 1, h] for h in range(c["n_head"])],
               max_length=c["n_text_ctx"])
    with open(os.path.join(directory, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)
    for name in HF_TOKENIZER_FILES:
        shutil.copy(os.path.join(DEMO_ASR, name), os.path.join(directory, name))
    # proj_out.weight is tied to embed_tokens and left out, as save_pretrained does.
    tensors, decoded = {}, {}
    for name, t in weights.items():
        s, values = stored(t, c["dtype"])
        tensors[hf_name(name)] = s
        decoded[name] = values
    write_safetensors(os.path.join(directory, "model.safetensors"), tensors)
    return decoded


def hf_prompt(directory):
    """The ids transformers' generate forces for language en, transcribe, no timestamps:
    decoder_start_token_id, lang_to_id["<|en|>"], task_to_id["transcribe"],
    no_timestamps_token_id; checked against the tokenizer's added tokens."""
    with open(os.path.join(directory, "generation_config.json")) as f:
        gen = json.load(f)
    with open(os.path.join(directory, "added_tokens.json"), encoding="utf-8") as f:
        added = json.load(f)
    ids = [gen["decoder_start_token_id"], gen["lang_to_id"]["<|en|>"],
           gen["task_to_id"]["transcribe"], gen["no_timestamps_token_id"]]
    names = ["<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>"]
    for i, name in zip(ids, names):
        assert added[name] == i, (name, added[name], i)
    return ids, [ids[0], ids[3]]  # the other: an English-only model's start sequence


# ---------------------------------------------------------------- OpenAI .pt


def rank_tokens(n_vocab):
    """openai's get_tokenizer: multilingual.tiktoken when n_vocab >= 51865, else gpt2.tiktoken:
    (file name, the token bytes in rank order, whether the shared copy was there). Without it,
    placeholder tokens of the same count (the special ids depend only on the count)."""
    multilingual = n_vocab >= 51865
    name = "multilingual.tiktoken" if multilingual else "gpt2.tiktoken"
    src = os.path.join(shared_data_dir(), "whisper", name)
    if not os.path.isfile(src):
        n_ranks = 50257 if multilingual else 50256
        return name, [bytes([i]) if i < 256 else (" w%d" % i).encode()
                      for i in range(n_ranks)], False
    tokens = []
    with open(src) as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                assert int(rank) == len(tokens)
                tokens.append(base64.b64decode(token))
    return name, tokens, True


def write_rank_file(path, tokens):
    with open(path, "w") as f:
        for i, t in enumerate(tokens):
            f.write("%s %d\n" % (base64.b64encode(t).decode(), i))


def write_pt(path, c, weights):
    """torch.save({"dims": ..., "model_state_dict": ...}) with fp16 tensors, as openai ships."""
    dims = {"n_mels": c["n_mels"], "n_vocab": c["n_vocab"], "n_audio_ctx": c["n_audio_ctx"],
            "n_audio_state": c["n_state"], "n_audio_head": c["n_head"],
            "n_audio_layer": c["n_audio_layer"], "n_text_ctx": c["n_text_ctx"],
            "n_text_state": c["n_state"], "n_text_head": c["n_head"],
            "n_text_layer": c["n_text_layer"]}
    state, decoded = collections.OrderedDict(), {}
    for name, t in weights.items():
        s, values = stored(t, c["dtype"])
        state[name] = s
        decoded[name] = values
    torch.save({"dims": dims, "model_state_dict": state}, path)
    return decoded


def write_ggml(path, c, weights, filters, tokens):
    """whisper.cpp's convert-pt-to-ggml.py on the fp16 checkpoint: magic, 11 int32
    hyper-parameters (ftype 1), the mel filterbank (n_mels x 201 float32), the vocabulary
    (count, then length + bytes per rank), then per tensor n_dims, name length, type
    (0 f32 / 1 f16), the dims innermost first, the name and the data: f16 for tensors of two
    or more dims but the positional embeddings, f32 for the rest, conv biases as [n, 1]."""
    out = [struct.pack("<i", 0x67676d6c)]
    out.append(struct.pack("<11i", c["n_vocab"], c["n_audio_ctx"], c["n_state"], c["n_head"],
                           c["n_audio_layer"], c["n_text_ctx"], c["n_state"], c["n_head"],
                           c["n_text_layer"], c["n_mels"], 1))
    fb = filters.to(torch.float32)
    out.append(struct.pack("<ii", fb.shape[0], fb.shape[1]))
    out.append(tensor_bytes(fb))
    out.append(struct.pack("<i", len(tokens)))
    for t in tokens:
        out.append(struct.pack("<i", len(t)) + t)
    decoded = {}
    for name, t in weights.items():
        half = t.to(torch.float16)        # the values the fp16 checkpoint holds
        decoded[name] = half.to(torch.float64)
        data = half.reshape(half.shape[0], 1) if name in ("encoder.conv1.bias",
                                                          "encoder.conv2.bias") else half
        f16 = data.dim() >= 2 and not name.endswith("positional_embedding") and \
            name not in ("encoder.conv1.bias", "encoder.conv2.bias")
        data = data if f16 else data.to(torch.float32)
        key = name.encode()
        out.append(struct.pack("<iii", data.dim(), len(key), 1 if f16 else 0))
        out.append(struct.pack("<%di" % data.dim(), *reversed(data.shape)))
        out.append(key)
        out.append(tensor_bytes(data.contiguous()))
    with open(path, "wb") as f:
        f.write(b"".join(out))
    return decoded


LANGUAGE_COUNT = 100  # openai's LANGUAGES table


def openai_prompt(n_vocab, n_ranks):
    """openai's DecodingTask start sequence for language "en", task "transcribe",
    without_timestamps: Whisper.is_multilingual = n_vocab >= 51865; num_languages =
    n_vocab - 51765 - is_multilingual; the specials after the ranks are <|endoftext|>,
    <|startoftranscript|>, the languages ("en" first), <|translate|>, <|transcribe|>,
    <|startoflm|>, <|startofprev|>, <|nospeech|>, <|notimestamps|>, 1501 timestamps. An
    English-only tokenizer has language and task None: sot_sequence is (sot,), which the
    dump does not follow (the top of this file). Returns the dump's ids and the other
    sequence (for --sensitivity)."""
    multilingual = n_vocab >= 51865
    n_languages = n_vocab - 51765 - int(multilingual)
    assert n_ranks + 2 + n_languages + 6 + 1501 == n_vocab, (n_ranks, n_languages, n_vocab)
    sot = n_ranks + 1
    en, transcribe, no_timestamps = sot + 1, sot + 2 + n_languages, sot + 6 + n_languages
    # --dump-logits: the named sequence for every vocabulary (see the top of this file).
    return [sot, en, transcribe, no_timestamps], [sot, no_timestamps]


# ---------------------------------------------------------------- the torch forward pass


def layer_norm(x, w, p):
    return F.layer_norm(x, (x.shape[-1],), w[p + ".weight"], w[p + ".bias"], eps=1e-5)


def attention(x, source, w, p, n_head, causal):
    """openai's MultiHeadAttention: q, k, v projections (k without bias), q and k each scaled by
    head_dim ** -0.25, softmax (with the causal mask for self-attention), out projection."""
    T, d = x.shape
    S = source.shape[0]
    hd = d // n_head
    q = x @ w[p + ".query.weight"].T + w[p + ".query.bias"]
    k = source @ w[p + ".key.weight"].T
    v = source @ w[p + ".value.weight"].T + w[p + ".value.bias"]
    scale = hd ** -0.25
    q = q.view(T, n_head, hd).transpose(0, 1) * scale       # (H, T, hd)
    k = k.view(S, n_head, hd).permute(1, 2, 0) * scale      # (H, hd, S)
    v = v.view(S, n_head, hd).transpose(0, 1)                # (H, S, hd)
    qk = q @ k
    if causal:
        qk = qk + torch.full((T, S), float("-inf"), dtype=qk.dtype).triu(1)
    o = (torch.softmax(qk, dim=-1) @ v).transpose(0, 1).reshape(T, d)
    return o @ w[p + ".out.weight"].T + w[p + ".out.bias"]


def mlp(x, w, p):
    h = F.gelu(x @ w[p + ".mlp.0.weight"].T + w[p + ".mlp.0.bias"])  # nn.GELU(): erf
    return h @ w[p + ".mlp.2.weight"].T + w[p + ".mlp.2.bias"]


def encoder(mel, w, c):
    """AudioEncoder: gelu(conv1), gelu(conv2, stride 2), + positions, blocks, ln_post."""
    x = F.gelu(F.conv1d(mel[None], w["encoder.conv1.weight"], w["encoder.conv1.bias"],
                        padding=1))
    x = F.gelu(F.conv1d(x, w["encoder.conv2.weight"], w["encoder.conv2.bias"], stride=2,
                        padding=1))
    x = x[0].T                                              # (n_audio_ctx, d)
    assert x.shape[0] == w["encoder.positional_embedding"].shape[0]
    x = x + w["encoder.positional_embedding"]
    for il in range(c["n_audio_layer"]):
        p = "encoder.blocks.%d" % il
        x = x + attention(layer_norm(x, w, p + ".attn_ln"), layer_norm(x, w, p + ".attn_ln"),
                          w, p + ".attn", c["n_head"], False)
        x = x + mlp(layer_norm(x, w, p + ".mlp_ln"), w, p)
    return layer_norm(x, w, "encoder.ln_post")


def decoder_logits(ids, xa, w, c):
    """TextDecoder on the whole start sequence: token + learned positions, blocks with causal
    self-attention, cross-attention to the audio, MLP; ln; logits of the last position against
    the token embedding (tied)."""
    T = len(ids)
    x = w["decoder.token_embedding.weight"][torch.tensor(ids)] + \
        w["decoder.positional_embedding"][:T]
    for il in range(c["n_text_layer"]):
        p = "decoder.blocks.%d" % il
        h = layer_norm(x, w, p + ".attn_ln")
        x = x + attention(h, h, w, p + ".attn", c["n_head"], True)
        x = x + attention(layer_norm(x, w, p + ".cross_attn_ln"), xa, w, p + ".cross_attn",
                          c["n_head"], False)
        x = x + mlp(layer_norm(x, w, p + ".mlp_ln"), w, p)
    x = layer_norm(x, w, "decoder.ln")
    return w["decoder.token_embedding.weight"] @ x[-1]


def reference_logits(mel, ids, w, c):
    return decoder_logits(ids, encoder(mel, w, c), w, c)


# ---------------------------------------------------------------- oxinfer


class OxinferFailed(Exception):
    pass


def read_f32(path):
    with open(path, "rb") as f:
        raw = f.read()
    return torch.frombuffer(bytearray(raw), dtype=torch.float32).to(torch.float64)


def run_oxinfer(oxinfer, model, audio_path, work):
    mel_f, logits_f = os.path.join(work, "mel.f32"), os.path.join(work, "logits.f32")
    for f in (mel_f, logits_f):
        if os.path.exists(f):
            os.remove(f)
    cmd = [oxinfer, "transcribe", audio_path, "-m", model, "--language", "en",
           "--no-timestamps", "-t", "1", "--dump-mel", mel_f, "--dump-logits", logits_f]
    # the rank files are the ones beside the model (or, for ggml, the file's own vocabulary)
    env = {k: v for k, v in os.environ.items() if k != "OXINFER_WHISPER_ASSETS"}
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, env=env)
    if r.returncode != 0 or not os.path.isfile(mel_f) or not os.path.isfile(logits_f):
        raise OxinferFailed("%s\nexit %d\nstderr:\n%s" % (
            " ".join(cmd), r.returncode, r.stderr.decode("utf-8", errors="replace")))
    return read_f32(mel_f), read_f32(logits_f)


# ---------------------------------------------------------------- main


def rel_l2(a, b):
    return ((a - b).norm() / b.norm()).item()


def check_mel(label, ref, got):
    if got.numel() != ref.numel():
        print("%-22s mel    FAIL oxinfer wrote %d values, expected %d x %d"
              % (label, got.numel(), ref.shape[0], ref.shape[1]))
        return False, None
    got = got.view_as(ref)
    diff = (got - ref).abs()
    worst = divmod(int(diff.argmax()), ref.shape[1])
    ok = diff.max().item() <= MEL_BOUND
    print("%-22s mel    %-4s %d x %d  max abs %.3g at (mel %d, frame %d) (bound %.0e)  "
          "mean abs %.3g  range [%.3f, %.3f]"
          % (label, "ok" if ok else "FAIL", ref.shape[0], ref.shape[1], diff.max().item(),
             worst[0], worst[1], MEL_BOUND, diff.mean().item(), ref.min().item(),
             ref.max().item()))
    return ok, got


def check_logits(label, ref, got, ids):
    if got.numel() != ref.numel():
        print("%-22s logits FAIL oxinfer wrote %d values, n_vocab is %d"
              % (label, got.numel(), ref.numel()))
        return False
    rel = rel_l2(got, ref)
    max_abs = (got - ref).abs().max().item()
    ref_arg, got_arg = int(ref.argmax()), int(got.argmax())
    top2 = torch.topk(ref, 2).values
    problems = []
    if not rel <= REL_BOUND:
        problems.append("relative L2 %.3g > %.0e" % (rel, REL_BOUND))
    if ref_arg != got_arg and (top2[0] - top2[1]).item() > 10 * max_abs:
        problems.append("argmax %d != reference %d" % (got_arg, ref_arg))
    print("%-22s logits %-4s prompt %s  rel L2 %.3g (bound %.0e)  max abs %.3g  "
          "rms %.3g  argmax %d/%d%s"
          % (label, "FAIL" if problems else "ok", ids, rel, REL_BOUND, max_abs,
             ref.pow(2).mean().sqrt().item(), got_arg, ref_arg,
             "" if not problems else "  <- " + "; ".join(problems)))
    return not problems


def diagnose(label, c, w, got_mel, got, ids, other_ids, ref_mel):
    """After a logits mismatch: which stage diverges? The reference network on oxinfer's own
    mel (features vs network), and the reference with the other start sequence (prompt)."""
    parts = []
    if got_mel is not None:
        parts.append("on oxinfer's mel: rel L2 %.3g"
                     % rel_l2(got, reference_logits(got_mel, ids, w, c)))
    if other_ids:
        parts.append("with prompt %s: rel L2 %.3g"
                     % (other_ids, rel_l2(got, reference_logits(ref_mel, other_ids, w, c))))
    print("%-22s        diagnosis: %s" % ("", "; ".join(parts)))


def sensitivity(c, w, stored_w, audio, filters, ids, other_ids, ref, ref_mel):
    """How far the reference moves (mel max abs / logits relative L2) under each alternative."""
    n_frames = 2 * c["n_audio_ctx"]
    parts = []
    if other_ids:
        parts.append("other prompt %s: -/%.3g"
                     % (other_ids, rel_l2(reference_logits(ref_mel, other_ids, w, c), ref)))
    for variant in ("shift", "window-clamp", "zero-fill"):
        mel = reference_mel(audio, filters, n_frames, variant)
        d_mel = (mel - ref_mel).abs().max().item()
        parts.append("%s: %.3g/%.3g" % (variant, d_mel, rel_l2(reference_logits(mel, ids, w, c),
                                                               ref))
                     if d_mel else "%s: (same)" % variant)
    if c["dtype"] == "F16":
        exact = dict(w, **{"encoder.positional_embedding":
                           stored_w["encoder.positional_embedding"].to(torch.float64)})
        parts.append("f32 sinusoids: -/%.3g" % rel_l2(reference_logits(ref_mel, ids, exact, c),
                                                      ref))
    no_audio = torch.zeros(c["n_mels"], n_frames, dtype=torch.float64)
    parts.append("zero mel: -/%.3g" % rel_l2(reference_logits(no_audio, ids, w, c), ref))
    print("%-22s        moves (mel max abs/logits rel L2): %s" % ("", ", ".join(parts)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oxinfer", required=True, help="the oxinfer binary")
    ap.add_argument("--case", default="all", choices=["all"] + [c["name"] for c in CASES])
    ap.add_argument("--keep", metavar="DIR", help="write the checkpoints under DIR and keep them")
    ap.add_argument("--perturb", action="store_true",
                    help="perturb one weight on the torch side only: every logits check must "
                         "fail")
    ap.add_argument("--sensitivity", action="store_true",
                    help="also print how far the reference moves under the alternatives the "
                         "checks must tell apart")
    args = ap.parse_args()
    if not os.access(args.oxinfer, os.X_OK):
        print("error: %s is not an executable" % args.oxinfer, file=sys.stderr)
        return 2
    if not os.path.isdir(DEMO_ASR):
        print("error: %s (the HF cases' tokenizer) is missing" % DEMO_ASR, file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    start = time.time()
    root = args.keep or tempfile.mkdtemp(prefix="oxi_whisper_ref_")
    os.makedirs(root, exist_ok=True)
    failures, oxinfer_errors = [], []
    try:
        audio_path = os.path.join(shared_data_dir(), "audio", "jfk.wav")
        if os.path.isfile(audio_path):
            audio = read_wav(audio_path)
            source = "jfk.wav"
        else:
            audio_path = os.path.join(root, "generated.wav")
            audio = generated_audio(audio_path)
            source = "a generated signal (no shared jfk.wav)"
        filters = Filterbanks()
        agree = filters.agreement()
        print("audio: %s, %.2f s; mel filters: %s%s"
              % (source, audio.numel() / SAMPLE_RATE, filters.source,
                 "" if agree is None else " (the librosa construction agrees to %.2g)" % agree))
        cases = [c for c in CASES if args.case in ("all", c["name"])]
        for c in cases:
            c = dict(c)
            directory = os.path.join(root, c["name"])
            os.makedirs(directory, exist_ok=True)
            note = ""
            if c["fmt"] == "hf":
                c["n_vocab"] = hf_vocabulary()[2]
                weights = make_weights(c)
                w = write_hf(directory, c, weights)
                model = directory
                ids, other_ids = hf_prompt(directory)
            else:
                rank_name, tokens, real = rank_tokens(c["n_vocab"])
                weights = make_weights(c)
                if c["fmt"] == "pt":
                    write_rank_file(os.path.join(directory, rank_name), tokens)
                    model = os.path.join(directory, "model.pt")
                    w = write_pt(model, c, weights)
                else:  # ggml: no rank file beside it, the vocabulary is the file's own
                    model = os.path.join(directory, "ggml-model.bin")
                    w = write_ggml(model, c, weights, filters.get(c["n_mels"]), tokens)
                ids, other_ids = openai_prompt(c["n_vocab"], len(tokens))
                if not real:
                    note = " (placeholder ranks)"
            n_frames = 2 * c["n_audio_ctx"]
            ref_mel = reference_mel(audio, filters.get(c["n_mels"]), n_frames)
            if args.perturb:
                w["decoder.blocks.0.attn_ln.weight"][5] += 0.1
            ref = reference_logits(ref_mel, ids, w, c)
            label = c["name"]
            kind = {"hf": "HF directory", "pt": "OpenAI .pt", "ggml": "whisper.cpp ggml"}
            print("%-22s %s, n_vocab %d, %d mels, d %d, %d heads, %d+%d layers, window %d "
                  "frames%s" % (label, kind[c["fmt"]],
                                c["n_vocab"], c["n_mels"], c["n_state"], c["n_head"],
                                c["n_audio_layer"], c["n_text_layer"], n_frames, note))
            try:
                got_mel, got = run_oxinfer(args.oxinfer, model, audio_path, directory)
            except (OxinferFailed, subprocess.TimeoutExpired) as e:
                print("%-22s ERROR oxinfer failed: %s" % (label, e))
                oxinfer_errors.append(label)
                continue
            mel_ok, got_mel = check_mel(label, ref_mel, got_mel)
            if not mel_ok:
                failures.append(label + "/mel")
            if not check_logits(label, ref, got, ids):
                failures.append(label + "/logits")
                if not args.perturb:
                    diagnose(label, c, w, got_mel, got, ids, other_ids, ref_mel)
            if args.sensitivity:
                sensitivity(c, w, weights, audio, filters.get(c["n_mels"]), ids, other_ids, ref,
                            ref_mel)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("%d cases in %.1f s" % (len(cases), time.time() - start))
    return verdict(oxinfer_errors, failures)


if __name__ == "__main__":
    sys.exit(main())
