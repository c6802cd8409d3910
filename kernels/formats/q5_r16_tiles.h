// Tiles of Q5_0_R16, Q5_1_R16 and Q4_1_R16 weights (q5_0_r16.h, q5_1_r16.h, q4_1_r16.h) against
// their activations (q4_0_r16's ActGroupR16 with zero 16 * sum(q); q8_1 values in the same places
// with s = d * sum(q)): T tokens x R rows, the QuantTile interface (tiles.h), so matvec_driver /
// gemm_driver run them unchanged. One template over the format (Q5_0Format, Q5_1Format,
// Q4_1Format): whether there are fifth bits, where the fields sit, and the f32 step of a block
// (q5_0: the zero removed, one scale; q5_1 and q4_1: the min times s added). q4_1 is q5_1 without
// the fifth bits: its values are the nibbles alone.
//
// The loops are q4_0_r16's (the 256-bit passes one function for both, r16_pass in
// repacked_tiles.h; the one-token pass the same shape as q4_0_r16_tiles.h's); what differs is how a
// chunk's 32 (or 64) quant bytes become the weights' values 0..31: the nibbles as there, each with
// its fifth bit (x 16) added. A vpshufb spreads each block's fifth-bit byte of chunk k over the
// block's 4 quant bytes (q5_values_256); each byte then holds the bits of its own elements at
// positions j and 4 + j, picked by a compare with 1, 2, 4, 8 (16 .. 128 for the high nibbles). On
// avx512 the compare is vptestmb into a mask register and the 16 is a masked byte add.
//
// Ranges: a value is <= 31 against |q| <= 127, so a maddubs pair is <= 7874 and two of them fit
// int16 (AVX2 widens every chunk, not every 4 as q4_0_r16 does); VNNI sums in int32.
//
// Each (token, row) accumulator sees the same steps whatever T and R are, so gemm_q and matvec
// give identical sums, and avx512's one-token pass the same bits as the 256-bit one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arch.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/q4_0_r16_tiles.h"
#include "kernels/formats/q4_1_r16.h"
#include "kernels/formats/q5_0_r16.h"
#include "kernels/formats/q5_1_r16.h"
#include "kernels/formats/repacked_tiles.h"
#include "kernels/formats/traits_avx2.h"
#include "kernels/formats/traits_scalar.h"

namespace oxi::kernels::OXI_ARCH_NS {

// A layout's block, whole group and activation group; where a group of m blocks keeps its fields,
// and whether it has mins and fifth bits (R16Fields, q4_0_r16.h).
template <class BlockT, class WGroupT, class AGroupT>
struct R16Format : R16Fields<BlockT> {
  using Block = BlockT;
  using WGroup = WGroupT;
  using AGroup = AGroupT;
};
using Q5_0Format = R16Format<BlockQ5_0, WeightGroupQ5R16, ActGroupR16>;
using Q5_1Format = R16Format<BlockQ5_1, WeightGroupQ5_1R16, ActGroupQ8_1R16>;
using Q4_1Format = R16Format<BlockQ4_1, WeightGroupQ4_1R16, ActGroupQ8_1R16>;

#if defined(OXI_ARCH_AVX2)

// Chunk k's values of 8 blocks (one int32 lane each): q holds the chunk's quant bytes, fifth the
// blocks' 4 fifth-bit bytes (q5_0_r16.h).
struct Q5Values {
  __m256i low, high;  // 0..31: the low / high nibbles + 16 x their fifth bits
};

// Per 128-bit lane: byte k of each 32-bit lane, for all 4 of its bytes.
inline __m256i q5_spread_byte(int k) noexcept {
  return _mm256_add_epi8(_mm256_setr_epi32(0, 0x04040404, 0x08080808, 0x0C0C0C0C, 0, 0x04040404,
                                           0x08080808, 0x0C0C0C0C),
                         _mm256_set1_epi8(static_cast<char>(k)));
}

// q4_1: the nibbles alone.
inline Q5Values nibble_values_256(__m256i q) noexcept {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  return {_mm256_and_si256(q, low4), _mm256_and_si256(_mm256_srli_epi16(q, 4), low4)};
}

inline Q5Values q5_values_256(__m256i q, __m256i fifth, int k) noexcept {
  const __m256i low4 = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(0x10);
  const __m256i low_bit = _mm256_set1_epi32(0x08040201);
  const __m256i high_bit = _mm256_set1_epi32(static_cast<int>(0x80402010u));
  const __m256i bits = _mm256_shuffle_epi8(fifth, q5_spread_byte(k));
  const __m256i low_set = _mm256_cmpeq_epi8(_mm256_and_si256(bits, low_bit), low_bit);
  const __m256i high_set = _mm256_cmpeq_epi8(_mm256_and_si256(bits, high_bit), high_bit);
  return {_mm256_or_si256(_mm256_and_si256(q, low4), _mm256_and_si256(low_set, sixteen)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), low4),
                          _mm256_and_si256(high_set, sixteen))};
}

// The running block sums of one (token, row) over a half's chunks.
struct Q5Dots {
  __m256i v = _mm256_setzero_si256();

  void add(const Q5Values& w, __m256i x_low, __m256i x_high) noexcept {
    if constexpr (simd::kVnni) {
      v = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(v, w.low, x_low), w.high, x_high);
    } else {
      const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(w.low, x_low),
                                             _mm256_maddubs_epi16(w.high, x_high));
      v = _mm256_add_epi32(v, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
  }
};

// A row's whole group as the 256-bit passes read it (blocks [8c, 8c + 8)): q4_0_r16's scales
// and quants, and the fifth bits and q5_1's mins.
template <class Format>
struct WholeQ5Group : WholeR16Group<typename Format::WGroup, true> {
  __m256 mins(int c) const noexcept {  // q5_1
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(this->g->m + 8 * c)));
  }
  __m256i fifth_bits(int c) const noexcept { return simd::load256_once(this->g->qh[8 * c]); }
};

// A row's short group, the same way (repacked_tiles.h: lanes past m read as zero).
template <class Format>
struct ShortQ5Group : ShortR16Group {
  __m256 mins(int c) const noexcept { return f16_lanes(Format::mins(g, m), c); }  // q5_1
  __m256i fifth_bits(int c) const noexcept { return int32_lanes(Format::fifth_bits(g, m), c); }
  __m256i quants(int k, int c) const noexcept { return int32_lanes(Format::quants(g, m, k), c); }
};

template <class Format>
struct Q5R16Tile : RowPasses<Q5R16Tile<Format>> {
  using WGroup = typename Format::WGroup;
  using AGroup = typename Format::AGroup;

  // Rows P at a time, as q4_0_r16's tile (q4_0_r16_tiles.h).
  template <int T>
  static constexpr int kRowsPerPass = T >= 2 ? 1 : 4;

  // acc[t][p] += every block's integer dot times its two scales, blocks 0-7 then 8-15.
  template <int T, int P, class Group>
  [[gnu::always_inline]] static void add_groups(const Group (&wg)[P], const AGroup* const (&a)[T],
                                                __m256 (&acc)[T][P]) noexcept {
    for (int c = 0; c < wg[0].halves(); ++c) {  // blocks 8c .. 8c + 7
      for (int p = 0; p < P; ++p) {
        const __m256 dw = wg[p].scales(c);
        __m256i fifth = _mm256_setzero_si256();
        if constexpr (Format::kFifthBits) fifth = wg[p].fifth_bits(c);
        Q5Dots dots[T];
        for (int k = 0; k < 4; ++k) {
          Q5Values v;
          if constexpr (Format::kFifthBits)
            v = q5_values_256(wg[p].quants(k, c), fifth, k);
          else
            v = nibble_values_256(wg[p].quants(k, c));
          for (int t = 0; t < T; ++t) {
            dots[t].add(v, simd::load256(a[t]->q[k][0] + 32 * c),
                        simd::load256(a[t]->q[k][1] + 32 * c));
          }
        }
        for (int t = 0; t < T; ++t) {
          const __m256 scale = _mm256_mul_ps(dw, _mm256_loadu_ps(a[t]->d + 8 * c));
          if constexpr (Format::kMins) {  // d_w d_a sum + m_w s_a
            acc[t][p] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(dots[t].v), acc[t][p]);
            acc[t][p] = _mm256_fmadd_ps(wg[p].mins(c), _mm256_loadu_ps(a[t]->s + 8 * c), acc[t][p]);
          } else {  // d_w d_a (sum - zero)
            const __m256i s32 = _mm256_sub_epi32(dots[t].v, simd::load256(a[t]->zero + 8 * c));
            acc[t][p] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(s32), acc[t][p]);
          }
        }
      }
    }
  }

#if defined(OXI_ARCH_AVX512)
  // Chunk k's 64 values (0..15 for q4_1, 0..31 with the fifth bits), the low nibbles' and the
  // high ones', from its 64 bytes q and the group's 64 fifth-bit bytes (not read for q4_1).
  struct Values512 {
    __m512i low, high;
  };
  [[gnu::always_inline]] static Values512 values_512(__m512i q, __m512i fifth, int k) noexcept {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i low = _mm512_and_si512(q, low4);
    const __m512i high = _mm512_and_si512(_mm512_maskz_srli_epi16(0xFFFFFFFF, q, 4), low4);
    if constexpr (!Format::kFifthBits) return {low, high};
    const __m512i sixteen = _mm512_set1_epi8(0x10);
    const __m512i low_bit = _mm512_set1_epi32(0x08040201);
    const __m512i high_bit = _mm512_set1_epi32(static_cast<int>(0x80402010u));
    const __m512i spread = _mm512_maskz_broadcast_i32x4(
        0xFFFF, _mm256_castsi256_si128(q5_spread_byte(k)));  // per 128-bit lane, as on 256
    const __m512i bits = _mm512_shuffle_epi8(fifth, spread);
    const __mmask64 low_set = _mm512_test_epi8_mask(bits, low_bit);
    const __mmask64 high_set = _mm512_test_epi8_mask(bits, high_bit);
    return {_mm512_mask_add_epi8(low, low_set, low, sixteen),
            _mm512_mask_add_epi8(high, high_set, high, sixteen)};
  }

  // T tokens on 512-bit vectors (r16_pass_512), as q4_0_r16's: acc[t][p] += the sums of row p's
  // group of m blocks at g times their scales (and q5_1's mins), each chunk's values made once
  // for all T tokens; whole groups' fields as two 32-byte halves, a short group's through
  // masked loads.
  template <int T, int P>
  [[gnu::always_inline]] static void add_group_512(__m256 (&acc)[T][P], int p,
                                                   const AGroup* const (&a)[T], const uint8_t* g,
                                                   size_t m) noexcept {
    const bool whole = m == kR16Blocks;
    const auto* wg = reinterpret_cast<const WGroup*>(g);
    const __mmask64 byte_mask = whole ? ~__mmask64{0} : (uint64_t{1} << (4 * m)) - 1;
    const auto block_mask = static_cast<__mmask16>((1u << m) - 1);
    __m512i fifth = _mm512_setzero_si512();
    if constexpr (Format::kFifthBits)
      fifth = whole ? load_halves_512(wg->qh[0])
                    : _mm512_maskz_loadu_epi8(byte_mask, Format::fifth_bits(g, m));
    __m512i sum[T];
    for (int t = 0; t < T; ++t) sum[t] = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
      const __m512i q = whole ? load_halves_512(wg->qs[k])
                              : _mm512_maskz_loadu_epi8(byte_mask, Format::quants(g, m, k));
      const Values512 v = values_512(q, fifth, k);
      for (int t = 0; t < T; ++t) {
        sum[t] = _mm512_dpbusd_epi32(sum[t], v.low, _mm512_loadu_si512(a[t]->q[k][0]));
        sum[t] = _mm512_dpbusd_epi32(sum[t], v.high, _mm512_loadu_si512(a[t]->q[k][1]));
      }
    }
    const __m256i d16 = whole ? simd::load256(wg->d) : _mm256_maskz_loadu_epi16(block_mask, g);
    for (int t = 0; t < T; ++t) {
      if constexpr (Format::kMins) {  // d_w d_a sum + m_w s_a
        const __m256i m16 =
            whole ? simd::load256(wg->m) : _mm256_maskz_loadu_epi16(block_mask, Format::mins(g, m));
        add_r16_group_sums_512(acc[t][p], a[t]->d, sum[t], d16, m > 8, a[t]->s, m16);
      } else {  // d_w d_a (sum - zero)
        add_r16_group_sums_512(acc[t][p], a[t]->d,
                               _mm512_sub_epi32(sum[t], _mm512_loadu_si512(a[t]->zero)), d16,
                               m > 8);
      }
    }
  }

  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    r16_pass_512<Q5R16Tile, AGroup, WGroup, sizeof(typename Format::Block), T, P>(
        w, w_row_bytes, x, x_stride, n, y, y_stride);
  }
#else

  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    r16_pass<Q5R16Tile, AGroup, WholeQ5Group<Format>, ShortQ5Group<Format>,
             sizeof(typename Format::Block), T, P>(w, w_row_bytes, x, x_stride, n, y, y_stride);
  }
#endif
};

#else

// The reference (R16ReferenceTile) with this layout's block term.
template <class Format>
struct Q5R16Tile
    : R16ReferenceTile<Q5R16Tile<Format>, typename Format::WGroup, typename Format::AGroup> {
  // Block b's integer dot against the activation group (values 0..31), then its f32 step:
  // q5_0: d_w d_a (sum - 16 sum(q)); q5_1, q4_1: d_w d_a sum + m_w s_a. `group` holds m blocks.
  static float block_term(const uint8_t* group, size_t m, const typename Format::AGroup& a,
                          size_t b) noexcept {
    int32_t s = 0;
    for (size_t k = 0; k < 4; ++k) {
      const uint8_t* qs = Format::quants(group, m, k);
      int fifth = 0;
      if constexpr (Format::kFifthBits) fifth = Format::fifth_bits(group, m)[4 * b + k];
      for (size_t j = 0; j < 4; ++j) {
        const uint8_t byte = qs[4 * b + j];
        const int low = (byte & 0xF) | (fifth >> j & 1) << 4;
        const int high = (byte >> 4) | (fifth >> (4 + j) & 1) << 4;
        s += low * a.q[k][0][4 * b + j] + high * a.q[k][1][4 * b + j];
      }
    }
    uint16_t d;
    std::memcpy(&d, group + 2 * b, 2);  // the scales lead every group
    if constexpr (Format::kMins) {
      uint16_t min;
      std::memcpy(&min, Format::mins(group, m) + 2 * b, 2);
      return f16_to_f32(d) * a.d[b] * static_cast<float>(s) + f16_to_f32(min) * a.s[b];
    } else {
      return f16_to_f32(d) * a.d[b] * static_cast<float>(s - a.zero[b]);
    }
  }
};

#endif

using Q5_0R16Tile = Q5R16Tile<Q5_0Format>;
using Q5_1R16Tile = Q5R16Tile<Q5_1Format>;
using Q4_1R16Tile = Q5R16Tile<Q4_1Format>;

}  // namespace oxi::kernels::OXI_ARCH_NS
