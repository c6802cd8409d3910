// The logit filters openai-whisper's DecodingTask applies to each step's logits before choosing
// a token (decoding.py: SuppressBlank, SuppressTokens, ApplyTimestampRules), as functions on
// one row of logits. Masked entries become -infinity.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lib/whisper/whisper_model.h"

namespace oxi::whisper {

// SuppressBlank: at the first sampled step (`sampled` empty), forbid the tokens of " " and
// <|endoftext|> so that a window does not start with a blank or end at once.
void suppress_blank(std::span<float> logits, std::span<const int32_t> sampled,
                    std::span<const int32_t> blank_tokens);

// SuppressTokens: forbid `ids` (ids outside the vocabulary are ignored).
void suppress_tokens(std::span<float> logits, std::span<const int32_t> ids);

struct TimestampRuleParams {
  int32_t timestamp_begin = -1;  // <|0.00|>
  int32_t eot = -1;
  int32_t no_timestamps = -1;            // never sampled in timestamp mode; -1: none
  int max_initial_timestamp_index = -1;  // first timestamp at most <|index * 0.02|>; -1: any
  // Timestamps past the window never make sense: for a model with a shorter window than
  // OpenAI's 30 s (whose last timestamp is the window end) those after it are masked. -1: none.
  int max_timestamp_index = -1;
};

// ApplyTimestampRules on the tokens sampled so far in this window (prompt excluded):
//  - <|notimestamps|> is never sampled;
//  - timestamps come in pairs: after timestamp + timestamp only text (or a timestamp is not
//    allowed), after text + timestamp only a timestamp or <|endoftext|>;
//  - timestamps never decrease, and a segment has a nonzero length (after a closing timestamp
//    the next one is at least as late; after text, strictly later than the last);
//  - the first sampled token is a timestamp no later than max_initial_timestamp_index;
//  - no timestamp after max_timestamp_index (the window's end);
//  - when the total probability of the timestamps exceeds that of the most probable text token,
//    only timestamps remain.
void apply_timestamp_rules(std::span<float> logits, std::span<const int32_t> sampled,
                           const TimestampRuleParams& params);

// log(sum(exp(x))) over `values` (-inf when all are -inf).
double log_sum_exp(std::span<const float> values);

// Every filter of one decoding pass, built from a model's config and vocabulary.
class LogitFilters {
 public:
  // suppress_blank: openai's default; timestamps: timestamp mode (else <|notimestamps|> was
  // given and the rules are off).
  LogitFilters(const WhisperModel& model, bool timestamps, bool suppress_blank = true);

  // Applies SuppressBlank, SuppressTokens and, in timestamp mode, ApplyTimestampRules.
  void apply(std::span<float> logits, std::span<const int32_t> sampled) const;

  const std::vector<int32_t>& suppressed() const { return suppress_; }

 private:
  bool suppress_blank_ = true;
  bool timestamps_ = true;
  std::vector<int32_t> blank_;     // begin_suppress_tokens: " " and <|endoftext|>
  std::vector<int32_t> suppress_;  // suppress_tokens plus the task and control tokens
  TimestampRuleParams rules_;
};

}  // namespace oxi::whisper
