// The text side of a Whisper checkpoint: ids <-> text through whichever tokenizer the
// checkpoint ships (HF tokenizer.json or vocab.json + merges.txt, openai's tiktoken rank files,
// or the vocabulary inside a whisper.cpp file), plus the WhisperVocab of special ids.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/formats/hf_dir.h"
#include "lib/whisper/whisper_vocab.h"

namespace oxi::whisper {

class WhisperText {
 public:
  virtual ~WhisperText() = default;
  const WhisperVocab& vocab() const { return vocab_; }
  // The model's flag (config), which a vocabulary's size alone cannot tell for custom models.
  void set_multilingual(bool multilingual) { vocab_.multilingual = multilingual; }

  // Ordinary text to ids (no special tokens are parsed).
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // The bytes of the ordinary tokens of `ids`; special tokens are left out.
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  // The bytes of an ordinary token, or the text of a special one ("<|en|>"); empty out of range.
  virtual std::string token_text(int32_t id) const = 0;

 protected:
  WhisperVocab vocab_;
};

// openai-whisper's tiktoken file; n_vocab picks the language count (51866: 100, else 99) and
// is checked against the file.
std::unique_ptr<WhisperText> tiktoken_text(const std::filesystem::path& rank_file, int32_t n_vocab);

// A whisper.cpp file's vocabulary (token bytes by id; tokens that are not valid UTF-8 alone are
// stored as U+FFFD there, so prefer the tiktoken files when they are at hand). The ids are BPE
// ranks; the special tokens follow in the standard layout for n_vocab.
std::unique_ptr<WhisperText> ggml_vocab_text(std::vector<std::string> tokens, int32_t n_vocab,
                                             const std::string& context);

// A Hugging Face directory's tokenizer: tokenizer.json, or vocab.json + merges.txt +
// added_tokens.json. Special ids come from the token texts and generation_config.json
// (lang_to_id, task_to_id, no_timestamps_token_id); nothing is assumed about their values.
std::unique_ptr<WhisperText> hf_text(const hf::Directory& dir,
                                     const nlohmann::json& generation_config, int32_t n_vocab,
                                     bool multilingual);

// openai-whisper's Tokenizer.non_speech_tokens: symbols and speaker-tag punctuation that are
// suppressed by default.
std::vector<int32_t> non_speech_tokens(const WhisperText& text);

}  // namespace oxi::whisper
