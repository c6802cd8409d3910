// The forward pass of Silero VAD v5 (16 kHz), top to bottom as the authors' model runs it.
//
// The whole pass is about 0.7 M multiply-adds per 32 ms window, so it runs single-threaded on
// the kernels directly: handing such small pieces to the backend's thread pool costs more than
// it saves, and a pipeline runs many streams side by side anyway.
#include "lib/vad/silero_vad.h"

#include <algorithm>
#include <cmath>

#include "kernels/math/conv.h"
#include "lib/vad/lstm_cell.h"

namespace oxi::vad {
namespace {

constexpr size_t kInput = kContext + kWindow + kRightPad;        // 640 samples
constexpr size_t kFrames = (kInput - kFilterLength) / kHop + 1;  // 4 STFT frames
constexpr size_t conv_out(size_t length, size_t stride) {        // kernel 3, padding 1
  return (length + 2 - 3) / stride + 1;
}
constexpr size_t kFrames1 = conv_out(kFrames, 1);   // 4
constexpr size_t kFrames2 = conv_out(kFrames1, 2);  // 2
constexpr size_t kFrames3 = conv_out(kFrames2, 2);  // 1
constexpr size_t kFrames4 = conv_out(kFrames3, 1);  // 1
// The encoder leaves one frame: the LSTM cell sees one vector per window, and the authors'
// mean over the output frames is that frame's value.
static_assert(kFrames4 == 1);

kernels::Conv1dShape shape_of(const ConvWeights& w, size_t length) {
  return {.c_in = w.c_in,
          .length = length,
          .c_out = w.c_out,
          .kernel = w.kernel,
          .stride = w.stride,
          .padding = w.padding};
}

kernels::Conv1dShape stft_shape() {
  return {.c_in = 1, .length = kInput, .c_out = 2 * kBins, .kernel = kFilterLength, .stride = kHop};
}

void relu(std::span<float> x) {
  for (float& v : x) v = std::max(v, 0.0f);
}

float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

}  // namespace

SileroVad::SileroVad(std::shared_ptr<const SileroVadModel> model)
    : model_(std::move(model)),
      h_(kHidden),
      c_(kHidden),
      input_(kInput),
      spectrum_(2 * kBins * kFrames),
      magnitude_(kBins * kFrames),
      x1_(128 * kFrames1),
      x2_(64 * kFrames2),
      x3_(64 * kFrames3),
      x4_(kHidden * kFrames4),
      lstm_scratch_(8 * kHidden) {
  const SileroVadWeights& w = model_->weights();
  const size_t scratch = std::max({kernels::conv1d_scratch_floats(stft_shape()),
                                   kernels::conv1d_scratch_floats(shape_of(w.conv1, kFrames)),
                                   kernels::conv1d_scratch_floats(shape_of(w.conv2, kFrames1)),
                                   kernels::conv1d_scratch_floats(shape_of(w.conv3, kFrames2)),
                                   kernels::conv1d_scratch_floats(shape_of(w.conv4, kFrames3))});
  conv_scratch_.resize(scratch);
}

void SileroVad::reset() {
  context_.fill(0.0f);
  std::fill(h_.begin(), h_.end(), 0.0f);
  std::fill(c_.begin(), c_.end(), 0.0f);
}

float SileroVad::process(std::span<const float, kWindow> window) {
  const SileroVadWeights& w = model_->weights();

  // 1. The input: the previous call's last 64 samples, the 512 new ones, then 64 samples
  //    reflected about the last one (ReflectionPad1d((0, 64)): the edge sample is not repeated).
  std::copy(context_.begin(), context_.end(), input_.begin());
  std::copy(window.begin(), window.end(), input_.begin() + kContext);
  const size_t last = kContext + kWindow - 1;
  for (size_t k = 0; k < kRightPad; ++k) input_[last + 1 + k] = input_[last - 1 - k];
  std::copy(window.end() - kContext, window.end(), context_.begin());

  // 2. STFT as a strided convolution with the stored Fourier basis: 258 outputs per
  //    128-sample hop over 256-sample frames, the 129 real parts first, then the imaginary.
  kernels::conv1d(input_, w.stft_basis, {}, stft_shape(), spectrum_, conv_scratch_);

  // 3. Magnitude spectrum: |X| = sqrt(re^2 + im^2), [129][frames].
  for (size_t i = 0; i < kBins * kFrames; ++i) {
    const float re = spectrum_[i], im = spectrum_[kBins * kFrames + i];
    magnitude_[i] = std::sqrt(re * re + im * im);
  }

  // 4. Encoder: four conv1d (kernel 3, padding 1, strides 1, 2, 2, 1), each followed by ReLU.
  kernels::conv1d(magnitude_, w.conv1.weight, w.conv1.bias, shape_of(w.conv1, kFrames), x1_,
                  conv_scratch_);
  relu(x1_);
  kernels::conv1d(x1_, w.conv2.weight, w.conv2.bias, shape_of(w.conv2, kFrames1), x2_,
                  conv_scratch_);
  relu(x2_);
  kernels::conv1d(x2_, w.conv3.weight, w.conv3.bias, shape_of(w.conv3, kFrames2), x3_,
                  conv_scratch_);
  relu(x3_);
  kernels::conv1d(x3_, w.conv4.weight, w.conv4.bias, shape_of(w.conv4, kFrames3), x4_,
                  conv_scratch_);
  relu(x4_);

  // 5. Decoder: one LSTM cell step on the encoder's frame; (h, c) carry to the next window.
  const LstmCellWeights lstm{.weight_ih = w.lstm_weight_ih,
                             .weight_hh = w.lstm_weight_hh,
                             .bias_ih = w.lstm_bias_ih,
                             .bias_hh = w.lstm_bias_hh,
                             .input = kHidden,
                             .hidden = kHidden};
  lstm_cell_step(lstm, x4_, h_, c_, lstm_scratch_);

  // 6. ReLU(h), the 1x1 output convolution to one channel, sigmoid: the speech probability
  //    (dropout precedes the ReLU in training only). The state keeps h before the ReLU.
  float logit = w.final_bias[0];
  for (size_t j = 0; j < kHidden; ++j) logit += w.final_weight[j] * std::max(h_[j], 0.0f);
  return sigmoid(logit);
}

}  // namespace oxi::vad
