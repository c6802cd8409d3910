// q8_K activation quantization (the input of every K-quant matrix-vector product) for the
// instruction set this file is compiled for (arch.h). The reference (quantize_row_q8_K, scalar,
// one lrintf per value) took 5.5 us for a 2048-wide input and 15 us for 5632 on the development
// VM, once per matrix group of a decode step with the threads idle: ~4 % of a Q4_K_M token.
// Bit-identical to the reference: the same maximum magnitude and the first value holding it,
// the same f32 divide and multiply, round-half-to-even as lrintf in the default rounding mode,
// and out-of-range conversions (NaN, or inf from a scale that overflows) clamped to -127 as
// lrintf's LONG_MIN is.
#pragma once

#include <cstddef>
#include <cstring>

#include "kernels/arch.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/quantize_k.h"

#if defined(OXI_ARCH_AVX2)
#include <immintrin.h>
#endif

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

// x[0..n) -> n / 256 BlockQ8_K at dst.
inline void quantize_q8_K(const float* x, void* dst, size_t n) noexcept {
  auto* b = static_cast<BlockQ8_K*>(dst);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (size_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    // max_ps returns its second operand when one is NaN: NaN values are skipped, as the
    // reference's `>` skips them.
    __m256 m = _mm256_setzero_ps();
    for (size_t k = 0; k < QK_K; k += 8)
      m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)), m);
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
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
      // packs work within 128-bit lanes (see quantize_q8_0_simd.h): one dword permute restores
      // the order.
      const __m256i p =
          _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(b[i].qs + 32 * s),
          _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
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

#else

inline void quantize_q8_K(const float* x, void* dst, size_t n) noexcept {
  quantize_row_q8_K(x, dst, n);
}

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
