// Element-wise activations and gated units over f32. Outputs may alias inputs.
#pragma once

#include <span>

namespace oxi::kernels {

enum class GeluForm {
  erf,   // 0.5 x (1 + erf(x / sqrt 2)): the exact form (Whisper, BERT)
  tanh,  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): the approximation (GPT-2, Gemma)
};

void gelu(std::span<const float> x, std::span<float> y, GeluForm form) noexcept;

// x * sigmoid(x)
void silu(std::span<const float> x, std::span<float> y) noexcept;

// y = silu(gate) * up
void swiglu(std::span<const float> gate, std::span<const float> up, std::span<float> y) noexcept;

// y = gelu(gate) * up
void geglu(std::span<const float> gate, std::span<const float> up, std::span<float> y,
           GeluForm form) noexcept;

}  // namespace oxi::kernels
