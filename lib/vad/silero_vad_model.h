// SileroVadModel: the weights of Silero VAD v5 for 16 kHz (snakers4/silero-vad, MIT), loaded
// from the authors' safetensors release. Immutable after load: one model serves any number of
// streams (SileroVad) on any number of threads, and elements share it through
// oxi::ModelCache<SileroVadModel>.
//
//   auto model = oxi::vad::SileroVadModel::load("silero_vad_16k.safetensors");
//   auto same = oxi::vad::SileroVadModel::load_spec("org/silero-vad",
//   HubOptions::from_environment());
//
// The tensors, PyTorch shapes (all f32):
//   stft_conv.weight   [258, 1, 256]  rows 0..128 the real, 129..257 the imaginary Fourier basis
//   conv1.weight/bias  [128, 129, 3]  stride 1        conv2  [64, 128, 3]  stride 2
//   conv3.weight/bias  [64, 64, 3]    stride 2        conv4  [128, 64, 3]  stride 1
//   lstm_cell.weight_ih / weight_hh [512, 128], bias_ih / bias_hh [512]  (gates i, f, g, o)
//   final_conv.weight  [1, 128, 1], final_conv.bias [1]
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "lib/hub/hub_options.h"

namespace oxi::vad {

inline constexpr int kSampleRate = 16000;
inline constexpr size_t kWindow = 512;   // new samples per call: 32 ms
inline constexpr size_t kContext = 64;   // samples of the previous call prepended to the window
inline constexpr size_t kRightPad = 64;  // reflected samples appended on the right
inline constexpr size_t kFilterLength = 256;
inline constexpr size_t kHop = 128;
inline constexpr size_t kBins = kFilterLength / 2 + 1;  // 129 frequencies
inline constexpr size_t kHidden = 128;                  // LSTM state size

// One conv1d layer: weight [c_out, c_in, kernel], bias [c_out].
struct ConvWeights {
  std::span<const float> weight;
  std::span<const float> bias;
  size_t c_in = 0, c_out = 0, kernel = 0, stride = 1, padding = 0;
};

struct SileroVadWeights {
  std::span<const float> stft_basis;  // [2 * kBins, 1, kFilterLength]
  ConvWeights conv1, conv2, conv3, conv4;
  std::span<const float> lstm_weight_ih, lstm_weight_hh;  // [4 * kHidden, kHidden]
  std::span<const float> lstm_bias_ih, lstm_bias_hh;      // [4 * kHidden]
  std::span<const float> final_weight;                    // [1, kHidden, 1]
  std::span<const float> final_bias;                      // [1]
};

class SileroVadModel {
 public:
  // A .safetensors file. Throws oxi::Error naming the file and the problem ("not a
  // safetensors file", "tensor 'conv2.weight' not found", "tensor 'conv1.weight' has shape
  // [128, 129, 5], expected [128, 129, 3]").
  static std::shared_ptr<const SileroVadModel> load(const std::filesystem::path& file);

  // `spec` is a .safetensors file, a directory holding silero_vad_16k.safetensors (or a single
  // .safetensors file), or a Hugging Face repo id whose .safetensors files are downloaded
  // through lib/hub.
  static std::shared_ptr<const SileroVadModel> load_spec(std::string_view spec,
                                                         const hub::HubOptions& options);

  const SileroVadWeights& weights() const { return weights_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  SileroVadModel() = default;

  std::filesystem::path path_;
  SileroVadWeights weights_;
  std::shared_ptr<const void> file_;              // the mapping the views point into
  std::vector<std::vector<float>> float_copies_;  // tensors not 4-byte aligned in the file
};

// The .safetensors file `spec` names (see load_spec); downloads it when `spec` is a repo id.
std::filesystem::path resolve_model_file(std::string_view spec, const hub::HubOptions& options);

}  // namespace oxi::vad
