// Tiles of Q4_0_R16 weights (q4_0_r16.h) against their activation layout: T tokens x R rows,
// the QuantTile interface (tiles.h), so matvec_driver / gemm_driver run them unchanged.
//
// Per group of 16 blocks, token and row, the AVX2 version does for each half (8 blocks, one
// int32 lane each): 4 loads of 32 quant bytes, 3 ops to split nibbles, 8 maddubs summed in
// int16, then one madd, the zero point, one convert and one FMA with the 8 scales converted by
// one vcvtph2ps: about 5 instructions per block instead of plain q4_0's ~15. On avx512 the
// maddubs pairs and their int16 sums become VNNI dot products into int32 (simd::ByteDots), and
// the high nibbles enter as byte & 0xF0 into their own sums, divided by 16 once per half
// (simd::NibbleDots): one op per 32 bytes instead of three; in cache (2048-wide rows,
// one core) 57 -> 61 GB/s, same sums. On avx512 every pass is 512-bit (r16_pass_512): a group's 16
// blocks in 16 int32 lanes, one VNNI op per 64 bytes, nibble half and token.
//
// The int16 sums cannot overflow: a maddubs lane is u0 * a0 + u1 * a1 with u <= 15 and
// |a| <= 127 (q8_0 activations never hold -128), so 8 of them stay within 8 * 3810 = 30480.
//
// Each (token, row) accumulator sees the same steps whatever T and R are, the short group's
// last (its lanes past m add 0 x 0), so gemm_q and matvec give identical sums here too.
//
// IQ4_NL_R16 (iq4_nl_r16.h) has the same bytes in the same places; only what a nibble means
// differs (a level of kIq4Values), so the tile is one template over the nibbles' policy:
// Q4_0Nibbles or IQ4Nibbles below.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arch.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/q4_0_r16.h"
#include "kernels/formats/repacked_tiles.h"
#include "kernels/formats/traits_avx2.h"
#include "kernels/formats/traits_scalar.h"

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

// q4_0: the nibbles are the unsigned bytes maddubs / VNNI meet the activation with; the
// activation's zero (8 * sum(q)) removes the offset of 8 (simd::NibbleDots).
struct Q4_0Nibbles {
  using Dots = simd::NibbleDots;

#if defined(OXI_ARCH_AVX512)
  // A group's chunk of 64 weight bytes split once for every token: the low nibbles, and the
  // high ones as byte & 0xF0 (their sums are divided by 16 once per group).
  struct Split512 {
    __m512i low, high;
  };
  static Split512 split_512(__m512i q) noexcept {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    return {_mm512_and_si512(q, low4), _mm512_maskz_andnot_epi32(0xFFFF, low4, q)};
  }
  // One token's 16 int32 block sums over a group, its zeros removed by sums().
  struct Dots512 {
    __m512i low = _mm512_setzero_si512(), high = _mm512_setzero_si512();
    void add(const Split512& q, const ActGroupR16* a, int k) noexcept {
      low = _mm512_dpbusd_epi32(low, q.low, _mm512_loadu_si512(a->q[k][0]));
      high = _mm512_dpbusd_epi32(high, q.high, _mm512_loadu_si512(a->q[k][1]));
    }
    __m512i sums(const ActGroupR16* a) const noexcept {
      return _mm512_sub_epi32(_mm512_add_epi32(low, _mm512_maskz_srai_epi32(0xFFFF, high, 4)),
                              _mm512_loadu_si512(a->zero));
    }
  };
#endif
};

// iq4_nl: one vpshufb per nibble vector looks the level up. With VNNI the table holds level +
// 128 (1..241, unsigned: vpdpbusd sums four products in int32, nothing saturates) and the
// activation's zero, 128 * sum(q), removes the offset. Without it, maddubs' int16 pairs would
// saturate on such bytes, so the levels stay signed and meet the activation through the sign
// trick (|level| <= 127), every pair widened at once; the sums are then the dot itself and the
// zero is not used. Either way the same integers.
struct IQ4Nibbles {
  static __m256i table_256() noexcept {
    if constexpr (simd::kVnni)
      return _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4LevelsPlus128)));
    else
      return _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
  }

  struct Dots {
    struct Split {
      __m256i low, high;  // the levels (+ 128 with VNNI) of the low and the high nibbles
    };
    static Split split(__m256i q) noexcept {
      const __m256i low4 = _mm256_set1_epi8(0x0F), table = table_256();
      return {_mm256_shuffle_epi8(table, _mm256_and_si256(q, low4)),
              _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(q, 4), low4))};
    }

    __m256i v = _mm256_setzero_si256();

    void add(const Split& q, __m256i x_low, __m256i x_high) noexcept {
      if constexpr (simd::kVnni) {
        v = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(v, q.low, x_low), q.high, x_high);
      } else {
        const __m256i ones = _mm256_set1_epi16(1);
        v = _mm256_add_epi32(v, _mm256_madd_epi16(simd::dot_s8s8_pairs(q.low, x_low), ones));
        v = _mm256_add_epi32(v, _mm256_madd_epi16(simd::dot_s8s8_pairs(q.high, x_high), ones));
      }
    }
  };

#if defined(OXI_ARCH_AVX512)
  struct Split512 {
    __m512i low, high;  // the levels + 128 of the low and the high nibbles
  };
  static Split512 split_512(__m512i q) noexcept {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i table = _mm512_maskz_broadcast_i32x4(
        0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4LevelsPlus128)));
    return {_mm512_shuffle_epi8(table, _mm512_and_si512(q, low4)),
            _mm512_shuffle_epi8(table,
                                _mm512_and_si512(_mm512_maskz_srli_epi16(0xFFFFFFFF, q, 4), low4))};
  }
  struct Dots512 {
    __m512i sum = _mm512_setzero_si512();
    void add(const Split512& q, const ActGroupR16* a, int k) noexcept {
      sum = _mm512_dpbusd_epi32(sum, q.low, _mm512_loadu_si512(a->q[k][0]));
      sum = _mm512_dpbusd_epi32(sum, q.high, _mm512_loadu_si512(a->q[k][1]));
    }
    __m512i sums(const ActGroupR16* a) const noexcept {
      return _mm512_sub_epi32(sum, _mm512_loadu_si512(a->zero));
    }
  };
#endif
};

// The block sums minus the zeros, over NibbleDots' or IQ4Nibbles::Dots' sums.
inline __m256i block_sums(const simd::NibbleDots& d, __m256i zero) noexcept {
  return _mm256_sub_epi32(d.sum().lanes(), zero);
}
inline __m256i block_sums(const IQ4Nibbles::Dots& d, __m256i zero) noexcept {
  if constexpr (simd::kVnni)
    return _mm256_sub_epi32(d.v, zero);
  else
    return d.v;  // the signed levels' dot: no offset
}

#if defined(OXI_ARCH_AVX512)
// acc += a group's 16 block sums (s32, its zeros removed) times their scales (d16: the f16
// weight scales, act_d the activation's), and with act_s (q5_1_r16: q5_r16_tiles.h) each block's
// f16 min (m16) times the activation's s; blocks 8-15 only when `both`. In the 256-bit passes'
// order (blocks 0-7, then 8-15), so a one-token pass and gemm_q give the same bits. The maskz
// forms with full masks are the plain ops: GCC 12 warns that the plain intrinsics' undefined
// pass-through operand "may be used uninitialized"; the extract's half must be an immediate, so
// the two halves are written out.
[[gnu::always_inline]] inline void add_r16_group_sums_512(
    __m256& acc, const float* act_d, __m512i s32, __m256i d16, bool both,
    const float* act_s = nullptr, __m256i m16 = _mm256_setzero_si256()) noexcept {
  const __m512 sums = _mm512_maskz_cvtepi32_ps(0xFFFF, s32);
  const __m512 scale = _mm512_mul_ps(_mm512_maskz_cvtph_ps(0xFFFF, d16), _mm512_loadu_ps(act_d));
  const __m512 mins = _mm512_maskz_cvtph_ps(0xFFFF, m16);
  acc = _mm256_fmadd_ps(_mm512_maskz_extractf32x8_ps(0xFF, scale, 0),
                        _mm512_maskz_extractf32x8_ps(0xFF, sums, 0), acc);
  if (act_s) {
    acc = _mm256_fmadd_ps(_mm512_maskz_extractf32x8_ps(0xFF, mins, 0), _mm256_loadu_ps(act_s), acc);
  }
  if (both) {
    acc = _mm256_fmadd_ps(_mm512_maskz_extractf32x8_ps(0xFF, scale, 1),
                          _mm512_maskz_extractf32x8_ps(0xFF, sums, 1), acc);
    if (act_s) {
      acc = _mm256_fmadd_ps(_mm512_maskz_extractf32x8_ps(0xFF, mins, 1), _mm256_loadu_ps(act_s + 8),
                            acc);
    }
  }
}
#endif

template <class Nibbles>
struct R16NibbleTile : RowPasses<R16NibbleTile<Nibbles>> {
  // Rows P at a time: four for one token in a gemm tile; one for several, so that a pass is
  // one stream of weights (a few tokens' passes read them from memory; two rows a pass had run
  // `bench llm --pp 2` at 60-64 tok/s against 105, sixty-third session).
  template <int T>
  static constexpr int kRowsPerPass = T >= 2 ? 1 : 4;

  using WholeGroup = WholeR16Group<WeightGroupR16, true>;
  using ShortGroup = ShortR16Group;

  // acc[t][p] += every block's integer dot times its two scales, blocks 0-7 then 8-15.
  template <int T, int P, class Group>
  [[gnu::always_inline]] static void add_groups(const Group (&wg)[P],
                                                const ActGroupR16* const (&a)[T],
                                                __m256 (&acc)[T][P]) noexcept {
    for (int c = 0; c < wg[0].halves(); ++c) {  // blocks 8c .. 8c + 7
      for (int p = 0; p < P; ++p) {
        const __m256 dw = wg[p].scales(c);
        typename Nibbles::Dots dots[T];
        for (int k = 0; k < 4; ++k) {
          const auto q = Nibbles::Dots::split(wg[p].quants(k, c));
          for (int t = 0; t < T; ++t) {
            dots[t].add(q, simd::load256(a[t]->q[k][0] + 32 * c),
                        simd::load256(a[t]->q[k][1] + 32 * c));
          }
        }
        for (int t = 0; t < T; ++t) {
          const __m256i zero = simd::load256(a[t]->zero + 8 * c);
          const __m256i s32 = block_sums(dots[t], zero);
          const __m256 scale = _mm256_mul_ps(dw, _mm256_loadu_ps(a[t]->d + 8 * c));
          acc[t][p] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(s32), acc[t][p]);
        }
      }
    }
  }

#if defined(OXI_ARCH_AVX512)
  // T tokens on 512-bit vectors (r16_pass_512): one VNNI op per 64 weight bytes, nibble half and
  // token instead of two, each chunk's bytes split once for all T tokens (Nibbles::split_512);
  // the same integer sums as the 256-bit passes.
  //
  // acc[t][p] += the sums of row p's group of m blocks at g. A whole group's qs[k] start 32
  // bytes into a line in every other 288-byte group, so they are loaded as two halves; the
  // activation's start a line (the backend's buffer is aligned). A short group is read with
  // masked loads (its bytes only).
  template <int T, int P>
  [[gnu::always_inline]] static void add_group_512(__m256 (&acc)[T][P], int p,
                                                   const ActGroupR16* const (&a)[T],
                                                   const uint8_t* g, size_t m) noexcept {
    const __mmask64 byte_mask = m == kR16Blocks ? ~__mmask64{0} : (uint64_t{1} << (4 * m)) - 1;
    const auto quants = [&](int k) {
      if (m == kR16Blocks)
        return load_halves_512(reinterpret_cast<const WeightGroupR16*>(g)->qs[k]);
      return _mm512_maskz_loadu_epi8(byte_mask, r16_quants(g, m, k));
    };
    const __m256i d16 = m == kR16Blocks
                            ? simd::load256(g)
                            : _mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << m) - 1), g);
    typename Nibbles::Dots512 dots[T];
    for (int k = 0; k < 4; ++k) {
      const auto q = Nibbles::split_512(quants(k));
      for (int t = 0; t < T; ++t) dots[t].add(q, a[t], k);
    }
    for (int t = 0; t < T; ++t)
      add_r16_group_sums_512(acc[t][p], a[t]->d, dots[t].sums(a[t]), d16, m > 8);
  }

  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    r16_pass_512<R16NibbleTile, ActGroupR16, WeightGroupR16, sizeof(BlockQ4_0), T, P>(
        w, w_row_bytes, x, x_stride, n, y, y_stride);
  }
#else
  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    r16_pass<R16NibbleTile, ActGroupR16, WholeGroup, ShortGroup, sizeof(BlockQ4_0), T, P>(
        w, w_row_bytes, x, x_stride, n, y, y_stride);
  }
#endif
};

#else

// What a nibble stands for against the activation's zero: itself (q4_0, zero 8 * sum(q)), or
// its level + 128 (iq4_nl, zero 128 * sum(q)).
struct Q4_0Nibbles {
  static int byte(int nibble) noexcept { return nibble; }
};
struct IQ4Nibbles {
  static int byte(int nibble) noexcept { return kIq4LevelsPlus128[nibble]; }
};

// The reference (R16ReferenceTile) with this layout's block term.
template <class Nibbles>
struct R16NibbleTile : R16ReferenceTile<R16NibbleTile<Nibbles>, WeightGroupR16, ActGroupR16> {
  // Block b's integer dot against the activation group, times its two scales: `group` holds m
  // blocks (q4_0_r16.h).
  static float block_term(const uint8_t* group, size_t m, const ActGroupR16& a, size_t b) noexcept {
    int32_t s = 0;
    for (size_t k = 0; k < 4; ++k) {
      const uint8_t* qs = r16_quants(group, m, k);
      for (size_t j = 4 * b; j < 4 * b + 4; ++j)
        s += Nibbles::byte(qs[j] & 0xF) * a.q[k][0][j] + Nibbles::byte(qs[j] >> 4) * a.q[k][1][j];
    }
    uint16_t d;
    std::memcpy(&d, r16_scales(group) + 2 * b, 2);
    return f16_to_f32(d) * a.d[b] * static_cast<float>(s - a.zero[b]);
  }
};

#endif

using Q4_0R16Tile = R16NibbleTile<Q4_0Nibbles>;
using IQ4NLR16Tile = R16NibbleTile<IQ4Nibbles>;

}  // namespace oxi::kernels::OXI_ARCH_NS
