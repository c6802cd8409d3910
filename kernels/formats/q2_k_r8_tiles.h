// Tiles of Q2_K_R8 weights (q2_k_r8.h) against q3_K_r8's activation layout (ActGroupK16).
//
// avx512 (VNNI): K16R8Tile (k16_r8_tiles.h) with q2_K's policy: each block's 16 scale bytes split
// into the 4-bit scales and mins (two ops per scale row, ~10 for the 8 blocks), each placed by the
// pshufb into the low byte of an int16 (zero-extended: both are unsigned), the two bits of every
// level as they are, and the activation's group sums (times 4, which the end divides out
// exactly) meeting the mins. About 3 ops per 64 elements and token against ~8 for plain q2_K.
//
// AVX2: the same template on 256 bits (k16_r8_tiles.h), about 11 ops per 64 elements and token
// against ~18 for plain q2_K. The scalar set runs the reference.
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

#if defined(OXI_ARCH_AVX2)

struct Q2KR8Format {
  using Block = BlockQ2_K;
  static constexpr int kScaleByte = 0;  // the scale or min zero-extended to the int16

  static size_t quants_row(size_t nb, size_t p, size_t h) noexcept {
    return k2_quants_row(nb, p, h);
  }

  // sc[q] / mn[q]: byte 4b + m = the scale / min of group 4q + m of block b.
  template <class Group>
  [[gnu::always_inline]] static K16Scales scales(const Group& g,
                                                 const K16ScaleConstants& c) noexcept {
    K16Scales s;
    for (int q = 0; q < 4; ++q) {
      const __m256i r = g.row(k2_scale_row(g.nb, static_cast<size_t>(q)));
      s.sc[q] = _mm256_and_si256(r, c.low4);
      s.mn[q] = _mm256_and_si256(_mm256_srli_epi16(r, 4), c.low4);
    }
    // d | dmin << 16 per lane -> the 8 d and the 8 dmin as f16 halves -> f32
    const __m256i dm = g.row(0);
    const __m256i halves = _mm256_permute4x64_epi64(
        _mm256_packus_epi32(_mm256_and_si256(dm, c.lo16), _mm256_srli_epi32(dm, 16)), 0xD8);
    s.d = _mm256_cvtph_ps(_mm256_castsi256_si128(halves));
    s.dmin = _mm256_cvtph_ps(_mm256_extracti128_si256(halves, 1));
    return s;
  }

  // the two bits are the level
#if defined(OXI_ARCH_AVX512)
  template <bool kShort>
  [[gnu::always_inline]] static __m512i levels(const K16Group<kShort>&, int, int,
                                               const K16R8Constants&, __m512i low) noexcept {
    return low;
  }
#else
  template <bool kShort>
  [[gnu::always_inline]] static void levels(const K16Avx2Group<kShort>&, int, int,
                                            const K16R8Avx2Constants&, __m256i&,
                                            __m256i&) noexcept {}
#endif

  // acc + d x the activation's d x the scaled sums - dmin x its d x the mins' sums (the
  // activation's group sums are 4 x theirs: divided out exactly)
  [[gnu::always_inline]] static __m256 finish(const K16Scales& s, __m256i sums, __m256i corr,
                                              const float* ad, __m256 acc) noexcept {
    const __m256 a = _mm256_loadu_ps(ad);
    acc = _mm256_fmadd_ps(_mm256_mul_ps(s.d, a), _mm256_cvtepi32_ps(sums), acc);
    return _mm256_fnmadd_ps(_mm256_mul_ps(s.dmin, a),
                            _mm256_cvtepi32_ps(_mm256_srai_epi32(corr, 2)), acc);
  }
};

using Q2KR8Tile = K16R8Tile<Q2KR8Format>;

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
