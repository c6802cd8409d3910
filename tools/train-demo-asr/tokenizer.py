"""Compact GPT-2-style byte-level BPE + Whisper special tokens, HF file writer."""
import json
import os
import re
from collections import Counter

# GPT-2 pre-tokenizer regex restricted to what the corpus contains (ASCII).
PAT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


B2U = bytes_to_unicode()
U2B = {v: k for k, v in B2U.items()}


def pretokenize(text):
    return ["".join(B2U[b] for b in t.encode("utf-8")) for t in PAT.findall(text)]


def merge_pair(symbols, a, b):
    """symbols with every adjacent (a, b) replaced by the merged a + b, left to right."""
    i, out = 0, []
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def train_bpe(words, corpus_counts):
    """Learn merges until every ' word' pre-token of the vocabulary is one token.

    words: vocabulary; corpus_counts: Counter of words in the training corpus
    (used as pair weights so frequent pieces merge first)."""
    pieces = Counter()
    for w in words:
        for p in pretokenize(" " + w):
            pieces[p] += corpus_counts.get(w, 0) + 1
    seqs = {p: list(p) for p in pieces}
    merges = []
    while any(len(s) > 1 for s in seqs.values()):
        pairs = Counter()
        for p, s in seqs.items():
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += pieces[p]
        best = max(pairs.items(), key=lambda kv: (kv[1], tuple(-ord(c) for c in kv[0][0] + "\0" + kv[0][1])))[0]
        merges.append(best)
        a, b = best
        for p, s in seqs.items():
            seqs[p] = merge_pair(s, a, b)
    return merges


class Tokenizer:
    def __init__(self, merges, chunk_length):
        self.merges = [tuple(m) for m in merges]
        self.ranks = {m: i for i, m in enumerate(self.merges)}
        self.vocab = {}
        for b in B2U.values():  # same order as GPT-2: bytes_to_unicode order
            self.vocab[b] = len(self.vocab)
        for a, b in self.merges:
            self.vocab[a + b] = len(self.vocab)
        self.n_text = len(self.vocab)
        specials = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|translate|>",
                    "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
                    "<|notimestamps|>"]
        self.special = {}
        for s in specials:
            self.special[s] = len(self.vocab) + len(self.special)
        self.timestamps = {}
        n_ts = int(round(chunk_length / 0.02)) + 1
        for i in range(n_ts):
            self.timestamps[f"<|{i * 0.02:.2f}|>"] = self.n_text + len(specials) + i
        self.vocab_size = self.n_text + len(specials) + n_ts
        self.id_to_tok = {v: k for k, v in self.vocab.items()}
        for d in (self.special, self.timestamps):
            for k, v in d.items():
                self.id_to_tok[v] = k
        self.eot = self.special["<|endoftext|>"]
        self.sot = self.special["<|startoftranscript|>"]
        self.en = self.special["<|en|>"]
        self.transcribe = self.special["<|transcribe|>"]
        self.translate = self.special["<|translate|>"]
        self.no_timestamps = self.special["<|notimestamps|>"]
        self.timestamp_begin = self.n_text + len(specials)

    def bpe(self, piece):
        s = list(piece)
        while len(s) > 1:
            cands = [(self.ranks.get((a, b), 1 << 30), i) for i, (a, b) in enumerate(zip(s, s[1:]))]
            r, i = min(cands)
            if r == 1 << 30:
                break
            s = s[:i] + [s[i] + s[i + 1]] + s[i + 2:]
        return s

    def encode(self, text):
        return [self.vocab[t] for p in pretokenize(text) for t in self.bpe(p)]

    def decode(self, ids):
        toks = [self.id_to_tok[i] for i in ids if i < self.n_text]
        return bytes(U2B[c] for c in "".join(toks)).decode("utf-8", errors="replace")

    def ts_token(self, seconds):
        return self.timestamp_begin + int(round(seconds / 0.02))

    # ---- Hugging Face files -------------------------------------------------
    def save_hf(self, out, model_max_length):
        os.makedirs(out, exist_ok=True)

        def dump(name, obj):
            with open(os.path.join(out, name), "w", encoding="utf-8") as f:
                json.dump(obj, f, ensure_ascii=False, indent=2)
                f.write("\n")

        dump("vocab.json", self.vocab)
        with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")
            for a, b in self.merges:
                f.write(f"{a} {b}\n")
        added = dict(self.special)
        added.update(self.timestamps)
        dump("added_tokens.json", added)
        eot = "<|endoftext|>"

        def tokdef(content, special):
            return {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
                    "single_word": False, "special": special}

        spec_list = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|translate|>",
                     "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
                     "<|notimestamps|>"]
        plain = {k: v for k, v in tokdef(eot, True).items() if k != "special"}
        dump("special_tokens_map.json", {
            "additional_special_tokens": [s for s in spec_list if s != eot],
            "bos_token": plain,
            "eos_token": plain,
            "pad_token": plain,
            "unk_token": plain,
        })
        added_decoder = {}
        for k, v in self.special.items():
            added_decoder[str(v)] = tokdef(k, True)
        for k, v in self.timestamps.items():
            added_decoder[str(v)] = tokdef(k, False)
        dump("tokenizer_config.json", {
            "add_bos_token": False,
            "add_prefix_space": False,
            "added_tokens_decoder": added_decoder,
            "additional_special_tokens": [s for s in spec_list if s != eot],
            "bos_token": eot,
            "clean_up_tokenization_spaces": True,
            "eos_token": eot,
            "errors": "replace",
            "model_max_length": model_max_length,
            "pad_token": eot,
            "processor_class": "WhisperProcessor",
            "return_attention_mask": False,
            "tokenizer_class": "WhisperTokenizer",
            "unk_token": eot,
        })
        added_tokens = []
        for k, v in self.special.items():
            added_tokens.append({"id": v, **tokdef(k, True)})
        for k, v in self.timestamps.items():
            added_tokens.append({"id": v, **tokdef(k, False)})

        def sp(name):
            return {"SpecialToken": {"id": name, "type_id": 0}}

        tj = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": added_tokens,
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                              "use_regex": True},
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [sp("<|startoftranscript|>"), sp("<|notimestamps|>"),
                           {"Sequence": {"id": "A", "type_id": 0}}, sp("<|endoftext|>")],
                "pair": [sp("<|startoftranscript|>"), sp("<|notimestamps|>"),
                         {"Sequence": {"id": "A", "type_id": 0}},
                         {"Sequence": {"id": "B", "type_id": 1}}, sp("<|endoftext|>")],
                "special_tokens": {n: {"id": n, "ids": [self.special[n]], "tokens": [n]}
                                   for n in ["<|endoftext|>", "<|startoftranscript|>",
                                             "<|notimestamps|>"]},
            },
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                        "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False,
                      "vocab": self.vocab, "merges": [f"{a} {b}" for a, b in self.merges]},
        }
        dump("tokenizer.json", tj)
