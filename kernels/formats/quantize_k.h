// Internal: the row encoders that quantize.cpp's dispatch and activation.cpp share.
#pragma once

#include <cmath>
#include <cstddef>

namespace oxi::kernels {

// 1 / d for a block scale d, the multiplier the 32-value encoders use as ggml does; 0 where d
// is 0, and also where d is so small (< 2.9e-39, block maximum < 3.7e-37) that 1 / d
// overflows: there ggml casts inf to an integer (undefined), while the block's f16 scale is 0
// anyway, so its quants are written as 0.
inline float inverse_scale(float d) noexcept {
  const float id = d != 0 ? 1.0f / d : 0.0f;
  return std::isinf(id) ? 0.0f : id;
}

void quantize_row_q8_0(const float* x, void* dst, size_t n) noexcept;
// The activation of q4_1 / q5_1: q8_0's blocks with s = d * (the sum of the quants).
void quantize_row_q8_1(const float* x, void* dst, size_t n) noexcept;
// The activation of the K-quant dot products: x[0..n) -> n / 256 BlockQ8_K, ggml's rule (the
// value of largest magnitude maps to -127; lrintf rounding; sums of each 16).
void quantize_row_q8_K(const float* x, void* dst, size_t n) noexcept;
void quantize_row_q2_K(const float* x, void* dst, size_t n) noexcept;
void quantize_row_q3_K(const float* x, void* dst, size_t n) noexcept;
void quantize_row_q4_K(const float* x, void* dst, size_t n) noexcept;
void quantize_row_q5_K(const float* x, void* dst, size_t n) noexcept;
void quantize_row_q6_K(const float* x, void* dst, size_t n) noexcept;
// The same with each element's error weighed by its column's importance (n values; quant.h's
// importance_row_encoder); nullptr importance: the plain encoders above, bit for bit.
void quantize_row_q2_K(const float* x, const float* importance, void* dst, size_t n) noexcept;
void quantize_row_q3_K(const float* x, const float* importance, void* dst, size_t n) noexcept;
void quantize_row_q4_K(const float* x, const float* importance, void* dst, size_t n) noexcept;
void quantize_row_q5_K(const float* x, const float* importance, void* dst, size_t n) noexcept;
void quantize_row_q6_K(const float* x, const float* importance, void* dst, size_t n) noexcept;
// The weight of each of `count` values' error (into w) from its column's importance (the mean
// square of its input, imatrix), as ggml's K-quant and iq4 encoders weigh it: importance x
// sqrt(sigma2 + x^2), sigma2 twice the values' mean square. nullptr without importance
// (plain least squares).
const float* importance_weights(const float* x, const float* importance, size_t count,
                               float* w) noexcept;
// The K-quants' weighted fits of one 32-element block (w: per-element weights): the scale of
// x ~= scale * q, q in -nneg..npos; and of x ~= scale * q - min_off, q in 0..nmax.
float fit_block_symmetric(const float* x, const float* w, int nneg, int npos) noexcept;
void fit_block_affine(const float* x, const float* w, int nmax, float& scale,
                      float& min_off) noexcept;
// quantize_iq4.cpp
void quantize_row_iq4_nl(const float* x, void* dst, size_t n) noexcept;
void quantize_row_iq4_xs(const float* x, void* dst, size_t n) noexcept;
void quantize_row_iq4_nl(const float* x, const float* importance, void* dst, size_t n) noexcept;
void quantize_row_iq4_xs(const float* x, const float* importance, void* dst, size_t n) noexcept;
// quantize_ternary.cpp
void quantize_row_tq1_0(const float* x, void* dst, size_t n) noexcept;
void quantize_row_tq2_0(const float* x, void* dst, size_t n) noexcept;

}  // namespace oxi::kernels
