#include "lib/whisper/language_detection.h"

#include <cmath>
#include <limits>

namespace oxi::whisper {

LanguageResult detect_language(WhisperState& state) {
  const WhisperVocab& v = state.model().vocab();
  LanguageResult result;
  if (v.languages.empty()) return result;
  const int32_t sot = v.sot;
  const std::span<const float> logits = state.decode(std::span(&sot, 1), 0);
  float max = -std::numeric_limits<float>::infinity();
  for (const auto& [code, id] : v.languages) max = std::max(max, logits[id]);
  double total = 0.0;
  for (const auto& [code, id] : v.languages)
    total += std::exp(static_cast<double>(logits[id]) - max);
  for (const auto& [code, id] : v.languages) {
    const float p = static_cast<float>(std::exp(static_cast<double>(logits[id]) - max) / total);
    result.probabilities.emplace_back(code, p);
    if (p > result.probability) {
      result.probability = p;
      result.language = code;
      result.token = id;
    }
  }
  return result;
}

}  // namespace oxi::whisper
