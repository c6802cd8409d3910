#include "lib/whisper/logit_filters.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace oxi::whisper {
namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

void mask_range(std::span<float> logits, int64_t begin, int64_t end) {
  begin = std::clamp<int64_t>(begin, 0, static_cast<int64_t>(logits.size()));
  end = std::clamp<int64_t>(end, begin, static_cast<int64_t>(logits.size()));
  std::fill(logits.begin() + begin, logits.begin() + end, kMasked);
}

// openai-whisper's Tokenizer.non_speech_tokens for suppress_tokens' "-1", through the model's
// own tokenizer: symbols that are one token alone or after a space, the music signs always.
std::vector<int32_t> non_speech_symbol_tokens(const WhisperModel& model) {
  static const char* const kSymbols[] = {
      "\"",  "#",  "(",  ")",   "*",   "+",   "/",   ":",  ";",   "<",  "=",  ">",
      "@",   "[",  "\\", "]",   "^",   "_",   "`",   "{",  "|",   "}",  "~",  "「",
      "」",  "『", "』", "<<",  ">>",  "<<<", ">>>", "--", "---", "-(", "-[", "('",
      "(\"", "((", "))", "(((", ")))", "[[",  "]]",  "{{", "}}",  "♪♪", "♪♪♪"};
  static const char* const kMusic[] = {"♩", "♪", "♫", "♬", "♭", "♮", "♯"};
  std::vector<int32_t> out;
  for (const char* s : {" -", " '"})
    if (auto ids = model.encode_text(s); !ids.empty()) out.push_back(ids[0]);
  const auto add = [&](const std::string& symbol, bool always) {
    for (const std::string& form : {symbol, " " + symbol}) {
      const std::vector<int32_t> ids = model.encode_text(form);
      if (!ids.empty() && (ids.size() == 1 || always)) out.push_back(ids[0]);
    }
  };
  for (const char* s : kSymbols) add(s, false);
  for (const char* s : kMusic) add(s, true);
  return out;
}

}  // namespace

double log_sum_exp(std::span<const float> values) {
  float max = kMasked;
  for (float v : values) max = std::max(max, v);
  if (max == kMasked) return kMasked;
  double sum = 0.0;
  for (float v : values) sum += std::exp(static_cast<double>(v) - max);
  return max + std::log(sum);
}

void suppress_blank(std::span<float> logits, std::span<const int32_t> sampled,
                    std::span<const int32_t> blank_tokens) {
  if (!sampled.empty()) return;
  suppress_tokens(logits, blank_tokens);
}

void suppress_tokens(std::span<float> logits, std::span<const int32_t> ids) {
  for (int32_t id : ids)
    if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits[id] = kMasked;
}

void apply_timestamp_rules(std::span<float> logits, std::span<const int32_t> sampled,
                           const TimestampRuleParams& p) {
  const int64_t ts_begin = p.timestamp_begin;
  const int64_t n_vocab = static_cast<int64_t>(logits.size());
  if (ts_begin < 0 || ts_begin >= n_vocab) return;
  if (p.no_timestamps >= 0) suppress_tokens(logits, std::span(&p.no_timestamps, 1));
  if (p.max_timestamp_index >= 0) mask_range(logits, ts_begin + p.max_timestamp_index + 1, n_vocab);

  const size_t n = sampled.size();
  const bool last_was_timestamp = n >= 1 && sampled[n - 1] >= ts_begin;
  const bool penultimate_was_timestamp = n < 2 || sampled[n - 2] >= ts_begin;
  if (last_was_timestamp) {
    if (penultimate_was_timestamp)
      mask_range(logits, ts_begin, n_vocab);  // must be text
    else
      mask_range(logits, 0, p.eot);  // closes a segment: a timestamp or <|endoftext|>
  }
  int64_t last_timestamp = -1;
  for (int32_t t : sampled)
    if (t >= ts_begin) last_timestamp = t;
  if (last_timestamp >= 0) {
    // Never decrease; after text + timestamp the next may repeat it, otherwise it must grow.
    const int64_t first_allowed =
        (last_was_timestamp && !penultimate_was_timestamp) ? last_timestamp : last_timestamp + 1;
    mask_range(logits, ts_begin, first_allowed);
  }
  if (n == 0) {
    mask_range(logits, 0, ts_begin);  // a window starts with a timestamp
    if (p.max_initial_timestamp_index >= 0)
      mask_range(logits, ts_begin + p.max_initial_timestamp_index + 1, n_vocab);
  }

  // If the timestamps together beat every single text token, sample a timestamp.
  const double total = log_sum_exp(logits);
  const double timestamp_logprob = log_sum_exp(logits.subspan(ts_begin)) - total;
  float max_text = kMasked;
  for (int64_t i = 0; i < ts_begin; ++i) max_text = std::max(max_text, logits[i]);
  const double max_text_logprob = static_cast<double>(max_text) - total;
  if (timestamp_logprob > max_text_logprob) mask_range(logits, 0, ts_begin);
}

LogitFilters::LogitFilters(const WhisperModel& model, bool timestamps, bool suppress_blank)
    : suppress_blank_(suppress_blank), timestamps_(timestamps) {
  const WhisperConfig& c = model.config();
  const WhisperVocab& v = model.vocab();
  blank_ = c.begin_suppress_tokens;
  for (int32_t id : c.suppress_tokens) {
    if (id == -1) {
      const std::vector<int32_t> symbols = non_speech_symbol_tokens(model);
      suppress_.insert(suppress_.end(), symbols.begin(), symbols.end());
    } else if (id >= 0) {
      suppress_.push_back(id);
    }
  }
  // openai-whisper always adds the task and control tokens.
  for (int32_t id : {v.transcribe, v.translate, v.sot, v.sot_prev, v.sot_lm, v.no_speech})
    if (id >= 0) suppress_.push_back(id);
  std::sort(suppress_.begin(), suppress_.end());
  suppress_.erase(std::unique(suppress_.begin(), suppress_.end()), suppress_.end());
  rules_.timestamp_begin = v.timestamp_begin;
  rules_.eot = v.eot;
  rules_.no_timestamps = v.no_timestamps;
  rules_.max_initial_timestamp_index = c.max_initial_timestamp_index;
  // One 20 ms timestamp step per encoder position: n_audio_ctx steps span the window.
  rules_.max_timestamp_index = c.n_audio_ctx;
}

void LogitFilters::apply(std::span<float> logits, std::span<const int32_t> sampled) const {
  if (suppress_blank_) suppress_blank(logits, sampled, blank_);
  suppress_tokens(logits, suppress_);
  if (timestamps_) apply_timestamp_rules(logits, sampled, rules_);
}

}  // namespace oxi::whisper
