// q8_0 activation quantization for the instruction set this file is compiled for (arch.h):
// the per-token step before every quantized matrix-vector product. The reference
// (quantize_row_q8_0, scalar with a libm rounding call per value) cost about as much as the
// product itself on the small matrices of a decode step (a 256 x 2048 q4_0 matvec: 41 % of
// its time). Bit-identical to the reference for finite inputs: the same max, the same f32
// divide and multiply, and round-half-to-even as std::nearbyint in the default rounding mode.
#pragma once

#include <cstddef>

#include "kernels/arch.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/quantize_k.h"

#if defined(OXI_ARCH_AVX2)
#include <immintrin.h>
#endif

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

// x[0..n) -> n / 32 BlockQ8_0 at dst.
inline void quantize_q8_0(const float* x, void* dst, size_t n) noexcept {
  auto* b = static_cast<BlockQ8_0*>(dst);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (size_t i = 0; i < n / QK; ++i, x += QK) {
    __m256 v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + 8 * k);
    __m256 m =
        _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                      _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    const float d = amax / 127;
    const float id = inverse_scale(d);
    b[i].d = f32_to_f16(d);
    const __m256 mul = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) {
      q[k] = _mm256_cvtps_epi32(
          _mm256_round_ps(_mm256_mul_ps(v[k], mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    // packs work within 128-bit lanes: bytes come out as 0-3 8-11 16-19 24-27 | 4-7 12-15 ...
    // (in 4-value units), put back in order by one dword permute.
    const __m256i p =
        _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[i].qs),
                        _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
}

#else

inline void quantize_q8_0(const float* x, void* dst, size_t n) noexcept {
  quantize_row_q8_0(x, dst, n);
}

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
