#include "lib/vad/lstm_cell.h"

#include <cmath>

#include "kernels/math/matvec.h"

namespace oxi::vad {
namespace {

float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

}  // namespace

void lstm_cell_step(const LstmCellWeights& w, std::span<const float> x, std::span<float> h,
                    std::span<float> c, std::span<float> scratch) noexcept {
  const size_t n = w.hidden, rows = 4 * n;
  // Both products are taken before h changes: the recurrent half reads the previous h.
  std::span<float> from_input = scratch.first(rows);
  std::span<float> from_state = scratch.subspan(rows, rows);
  kernels::matvec_f32(w.weight_ih, w.input, x.first(w.input), w.bias_ih, from_input);
  kernels::matvec_f32(w.weight_hh, n, std::span<const float>(h.data(), n), w.bias_hh, from_state);
  for (size_t j = 0; j < n; ++j) {
    const float i = sigmoid(from_input[j] + from_state[j]);
    const float f = sigmoid(from_input[n + j] + from_state[n + j]);
    const float g = std::tanh(from_input[2 * n + j] + from_state[2 * n + j]);
    const float o = sigmoid(from_input[3 * n + j] + from_state[3 * n + j]);
    c[j] = f * c[j] + i * g;
    h[j] = o * std::tanh(c[j]);
  }
}

}  // namespace oxi::vad
