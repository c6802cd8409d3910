// Declarations of the kernels each arch translation unit defines in oxi::kernels::OXI_ARCH_NS
// (include arch.h first). Signatures match the free functions in the public headers.
#pragma once

#include "kernels/math/math_kernels.h"

namespace oxi::kernels::OXI_ARCH_NS {

void gemm_f32(const float* x, size_t ldx, size_t m, size_t k, const void* w, size_t w_row_bytes,
              RowDecoder decode, size_t n_begin, size_t n_end, const float* bias, float* y,
              size_t ldy, std::span<float> scratch) noexcept;
float dot_f32(std::span<const float> a, std::span<const float> b) noexcept;
void matvec_f32(std::span<const float> w, size_t ldw, std::span<const float> x,
                std::span<const float> bias, std::span<float> y) noexcept;
void rms_norm(std::span<const float> x, std::span<const float> weight, float eps,
              std::span<float> y) noexcept;
void layer_norm(std::span<const float> x, std::span<const float> weight,
                std::span<const float> bias, float eps, std::span<float> y) noexcept;
void group_norm(std::span<const float> x, size_t channels, size_t groups,
                std::span<const float> weight, std::span<const float> bias, float eps,
                std::span<float> y) noexcept;
void softmax(std::span<float> x) noexcept;
void gelu(std::span<const float> x, std::span<float> y, GeluForm form) noexcept;
void silu(std::span<const float> x, std::span<float> y) noexcept;
void swiglu(std::span<const float> gate, std::span<const float> up, std::span<float> y) noexcept;
void geglu(std::span<const float> gate, std::span<const float> up, std::span<float> y,
           GeluForm form) noexcept;
uint64_t read_sum(std::span<const uint64_t> words) noexcept;
void attention(const AttentionParams& p, size_t head_begin, size_t head_end, size_t q_begin,
               size_t q_end) noexcept;

// This set's table.
const MathKernels& math_table() noexcept;

}  // namespace oxi::kernels::OXI_ARCH_NS
