// One step of an LSTM cell with PyTorch's torch.nn.LSTMCell conventions, on plain f32 weights.
//
//   gates = W_ih x + b_ih + W_hh h + b_hh          (4 * hidden rows, in the order i, f, g, o)
//   c' = sigmoid(f) * c + sigmoid(i) * tanh(g)
//   h' = sigmoid(o) * tanh(c')
#pragma once

#include <cstddef>
#include <span>

namespace oxi::vad {

struct LstmCellWeights {
  std::span<const float> weight_ih;  // [4 * hidden, input]
  std::span<const float> weight_hh;  // [4 * hidden, hidden]
  std::span<const float> bias_ih;    // [4 * hidden]
  std::span<const float> bias_hh;    // [4 * hidden]
  size_t input = 0, hidden = 0;
};

// Updates h and c (hidden floats each) in place from input x. scratch holds 8 * hidden floats.
void lstm_cell_step(const LstmCellWeights& w, std::span<const float> x, std::span<float> h,
                    std::span<float> c, std::span<float> scratch) noexcept;

}  // namespace oxi::vad
