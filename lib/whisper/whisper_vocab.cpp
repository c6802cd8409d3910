#include "lib/whisper/whisper_vocab.h"

#include <array>
#include <cstdio>

#include "lib/core/error.h"

namespace oxi::whisper {
namespace {

constexpr std::array<LanguageInfo, 100> kLanguages = {{
    {"en", "english"},        {"zh", "chinese"},     {"de", "german"},        {"es", "spanish"},
    {"ru", "russian"},        {"ko", "korean"},      {"fr", "french"},        {"ja", "japanese"},
    {"pt", "portuguese"},     {"tr", "turkish"},     {"pl", "polish"},        {"ca", "catalan"},
    {"nl", "dutch"},          {"ar", "arabic"},      {"sv", "swedish"},       {"it", "italian"},
    {"id", "indonesian"},     {"hi", "hindi"},       {"fi", "finnish"},       {"vi", "vietnamese"},
    {"he", "hebrew"},         {"uk", "ukrainian"},   {"el", "greek"},         {"ms", "malay"},
    {"cs", "czech"},          {"ro", "romanian"},    {"da", "danish"},        {"hu", "hungarian"},
    {"ta", "tamil"},          {"no", "norwegian"},   {"th", "thai"},          {"ur", "urdu"},
    {"hr", "croatian"},       {"bg", "bulgarian"},   {"lt", "lithuanian"},    {"la", "latin"},
    {"mi", "maori"},          {"ml", "malayalam"},   {"cy", "welsh"},         {"sk", "slovak"},
    {"te", "telugu"},         {"fa", "persian"},     {"lv", "latvian"},       {"bn", "bengali"},
    {"sr", "serbian"},        {"az", "azerbaijani"}, {"sl", "slovenian"},     {"kn", "kannada"},
    {"et", "estonian"},       {"mk", "macedonian"},  {"br", "breton"},        {"eu", "basque"},
    {"is", "icelandic"},      {"hy", "armenian"},    {"ne", "nepali"},        {"mn", "mongolian"},
    {"bs", "bosnian"},        {"kk", "kazakh"},      {"sq", "albanian"},      {"sw", "swahili"},
    {"gl", "galician"},       {"mr", "marathi"},     {"pa", "punjabi"},       {"si", "sinhala"},
    {"km", "khmer"},          {"sn", "shona"},       {"yo", "yoruba"},        {"so", "somali"},
    {"af", "afrikaans"},      {"oc", "occitan"},     {"ka", "georgian"},      {"be", "belarusian"},
    {"tg", "tajik"},          {"sd", "sindhi"},      {"gu", "gujarati"},      {"am", "amharic"},
    {"yi", "yiddish"},        {"lo", "lao"},         {"uz", "uzbek"},         {"fo", "faroese"},
    {"ht", "haitian creole"}, {"ps", "pashto"},      {"tk", "turkmen"},       {"nn", "nynorsk"},
    {"mt", "maltese"},        {"sa", "sanskrit"},    {"lb", "luxembourgish"}, {"my", "myanmar"},
    {"bo", "tibetan"},        {"tl", "tagalog"},     {"mg", "malagasy"},      {"as", "assamese"},
    {"tt", "tatar"},          {"haw", "hawaiian"},   {"ln", "lingala"},       {"ha", "hausa"},
    {"ba", "bashkir"},        {"jw", "javanese"},    {"su", "sundanese"},     {"yue", "cantonese"},
}};

// The six tokens between the languages and the timestamps, in order.
constexpr int32_t kTaskAndControlCount = 6;

}  // namespace

std::span<const LanguageInfo> whisper_languages() {
  return kLanguages;
}

void WhisperVocab::validate(const std::string& context) const {
  const auto check = [&](int32_t id, const std::string& what, bool required) {
    if ((id < 0 && required) || id >= n_vocab || id < -1)
      throw Error(context, "the " + what + " token id " + std::to_string(id) +
                               " is outside the vocabulary of " + std::to_string(n_vocab));
  };
  check(eot, "<|endoftext|>", true);
  check(sot, "<|startoftranscript|>", true);
  check(transcribe, "<|transcribe|>", false);
  check(translate, "<|translate|>", false);
  check(sot_lm, "<|startoflm|>", false);
  check(sot_prev, "<|startofprev|>", false);
  check(no_speech, "no-speech", false);
  check(no_timestamps, "<|notimestamps|>", false);
  check(timestamp_begin, "<|0.00|>", false);
  for (const auto& [code, id] : languages) check(id, "<|" + code + "|>", true);
}

std::optional<int32_t> WhisperVocab::language_token(std::string_view code) const {
  for (const auto& [c, id] : languages) {
    if (c == code) return id;
  }
  return std::nullopt;
}

std::optional<std::string_view> WhisperVocab::language_of(int32_t id) const {
  for (const auto& [c, token] : languages) {
    if (token == id) return std::string_view(c);
  }
  return std::nullopt;
}

std::string WhisperVocab::special_text(int32_t id) const {
  if (id < 0 || id >= n_vocab) return {};
  if (is_timestamp(id)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "<|%.2f|>", timestamp_seconds(id));
    return buf;
  }
  if (id == eot) return "<|endoftext|>";
  if (id == sot) return "<|startoftranscript|>";
  if (id == translate) return "<|translate|>";
  if (id == transcribe) return "<|transcribe|>";
  if (id == sot_lm) return "<|startoflm|>";
  if (id == sot_prev) return "<|startofprev|>";
  if (id == no_speech) return "<|nospeech|>";
  if (id == no_timestamps) return "<|notimestamps|>";
  if (auto code = language_of(id)) return "<|" + std::string(*code) + "|>";
  return {};
}

WhisperVocab standard_whisper_vocab(int32_t n_ranks, int n_languages) {
  WhisperVocab v;
  int32_t next = n_ranks;
  v.eot = next++;
  v.sot = next++;
  for (int i = 0; i < n_languages && i < static_cast<int>(kLanguages.size()); ++i) {
    v.languages.emplace_back(std::string(kLanguages[i].code), next++);
  }
  v.translate = next++;
  v.transcribe = next++;
  v.sot_lm = next++;
  v.sot_prev = next++;
  v.no_speech = next++;
  v.no_timestamps = next++;
  v.timestamp_begin = next;
  v.n_vocab = next + kTimestampCount;
  v.multilingual = n_ranks != kEnglishRankCount;
  return v;
}

std::optional<WhisperVocab> whisper_vocab_for_size(int32_t n_vocab) {
  // whisper.cpp's rule: 51865 tokens or more means the multilingual vocabulary.
  const bool multilingual = n_vocab >= 51865;
  const int32_t n_ranks = multilingual ? kMultilingualRankCount : kEnglishRankCount;
  const int32_t n_languages = n_vocab - n_ranks - 2 - kTaskAndControlCount - kTimestampCount;
  if (n_languages < 1 || n_languages > static_cast<int32_t>(kLanguages.size())) {
    return std::nullopt;
  }
  return standard_whisper_vocab(n_ranks, n_languages);
}

}  // namespace oxi::whisper
