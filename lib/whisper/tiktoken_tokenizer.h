// Whisper's tokenizer from openai-whisper's tiktoken files (gpt2.tiktoken for English-only
// models, multilingual.tiktoken otherwise): byte-level BPE by rank, as tiktoken does it.
//
// The file has one "base64(token bytes) rank" line per ordinary token, ranks 0..n-1. Text is
// cut into words by the GPT-2 pattern, and each word is merged bytewise: the adjacent pair whose
// concatenation has the lowest rank is merged until no pair is a token. The special tokens
// follow the ranks in the standard Whisper layout (see whisper_vocab.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/whisper/whisper_vocab.h"

namespace oxi::whisper {

class TiktokenTokenizer {
 public:
  // `n_languages`: 99 for every model before large-v3, 100 from it on. Throws oxi::Error naming
  // the file for a malformed line, duplicate or missing ranks.
  explicit TiktokenTokenizer(const std::filesystem::path& path, int n_languages = 99);

  const WhisperVocab& vocab() const { return vocab_; }
  int32_t n_vocab() const { return vocab_.n_vocab; }
  int32_t n_ranks() const { return static_cast<int32_t>(tokens_.size()); }

  // Ordinary text to ids (tiktoken's encode_ordinary: text that looks like a special token is
  // encoded as plain text).
  std::vector<int32_t> encode(std::string_view text) const;
  // Ids to text; special tokens appear as their text ("<|en|>") unless skip_special is set.
  // The result is the concatenated token bytes, which may end inside a UTF-8 sequence.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // The bytes of an ordinary token, or the text of a special one; empty when out of range.
  std::string token_text(int32_t id) const;
  // The id of an ordinary token's exact bytes or of a special token's text.
  std::optional<int32_t> token_id(std::string_view text) const;

 private:
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;
  std::optional<int32_t> rank_of(std::string_view bytes) const;

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::vector<std::string> tokens_;  // bytes by rank
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ranks_;
  WhisperVocab vocab_;
};

}  // namespace oxi::whisper
