// WhisperEncoder: Whisper's audio encoder with its working memory, apart from any stream's
// WhisperState, so that one encoder can serve several streams (EncoderBatcher). encode() takes
// a batch of windows: the matrix products run once over all windows' positions stacked (each
// weight matrix is read once per batch), the convolutions and attention stay within a window.
// A window's result does not depend on the batch beyond float summation order (a window of a
// few positions alone takes the matmul's few-row path; in a batch it rides the GEMM).
//
// Not thread-safe: one caller at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "lib/whisper/whisper_model.h"

namespace oxi::whisper {

class WhisperEncoder {
 public:
  struct Window {
    std::span<const float> mel;         // n_mels x n_frames, row-major
    size_t n_frames = 0;                // 1 .. config().n_frames; positions = ceil(n_frames / 2)
    std::vector<float>* out = nullptr;  // resized to (positions, n_audio_state), after ln_post
  };

  explicit WhisperEncoder(std::shared_ptr<const WhisperModel> model);

  // Throws oxi::Error naming the problem when a window's size does not fit the model.
  static void check(const WhisperConfig& config, const Window& window);
  static size_t positions(size_t n_frames) { return (n_frames - 1) / 2 + 1; }

  // Encodes every window (all are checked first: nothing is computed when one is wrong).
  void encode(std::span<const Window> windows, backends::Backend& backend);

  // Gives the working memory back (the next encode() allocates it again): for an encoder that
  // idles between a live stream's passes.
  void release_working_memory();

 private:
  static constexpr size_t kMlpRows = 256;
  static size_t mlp_chunk_rows(size_t rows_left);
  void conv_stem(const Window& window, size_t first_row, backends::Backend& backend);
  void block(size_t il, std::span<const Window> windows, backends::Backend& backend);

  std::shared_ptr<const WhisperModel> model_;
  std::vector<float> conv1_out_;  // (n_audio_state, n_frames) of one window
  std::vector<float> conv2_out_;  // (n_audio_state, positions) of one window
  // (stacked positions of the batch, state / mlp)
  std::vector<float> x_, h_, q_, k_, v_, attn_;
  std::vector<float> mlp_;         // (< 2 * kMlpRows, mlp): one chunk of the MLP's hidden layer
  std::vector<size_t> first_row_;  // each window's first stacked row, then the total
};

}  // namespace oxi::whisper
