// Internals shared by tokenizer.cpp and the per-algorithm files (not part of the API).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/tokenizer/tokenizer.h"

namespace oxi::tokenizer {

// std::string keys looked up by string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct BpeMerge {
  int32_t rank;
  int32_t result;  // the merged token's id
};

struct Tokenizer::Impl {
  TokenizerSpec spec;
  StringMap<int32_t> ids_by_text;
  // BPE: (left id << 32 | right id) -> merge.
  std::unordered_map<uint64_t, BpeMerge> merges;
  // Byte-level BPE: each byte's character in GPT-2's alphabet (UTF-8) and the way back.
  std::array<std::string, 256> byte_chars;
  std::unordered_map<char32_t, uint8_t> char_bytes;
  // <0xXX> tokens by byte value, -1 where absent.
  std::array<int32_t, 256> byte_tokens{};
  // WordPiece: word-initial and continuation pieces, in the vocabulary's style normalized.
  StringMap<int32_t> word_starts, continuations;
  // Tokens matched whole in text (control, unknown, user-defined), by first byte, longest first.
  std::array<std::vector<int32_t>, 256> special_tokens;
  std::vector<uint8_t> lstrip, rstrip;  // by id

  int32_t find(std::string_view text) const {
    const auto it = ids_by_text.find(text);
    return it == ids_by_text.end() ? -1 : it->second;
  }
  TokenType type(int32_t id) const {
    return spec.types.empty() ? TokenType::normal : spec.types[static_cast<size_t>(id)];
  }
  // Appends the byte-fallback tokens of `bytes`, or unk (once) when the vocabulary has none.
  void append_bytes(std::string_view bytes, std::vector<int32_t>& out) const;
};

// Appends the ids of one stretch of plain text (no special tokens in it). `at_start`: the text
// begins the input or follows a special token (where SentencePiece adds its space prefix).
void encode_sentencepiece(const Tokenizer::Impl& impl, std::string_view text, bool at_start,
                          std::vector<int32_t>& out);
void encode_bpe(const Tokenizer::Impl& impl, std::string_view text, bool at_start,
                std::vector<int32_t>& out);
void encode_wordpiece(const Tokenizer::Impl& impl, std::string_view text,
                      std::vector<int32_t>& out);
// BERT's normalization and pre-tokenization: the words WordPiece looks up.
std::vector<std::string> bert_words(const TokenizerSpec& spec, std::string_view text);

// GPT-2's bytes-to-unicode table: the code point that stands for each byte.
std::array<char32_t, 256> gpt2_byte_to_code_point();

}  // namespace oxi::tokenizer
