// Scalar encoders of the non-linear 4-bit formats (iq4_nl, iq4_xs): each weight becomes the
// index of the nearest kIq4Values level for its block's scale, and the scale is a least-squares
// fit over a few starting points, as ggml's reference quantizers search it (not bit-identical
// to them); with an importance matrix the fit is weighted as ggml weighs it.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/formats/blocks.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/quantize_k.h"

namespace oxi::kernels {
namespace {

// The index of the level nearest to v (v in level units).
uint8_t nearest_level(float v) noexcept {
  uint8_t best = 0;
  float best_err = std::fabs(v - kIq4Values[0]);
  for (uint8_t i = 1; i < 16; ++i) {
    const float err = std::fabs(v - kIq4Values[i]);
    if (err < best_err) best = i, best_err = err;
  }
  return best;
}

// Indices of x[0..32) for the scale d (all index 0's level times 0 when d is 0), packed in the
// q4_0 nibble order.
void write_indices(const float* x, float d, uint8_t* qs) noexcept {
  const float id = inverse_scale(d);
  for (size_t j = 0; j < QK / 2; ++j) {
    const uint8_t lo = id != 0 ? nearest_level(x[j] * id) : 0;
    const uint8_t hi = id != 0 ? nearest_level(x[j + QK / 2] * id) : 0;
    qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// The scale of 32 values: the value of largest magnitude first maps to a level near -127 (the
// widest one), then each candidate's indices are fixed and the scale refitted by least squares
// weighted by w (nullptr: every value alike); the fit with the least squared error wins.
float best_scale(const float* x, const float* w) noexcept {
  float amax = 0, max = 0;
  for (size_t j = 0; j < QK; ++j) {
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  }
  if (amax == 0) return 0;
  float best = max / kIq4Values[0], best_gain = -1;
  for (int step = -7; step <= 7; ++step) {
    const float id = (static_cast<float>(kIq4Values[0]) + static_cast<float>(step)) / max;
    double sum_qx = 0, sum_qq = 0;
    for (size_t j = 0; j < QK; ++j) {
      const double wj = w ? w[j] : 1.0;
      const double q = kIq4Values[nearest_level(x[j] * id)];
      sum_qx += wj * q * x[j];
      sum_qq += wj * q * q;
    }
    // The squared error of the fitted scale is sum(x^2) - sum_qx^2 / sum_qq: the larger that
    // ratio, the better.
    const double gain = sum_qx * sum_qx / sum_qq;
    if (sum_qq > 0 && gain > best_gain) {
      best_gain = gain;
      best = static_cast<float>(sum_qx / sum_qq);
    }
  }
  return best;
}

}  // namespace

void quantize_row_iq4_nl(const float* x, const float* importance, void* dst, size_t n) noexcept {
  auto* b = static_cast<BlockIQ4_NL*>(dst);
  for (size_t i = 0; i < n / QK; ++i, x += QK) {
    float w[QK];
    b[i].d = f32_to_f16(
        best_scale(x, importance_weights(x, importance ? importance + i * QK : nullptr, QK, w)));
    write_indices(x, f16_to_f32(b[i].d), b[i].qs);
  }
}

void quantize_row_iq4_xs(const float* x, const float* importance, void* dst, size_t n) noexcept {
  auto* b = static_cast<BlockIQ4_XS*>(dst);
  for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    float w[QK_K];
    const float* weights =
        importance_weights(x, importance ? importance + i * QK_K : nullptr, QK_K, w);
    float scales[8], max_scale = 0;
    for (int g = 0; g < 8; ++g) {
      scales[g] = best_scale(x + QK * g, weights ? weights + QK * g : nullptr);
      if (std::fabs(scales[g]) > std::fabs(max_scale)) max_scale = scales[g];
    }
    // The group scale of largest magnitude maps to ls - 32 = -32, the widest 6-bit value.
    b[i].d = f32_to_f16(max_scale / -32);
    const float d = f16_to_f32(b[i].d), id = inverse_scale(d);
    b[i].scales_h = 0;
    std::memset(b[i].scales_l, 0, sizeof(b[i].scales_l));
    for (int g = 0; g < 8; ++g) {
      const int l = std::clamp(static_cast<int>(std::nearbyint(scales[g] * id)), -32, 31) + 32;
      b[i].scales_l[g / 2] |= static_cast<uint8_t>((l & 0xF) << (4 * (g % 2)));
      b[i].scales_h |= static_cast<uint16_t>((l >> 4) << (2 * g));
      write_indices(x + QK * g, d * static_cast<float>(l - 32), b[i].qs + 16 * g);
    }
  }
}

void quantize_row_iq4_nl(const float* x, void* dst, size_t n) noexcept {
  quantize_row_iq4_nl(x, nullptr, dst, n);
}
void quantize_row_iq4_xs(const float* x, void* dst, size_t n) noexcept {
  quantize_row_iq4_xs(x, nullptr, dst, n);
}

}  // namespace oxi::kernels
