// Spoken-language identification as openai-whisper's detect_language does it: one decoder step
// on <|startoftranscript|> over the encoded window, a softmax restricted to the checkpoint's
// language tokens (99 or 100 for OpenAI's models, as few as one for a custom vocabulary).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lib/whisper/whisper_state.h"

namespace oxi::whisper {

struct LanguageResult {
  std::string language;  // the most probable code ("en"); empty when the model has none
  int32_t token = -1;    // its token id
  float probability = 0.0f;
  std::vector<std::pair<std::string, float>> probabilities;  // every language, in token order
};

// Needs WhisperState::encode() on the window first; overwrites the decoder cache from 0.
LanguageResult detect_language(WhisperState& state);

}  // namespace oxi::whisper
