// Tiles of Q3_K_R8 weights (q3_k_r8.h) against their activation layout (ActGroupK16).
//
// avx512 (VNNI): K16R8Tile (k16_r8_tiles.h) with q3_K's policy: the 16 scales of each block
// unpacked from the three scale rows into four byte vectors (scale - 32, signed; ~20 ops for the
// 8 blocks), each placed by the pshufb into the high byte of an int16 (256 x the scale: the sign
// comes for free), the third bit of every level added as 4 under its field's 64-bit mask, and the
// activation's group sums (times 4) meeting the same scales: the - 4 every level is biased by.
// Per group the halves are folded and the 256 divided out exactly; each half holds at most 8
// groups x 256 x 32 x 16 x 4 x 127 in magnitude, their sum below 2^31. About 5 ops per 64
// elements and token against ~13 for plain q3_K; one core in L2 11 -> 25 GB/s (`bench kernels`).
//
// AVX2 (k16_r8_tiles.h): each half's 32 bits of a field spread to bytes by a broadcast, a pshufb,
// an and and a compare (no mask registers), the rest as on avx512. The scalar set runs the
// reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arch.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/k16_r8_tiles.h"
#include "kernels/formats/q3_k_r8.h"
#include "kernels/formats/repacked_tiles.h"

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

struct Q3KR8Format {
  using Block = BlockQ3_K;
  static constexpr int kScaleByte = 1;  // 256 x (scale - 32) in the int16

  static size_t quants_row(size_t nb, size_t p, size_t h) noexcept {
    return k3_quants_row(nb, p, h);
  }

  // sc[q] = mn[q]: byte 4b + m = scale 4q + m of block b, less 32 (q3_k_r8.h).
  template <class Group>
  [[gnu::always_inline]] static K16Scales scales(const Group& g,
                                                 const K16ScaleConstants& c) noexcept {
    const __m256i r0 = g.row(k3_scale_row(g.nb, 0)), r1 = g.row(k3_scale_row(g.nb, 1));
    const __m256i hi = g.row(k3_scale_row(g.nb, 2));
    const __m256i low4 = c.low4;
    const __m256i v[4] = {
        _mm256_or_si256(_mm256_and_si256(r0, low4),
                        _mm256_slli_epi16(_mm256_and_si256(hi, c.top2_01), 4)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(r0, 4), low4),
                        _mm256_slli_epi16(_mm256_and_si256(hi, c.top2_23), 2)),
        _mm256_or_si256(_mm256_and_si256(r1, low4), _mm256_and_si256(hi, c.top2_45)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(r1, 4), low4),
                        _mm256_and_si256(_mm256_srli_epi16(hi, 2), c.top2_45)),
    };
    K16Scales s;
    for (int q = 0; q < 4; ++q) s.sc[q] = s.mn[q] = _mm256_sub_epi8(v[q], c.bias);
    s.d = g.f16_lanes(0);
    return s;
  }

#if defined(OXI_ARCH_AVX512)
  // levels + 4: the third bit added as 4 under the field's mask
  template <bool kShort>
  [[gnu::always_inline]] static __m512i levels(const K16Group<kShort>& g, int p, int chunk,
                                               const K16R8Constants& c, __m512i low) noexcept {
    const __mmask64 high = half_lanes_mask<kShort>(g.base + k3_high_field(g.nb, p, chunk), g.nb);
    return _mm512_mask_add_epi8(low, high, low, c.four);
  }
#else
  // levels + 4 of both halves: each half's 32 bits of the field spread to bytes, 4 where set
  template <bool kShort>
  [[gnu::always_inline]] static void levels(const K16Avx2Group<kShort>& g, int p, int chunk,
                                            const K16R8Avx2Constants& c, __m256i& lo,
                                            __m256i& hi) noexcept {
    const uint8_t* field = g.base + k3_high_field(g.nb, p, chunk);
    const auto fours = [&](__m256i half) {  // the half's 32 bits in every lane
      const __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(half, c.spread), c.bit_of);
      return _mm256_and_si256(_mm256_cmpeq_epi8(v, c.bit_of), c.four);
    };
    __m256i lower, upper;
    if constexpr (kShort) {
      const uint64_t bits = half_lanes_bits<true>(field, g.nb);
      lower = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(bits)));
      upper = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(bits >> 32)));
    } else {
      // A whole group's field is the two halves' bits as they are: one broadcast load each (GCC
      // took set1 of memcpy'd words through the GPRs: 13.2 against 15.5 GB/s in L2, one core).
      lower = _mm256_castps_si256(_mm256_broadcast_ss(reinterpret_cast<const float*>(field)));
      upper = _mm256_castps_si256(_mm256_broadcast_ss(reinterpret_cast<const float*>(field + 4)));
    }
    lo = _mm256_or_si256(lo, fours(lower));
    hi = _mm256_or_si256(hi, fours(upper));
  }
#endif

  // acc + d x the activation's d x the blocks' integer sums (each 256 x, the level's - 4 in corr;
  // at most 16 groups x 256 x 32 x 16 x 7 x 127 in magnitude, below 2^31)
  [[gnu::always_inline]] static __m256 finish(const K16Scales& s, __m256i sums, __m256i corr,
                                              const float* ad, __m256 acc) noexcept {
    const __m256i lanes = _mm256_srai_epi32(_mm256_sub_epi32(sums, corr), 8);
    return _mm256_fmadd_ps(_mm256_mul_ps(s.d, _mm256_loadu_ps(ad)), _mm256_cvtepi32_ps(lanes), acc);
  }
};

using Q3KR8Tile = K16R8Tile<Q3KR8Format>;

#else

// The reference: block b's sum of (level - 4) x q over each 16-element group times its scale
// less 32, times the two f32 scales, as ref::KQuant combines them.
struct Q3KR8Tile : K8ReferenceTile<Q3KR8Tile, BlockQ3_K, ActGroupK16> {
  static float block_sum(const uint8_t* g, size_t nb, size_t b, const ActGroupK16& a) noexcept {
    int32_t isum = 0;
    for (size_t p = 0; p < kK16Pairs; ++p) {
      for (int upper = 0; upper < 2; ++upper) {
        const size_t grp = 2 * p + static_cast<size_t>(upper);
        const size_t m = grp % 4, q = grp / 4;
        const int lo = g[k3_scale_row(nb, q / 2) + 4 * b + m] >> (4 * (q % 2)) & 0xF;
        const int hi = g[k3_scale_row(nb, 2) + 4 * b + m] >> (2 * q) & 3;
        int32_t s = 0;
        for (size_t c = 0; c < kK16Chunks; ++c) {
          const uint8_t* field = g + k3_high_field(nb, p, c);
          for (size_t e = 0; e < 4; ++e) {
            const int low = k16_low_bits(g + k3_quants_row(nb, p, c / 2), b, c, e, upper);
            const size_t bit = (upper ? 4 * nb : 0) + 4 * b + e;
            const int level = (low | ((field[bit / 8] >> (bit % 8)) & 1) << 2) - 4;
            s += level * a.q[p][c][32 * upper + 4 * b + e];
          }
        }
        isum += ((lo | hi << 4) - 32) * s;
      }
    }
    uint16_t d;
    std::memcpy(&d, g + 2 * b, 2);
    return (a.d[b] * f16_to_f32(d)) * static_cast<float>(isum);
  }
};

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
