#!/usr/bin/env python3
"""Writes tests/tokenizer/pretokenize_cases.json: strings and how each pre-tokenizer's regex
passes cut them, evaluated by Perl's regex engine (the reference for the hand-written matchers
of lib/tokenizer/pretokenize.cpp). Perl's regexes have what the published patterns need and
Hugging Face's Oniguruma has too: \\p{L} / \\p{N} / \\p{P} general categories, \\s as
White_Space, lookahead, greedy alternation with backtracking, (?i:) with Unicode case folding.

Each pass is a regex split that keeps the matches and the text between them (Hugging Face's
Split(..., "Isolated"), llama.cpp's unicode_regex_split), applied to every piece of the pass
before; `$` is the piece's end. The steps that are not regexes in the model files
(pre_tokenizer_steps spells them <digits>, <punctuation>, <digit-runs>) are written here as the
regexes they amount to, and the classes as code point ranges: Hugging Face's Digits(individual_digits) isolates each \\p{N}
(Rust's char::is_numeric), its Punctuation("contiguous") keeps runs of \\p{P} and the ASCII
punctuation that is not \\p{P}, and Falcon's Digits after ByteLevel sees ASCII digits only
(other digits are byte-level letters by then).

The strings are not the shared vocabulary cases (those stay in ../shared): fixed cases for the
patterns' corners, then random mixes of words, digits of several scripts, punctuation,
symbols, emoji, combining marks, contractions and every kind of whitespace. Run from the
source root with a Perl of the same Unicode version as lib/tokenizer/unicode_tables.h:

    python3 tests/reference/gen_pretokenize_cases.py

OXI_RANDOM_TEXTS=N writes N random strings instead of 260 (a wider check, not committed:
20000 agreed with the matchers when this was written).
"""
import json
import os
import random
import subprocess
import unicodedata

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
         r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# Seed-Coder's (its tokenizer.json): qwen2's with the punctuation run not taking newlines after it
SEED_CODER = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}"
              r"| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+")
# Qwen3.5's (llama.cpp's qwen35): qwen2's with marks in the words and not in the punctuation
QWEN35 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
          r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# Tekken's and o200k's (GPT-4o) patterns, from their tokenizer.json files: cased words
CASED_UPPER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"
CASED_LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
TEKKEN = (r"[^\r\n\p{L}\p{N}]?" + CASED_UPPER + "*" + CASED_LOWER + "+"
          r"|[^\r\n\p{L}\p{N}]?" + CASED_UPPER + "+" + CASED_LOWER + "*"
          r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
GPT4O = (r"[^\r\n\p{L}\p{N}]?" + CASED_UPPER + "*" + CASED_LOWER + "+" + CONTRACTION +
         r"|[^\r\n\p{L}\p{N}]?" + CASED_UPPER + "+" + CASED_LOWER + "*" + CONTRACTION +
         r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def char_class(ranges):
    """A regex character class of (first, last) code point ranges, in \\x{...} escapes."""
    return "[" + "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}"
                         for a, b in ranges) + "]"


# DeepSeek LLM's classes (its tokenizer.json's Split patterns), as code point ranges
DEEPSEEK_LETTERS = "\\s?" + char_class([
    (0x41, 0x5A), (0x61, 0x7A), (0xB5, 0xB5), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x1BA),
    (0x1BC, 0x1BF), (0x1C4, 0x293), (0x295, 0x2AF), (0x370, 0x373), (0x376, 0x377),
    (0x37B, 0x37D), (0x37F, 0x37F), (0x386, 0x386), (0x388, 0x38A), (0x38C, 0x38C),
    (0x38E, 0x3A1), (0x3A3, 0x3F5), (0x3F7, 0x481), (0x48A, 0x52F), (0x531, 0x556),
    (0x10A0, 0x10C5), (0x13A0, 0x13F5), (0x13F8, 0x13FD), (0x1C90, 0x1CBA), (0x1CBD, 0x1CBF),
    (0x1D00, 0x1D2B), (0x1D6B, 0x1D77), (0x1D79, 0x1D9A), (0x1E00, 0x1F15), (0x1F18, 0x1F1D),
    (0x1F20, 0x1F45), (0x1F48, 0x1F4D), (0x1F50, 0x1F57), (0x1F59, 0x1F59), (0x1F5B, 0x1F5B),
    (0x1F5D, 0x1F5D), (0x1F5F, 0x1F7D), (0x1F80, 0x1FB4), (0x1FB6, 0x1FBC), (0x1FBE, 0x1FBE),
    (0x1FC2, 0x1FC4), (0x1FC6, 0x1FCC), (0x1FD0, 0x1FD3), (0x1FD6, 0x1FDB), (0x1FE0, 0x1FEC),
    (0x1FF2, 0x1FF4), (0x1FF6, 0x1FFC), (0x2102, 0x2102), (0x2107, 0x2107), (0x210A, 0x2113),
    (0x2115, 0x2115), (0x2119, 0x211D), (0x2124, 0x2124), (0x2126, 0x2126), (0x2128, 0x2128),
    (0x212A, 0x212D), (0x212F, 0x2134), (0x2139, 0x2139), (0x213C, 0x213F), (0x2145, 0x2149),
    (0x214E, 0x214E), (0x2183, 0x2184), (0x2C00, 0x2C7B), (0x2C7E, 0x2CE4), (0x2CEB, 0x2CEE),
    (0x2CF2, 0x2CF3), (0xA640, 0xA66D), (0xA680, 0xA69B), (0xA722, 0xA76F), (0xA771, 0xA787),
    (0xA78B, 0xA78E), (0xAB70, 0xABBF), (0xFB00, 0xFB06), (0xFB13, 0xFB17), (0xFF21, 0xFF3A),
    (0xFF41, 0xFF5A), (0x10400, 0x1044F), (0x104B0, 0x104D3), (0x104D8, 0x104FB),
    (0x10C80, 0x10CB2), (0x10CC0, 0x10CF2), (0x118A0, 0x118DF), (0x1E900, 0x1E943)]) + "+"
DEEPSEEK_PUNCT = "\\s?" + char_class([(0x21, 0x2F), (0x3A, 0x7E), (0xFF01, 0xFF0F),
                                       (0xFF1A, 0xFF5E), (0x2018, 0x201F), (0x3000, 0x3002)]) + "+"
CJK = char_class([(0x4E00, 0x9FA5), (0x0800, 0x4E00), (0xAC00, 0xD7FF)]) + "+"
# DeepSeek V3's passes (its tokenizer.json; Hunyuan dense's too) and AFMoE's (llama.cpp: its digit
# pass is a custom split, written here as the regex it amounts to, then Asian scripts' runs)
DEEPSEEK_V3_WORDS = (r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+"""
                     r"|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*"
                     r"|\s*[\r\n]+|\s+(?!\S)|\s+")
DEEPSEEK_V3 = [r"\p{N}{1,3}", char_class([(0x4E00, 0x9FA5), (0x3040, 0x309F), (0x30A0, 0x30FF)]) + "+",
               DEEPSEEK_V3_WORDS]
AFMOE_ASIAN = char_class([
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x3040, 0x309F), (0x30A0, 0x30FF),
    (0xFF65, 0xFF9F), (0x2F00, 0x2FDF), (0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1780, 0x17FF),
    (0x1000, 0x109F), (0xAA60, 0xAA7F), (0xA9E0, 0xA9FF), (0xAC00, 0xD7AF), (0x1100, 0x11FF)]) + "+"
AFMOE = [r"\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N}))", AFMOE_ASIAN, DEEPSEEK_V3_WORDS]
BLOOM = " ?[^(\\s|.,!?" + "".join(f"\\x{{{ord(c):X}}}" for c in "\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c") + ")]+"
PUNCT_RUN = r"[\p{P}\$\+<=>\^~\|`]+"
PUNCT_RUN_NO_BACKQUOTE = r"[\p{P}\$\+<=>\^~\|]+"
LLAMACPP_DEFAULT_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"

# kind -> the regexes of its passes, in order
KINDS = {
    "gpt2": [GPT2],
    "llama3": [LLAMA3],
    "qwen2": [QWEN2],
    "qwen35": [QWEN35],
    "tekken": [TEKKEN],
    "gpt4o": [GPT4O],
    "seed_coder": [SEED_CODER],
    "deepseek_llm": ["[\\r\\n]", DEEPSEEK_LETTERS, DEEPSEEK_PUNCT, "\\s+\\z", CJK, "\\p{N}+"],
    "deepseek_coder": ["[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", CJK, "\\p{N}"],
    "deepseek_v3": DEEPSEEK_V3,
    "afmoe": AFMOE,
    "falcon": [PUNCT_RUN, GPT2, "[0-9]+", "[0-9][0-9][0-9]"],
    "starcoder": [r"\p{N}", GPT2],
    # llama.cpp's passes for Chameleon (its last one gpt2's without the final \s+ alternative)
    "chameleon": [r"<sentinel:[0-9]+>", r"(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
                  r"([\t\n]|    |  )", r"\p{N}", r"[\p{P}!-/:-@\[-`{-~]", LLAMACPP_DEFAULT_GPT2],
    # llama.cpp's passes for SuperBPE; its std::regex \d is ASCII, so (?a) for Perl's
    "superbpe": [r"\p{N}+", r"(?a)(?=(\d{3})+(?!\d))"],
    "bloom": [BLOOM],
    "viking": [BLOOM, r"\p{N}"],
    # llama.cpp's passes for a BPE vocabulary without a pre-tokenizer name
    "bpe_default": [PUNCT_RUN_NO_BACKQUOTE, LLAMACPP_DEFAULT_GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
}

PERL = r'''
use strict; use warnings; use JSON::PP; use Unicode::UCD;
my $req = JSON::PP->new->utf8->decode(do { local $/; <STDIN> });
my %out = (unicode_version => Unicode::UCD::UnicodeVersion(), perl => sprintf("%vd", $^V));
for my $kind (sort keys %{$req->{kinds}}) {
  my @res;
  my @regexes = map { qr/$_/ } @{$req->{kinds}{$kind}};
  for my $text (@{$req->{texts}}) {
    my @pieces = ($text);
    for my $re (@regexes) {
      my @next;
      for my $p (@pieces) {
        my $last = 0;
        while ($p =~ /$re/g) {
          my ($s, $e) = ($-[0], $+[0]);
          if ($e == $s) {  # an empty match (a lookahead) cuts there, as llama.cpp's split does
            push @next, substr($p, $last, $s - $last) if $s > $last;
            $last = $s;
            next;
          }
          push @next, substr($p, $last, $s - $last) if $s > $last;
          push @next, substr($p, $s, $e - $s);
          $last = $e;
        }
        push @next, substr($p, $last) if $last < length $p;
      }
      @pieces = @next;
    }
    push @res, [map { length } @pieces];
  }
  $out{kinds}{$kind} = \@res;
}
print JSON::PP->new->utf8->canonical->encode(\%out);
'''

WORDS = ["Hello", "world", "the", "QUICK", "brown", "fOx", "naïve", "café", "Straße", "ǅemal",
         "Привет", "мир", "Γειά", "σου", "שלום", "مرحبا", "नमस्ते", "हिन्दी", "中文", "日本語",
         "カタカナ", "ひらがな", "한국어", "ไทย", "ລາວ", "ខ្មែរ", "မြန်မာ", "ｶﾀｶﾅ", "⼀⼆", "㐀㐁", "鿐", "Ελληνικά", "ǈ", "ﬁne", "ℌilbert", "𝔘nicode",
         "Ꙁ", "ᏣᎳᎩ", "ⰀⰁ", "𐐀𐐁", "e\u0301", "a\u0308b", "x\u200dy", "I", "a", "ſ", "µ", "K"]
DIGITS = ["0", "7", "42", "123", "1234", "12345", "1234567", "12345678", "3.14", "1,000", "٣٤٥", "३४", "３４５", "²",
          "½", "Ⅻ", "①", "𝟙𝟚", "0x1F", "10%", "v2", "2024-12-05"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + [
    "...", "…", "«", "»", "„", "¿", "¡", "。", "、", "，", "！", "（", "）", "——", "–", "·", "‘",
    "’", "“", "”", "।", "۔", "،", "؟", "‼", "⁉", "〃", "・", "、。", "!!", "?!", "::", "->", "=>",
    "<<", "``", "'''", "\"\"\""]
SYMBOLS = ["€", "£", "©", "™", "✓", "→", "∑", "∞", "°", "±", "§", "¶", "🦙", "🚀", "👍🏽", "👨‍👩‍👧",
           "❤️", "🇫🇷", "⚡", "\u00ad", "\u200b", "\ufeff", "\x01", "\x7f", "\ue000", "\U0001d11e"]
SPACES = [" ", " ", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", " \n", "\n ", "\t\t",
          "\u00a0", "\u2003", "\u3000", "\u000b", "\u000c", "\u0085", "\u2028", "\u1680",
          " \t\n", "\n\n\n ", "\u202f"]
CONTRACTIONS = ["'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'ve", "'VE", "'m", "'M", "'ll",
                "'LL", "'lL", "'d", "'D", "'x", "'", "''", "'ſ", "’s", "'st", "'rev", "'l"]

FIXED = [
    "", " ", "  ", "\n", " \n", "a", "Hello world", "Hello  world", "Hello   world  ",
    "I've been 'there' 123 4567!!", "I'VE DONE IT'S", "(hello) \n x", "!!\n\nok",
    "  leading and trailing  ", "tabs\tand\nnewlines\r\nend", "x \t y", "a\u00a0b", "a \u00a0b",
    "12345678901", "٣٤٥٦٧", "3,141,592.65", "'s's'", "don't won't can't", "ſ'ſ 'ſ",
    "    def f(x):\n        return x**2\n", "```python\nprint('hi')\n```", "<|im_start|>user",
    "🦙🦙 llama", "中文English混合123", "𝟙𝟚𝟛 ½ ²", "trailing spaces   ", "\n\n\n",
    "   \n   ", "a\n\n b", "word.\nNext", "e\u0301\u0301 x", "ǅ ǈ ǋ", "end'", "'", "''s",
    "camelCaseWord XMLHttpRequest iPhone McDonald's", "ALLCAPSlower HELLO'S Don'T", "ǅemal ǈUB",
    "\u0301a \u0301 A\u0301B\u0301c", "ʰʰA ʰa Aʰ aʰB", "中A文b", "path/to/file!\n/x //\n\n/",
    "'S'S 's ''T",
    # Chameleon's special passes
    "<sentinel:0><sentinel:12>x <sentinel:> <sentinel:7", "IMGIMGABCZ IMGIMGAZIMGIMGIIIIZ",
    "IMGIMGAAAAAZ IMGIMGZ IMGIMGJZ imgimgaz", "a b  c   d    e     f\t\tg\n\n h",
    "x\t \t  \n   \r\n", "a!b@c[d`e{f~g¿h«i»j—k", "<|im_start|>  <sentinel:3>IMGIMGHZ",
    # SuperBPE's cuts: runs in threes from the right, non-ASCII numbers between them
    "1 12 123 1234 12345 123456 1234567", "12½345 ½123 123½ 1½1½1 ٣٤٥٦123456 １２３４5678",
]


def random_text(rng):
    pools = [WORDS] * 5 + [DIGITS] * 2 + [PUNCT] * 2 + [SYMBOLS, SPACES, SPACES, SPACES,
                                                         CONTRACTIONS]
    return "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(2, 14)))


def main():
    rng = random.Random(2026)
    texts = FIXED + [random_text(rng) for _ in range(int(os.environ.get("OXI_RANDOM_TEXTS", "260")))]
    request = {"texts": texts, "kinds": KINDS}
    done = subprocess.run(["perl", "-e", PERL], input=json.dumps(request).encode(),
                          capture_output=True, check=True)
    result = json.loads(done.stdout)
    if result["unicode_version"] != unicodedata.unidata_version:
        raise SystemExit(f"Perl's Unicode {result['unicode_version']} is not Python's "
                         f"{unicodedata.unidata_version} (lib/tokenizer/unicode_tables.h)")
    out = {
        "unicode_version": result["unicode_version"],
        "generator": f"tests/reference/gen_pretokenize_cases.py, Perl {result['perl']}",
        "texts": texts,
        "kinds": {k: {"regexes": regexes, "lengths": result["kinds"][k]}
                  for k, regexes in KINDS.items()},
    }
    path = os.path.join("tests", "tokenizer", "pretokenize_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"{path}: {len(texts)} texts x {len(KINDS)} pre-tokenizers")


if __name__ == "__main__":
    main()
