// A naive double-precision Whisper forward pass written from openai-whisper's model.py, with
// no cache and no shared code with lib/whisper: the truth the engine is compared with.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tests/whisper_model/tiny_whisper.h"

namespace oxi::whisper::test {

// (n_frames / 2, n_state) after ln_post, from mel (n_mels x n_frames).
std::vector<double> reference_encoder(const TinyWhisper& m, const std::vector<float>& mel,
                                      int n_frames);

// Logits (n_vocab) of the last of `tokens`, the whole sequence run from position 0. When
// `cross_weights` is given, it receives the cross-attention probabilities of the last token:
// [layer][head][audio position].
std::vector<double> reference_logits(
    const TinyWhisper& m, const std::vector<double>& audio, const std::vector<int32_t>& tokens,
    std::vector<std::vector<std::vector<double>>>* cross_weights = nullptr);

}  // namespace oxi::whisper::test
