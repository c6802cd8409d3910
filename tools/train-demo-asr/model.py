"""Whisper architecture in plain torch; parameter names == Hugging Face
WhisperForConditionalGeneration state-dict names (proj_out tied to embed_tokens)."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoids(length, channels, max_timescale=10000):
    log_timescale_increment = np.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-log_timescale_increment * torch.arange(channels // 2).float())
    scaled_time = torch.arange(length).float()[:, None] * inv_timescales[None, :]
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h = heads
        self.hd = d // heads
        self.scaling = self.hd ** -0.5
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x, kv=None, causal=False, return_weights=False):
        B, T, D = x.shape
        kv = x if kv is None else kv
        S = kv.shape[1]
        # (B*H, T, hd) contiguous 3-D batches: torch 1.13's CPU bmm on the strided 4-D
        # views copies and runs ~10x slower
        q = (self.q_proj(x) * self.scaling).view(B, T, self.h, self.hd).transpose(1, 2)
        q = q.reshape(B * self.h, T, self.hd)
        k = self.k_proj(kv).view(B, S, self.h, self.hd).transpose(1, 2).reshape(B * self.h, S, self.hd)
        v = self.v_proj(kv).view(B, S, self.h, self.hd).transpose(1, 2).reshape(B * self.h, S, self.hd)
        w = torch.bmm(q, k.transpose(1, 2))
        if causal:
            mask = torch.ones(T, S, dtype=torch.bool).triu(1 + S - T)
            w = w.masked_fill(mask, float("-inf"))
        w = w.softmax(-1)
        o = torch.bmm(w, v).view(B, self.h, T, self.hd).transpose(1, 2).reshape(B, T, D)
        w = w.view(B, self.h, T, S)
        o = self.out_proj(o)
        return (o, w) if return_weights else o


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.self_attn = Attention(d, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, x):
        x = x + self.self_attn(self.self_attn_layer_norm(x))
        return x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.self_attn = Attention(d, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.encoder_attn = Attention(d, heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, x, enc, return_weights=False):
        x = x + self.self_attn(self.self_attn_layer_norm(x), causal=True)
        a = self.encoder_attn(self.encoder_attn_layer_norm(x), kv=enc, return_weights=return_weights)
        if return_weights:
            a, w = a
        x = x + a
        x = x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))
        return (x, w) if return_weights else x


def conv1d_as_matmul(conv, x):
    """conv(x) for x (B, C, T) computed as one matrix product over the unfolded input (same
    weights, same result up to rounding). Training in bf16 uses it: oneDNN's bf16 matrix
    product is fast here, while its conv1d backward gave garbage gradients (see train.py)."""
    k, s, p = conv.kernel_size[0], conv.stride[0], conv.padding[0]
    cols = F.pad(x, (p, p)).unfold(2, k, s)  # (B, C, T', k)
    cols = cols.permute(0, 2, 1, 3).reshape(x.shape[0], cols.shape[2], -1)  # (B, T', C*k)
    w = conv.weight.reshape(conv.weight.shape[0], -1)  # (out, C*k), same (C, k) order
    return F.linear(cols, w, conv.bias).transpose(1, 2)


class Encoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.conv_as_matmul = False
        d = cfg["d_model"]
        self.conv1 = nn.Conv1d(cfg["num_mel_bins"], d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.embed_positions = nn.Embedding(cfg["max_source_positions"], d)
        self.embed_positions.weight.data.copy_(sinusoids(cfg["max_source_positions"], d))
        self.embed_positions.weight.requires_grad_(False)
        self.layers = nn.ModuleList([EncoderLayer(d, cfg["encoder_attention_heads"], cfg["encoder_ffn_dim"])
                                     for _ in range(cfg["encoder_layers"])])
        self.layer_norm = nn.LayerNorm(d)

    def forward(self, mel):  # (B, n_mels, frames); frames may be < full window in training
        conv = conv1d_as_matmul if self.conv_as_matmul else (lambda c, x: c(x))
        x = F.gelu(conv(self.conv1, mel))
        x = F.gelu(conv(self.conv2, x)).transpose(1, 2)
        x = x + self.embed_positions.weight[: x.shape[1]]
        for l in self.layers:
            x = l(x)
        return self.layer_norm(x)


class Decoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], d)
        self.embed_positions = nn.Embedding(cfg["max_target_positions"], d)
        self.layers = nn.ModuleList([DecoderLayer(d, cfg["decoder_attention_heads"], cfg["decoder_ffn_dim"])
                                     for _ in range(cfg["decoder_layers"])])
        self.layer_norm = nn.LayerNorm(d)

    def forward(self, tokens, enc, return_weights=False):
        T = tokens.shape[1]
        x = self.embed_tokens(tokens) + self.embed_positions.weight[:T]
        ws = []
        for l in self.layers:
            if return_weights:
                x, w = l(x, enc, True)
                ws.append(w)
            else:
                x = l(x, enc)
        x = self.layer_norm(x)
        logits = x @ self.embed_tokens.weight.t()
        return (logits, ws) if return_weights else logits


class WhisperModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)


class Whisper(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = WhisperModel(cfg)
        nn.init.normal_(self.model.decoder.embed_tokens.weight, std=0.02)
        nn.init.normal_(self.model.decoder.embed_positions.weight, std=0.02)

    def forward(self, mel, tokens):
        return self.model.decoder(tokens, self.model.encoder(mel))

    @torch.no_grad()
    def greedy(self, mel, prefix, eot, max_len, suppress=None, begin_suppress=None, enc=None):
        """Batched greedy decoding; returns list of token lists (without prefix, without eot)."""
        enc = self.model.encoder(mel) if enc is None else enc
        B = enc.shape[0]
        toks = torch.tensor([prefix] * B, dtype=torch.long)
        done = torch.zeros(B, dtype=torch.bool)
        for step in range(max_len - len(prefix)):
            logits = self.model.decoder(toks, enc)[:, -1].float()
            if suppress is not None:
                logits[:, suppress] = float("-inf")
            if step == 0 and begin_suppress is not None:
                logits[:, begin_suppress] = float("-inf")
            nxt = logits.argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, eot), nxt)
            toks = torch.cat([toks, nxt[:, None]], 1)
            done |= nxt == eot
            if done.all():
                break
        out = []
        for row in toks[:, len(prefix):].tolist():
            out.append(row[: row.index(eot)] if eot in row else row)
        return out
