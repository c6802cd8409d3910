// TokenizerSpec: a model-agnostic description of a tokenizer (vocabulary, merge data,
// pre-tokenizer, normalization flags, special tokens). The loaders (GGUF metadata,
// tokenizer.json) fill one in; Tokenizer is built from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/tokenizer/pretokenize.h"

namespace oxi::tokenizer {

// GGUF's tokenizer.ggml.token_type values.
enum class TokenType : uint8_t {
  normal = 1,
  unknown = 2,
  control = 3,       // <s>, <|im_start|>: matched in text only when parsing specials
  user_defined = 4,  // added tokens: always matched in text as a whole
  unused = 5,
  byte = 6,  // <0xXX> byte fallback
};

enum class Algorithm {
  sentencepiece,  // merge adjacent pieces by score (llama.cpp's SPM)
  bpe,            // merge by rank: byte-level (GPT-2) or on "▁"-escaped text with byte fallback
  wordpiece,      // BERT: greedy longest match per word
};

// How a WordPiece vocabulary marks word starts and continuations.
enum class WordPieceStyle {
  hashes,         // Hugging Face: "word" starts a word, "##ing" continues one
  phantom_space,  // GGUF (llama.cpp's conversion): "▁word" starts a word, "ing" continues one
};

struct TokenizerSpec {
  Algorithm algorithm = Algorithm::bpe;
  std::vector<std::string> tokens;  // the vocabulary's texts, by id
  std::vector<float> scores;        // sentencepiece: higher merges first (empty: all 0)
  std::vector<TokenType> types;     // by id (empty: all normal)
  // BPE merges, highest priority first.
  std::vector<std::pair<std::string, std::string>> merges;

  PreTokenizer pre_tokenizer = PreTokenizer::none;
  bool byte_level = false;        // BPE over GPT-2's bytes-to-unicode alphabet
  bool byte_fallback = false;     // unknown characters become <0xXX> byte tokens
  bool ignore_merges = false;     // BPE: a word found whole in the vocabulary is kept (Llama 3)
  bool add_space_prefix = false;  // "▁"-escaped text gets a leading "▁" (SentencePiece)
  bool escape_spaces = false;  // spaces become "▁" before merging (SentencePiece, its BPE form)
  // Unicode normalization of the text first (tokenizer.json's NFC normalizer: Qwen2; NFKC).
  enum class Normalization { none, nfc, nfkc } normalization = Normalization::none;

  // WordPiece.
  WordPieceStyle wordpiece_style = WordPieceStyle::hashes;
  bool lowercase = true;  // and accent stripping when strip_accents
  bool strip_accents = true;
  bool split_chinese_chars = true;
  size_t max_chars_per_word = 100;

  // Special tokens.
  std::optional<int32_t> bos, eos, eot, pad, unk;
  // Fill-in-the-middle (code models): prefix, suffix and middle markers, padding, and the
  // repository-level pattern's repo name and file separator. Those the file does not name are
  // found by their text as llama.cpp finds them (<|fim_prefix|>, <PRE>, ...).
  struct Fim {
    std::optional<int32_t> pre, suf, mid, pad, rep, sep;
  } fim;
  bool add_bos = false;  // what encode(text, add_bos=true) adds, per the model
  bool add_eos = false;
  // Added tokens that swallow the whitespace before (lstrip) / after (rstrip) them in text.
  std::vector<int32_t> lstrip_tokens, rstrip_tokens;
};

}  // namespace oxi::tokenizer
