// Tiles of Q2_K_R8 weights (q2_k_r8.h) against q3_K_r8's activation layout (ActGroupK16).
//
// avx512 (VNNI): K16R8Tile (k16_r8_tiles.h) with q2_K's policy: each block's 16 scale bytes split
// into the 4-bit scales and mins (two ops per scale row, ~10 for the 8 blocks), each placed by the
// pshufb into the low byte of an int16 (zero-extended: both are unsigned), the two bits of every
// level as they are, and the activation's group sums (times 4, which the end divides out
// exactly) meeting the mins. About 3 ops per 64 elements and token against ~8 for plain q2_K.
//
// AVX2 has a tile of its own (below); the scalar set runs the reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arch.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/k16_r8_tiles.h"
#include "kernels/formats/q2_k_r8.h"
#include "kernels/formats/repacked_tiles.h"

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX512)

struct Q2KR8Format {
  using Block = BlockQ2_K;
  static constexpr int kScaleByte = 0;  // the scale or min zero-extended to the int16

  static size_t quants_row(size_t nb, size_t p, size_t h) noexcept {
    return k2_quants_row(nb, p, h);
  }

  // sc[q] / mn[q]: byte 4b + m = the scale / min of group 4q + m of block b, in both halves.
  template <bool kShort>
  [[gnu::always_inline]] static K16Scales scales(const K16Group<kShort>& g,
                                                 const K16R8Constants& c) noexcept {
    K16Scales s;
    for (int q = 0; q < 4; ++q) {
      const __m256i r = g.row(k2_scale_row(g.nb, static_cast<size_t>(q)));
      s.sc[q] = _mm512_maskz_broadcast_i64x4(0xFF, _mm256_and_si256(r, c.low4));
      s.mn[q] =
          _mm512_maskz_broadcast_i64x4(0xFF, _mm256_and_si256(_mm256_srli_epi16(r, 4), c.low4));
    }
    const __m256i dm = g.row(0);  // d | dmin << 16
    s.d = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(dm));
    s.dmin = _mm256_cvtph_ps(_mm256_cvtepi32_epi16(_mm256_srli_epi32(dm, 16)));
    return s;
  }

  template <bool kShort>
  [[gnu::always_inline]] static __m512i levels(const K16Group<kShort>&, int, int,
                                               const K16R8Constants&, __m512i low) noexcept {
    return low;
  }

  // acc + d x the activation's d x the scaled sums - dmin x its d x the mins' sums
  [[gnu::always_inline]] static __m256 finish(const K16Scales& s, __m512i sums, __m512i corr,
                                              const float* ad, __m256 acc) noexcept {
    const __m256 a = _mm256_loadu_ps(ad);
    const __m256i mins = _mm256_srai_epi32(fold_halves(corr), 2);
    acc = _mm256_fmadd_ps(_mm256_mul_ps(s.d, a), _mm256_cvtepi32_ps(fold_halves(sums)), acc);
    return _mm256_fnmadd_ps(_mm256_mul_ps(s.dmin, a), _mm256_cvtepi32_ps(mins), acc);
  }
};

using Q2KR8Tile = K16R8Tile<Q2KR8Format>;

#elif defined(OXI_ARCH_AVX2)

// AVX2: the same steps on 256 bits, each chunk's halves apart (group A's elements against the
// activation's lower 32 bytes, B's against the upper): per half an immediate shift, an and and
// one maddubs per token, summed over the pair's four chunks in int16 (at most 4 x 2 x 3 x 127),
// then one madd against the group's scale (an int16 pair (scale, scale) a lane) and one against
// its min (the pair (min, 0), against the activation's int32 group sums). About 11 ops per 64
// elements and token against ~18 for plain q2_K.
struct Q2KR8Tile : K8RowPasses<Q2KR8Tile> {
  struct Constants {
    __m256i low4 = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3);
    __m256i lo16 = _mm256_set1_epi32(0xFFFF);
    // pair 2q + e, group A (upper == 0) or B: byte 4b + 2e + upper of a scale vector (byte
    // 4b + m: group 4q + m of block b) into both int16 halves of lane b (scales) or the low one
    // (mins)
    __m256i scale_of[2][2] = {{control(0, 0, true), control(0, 1, true)},
                              {control(1, 0, true), control(1, 1, true)}};
    __m256i min_of[2][2] = {{control(0, 0, false), control(0, 1, false)},
                            {control(1, 0, false), control(1, 1, false)}};

    static __m256i control(int e, int upper, bool both) noexcept {
      alignas(32) uint32_t c[8];
      for (int l = 0; l < 8; ++l) {
        const uint32_t byte =
            4u * static_cast<uint32_t>(l % 4) + 2u * e + static_cast<uint32_t>(upper);
        c[l] = both ? (0x80008000u | byte | byte << 16) : (0x80808000u | byte);
      }
      return _mm256_load_si256(reinterpret_cast<const __m256i*>(c));
    }
  };

  static const Constants& constants() noexcept {
    static const Constants c;
    return c;
  }

  // Two tokens a pass at most: four tokens' int16 and int32 sums alone would take AVX2's 16
  // registers. Each token's accumulator sees the same steps either way.
  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    using Base = K8RowPasses<Q2KR8Tile>;
    if constexpr (T > 2) {
      Base::pass<2, P>(w, w_row_bytes, x, x_stride, n, y, y_stride);
      pass<T - 2, P>(w, w_row_bytes, x + 2 * x_stride, x_stride, n, y + 2 * y_stride, y_stride);
    } else {
      Base::pass<T, P>(w, w_row_bytes, x, x_stride, n, y, y_stride);
    }
  }

  // acc[t] += the group's sums for T tokens; nb blocks (8 unless kShort: masked loads, the lanes
  // past nb zero).
  template <int T, bool kShort>
  [[gnu::always_inline]] static void group(const uint8_t* g, size_t nb, const ActGroupK16* const* a,
                                           const Constants& c, __m256 (&acc)[T]) noexcept {
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nb)),
                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const auto row = [&](size_t offset) {
      if constexpr (kShort)
        return _mm256_maskload_epi32(reinterpret_cast<const int*>(g + offset), lanes);
      else
        return simd::load256(g + offset);
    };
    __m256i sc[4], mn[4];
    for (int q = 0; q < 4; ++q) {
      const __m256i r = row(k2_scale_row(nb, static_cast<size_t>(q)));
      sc[q] = _mm256_and_si256(r, c.low4);
      mn[q] = _mm256_and_si256(_mm256_srli_epi16(r, 4), c.low4);
    }
    __m256i sums[T], mins[T];
    for (int t = 0; t < T; ++t) sums[t] = mins[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int p = 0; p < static_cast<int>(kK16Pairs); ++p) {
      if constexpr (T == 1)  // an eighth of the group's lines per pair
        prefetch_group_part<BlockQ2_K, kShort, kK16Pairs>(g, nb, p);
      __m256i da[T], db[T];
      for (int t = 0; t < T; ++t) da[t] = db[t] = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h) {
        const __m256i q = row(k2_quants_row(nb, p, h));
        for (int k = 0; k < 2; ++k) {
          const int chunk = 2 * h + k;
          const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(q, 4 * k), c.three);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4 * k + 2), c.three);
          for (int t = 0; t < T; ++t) {
            const int8_t* x = a[t]->q[p][chunk];
            da[t] = _mm256_add_epi16(da[t], _mm256_maddubs_epi16(lo, simd::load256(x)));
            db[t] = _mm256_add_epi16(db[t], _mm256_maddubs_epi16(hi, simd::load256(x + 32)));
          }
        }
      }
      const int e = p % 2;
      const __m256i s = sc[p / 2], m = mn[p / 2];
      const __m256i sa = _mm256_shuffle_epi8(s, c.scale_of[e][0]);
      const __m256i sb = _mm256_shuffle_epi8(s, c.scale_of[e][1]);
      const __m256i ma = _mm256_shuffle_epi8(m, c.min_of[e][0]);
      const __m256i mb = _mm256_shuffle_epi8(m, c.min_of[e][1]);
      for (int t = 0; t < T; ++t) {
        sums[t] = simd::add_madd_i16(simd::add_madd_i16(sums[t], da[t], sa), db[t], sb);
        mins[t] = simd::add_madd_i16(simd::add_madd_i16(mins[t], simd::load256(a[t]->sums4[p]), ma),
                                     simd::load256(a[t]->sums4[p] + kK8Blocks), mb);
      }
    }
    // d | dmin << 16 per lane -> the 8 d and the 8 dmin as f16 halves -> f32
    const __m256i dm = row(0);
    const __m256i halves = _mm256_permute4x64_epi64(
        _mm256_packus_epi32(_mm256_and_si256(dm, c.lo16), _mm256_srli_epi32(dm, 16)), 0xD8);
    const __m256 d = _mm256_cvtph_ps(_mm256_castsi256_si128(halves));
    const __m256 dmin = _mm256_cvtph_ps(_mm256_extracti128_si256(halves, 1));
    for (int t = 0; t < T; ++t) {
      const __m256 ad = _mm256_loadu_ps(a[t]->d);
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, ad), _mm256_cvtepi32_ps(sums[t]), acc[t]);
      acc[t] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, ad),
                                _mm256_cvtepi32_ps(_mm256_srai_epi32(mins[t], 2)), acc[t]);
    }
  }

  template <int T>
  [[gnu::always_inline]] static void row_sums(const uint8_t* w, const uint8_t* x, size_t x_stride,
                                              size_t n, const Constants& c,
                                              __m256 (&acc)[T]) noexcept {
    constexpr size_t kGroupBytes = kK8Blocks * sizeof(BlockQ2_K);
    const size_t blocks = n / QK_K, groups = blocks / kK8Blocks, rest = blocks % kK8Blocks;
    const ActGroupK16* a[T];
    for (size_t gi = 0; gi < groups; ++gi) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupK16*>(x + t * x_stride) + gi;
      group<T, false>(w + gi * kGroupBytes, kK8Blocks, a, c, acc);
    }
    if (rest > 0) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupK16*>(x + t * x_stride) + groups;
      group<T, true>(w + groups * kGroupBytes, rest, a, c, acc);
    }
  }
};

#else

// The reference: block b's sum of level x q over each 16-element group times its scale, less its
// mins against the activation's group sums, times the two f16 scales, as ref::KQuant combines
// them.
struct Q2KR8Tile : K8ReferenceTile<Q2KR8Tile, BlockQ2_K, ActGroupK16> {
  static float block_sum(const uint8_t* g, size_t nb, size_t b, const ActGroupK16& a) noexcept {
    int32_t isum = 0, mins = 0;
    for (size_t p = 0; p < kK16Pairs; ++p) {
      for (int upper = 0; upper < 2; ++upper) {
        const size_t grp = 2 * p + static_cast<size_t>(upper);
        const uint8_t sm = g[k2_scale_row(nb, grp / 4) + 4 * b + grp % 4];
        int32_t s = 0;
        for (size_t c = 0; c < kK16Chunks; ++c)
          for (size_t e = 0; e < 4; ++e)
            s += k16_low_bits(g + k2_quants_row(nb, p, c / 2), b, c, e, upper) *
                 a.q[p][c][32 * upper + 4 * b + e];
        isum += (sm & 0xF) * s;
        mins += (sm >> 4) * (a.sums4[p][8 * upper + b] / 4);
      }
    }
    uint32_t dm;
    std::memcpy(&dm, g + 4 * b, 4);
    const float d = f16_to_f32(static_cast<uint16_t>(dm));
    const float dmin = f16_to_f32(static_cast<uint16_t>(dm >> 16));
    return (a.d[b] * d) * static_cast<float>(isum) - (a.d[b] * dmin) * static_cast<float>(mins);
  }
};

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
