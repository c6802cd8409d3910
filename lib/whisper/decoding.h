// One window's decoding pass, as openai-whisper's DecodingTask runs it with one sample
// (beam_size / best_of = 1): the prompt, greedy or sampled tokens under the logit filters, the
// no-speech probability, the average log-probability and the compression ratio; and the
// temperature fallback of transcribe.py's decode_with_fallback.
//
// The caller has run WhisperState::encode() on the window; decoding reuses that encoder output
// for every temperature it tries.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/whisper/whisper_state.h"

namespace oxi::whisper {

// openai-whisper's sot_sequence: <|startoftranscript|>, then for multilingual models the
// language token and <|transcribe|> or <|translate|>. English-only models use <|startoftranscript|>
// alone. language_token < 0: none (English-only models, or "let the model pick").
std::vector<int32_t> sot_sequence(const WhisperModel& model, int32_t language_token,
                                  bool translate);

struct DecodingOptions {
  std::vector<int32_t> sot_sequence;  // see sot_sequence()
  bool timestamps = true;             // false: <|notimestamps|> follows the sot sequence
  // Text tokens of earlier windows (or an initial prompt): sent after <|startofprev|>, the last
  // n_text_ctx / 2 - 1 of them (DecodingOptions.prompt).
  std::vector<int32_t> prompt;
  int sample_len = 0;  // most tokens to sample; 0: n_text_ctx / 2
  bool suppress_blank = true;
  float temperature = 0.0f;  // 0: greedy; > 0: sample from softmax(logits / temperature)
};

struct DecodingResult {
  std::vector<int32_t> tokens;  // sampled tokens, <|endoftext|> left out
  bool ended = false;        // <|endoftext|> was sampled (else sample_len or the context ran out)
  std::string text;          // the text tokens' bytes (timestamps left out)
  float avg_logprob = 0.0f;  // sum of the sampled tokens' log-probs / (tokens + 1)
  float no_speech_prob = 0.0f;  // P(<|nospeech|>) at the <|startoftranscript|> position
  float temperature = 0.0f;
  double compression_ratio = 0.0;
  bool cancelled =
      false;  // stopped by the cancel flag (the other fields describe the tokens so far)
};

// The full prompt: [<|startofprev|> prompt...] sot_sequence [<|notimestamps|>].
std::vector<int32_t> initial_tokens(const WhisperModel& model, const DecodingOptions& options);

// One pass over the encoded window. `seed` drives sampling (ignored when greedy). Checks
// `cancel` before every token.
DecodingResult decode_window_tokens(WhisperState& state, const DecodingOptions& options,
                                    uint64_t seed, const std::atomic<bool>* cancel = nullptr);

struct FallbackOptions {
  std::vector<float> temperatures = {0.0f};
  float compression_ratio_threshold = 2.4f;  // <= 0: off
  float logprob_threshold = -1.0f;           // NaN or <= -1e9: off
  float no_speech_threshold = 0.6f;          // <= 0: off
};

// decode_with_fallback: try each temperature in turn until the result is neither too
// repetitive (compression ratio above the threshold) nor too unlikely (average log-prob below
// the threshold), unless the window looks silent (no-speech probability above its threshold
// with a low log-prob), which is accepted as is. Returns the last attempt.
DecodingResult decode_with_fallback(WhisperState& state, DecodingOptions options,
                                    const FallbackOptions& fallback, uint64_t seed,
                                    const std::atomic<bool>* cancel = nullptr);

}  // namespace oxi::whisper
