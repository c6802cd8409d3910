// Dot product and matrix-vector product over plain f32 (for m = 1 with float weights, where
// packing for GEMM would cost more than it saves).
#pragma once

#include <cstddef>
#include <span>

namespace oxi::kernels {

float dot_f32(std::span<const float> a, std::span<const float> b) noexcept;

// y[j] = dot(w[j * ldw .. j * ldw + x.size()), x) + bias[j] for j < y.size(); empty bias = 0.
void matvec_f32(std::span<const float> w, size_t ldw, std::span<const float> x,
                std::span<const float> bias, std::span<float> y) noexcept;

}  // namespace oxi::kernels
