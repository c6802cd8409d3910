// Tiles of the float weight formats (f32, f16, bf16) against f32 activations, in xsimd batches
// where the instruction set has them and plain loops in the scalar build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arch.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/prefetch.h"

#if defined(OXI_ARCH_AVX2) || defined(OXI_ARCH_SSE42)
#include <immintrin.h>
#elif defined(OXI_ARCH_NEON)
#include <arm_neon.h>
#endif

namespace oxi::kernels::OXI_ARCH_NS {

struct LoadF32 {
  static constexpr size_t kBytes = 4;
  static float one(const uint8_t* row, size_t i) noexcept {
    float v;
    std::memcpy(&v, row + 4 * i, 4);
    return v;
  }
#if OXI_ARCH_SIMD
  static xsimd::batch<float, Arch> batch(const uint8_t* row, size_t i) noexcept {
    return xsimd::batch<float, Arch>::load_unaligned(reinterpret_cast<const float*>(row) + i);
  }
#endif
};

// kIsF16 picks the SIMD conversion; comparing function pointers in `if constexpr` is not a
// constant expression under -fsanitize=address.
template <float (*Convert)(uint16_t) noexcept, bool kIsF16>
struct LoadHalf {
  static constexpr size_t kBytes = 2;
  static float one(const uint8_t* row, size_t i) noexcept {
    uint16_t h;
    std::memcpy(&h, row + 2 * i, 2);
    return Convert(h);
  }
#if OXI_ARCH_SIMD
  static xsimd::batch<float, Arch> batch(const uint8_t* row, size_t i) noexcept {
    using B = xsimd::batch<float, Arch>;
    const auto* p = row + 2 * i;
#if defined(OXI_ARCH_AVX2)
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (kIsF16) {
      return B(_mm256_cvtph_ps(h));
    } else {
      return B(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
    }
#elif defined(OXI_ARCH_SSE42)
    if constexpr (!kIsF16) {
      const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
      return B(_mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(h), 16)));
    }
#elif defined(OXI_ARCH_NEON)
    static_assert(B::size == 4);
    uint16_t h[4];
    std::memcpy(h, p, sizeof(h));
    const uint16x4_t v = vld1_u16(h);
    if constexpr (kIsF16)
      return B(vcvt_f32_f16(vreinterpret_f16_u16(v)));
    else
      return B(vreinterpretq_f32_u32(vshll_n_u16(v, 16)));
#else
    (void)p;
#endif
    alignas(64) float tmp[B::size];
    for (size_t k = 0; k < B::size; ++k) tmp[k] = one(row, i + k);
    return B::load_aligned(tmp);
  }
#endif
};

using LoadF16 = LoadHalf<f16_to_f32, true>;
using LoadBF16 = LoadHalf<bf16_to_f32, false>;

// T tokens x R rows of float weights; activation t is x + t * x_stride bytes of f32.
template <class Load>
struct FloatTile {
  // matvec: 4 rows per tile share each activation load (float rows are limited by loads more
  // than by the stream), prefetching the rows kPrefetchTiles tiles on (prefetch.h).
  static constexpr int kMatvecRows = 4;

  template <int T, int R>
  static void tile(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    size_t i = 0;
    float sums[T][R] = {};
#if OXI_ARCH_SIMD
    using B = xsimd::batch<float, Arch>;
    B acc[T][R];
    for (auto& row : acc) {
      for (auto& a : row) a = B(0.0f);
    }
    for (; i + B::size <= n; i += B::size) {
      B xv[T];
      for (int t = 0; t < T; ++t) {
        xv[t] = B::load_unaligned(reinterpret_cast<const float*>(x + t * x_stride) + i);
      }
      if constexpr (T == 1) {  // the next tile's rows, once per cache line (prefetch.h)
        if ((i * Load::kBytes) % kCacheLine < B::size * Load::kBytes) {
          for (int r = 0; r < R; ++r)
            prefetch_lines<1>(w + (r + kPrefetchTiles * R) * w_row_bytes + i * Load::kBytes);
        }
      }
      for (int r = 0; r < R; ++r) {
        const B wv = Load::batch(w + r * w_row_bytes, i);
        for (int t = 0; t < T; ++t) acc[t][r] = xsimd::fma(wv, xv[t], acc[t][r]);
      }
    }
    for (int t = 0; t < T; ++t) {
      for (int r = 0; r < R; ++r) sums[t][r] = xsimd::hadd(acc[t][r]);
    }
#endif
    for (; i < n; ++i) {
      for (int r = 0; r < R; ++r) {
        const float wv = Load::one(w + r * w_row_bytes, i);
        for (int t = 0; t < T; ++t) {
          sums[t][r] += wv * reinterpret_cast<const float*>(x + t * x_stride)[i];
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      for (int r = 0; r < R; ++r) y[t * y_stride + r] = sums[t][r];
    }
  }
};

}  // namespace oxi::kernels::OXI_ARCH_NS
