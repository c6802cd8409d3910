// The special-token ids of a Whisper vocabulary. Whisper models share one layout: the BPE ranks
// (50256 for the English-only GPT-2 vocabulary, 50257 multilingual), then <|endoftext|>,
// <|startoftranscript|>, one token per language (99, or 100 with Cantonese from large-v3 on),
// <|translate|>, <|transcribe|>, <|startoflm|>, <|startofprev|>, <|nospeech|>,
// <|notimestamps|>, and 1501 timestamps <|0.00|> .. <|30.00|> in steps of 20 ms.
//
// A plain struct so that any source can fill it: the tiktoken files, a whisper.cpp model
// (standard layout from n_vocab), or a Hugging Face checkpoint's added tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oxi::whisper {

struct LanguageInfo {
  std::string_view code;  // "en"
  std::string_view name;  // "english"
};

// openai-whisper's LANGUAGES table in token order (100 entries; models before large-v3 use
// the first 99).
std::span<const LanguageInfo> whisper_languages();

constexpr int32_t kTimestampCount = 1501;          // <|0.00|> .. <|30.00|>
constexpr double kTimestampSeconds = 0.02;         // one step
constexpr int32_t kEnglishRankCount = 50256;       // gpt2.tiktoken
constexpr int32_t kMultilingualRankCount = 50257;  // multilingual.tiktoken

struct WhisperVocab {
  int32_t n_vocab = 0;  // every token, timestamps included
  int32_t eot = -1;     // <|endoftext|>
  int32_t sot = -1;     // <|startoftranscript|>
  int32_t translate = -1;
  int32_t transcribe = -1;
  int32_t sot_lm = -1;    // <|startoflm|>
  int32_t sot_prev = -1;  // <|startofprev|>
  int32_t no_speech = -1;
  int32_t no_timestamps = -1;
  int32_t timestamp_begin = -1;  // <|0.00|>
  bool multilingual = false;     // the model was trained on more than English
  std::vector<std::pair<std::string, int32_t>> languages;  // code and token id, in id order

  std::optional<int32_t> language_token(std::string_view code) const;
  // The language code of a language token id.
  std::optional<std::string_view> language_of(int32_t id) const;
  bool is_timestamp(int32_t id) const { return timestamp_begin >= 0 && id >= timestamp_begin; }
  double timestamp_seconds(int32_t id) const { return (id - timestamp_begin) * kTimestampSeconds; }
  // Text of a special token ("<|en|>", "<|1.24|>"); empty for ordinary tokens.
  std::string special_text(int32_t id) const;
  // Throws oxi::Error when an id (eot, sot, the tasks, no_timestamps, the first timestamp, a
  // language) is outside 0 .. n_vocab - 1; the optional ones (-1) may be absent.
  void validate(const std::string& context) const;
};

// The standard layout after `n_ranks` BPE tokens with the first `n_languages` languages.
WhisperVocab standard_whisper_vocab(int32_t n_ranks, int n_languages);
// The standard layout a model's vocabulary size implies (51864: English-only; 51865:
// multilingual; 51866: large-v3 with Cantonese). nullopt when n_vocab fits no Whisper layout.
std::optional<WhisperVocab> whisper_vocab_for_size(int32_t n_vocab);

}  // namespace oxi::whisper
