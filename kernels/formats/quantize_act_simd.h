// Activation quantization for the instruction set this file is compiled for (arch.h): the
// per-token step before every quantized matrix-vector product, q8_0 for the 32-value formats
// and q8_K for the K-quants. The references (quantize_row_q8_0 / quantize_row_q8_K, scalar
// with a libm rounding call per value) cost about as much as the product itself on the small
// matrices of a decode step (a 256 x 2048 q4_0 matvec: 41 % of its time), and q8_K ran with
// the threads idle once per matrix group of a decode step (5.5 us for 2048 values, 15 us for
// 5632: ~4 % of a Q4_K_M token; 0.45 / 1.2 us here).
//
// Bit-identical to the references: the same maximum, the same f32 divide and multiply, and
// round-half-to-even as std::nearbyint / lrintf in the default rounding mode (q8_0 for finite
// inputs; q8_K also where a NaN, or an inf from a scale that overflows, meets the conversion:
// clamped to -127 as lrintf's LONG_MIN is on x86; aarch64's lrintf and vcvtn both give 0 for
// a NaN).
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "kernels/arch.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/quantize_k.h"

#if defined(OXI_ARCH_AVX2)
#include <immintrin.h>
#elif defined(OXI_ARCH_NEON)
#include <arm_neon.h>
#endif

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

namespace act {

// The largest lane. max_ps returns its second operand when one is NaN, so callers that put
// the running maximum second skip NaN values, as the references' comparisons do.
inline float max_lane(__m256 m) noexcept {
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  return _mm_cvtss_f32(m4);
}

// 32 int32 values (q[0] first) saturated to int8 and stored in order: packs work within
// 128-bit lanes, so the bytes come out as 0-3 8-11 16-19 24-27 | 4-7 12-15 ... (in 4-value
// units), put back in order by one dword permute.
inline void store_i8(int8_t* dst, const __m256i (&q)[4]) noexcept {
  const __m256i p =
      _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                      _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

inline uint16_t to_f16(float f) noexcept {
  return f32_to_f16(f);
}

}  // namespace act

// One q8_0 block: the quants of x[0..32) written to qs, the f32 scale returned, and the quants'
// sum added to *sum where asked (q8_1).
inline float quantize_block_q8_0(const float* x, int8_t* qs, int* sum) noexcept {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 v[4];
  for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + 8 * k);
  const __m256 m =
      _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                    _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
  const float d = act::max_lane(m) / 127;
  const __m256 mul = _mm256_set1_ps(inverse_scale(d));
  __m256i q[4];
  for (int k = 0; k < 4; ++k) {
    q[k] = _mm256_cvtps_epi32(
        _mm256_round_ps(_mm256_mul_ps(v[k], mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  act::store_i8(qs, q);
  if (sum != nullptr) {
    const __m256i s8 = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
    s4 = _mm_hadd_epi32(s4, s4);
    *sum += _mm_cvtsi128_si32(_mm_hadd_epi32(s4, s4));
  }
  return d;
}

// x[0..n) -> n / 256 BlockQ8_K at dst.
inline void quantize_q8_K(const float* x, void* dst, size_t n) noexcept {
  auto* b = static_cast<BlockQ8_K*>(dst);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    __m256 m = _mm256_setzero_ps();
    for (size_t k = 0; k < QK_K; k += 8)
      m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)), m);
    const float amax = act::max_lane(m);
    if (amax == 0) {
      std::memset(&b[i], 0, sizeof(b[i]));
      continue;
    }
    // The reference keeps the sign of the first value of that magnitude.
    const __m256 target = _mm256_set1_ps(amax);
    size_t first = 0;
    for (size_t k = 0; k < QK_K; k += 8) {
      const __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k));
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(a, target, _CMP_EQ_OQ));
      if (hit != 0) {
        first = k + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(hit)));
        break;
      }
    }
    const float iscale = -127.0f / x[first];
    const __m256 mul = _mm256_set1_ps(iscale);
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    __m256i sums[QK_K / 16];  // per 16 values: 8 int32 lanes to add up
    for (size_t s = 0; s < QK_K / 32; ++s) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        const __m256i v =
            _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * s + 8 * k), mul));
        q[k] = _mm256_max_epi32(_mm256_min_epi32(v, hi), lo);
      }
      sums[2 * s] = _mm256_add_epi32(q[0], q[1]);
      sums[2 * s + 1] = _mm256_add_epi32(q[2], q[3]);
      act::store_i8(b[i].qs + 32 * s, q);
    }
    // Four sums at a time: two rounds of hadd leave each vector's half-sums in one dword of
    // each 128-bit lane; the lanes added give the totals in order.
    __m128i totals[4];
    for (int g = 0; g < 4; ++g) {
      const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(sums[4 * g], sums[4 * g + 1]),
                                          _mm256_hadd_epi32(sums[4 * g + 2], sums[4 * g + 3]));
      totals[g] = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b[i].bsums), _mm_packs_epi32(totals[0], totals[1]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b[i].bsums + 8),
                     _mm_packs_epi32(totals[2], totals[3]));
    b[i].d = 1.0f / iscale;
  }
}

#elif defined(OXI_ARCH_NEON)

// NEON: fabs and maxNum (vmaxnm skips a NaN operand, as the references' comparisons do), the
// same scalar divide, and vcvtn (round half to even, saturating) for the rounding.
namespace act {

// Four int32x4 (q[0] first, each within int8) narrowed to 16 int8 in order.
inline int8x16_t narrow_i8(const int32x4_t (&q)[4]) noexcept {
  const int16x8_t lo = vqmovn_high_s32(vqmovn_s32(q[0]), q[1]);
  const int16x8_t hi = vqmovn_high_s32(vqmovn_s32(q[2]), q[3]);
  return vqmovn_high_s16(vqmovn_s16(lo), hi);
}

// f32_to_f16 by the FPU's fcvt (IEEE round to nearest even, as fp16.h's bit manipulation, which
// costs ~12 instructions a block here).
inline uint16_t to_f16(float f) noexcept {
  return std::bit_cast<uint16_t>(static_cast<__fp16>(f));
}

}  // namespace act

// One q8_0 block: the quants of x[0..32) written to qs, the f32 scale returned, and the quants'
// sum added to *sum where asked (q8_1).
inline float quantize_block_q8_0(const float* x, int8_t* qs, int* sum) noexcept {
  float32x4_t v[8];
  float32x4_t m = vdupq_n_f32(0.0f);
  for (int k = 0; k < 8; ++k) {
    v[k] = vld1q_f32(x + 4 * k);
    m = vmaxnmq_f32(m, vabsq_f32(v[k]));
  }
  const float d = vmaxnmvq_f32(m) / 127;
  const float id = inverse_scale(d);
  for (int h = 0; h < 2; ++h) {
    int32x4_t q[4];
    for (int k = 0; k < 4; ++k) q[k] = vcvtnq_s32_f32(vmulq_n_f32(v[4 * h + k], id));
    const int8x16_t q8 = act::narrow_i8(q);
    vst1q_s8(qs + 16 * h, q8);
    if (sum != nullptr) *sum += vaddlvq_s8(q8);
  }
  return d;
}

// x[0..n) -> n / 256 BlockQ8_K at dst.
inline void quantize_q8_K(const float* x, void* dst, size_t n) noexcept {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    float32x4_t m = vdupq_n_f32(0.0f);
    for (size_t k = 0; k < QK_K; k += 4) m = vmaxnmq_f32(m, vabsq_f32(vld1q_f32(x + k)));
    const float amax = vmaxnmvq_f32(m);
    if (amax == 0) {
      std::memset(&b[i], 0, sizeof(b[i]));
      continue;
    }
    // The reference keeps the sign of the first value of that magnitude.
    const float32x4_t target = vdupq_n_f32(amax);
    size_t first = 0;
    for (size_t k = 0; k < QK_K; k += 4) {
      if (vmaxvq_u32(vceqq_f32(vabsq_f32(vld1q_f32(x + k)), target)) != 0) {
        first = k;
        while (std::fabs(x[first]) != amax) ++first;
        break;
      }
    }
    const float iscale = -127.0f / x[first];
    const int32x4_t lo = vdupq_n_s32(-127), hi = vdupq_n_s32(127);
    for (size_t g = 0; g < QK_K / 16; ++g) {
      int32x4_t q[4];
      for (int k = 0; k < 4; ++k) {
        const int32x4_t r = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + 16 * g + 4 * k), iscale));
        q[k] = vmaxq_s32(vminq_s32(r, hi), lo);
      }
      const int8x16_t q8 = act::narrow_i8(q);
      vst1q_s8(b[i].qs + 16 * g, q8);
      b[i].bsums[g] = vaddlvq_s8(q8);
    }
    b[i].d = 1.0f / iscale;
  }
}

#endif

#if defined(OXI_ARCH_AVX2) || defined(OXI_ARCH_NEON)

// x[0..n) -> n / 32 BlockQ8_0 at dst.
inline void quantize_q8_0(const float* x, void* dst, size_t n) noexcept {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (size_t i = 0; i < n / QK; ++i, x += QK) {
    b[i].d = act::to_f16(quantize_block_q8_0(x, b[i].qs, nullptr));
  }
}

// x[0..n) -> n / 32 BlockQ8_1 at dst: q8_0's blocks with s = d * (the sum of the quants).
inline void quantize_q8_1(const float* x, void* dst, size_t n) noexcept {
  auto* b = static_cast<BlockQ8_1*>(dst);
  for (size_t i = 0; i < n / QK; ++i, x += QK) {
    int sum = 0;
    const float d = quantize_block_q8_0(x, b[i].qs, &sum);
    b[i].d = act::to_f16(d);
    b[i].s = act::to_f16(static_cast<float>(sum) * d);
  }
}

#else

inline void quantize_q8_0(const float* x, void* dst, size_t n) noexcept {
  quantize_row_q8_0(x, dst, n);
}

inline void quantize_q8_1(const float* x, void* dst, size_t n) noexcept {
  quantize_row_q8_1(x, dst, n);
}

inline void quantize_q8_K(const float* x, void* dst, size_t n) noexcept {
  quantize_row_q8_K(x, dst, n);
}

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
