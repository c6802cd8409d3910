// Scalar encoders of the plain and 32-element formats, following ggml's reference quantizers,
// and the quantize_row / row_encoder dispatch (K-quant encoders are in quantize_k.cpp, iq4 ones in
// quantize_iq4.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/formats/blocks.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/iq4_nl_r16.h"
#include "kernels/formats/iq4_xs_r8.h"
#include "kernels/formats/q2_k_r8.h"
#include "kernels/formats/q3_k_r8.h"
#include "kernels/formats/q5_k_r8.h"
#include "kernels/formats/q4_0_r16.h"
#include "kernels/formats/q5_0_r16.h"
#include "kernels/formats/q4_1_r16.h"
#include "kernels/formats/q5_1_r16.h"
#include "kernels/formats/q4_k_r8.h"
#include "kernels/formats/q8_0_r16.h"
#include "kernels/formats/quant.h"
#include "kernels/formats/quantize_k.h"

namespace oxi::kernels {
namespace {

template <class Block>
Block* blocks(void* dst) noexcept {
  return static_cast<Block*>(dst);
}

void quant_f32(const float* x, void* dst, size_t n) noexcept {
  std::memcpy(dst, x, n * sizeof(float));
}

void quant_f16(const float* x, void* dst, size_t n) noexcept {
  auto* h = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < n; ++i) h[i] = f32_to_f16(x[i]);
}

void quant_bf16(const float* x, void* dst, size_t n) noexcept {
  auto* h = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < n; ++i) h[i] = f32_to_bf16(x[i]);
}

// The value of largest magnitude, with its sign (symmetric formats map it to their most
// negative level, which is one step wider than the positive side).
float signed_absmax(const float* x, size_t n) noexcept {
  float amax = 0, max = 0;
  for (size_t j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void store_u32(uint8_t* p, uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

void quant_q4_0(const float* x, void* dst, size_t n) noexcept {
  auto* b = blocks<BlockQ4_0>(dst);
  for (size_t i = 0; i < n / QK; ++i, x += QK) {
    const float d = signed_absmax(x, QK) / -8;
    const float id = inverse_scale(d);
    b[i].d = f32_to_f16(d);
    for (size_t j = 0; j < QK / 2; ++j) {
      const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
      const int q1 = std::min(15, static_cast<int>(x[j + QK / 2] * id + 8.5f));
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quant_q4_1(const float* x, void* dst, size_t n) noexcept {
  auto* b = blocks<BlockQ4_1>(dst);
  for (size_t i = 0; i < n / QK; ++i, x += QK) {
    const auto [lo, hi] = std::minmax_element(x, x + QK);
    const float d = (*hi - *lo) / 15;
    const float id = inverse_scale(d);
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(*lo);
    for (size_t j = 0; j < QK / 2; ++j) {
      const int q0 = std::min(15, static_cast<int>((x[j] - *lo) * id + 0.5f));
      const int q1 = std::min(15, static_cast<int>((x[j + QK / 2] - *lo) * id + 0.5f));
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quant_q5_0(const float* x, void* dst, size_t n) noexcept {
  auto* b = blocks<BlockQ5_0>(dst);
  for (size_t i = 0; i < n / QK; ++i, x += QK) {
    const float d = signed_absmax(x, QK) / -16;
    const float id = inverse_scale(d);
    b[i].d = f32_to_f16(d);
    uint32_t qh = 0;
    for (size_t j = 0; j < QK / 2; ++j) {
      const int q0 = std::min(31, static_cast<int>(x[j] * id + 16.5f));
      const int q1 = std::min(31, static_cast<int>(x[j + QK / 2] * id + 16.5f));
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + QK / 2);
    }
    store_u32(b[i].qh, qh);
  }
}

void quant_q5_1(const float* x, void* dst, size_t n) noexcept {
  auto* b = blocks<BlockQ5_1>(dst);
  for (size_t i = 0; i < n / QK; ++i, x += QK) {
    const auto [lo, hi] = std::minmax_element(x, x + QK);
    const float d = (*hi - *lo) / 31;
    const float id = inverse_scale(d);
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(*lo);
    uint32_t qh = 0;
    for (size_t j = 0; j < QK / 2; ++j) {
      const int q0 = std::min(31, static_cast<int>((x[j] - *lo) * id + 0.5f));
      const int q1 = std::min(31, static_cast<int>((x[j + QK / 2] - *lo) * id + 0.5f));
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + QK / 2);
    }
    store_u32(b[i].qh, qh);
  }
}

// ---- the 32-element formats with an importance (importance_row_encoder) ----

// The error weights of a row's block i: importance x sqrt(sigma2 + x^2), sigma2 the row's mean
// square (ggml's legacy formats; the K-quants use twice the super-block's).
float row_sigma2(const float* x, size_t n) noexcept {
  float sum_x2 = 0;
  for (size_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
  return sum_x2 / static_cast<float>(n);
}
void block_weights(const float* x, const float* importance, float sigma2, float* w) noexcept {
  for (size_t j = 0; j < QK; ++j) w[j] = importance[j] * std::sqrt(sigma2 + x[j] * x[j]);
}

// A block's levels q[j] in 0..qmax: x ~= d * (q - offset) (symmetric, weighted scale) or
// x ~= d * q + m (affine); its d (and m) returned through the block's fields by the caller.
void symmetric_levels(const float* x, const float* w, int nneg, int npos, float& d,
                      int* q) noexcept {
  d = fit_block_symmetric(x, w, nneg, npos);
  for (size_t j = 0; j < QK; ++j)
    q[j] = (d != 0 ? std::clamp(static_cast<int>(std::lrintf(x[j] / d)), -nneg, npos) : 0) + nneg;
}
void affine_levels(const float* x, const float* w, int nmax, float& d, float& m, int* q) noexcept {
  float min_off = 0;
  fit_block_affine(x, w, nmax, d, min_off);
  m = -min_off;
  for (size_t j = 0; j < QK; ++j)
    q[j] = d > 0 ? std::clamp(static_cast<int>(std::lrintf((x[j] + min_off) / d)), 0, nmax) : 0;
}
// Levels into the formats' nibbles (element j low, j + 16 high) and fifth bits.
void pack_nibbles(const int* q, uint8_t* qs) noexcept {
  for (size_t j = 0; j < QK / 2; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + QK / 2] & 0xF) << 4));
}
void pack_fifth_bits(const int* q, uint8_t* qh) noexcept {
  uint32_t bits = 0;
  for (size_t j = 0; j < QK; ++j) bits |= static_cast<uint32_t>(q[j] >> 4) << j;
  store_u32(qh, bits);
}

// One row of Block (q4_0, q4_1, q5_0, q5_1: a min field makes it affine, a qh field gives it
// fifth bits) with each block's levels fitted under the importance's weights.
template <class Block>
void importance_row(const float* x, const float* importance, void* dst, size_t n) noexcept {
  constexpr bool kAffine = requires(Block b) {
    b.m;
  };
  constexpr bool kFifthBits = requires(Block b) {
    b.qh;
  };
  constexpr int kLevels = kFifthBits ? 32 : 16;
  const float sigma2 = row_sigma2(x, n);
  auto* b = blocks<Block>(dst);
  for (size_t i = 0; i < n / QK; ++i) {
    float w[QK], d, m = 0;
    int q[QK];
    block_weights(x + i * QK, importance + i * QK, sigma2, w);
    if constexpr (kAffine)
      affine_levels(x + i * QK, w, kLevels - 1, d, m, q);
    else
      symmetric_levels(x + i * QK, w, kLevels / 2, kLevels / 2 - 1, d, q);
    b[i].d = f32_to_f16(d);
    if constexpr (kAffine) b[i].m = f32_to_f16(m);
    pack_nibbles(q, b[i].qs);
    if constexpr (kFifthBits) pack_fifth_bits(q, b[i].qh);
  }
}

}  // namespace

ImportanceRowEncoder importance_row_encoder(DType t) noexcept {
  switch (t) {
    case DType::Q4_0:
      return importance_row<BlockQ4_0>;
    case DType::Q4_1:
      return importance_row<BlockQ4_1>;
    case DType::Q5_0:
      return importance_row<BlockQ5_0>;
    case DType::Q5_1:
      return importance_row<BlockQ5_1>;
    case DType::Q2_K:
      return quantize_row_q2_K;
    case DType::Q3_K:
      return quantize_row_q3_K;
    case DType::Q4_K:
      return quantize_row_q4_K;
    case DType::Q5_K:
      return quantize_row_q5_K;
    case DType::Q6_K:
      return quantize_row_q6_K;
    case DType::IQ4_NL:
      return quantize_row_iq4_nl;
    case DType::IQ4_XS:
      return quantize_row_iq4_xs;
    default:
      return nullptr;
  }
}

namespace {

// One q8_0 block: the quants of x[0..32) written to qs, the f32 scale returned (q8_1 too).
float quantize_block_q8_0(const float* x, int8_t* qs) noexcept {
  float amax = 0;
  for (size_t j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = inverse_scale(d);
  for (size_t j = 0; j < QK; ++j) qs[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
  return d;
}

}  // namespace

void quantize_row_q8_0(const float* x, void* dst, size_t n) noexcept {
  auto* b = blocks<BlockQ8_0>(dst);
  for (size_t i = 0; i < n / QK; ++i, x += QK) b[i].d = f32_to_f16(quantize_block_q8_0(x, b[i].qs));
}

void quantize_row_q8_1(const float* x, void* dst, size_t n) noexcept {
  auto* b = blocks<BlockQ8_1>(dst);
  for (size_t i = 0; i < n / QK; ++i, x += QK) {
    const float d = quantize_block_q8_0(x, b[i].qs);
    int sum = 0;
    for (size_t j = 0; j < QK; ++j) sum += b[i].qs[j];
    b[i].d = f32_to_f16(d);
    b[i].s = f32_to_f16(static_cast<float>(sum) * d);
  }
}

void quantize_row_q8_K(const float* x, void* dst, size_t n) noexcept {
  auto* b = blocks<BlockQ8_K>(dst);
  for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    float amax = 0, vmax = 0;
    for (size_t j = 0; j < QK_K; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        vmax = x[j];
      }
    }
    if (amax == 0) {
      std::memset(&b[i], 0, sizeof(b[i]));
      continue;
    }
    // Maps the value of largest magnitude to -127 so every q fits a signed byte symmetrically.
    const float iscale = -127.0f / vmax;
    for (size_t j = 0; j < QK_K; ++j) {
      b[i].qs[j] = static_cast<int8_t>(std::clamp(std::lrintf(iscale * x[j]), -127L, 127L));
    }
    for (size_t g = 0; g < QK_K / 16; ++g) {
      int sum = 0;
      for (size_t l = 0; l < 16; ++l) sum += b[i].qs[16 * g + l];
      b[i].bsums[g] = static_cast<int16_t>(sum);
    }
    b[i].d = 1.0f / iscale;
  }
}

RowEncoder row_encoder(DType t) noexcept {
  switch (t) {
    case DType::F32:
      return quant_f32;
    case DType::F16:
      return quant_f16;
    case DType::BF16:
      return quant_bf16;
    case DType::Q4_0:
      return quant_q4_0;
    case DType::Q4_1:
      return quant_q4_1;
    case DType::Q5_0:
      return quant_q5_0;
    case DType::Q5_1:
      return quant_q5_1;
    case DType::Q8_0:
      return quantize_row_q8_0;
    case DType::Q2_K:
      return quantize_row_q2_K;
    case DType::Q3_K:
      return quantize_row_q3_K;
    case DType::Q4_K:
      return quantize_row_q4_K;
    case DType::Q5_K:
      return quantize_row_q5_K;
    case DType::Q6_K:
      return quantize_row_q6_K;
    case DType::IQ4_NL:
      return quantize_row_iq4_nl;
    case DType::IQ4_XS:
      return quantize_row_iq4_xs;
    case DType::TQ1_0:
      return quantize_row_tq1_0;
    case DType::TQ2_0:
      return quantize_row_tq2_0;
    case DType::Q4_0_R16:
      return quantize_row_q4_0_r16;
    case DType::Q5_0_R16:
      return quantize_row_q5_0_r16;
    case DType::Q5_1_R16:
      return quantize_row_q5_1_r16;
    case DType::Q4_1_R16:
      return quantize_row_q4_1_r16;
    case DType::IQ4_NL_R16:
      return quantize_row_iq4_nl_r16;
    case DType::Q8_0_R16:
      return quantize_row_q8_0_r16;
    case DType::Q4_K_R8:
      return quantize_row_q4_k_r8;
    case DType::IQ4_XS_R8:
      return quantize_row_iq4_xs_r8;
    case DType::Q5_K_R8:
      return quantize_row_q5_k_r8;
    case DType::Q3_K_R8:
      return quantize_row_q3_k_r8;
    case DType::Q2_K_R8:
      return quantize_row_q2_k_r8;
    default:
      return nullptr;
  }
}

void quantize_row(DType t, const float* src, void* dst, size_t n) noexcept {
  if (const RowEncoder f = row_encoder(t)) f(src, dst, n);
}

bool weight_supported(DType t) noexcept {
  // q4_K_r8s has no row encoder (a row is not addressable on its own: q4_k_r8s.h)
  return t == DType::Q4_K_R8S ||
         (t != DType::Q8_1 && t != DType::Q8_K && row_encoder(t) != nullptr);
}

}  // namespace oxi::kernels
