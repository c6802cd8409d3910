#include "lib/whisper/decoding.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lib/core/error.h"
#include "lib/whisper/compression_ratio.h"
#include "lib/whisper/logit_filters.h"

namespace oxi::whisper {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A uniform double in [0, 1) from the top 53 bits.
double uniform01(uint64_t& state) {
  return static_cast<double>(splitmix64(state) >> 11) * 0x1p-53;
}

// log_softmax(logits)[id].
double log_prob(std::span<const float> logits, int32_t id, double log_total) {
  return static_cast<double>(logits[id]) - log_total;
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Categorical(logits / temperature).sample()
int32_t sample(std::span<const float> logits, float temperature, uint64_t& rng) {
  const float max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> weights(logits.size());
  double total = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    weights[i] = std::isinf(logits[i]) ? 0.0 : std::exp((logits[i] - max) / temperature);
    total += weights[i];
  }
  double u = uniform01(rng) * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] == 0.0) continue;
    if (u < weights[i]) return static_cast<int32_t>(i);
    u -= weights[i];
  }
  return argmax(logits);  // rounding left u past the end: the most likely token
}

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<int32_t> sot_sequence(const WhisperModel& model, int32_t language_token,
                                  bool translate) {
  const WhisperVocab& v = model.vocab();
  std::vector<int32_t> seq = {v.sot};
  if (language_token >= 0) {
    seq.push_back(language_token);
    const int32_t task = translate ? v.translate : v.transcribe;
    if (task < 0)
      throw Error(model.path().string(),
                  translate ? "the model has no <|translate|> token" : "no <|transcribe|> token");
    seq.push_back(task);
  } else if (translate) {
    throw Error(model.path().string(), "translation needs a multilingual model");
  }
  return seq;
}

std::vector<int32_t> initial_tokens(const WhisperModel& model, const DecodingOptions& options) {
  const WhisperVocab& v = model.vocab();
  std::vector<int32_t> tokens;
  if (!options.prompt.empty() && v.sot_prev >= 0) {
    const size_t keep =
        std::min(options.prompt.size(), static_cast<size_t>(model.config().n_text_ctx / 2 - 1));
    tokens.push_back(v.sot_prev);
    tokens.insert(tokens.end(), options.prompt.end() - static_cast<ptrdiff_t>(keep),
                  options.prompt.end());
  }
  tokens.insert(tokens.end(), options.sot_sequence.begin(), options.sot_sequence.end());
  if (!options.timestamps && v.no_timestamps >= 0) tokens.push_back(v.no_timestamps);
  return tokens;
}

DecodingResult decode_window_tokens(WhisperState& state, const DecodingOptions& options,
                                    uint64_t seed, const std::atomic<bool>* cancel) {
  const WhisperModel& model = state.model();
  const WhisperVocab& v = model.vocab();
  const int n_ctx = model.config().n_text_ctx;
  const size_t n_vocab = static_cast<size_t>(model.config().n_vocab);
  const std::vector<int32_t> init = initial_tokens(model, options);
  if (init.size() >= static_cast<size_t>(n_ctx))
    throw Error(model.path().string(), "the prompt fills the decoder's context");
  const size_t sot_index =
      static_cast<size_t>(std::find(init.begin(), init.end(), v.sot) - init.begin());
  const int sample_len = options.sample_len > 0 ? options.sample_len : n_ctx / 2;
  const LogitFilters filters(model, options.timestamps, options.suppress_blank);

  DecodingResult result;
  result.temperature = options.temperature;
  uint64_t rng = seed;

  // The prompt before <|startoftranscript|> needs no logits; from it on, every row (the
  // no-speech probability is read at the <|startoftranscript|> position).
  if (sot_index > 0) state.decode(std::span(init).first(sot_index), 0);
  std::span<const float> all = state.decode(std::span(init).subspan(sot_index), sot_index, true);
  if (v.no_speech >= 0 && static_cast<size_t>(v.no_speech) < n_vocab) {
    const std::span<const float> at_sot = all.first(n_vocab);
    result.no_speech_prob =
        static_cast<float>(std::exp(log_prob(at_sot, v.no_speech, log_sum_exp(at_sot))));
  }
  std::vector<float> logits(all.end() - static_cast<ptrdiff_t>(n_vocab), all.end());

  double sum_logprob = 0.0;
  std::vector<int32_t>& sampled = result.tokens;
  for (int i = 0; i < sample_len; ++i) {
    if (cancel && cancel->load(std::memory_order_relaxed)) {
      result.cancelled = true;
      break;
    }
    filters.apply(logits, sampled);
    const double log_total = log_sum_exp(logits);
    int32_t token = v.eot;
    if (std::isfinite(log_total))
      token =
          options.temperature > 0.0f ? sample(logits, options.temperature, rng) : argmax(logits);
    if (std::isfinite(log_total)) sum_logprob += log_prob(logits, token, log_total);
    if (token == v.eot) {
      result.ended = true;
      break;
    }
    sampled.push_back(token);
    const size_t position = init.size() + sampled.size() - 1;
    if (position >= static_cast<size_t>(n_ctx) || i + 1 == sample_len) break;
    const std::span<const float> next = state.decode(std::span(&sampled.back(), 1), position);
    logits.assign(next.begin(), next.end());
  }

  result.avg_logprob = static_cast<float>(sum_logprob / static_cast<double>(sampled.size() + 1));
  result.text = model.decode_text(sampled);
  result.compression_ratio = compression_ratio(trim(result.text));
  return result;
}

DecodingResult decode_with_fallback(WhisperState& state, DecodingOptions options,
                                    const FallbackOptions& fallback, uint64_t seed,
                                    const std::atomic<bool>* cancel) {
  const std::vector<float> temperatures =
      fallback.temperatures.empty() ? std::vector<float>{0.0f} : fallback.temperatures;
  const bool logprob_check =
      std::isfinite(fallback.logprob_threshold) && fallback.logprob_threshold > -1e9f;
  DecodingResult result;
  for (size_t k = 0; k < temperatures.size(); ++k) {
    options.temperature = temperatures[k];
    uint64_t attempt_seed = seed ^ (0xA24BAED4963EE407ull * (k + 1));
    result = decode_window_tokens(state, options, splitmix64(attempt_seed), cancel);
    if (result.cancelled) break;
    bool needs_fallback = false;
    if (fallback.compression_ratio_threshold > 0.0f &&
        result.compression_ratio > fallback.compression_ratio_threshold)
      needs_fallback = true;  // too repetitive
    if (logprob_check && result.avg_logprob < fallback.logprob_threshold)
      needs_fallback = true;  // too unlikely
    if (fallback.no_speech_threshold > 0.0f &&
        result.no_speech_prob > fallback.no_speech_threshold && logprob_check &&
        result.avg_logprob < fallback.logprob_threshold)
      needs_fallback = false;  // silence: keep it, the caller skips the window
    if (!needs_fallback) break;
  }
  return result;
}

}  // namespace oxi::whisper
