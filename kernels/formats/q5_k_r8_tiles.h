// Tiles of Q5_K_R8 weights (q5_k_r8.h) against q4_K_r8's activation layout (ActGroupK8): T
// tokens x 1 row a pass, the QuantTile interface (tiles.h), so matvec_driver / gemm_driver run
// them unchanged.
//
// avx512 (VNNI): per group of 8 super-blocks and row, q4_K_r8's scale and mins code
// (Q4KR8Tile::group_scales, minus_mins); then per sub-block and quants row of 32 bytes, the row
// broadcast to both halves of a zmm, the high nibbles shifted down in the upper half (one masked
// shift and one and: 0..15 in every byte), 16 added where the field's 64-bit mask has the fifth
// bit (one mask load, one masked add), one vpdpbusd per token against the activation's 64 bytes
// of the same elements. A lane's sub-block dot reaches 16 x 31 x 127, past int16, so it is scaled
// by vpmulld (q4_K_r8's vpmaddwd needs int16), unfolded, and the halves are folded once a group.
// About 4 vector ops per 32 quant bytes against q4_K_r8's 2; the plain q5_K trait needs ~9.
//
// AVX2 (no VNNI): q4_K_r8's AVX2 steps (the same group_scales / minus_mins, nibbles split by an
// and, a shift and an and, maddubs per token, one madd against the sub-block's scale) with the
// fifth bits spread to bytes: the field's 64 bits broadcast and a copy shifted up by 4 (one
// vpsllvq), then per half a pshufb (byte k takes the field's byte k / 8, from the copy where its
// bit k % 8 is below bit 4), an and with that bit, a min with 16 and an or into the nibbles: ~9
// more ops per 32 quant bytes, shared by the 4 tokens of a pass (a compare and an and of 16
// instead of the min: one core in L2, 26.8-26.9 -> 27.9-28.4 GB/s). Values reach 31, so the int16
// maddubs sums hold half of q4_K_r8's: two quants rows (4 maddubs), then the madd into int32.
// Not preferred (format_kernels_arch.cpp): against plain q5_K, prefill +70 % but decode from
// memory -11 to -14 %, though faster in L2 (docs/benchmarks.md, fifty-fourth session).
//
// Other instruction sets run the reference (plain q5_K is not repacked there: quant.h).
//
// A row's last group may hold fewer than 8 blocks: its rows are 4 * nb bytes apart and read with
// masked loads, the missing lanes zero (and the activation's zero there too), so they add exactly
// nothing. Each (token, row) accumulator sees the same steps whatever T is, so gemm_q and matvec
// give identical sums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/arch.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/q4_k_r8_tiles.h"
#include "kernels/formats/q5_k_r8.h"
#include "kernels/formats/repacked_tiles.h"

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

// One row a pass (K8RowPasses).
struct Q5KR8Tile : K8RowPasses<Q5KR8Tile> {
  using Q4 = Q4KR8Tile;
  template <bool kShort>
  using GroupRows = Q4::GroupRows<kShort>;

#if defined(OXI_ARCH_AVX512)
  // avx512: 4 tokens' dots, sums and accumulators fit the 32 zmm registers.
  struct Constants : Q4::Constants {
    __m512i low4_512 = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
  };

  // The 64-bit mask of field (j, i): bit k for byte k of the quants row's 512-bit values.
  template <bool kShort>
  [[gnu::always_inline]] static __mmask64 fifth_mask(const GroupRows<kShort>& g, size_t nb,
                                                     size_t j, size_t i) noexcept {
    return half_lanes_mask<kShort>(g.base + k5_fifth_field(nb, j, i), nb);
  }

  // Quants row (j, i) in both halves of a zmm: one broadcast load (masked: the lanes past nb
  // read as zero, nothing past the group touched).
  template <bool kShort>
  [[gnu::always_inline]] static __m512i quants(const GroupRows<kShort>& g, size_t nb, size_t j,
                                               size_t i) noexcept {
    const uint8_t* row = g.base + k5_quants_row(nb, j, i);
    if constexpr (kShort)
      return _mm512_maskz_broadcast_i64x4(
          0xFF, _mm256_maskz_loadu_epi32(static_cast<__mmask8>((1u << nb) - 1), row));
    else
      return _mm512_maskz_broadcast_i64x4(
          0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row)));
  }

  // acc[t] += the group's sums for T tokens; nb blocks (8 unless kShort).
  template <int T, bool kShort>
  [[gnu::always_inline]] static void group(const GroupRows<kShort>& g, size_t nb,
                                           const ActGroupK8* const* a, const Constants& c,
                                           __m256 (&acc)[T]) noexcept {
    const Q4::GroupScales s = Q4::group_scales(g, c);
    for (int t = 0; t < T; ++t) acc[t] = Q4::minus_mins(s, a[t], acc[t]);
    const __m512i sc03 = _mm512_maskz_broadcast_i64x4(0xFF, s.s03);
    const __m512i sc47 = _mm512_maskz_broadcast_i64x4(0xFF, s.s47);
    __m512i sums[T];
    for (int t = 0; t < T; ++t) sums[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      if constexpr (T == 1)  // an eighth of the group's lines per sub-block
        prefetch_group_part<BlockQ5_K, kShort, 8>(g.base, nb, j);
      __m512i dots[T];
      for (int t = 0; t < T; ++t) dots[t] = _mm512_setzero_si512();
      for (int i = 0; i < 4; ++i) {
        const __m512i q = quants(g, nb, j, i);
        __m512i v = _mm512_and_si512(_mm512_mask_srli_epi16(q, 0xFFFF0000u, q, 4), c.low4_512);
        v = _mm512_mask_add_epi8(v, fifth_mask(g, nb, j, i), v, c.sixteen);
        for (int t = 0; t < T; ++t)
          dots[t] = _mm512_dpbusd_epi32(dots[t], v, _mm512_loadu_si512(a[t]->q[j][i][0]));
      }
      // the sub-block's scale in every lane, zero-extended to int32
      const __m512i sc = _mm512_shuffle_epi8(j < 4 ? sc03 : sc47, c.scale_of[j % 4]);
      for (int t = 0; t < T; ++t)
        sums[t] = _mm512_add_epi32(sums[t], _mm512_mullo_epi32(dots[t], sc));
    }
    for (int t = 0; t < T; ++t) {
      const __m256i lanes = _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, sums[t], 0),
                                             _mm512_maskz_extracti64x4_epi64(0xF, sums[t], 1));
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(s.dw, _mm256_loadu_ps(a[t]->d)),
                               _mm256_cvtepi32_ps(lanes), acc[t]);
    }
  }

#else
  // AVX2 alone: up to gemm_q's 4 tokens a pass. Their int16 and int32 sums and the unpacked
  // weights overflow the 16 ymm registers (some sums spill to the stack), yet one weight decode
  // for 4 tokens beat passes of 2: one thread, pp128 62-64 against 43-47 tok/s
  // (docs/benchmarks.md, fifty-fourth session).

  struct Constants : Q4::Constants {
    // fifth bits: a 128-bit lane of the field holds it as it is (bytes 0-7) and shifted up by 4
    // (bytes 8-15), so that byte k can take bit k % 8 of the field's byte k / 8 at bit 4-7: from
    // the shifted copy when k % 8 < 4 (lower: bytes 0-3 of the field, the low nibbles' bits;
    // upper: bytes 4-7, the high nibbles')
    static __m256i spread(int first) noexcept {
      alignas(32) int8_t c[32];
      for (int k = 0; k < 32; ++k) c[k] = static_cast<int8_t>(first + k / 8 + (k % 8 < 4 ? 8 : 0));
      return _mm256_load_si256(reinterpret_cast<const __m256i*>(c));
    }
    __m256i spread_lower = spread(0), spread_upper = spread(4);
    __m256i shift_copy = _mm256_setr_epi64x(0, 4, 0, 4);
    __m256i bit_of = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201080402010ull));
    __m256i sixteen = _mm256_set1_epi8(16);
  };

  // Quants row (j, i): a plain load, or a masked one (the lanes past nb read as zero, nothing past
  // the group touched).
  template <bool kShort>
  [[gnu::always_inline]] static __m256i quants(const GroupRows<kShort>& g, size_t nb, size_t j,
                                               size_t i) noexcept {
    const uint8_t* row = g.base + k5_quants_row(nb, j, i);
    if constexpr (kShort)
      return _mm256_maskload_epi32(reinterpret_cast<const int*>(row), g.mask);
    else
      return simd::load256_once(row);
  }

  // Field (j, i) as 64 bits (the low nibbles' 32, then the high ones') in every qword: a whole
  // group's as it is, one broadcast load; a short one's halves brought 32 bits apart.
  template <bool kShort>
  [[gnu::always_inline]] static __m256i fifth_field(const GroupRows<kShort>& g, size_t nb, size_t j,
                                                    size_t i) noexcept {
    const uint8_t* field = g.base + k5_fifth_field(nb, j, i);
    if constexpr (kShort)
      return _mm256_set1_epi64x(static_cast<int64_t>(half_lanes_bits<true>(field, nb)));
    else
      return _mm256_castpd_si256(_mm256_broadcast_sd(reinterpret_cast<const double*>(field)));
  }

  // 16 in byte k where the field's bit for byte k of one half (spread: lower or upper) is set
  [[gnu::always_inline]] static __m256i sixteens(__m256i field, __m256i spread,
                                                 const Constants& c) noexcept {
    const __m256i bits = _mm256_and_si256(_mm256_shuffle_epi8(field, spread), c.bit_of);
    return _mm256_min_epu8(bits, c.sixteen);  // 0, or 16 .. 128 -> 16
  }

  // acc[t] += the group's sums for T tokens; nb blocks (8 unless kShort).
  template <int T, bool kShort>
  [[gnu::always_inline]] static void group(const GroupRows<kShort>& g, size_t nb,
                                           const ActGroupK8* const* a, const Constants& c,
                                           __m256 (&acc)[T]) noexcept {
    const Q4::GroupScales s = Q4::group_scales(g, c);
    for (int t = 0; t < T; ++t) acc[t] = Q4::minus_mins(s, a[t], acc[t]);
    __m256i sums[T];
    for (int t = 0; t < T; ++t) sums[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      if constexpr (T == 1)  // an eighth of the group's lines per sub-block
        prefetch_group_part<BlockQ5_K, kShort, 8>(g.base, nb, j);
      // the sub-block's scale in every lane as the int16 pair (sc, sc)
      const __m256i sc = _mm256_shuffle_epi8(j < 4 ? s.s03 : s.s47, c.scale_of[j % 4]);
      // Two quants rows a time: 4 maddubs summed in int16, each pair at most 2 x 31 x 127 (q8_K
      // activations are -127..127; even -128 would give 4 x 2 x 31 x 128 = 31744 < 2^15), then
      // one madd against the scale (at most 2 x 63 x 31744 a lane) into int32.
      for (int h = 0; h < 2; ++h) {
        __m256i d[T];
        for (int t = 0; t < T; ++t) d[t] = _mm256_setzero_si256();
        for (int i = 2 * h; i < 2 * h + 2; ++i) {
          const __m256i q = quants(g, nb, j, i);
          const __m256i field = _mm256_sllv_epi64(fifth_field(g, nb, j, i), c.shift_copy);
          const __m256i lo =
              _mm256_or_si256(_mm256_and_si256(q, c.low4), sixteens(field, c.spread_lower, c));
          const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), c.low4),
                                             sixteens(field, c.spread_upper, c));
          for (int t = 0; t < T; ++t) {
            d[t] =
                _mm256_add_epi16(d[t], _mm256_maddubs_epi16(lo, simd::load256(a[t]->q[j][i][0])));
            d[t] =
                _mm256_add_epi16(d[t], _mm256_maddubs_epi16(hi, simd::load256(a[t]->q[j][i][1])));
          }
        }
        for (int t = 0; t < T; ++t)
          sums[t] = _mm256_add_epi32(sums[t], _mm256_madd_epi16(d[t], sc));
      }
    }
    for (int t = 0; t < T; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(s.dw, _mm256_loadu_ps(a[t]->d)),
                               _mm256_cvtepi32_ps(sums[t]), acc[t]);
  }

#endif

  // acc[t] += the sums of every group of the row at w (whole groups, then the short one).
  template <int T>
  [[gnu::always_inline]] static void row_sums(const uint8_t* w, const uint8_t* x, size_t x_stride,
                                              size_t n, const Constants& c,
                                              __m256 (&acc)[T]) noexcept {
    const size_t blocks = n / QK_K, groups = blocks / kK8Blocks, rest = blocks % kK8Blocks;
    const ActGroupK8* a[T];
    for (size_t gi = 0; gi < groups; ++gi) {
      for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const ActGroupK8*>(x + t * x_stride) + gi;
      group<T, false>({w + gi * kK5GroupBytes, 0, __m256i{}}, kK8Blocks, a, c, acc);
    }
    if (rest > 0) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupK8*>(x + t * x_stride) + groups;
      const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)), lanes);
      group<T, true>({w + groups * kK5GroupBytes, k8_row_bytes(rest), mask}, rest, a, c, acc);
    }
  }
};

#else

// The reference (K8ScaleMinReferenceTile) with this layout's levels: the nibbles and the fifth
// bits (q5_k_r8.h).
struct Q5KR8Tile : K8ScaleMinReferenceTile<Q5KR8Tile, BlockQ5_K> {
  static std::pair<int, int> levels(const uint8_t* g, size_t nb, size_t b, size_t j, size_t i,
                                    size_t m) noexcept {
    const uint8_t q = g[k5_quants_row(nb, j, i) + 4 * b + m];
    const uint8_t* fifth = g + k5_fifth_field(nb, j, i);
    const auto bit = [&](size_t k) { return ((fifth[k / 8] >> (k % 8)) & 1) << 4; };
    return {(q & 0xF) | bit(4 * b + m), (q >> 4) | bit(4 * nb + 4 * b + m)};
  }
};

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
