// Scalar dequantization of every supported block format: the reference, bit-exact to ggml.
//
// Each rule is evaluated in f32 in the order ggml writes it (e.g. q4_K: (d * sc) * q - dmin * m),
// so contraction into FMA must stay off even when the build tunes for a native CPU.
#pragma GCC optimize("fp-contract=off")

#include <cstring>

#include "kernels/formats/blocks.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/iq4_nl_r16.h"
#include "kernels/formats/iq4_xs_r8.h"
#include "kernels/formats/q2_k_r8.h"
#include "kernels/formats/q3_k_r8.h"
#include "kernels/formats/q4_0_r16.h"
#include "kernels/formats/q5_0_r16.h"
#include "kernels/formats/q4_1_r16.h"
#include "kernels/formats/q5_1_r16.h"
#include "kernels/formats/q4_k_r8.h"
#include "kernels/formats/q4_k_r8s.h"
#include "kernels/formats/q5_k_r8.h"
#include "kernels/formats/q8_0_r16.h"
#include "kernels/formats/quant.h"

namespace oxi::kernels {
namespace {

template <class Block>
const Block* blocks(const void* src) noexcept {
  return static_cast<const Block*>(src);
}

void dequant_f32(const void* src, float* y, size_t n) noexcept {
  std::memcpy(y, src, n * sizeof(float));
}

void dequant_f16(const void* src, float* y, size_t n) noexcept {
  const auto* h = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < n; ++i) y[i] = f16_to_f32(h[i]);
}

void dequant_bf16(const void* src, float* y, size_t n) noexcept {
  const auto* h = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < n; ++i) y[i] = bf16_to_f32(h[i]);
}

void dequant_q4_0(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ4_0>(src);
  for (size_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = f16_to_f32(b[i].d);
    for (size_t j = 0; j < QK / 2; ++j) {
      y[j] = static_cast<float>((b[i].qs[j] & 0xF) - 8) * d;
      y[j + QK / 2] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequant_q4_1(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ4_1>(src);
  for (size_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = f16_to_f32(b[i].d);
    const float m = f16_to_f32(b[i].m);
    for (size_t j = 0; j < QK / 2; ++j) {
      y[j] = static_cast<float>(b[i].qs[j] & 0xF) * d + m;
      y[j + QK / 2] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

uint32_t load_u32(const uint8_t* p) noexcept {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

void dequant_q5_0(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ5_0>(src);
  for (size_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = f16_to_f32(b[i].d);
    const uint32_t qh = load_u32(b[i].qh);
    for (size_t j = 0; j < QK / 2; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1) << 4;
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
      y[j] = static_cast<float>(((b[i].qs[j] & 0xF) | h0) - 16) * d;
      y[j + QK / 2] = static_cast<float>(((b[i].qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

void dequant_q5_1(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ5_1>(src);
  for (size_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = f16_to_f32(b[i].d);
    const float m = f16_to_f32(b[i].m);
    const uint32_t qh = load_u32(b[i].qh);
    for (size_t j = 0; j < QK / 2; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1) << 4;
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
      y[j] = static_cast<float>((b[i].qs[j] & 0xF) | h0) * d + m;
      y[j + QK / 2] = static_cast<float>((b[i].qs[j] >> 4) | h1) * d + m;
    }
  }
}

void dequant_q8_0(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ8_0>(src);
  for (size_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = f16_to_f32(b[i].d);
    for (size_t j = 0; j < QK; ++j) y[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void dequant_q8_1(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ8_1>(src);
  for (size_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = f16_to_f32(b[i].d);
    for (size_t j = 0; j < QK; ++j) y[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void dequant_q2_K(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ2_K>(src);
  for (size_t i = 0; i < n / QK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    const float dmin = f16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const uint8_t sc = b[i].scales[is++];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            *y++ = dl * static_cast<float>((q[l + 16 * part] >> shift) & 3) - ml;
          }
        }
      }
    }
  }
}

void dequant_q3_K(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ3_K>(src);
  for (size_t i = 0; i < n / QK_K; ++i) {
    const float d_all = f16_to_f32(b[i].d);
    const uint8_t* q = b[i].qs;
    const uint8_t* hm = b[i].hmask;
    uint8_t m = 1;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d_all * static_cast<float>(k3_scale(b[i].scales, is++) - 32);
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int v = ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

void dequant_q4_K(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ4_K>(src);
  for (size_t i = 0; i < n / QK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    const float dmin = f16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int j = 0; j < 8; j += 2, q += 32) {
      uint8_t sc = 0, mn = 0;
      k4_scale_min(b[i].scales, j, sc, mn);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
      k4_scale_min(b[i].scales, j + 1, sc, mn);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequant_q5_K(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ5_K>(src);
  for (size_t i = 0; i < n / QK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    const float dmin = f16_to_f32(b[i].dmin);
    const uint8_t* ql = b[i].qs;
    const uint8_t* qh = b[i].qh;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < 8; j += 2, ql += 32) {
      uint8_t sc = 0, mn = 0;
      k4_scale_min(b[i].scales, j, sc, mn);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
      k4_scale_min(b[i].scales, j + 1, sc, mn);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
      }
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

void dequant_q6_K(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ6_K>(src);
  for (size_t i = 0; i < n / QK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void dequant_iq4_nl(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockIQ4_NL>(src);
  for (size_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = f16_to_f32(b[i].d);
    for (size_t j = 0; j < QK / 2; ++j) {
      y[j] = d * static_cast<float>(kIq4Values[b[i].qs[j] & 0xF]);
      y[j + QK / 2] = d * static_cast<float>(kIq4Values[b[i].qs[j] >> 4]);
    }
  }
}

void dequant_iq4_xs(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockIQ4_XS>(src);
  for (size_t i = 0; i < n / QK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int g = 0; g < 8; ++g, y += QK) {
      const float dl = d * static_cast<float>(iq4_xs_scale(b[i], g) - 32);
      const uint8_t* qs = b[i].qs + 16 * g;
      for (size_t j = 0; j < QK / 2; ++j) {
        y[j] = dl * static_cast<float>(kIq4Values[qs[j] & 0xF]);
        y[j + QK / 2] = dl * static_cast<float>(kIq4Values[qs[j] >> 4]);
      }
    }
  }
}

// ggml's rule: (t - 1) * d in f32, in element order.
void dequant_tq1_0(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockTQ1_0>(src);
  for (size_t i = 0; i < n / QK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    for_each_tq1_trit(b[i], [&](int t) { *y++ = static_cast<float>(t - 1) * d; });
  }
}

void dequant_tq2_0(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockTQ2_0>(src);
  for (size_t i = 0; i < n / QK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (size_t h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) {
        for (size_t m = 0; m < 32; ++m)
          *y++ = static_cast<float>(((b[i].qs[32 * h + m] >> (2 * k)) & 3) - 1) * d;
      }
    }
  }
}

void dequant_q8_K(const void* src, float* y, size_t n) noexcept {
  const auto* b = blocks<BlockQ8_K>(src);
  for (size_t i = 0; i < n / QK_K; ++i, y += QK_K) {
    for (size_t j = 0; j < QK_K; ++j) y[j] = b[i].d * static_cast<float>(b[i].qs[j]);
  }
}

}  // namespace

RowDecoder row_decoder(DType t) noexcept {
  switch (t) {
    case DType::F32:
      return dequant_f32;
    case DType::F16:
      return dequant_f16;
    case DType::BF16:
      return dequant_bf16;
    case DType::Q4_0:
      return dequant_q4_0;
    case DType::Q4_1:
      return dequant_q4_1;
    case DType::Q5_0:
      return dequant_q5_0;
    case DType::Q5_1:
      return dequant_q5_1;
    case DType::Q8_0:
      return dequant_q8_0;
    case DType::Q8_1:
      return dequant_q8_1;
    case DType::Q2_K:
      return dequant_q2_K;
    case DType::Q3_K:
      return dequant_q3_K;
    case DType::Q4_K:
      return dequant_q4_K;
    case DType::Q5_K:
      return dequant_q5_K;
    case DType::Q6_K:
      return dequant_q6_K;
    case DType::Q8_K:
      return dequant_q8_K;
    case DType::IQ4_NL:
      return dequant_iq4_nl;
    case DType::IQ4_XS:
      return dequant_iq4_xs;
    case DType::TQ1_0:
      return dequant_tq1_0;
    case DType::TQ2_0:
      return dequant_tq2_0;
    case DType::Q4_0_R16:
      return dequantize_row_q4_0_r16;
    case DType::Q5_0_R16:
      return dequantize_row_q5_0_r16;
    case DType::Q5_1_R16:
      return dequantize_row_q5_1_r16;
    case DType::Q4_1_R16:
      return dequantize_row_q4_1_r16;
    case DType::IQ4_NL_R16:
      return dequantize_row_iq4_nl_r16;
    case DType::Q8_0_R16:
      return dequantize_row_q8_0_r16;
    case DType::Q4_K_R8:
      return dequantize_row_q4_k_r8;
    case DType::IQ4_XS_R8:
      return dequantize_row_iq4_xs_r8;
    case DType::Q5_K_R8:
      return dequantize_row_q5_k_r8;
    case DType::Q3_K_R8:
      return dequantize_row_q3_k_r8;
    case DType::Q2_K_R8:
      return dequantize_row_q2_k_r8;
    default:
      return nullptr;
  }
}

void dequantize_row(DType t, const void* src, float* dst, size_t n) noexcept {
  if (const RowDecoder f = row_decoder(t)) f(src, dst, n);
}

size_t row_granule(DType t, size_t n) noexcept {
  return t == DType::Q4_K_R8S ? K8Sets(n).set_rows : 1;
}

void dequantize_matrix_row(DType t, const void* matrix, size_t row_bytes, size_t row, float* dst,
                           size_t n) noexcept {
  const size_t granule = row_granule(t, n), first = row - row % granule;
  const auto* at = static_cast<const std::byte*>(matrix) + first * row_bytes;
  if (t == DType::Q4_K_R8S)
    dequantize_set_row_q4_k_r8s(at, row - first, dst, n);
  else
    dequantize_row(t, at, dst, n);
}

}  // namespace oxi::kernels
