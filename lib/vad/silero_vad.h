// SileroVad: one audio stream through Silero VAD v5 — the recurrent state (LSTM h and c, the
// last 64 samples) and the forward pass of one 512-sample window. Not thread-safe; use one per
// stream and share the model.
//
//   oxi::vad::SileroVad vad(model);
//   float p = vad.process(std::span<const float, 512>(samples.data(), 512));  // speech probability
//
// Callers with arbitrary chunk sizes use VadStream (vad_stream.h), which cuts the windows.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <vector>

#include "lib/vad/silero_vad_model.h"

namespace oxi::vad {

class SileroVad {
 public:
  explicit SileroVad(std::shared_ptr<const SileroVadModel> model);

  // The speech probability of the next kWindow samples (16 kHz mono, in [-1, 1]); carries the
  // LSTM state and the last kContext samples to the next call.
  float process(std::span<const float, kWindow> window);

  // Back to the start of a stream: zero state and context.
  void reset();

  const std::shared_ptr<const SileroVadModel>& model() const { return model_; }

 private:
  std::shared_ptr<const SileroVadModel> model_;
  std::array<float, kContext> context_{};
  std::vector<float> h_, c_;

  // Buffers of one forward pass, sized once.
  std::vector<float> input_;      // [kContext + kWindow + kRightPad]
  std::vector<float> spectrum_;   // [2 * kBins][frames]
  std::vector<float> magnitude_;  // [kBins][frames]
  std::vector<float> x1_, x2_, x3_, x4_;
  std::vector<float> lstm_scratch_;
  std::vector<float> conv_scratch_;
};

}  // namespace oxi::vad
