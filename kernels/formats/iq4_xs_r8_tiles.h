// Tiles of IQ4_XS_R8 weights (iq4_xs_r8.h) against q4_K_r8's activation layout (ActGroupK8): T
// tokens x 1 row a pass, the QuantTile interface (tiles.h), so matvec_driver / gemm_driver run
// them unchanged.
//
// Per group of 8 super-blocks and row, the 8 blocks' scales come out of two 32-byte rows with
// ~50 vector ops; then per sub-block and row of 32 index bytes:
// - avx512 (VNNI): the row broadcast to both halves of a zmm (the low nibbles' indices in the
//   lower half, the high ones' in the upper), one vpshufb for the 64 levels + 128 (unsigned),
//   one vpdpbusd per token against the activation's 64 bytes of the same elements (ActGroupK8's
//   q[j][i][0..1] lie side by side), the halves folded once a sub-block; the - 128 * sum(q)
//   correction is one madd per pair of sub-blocks from the activation's sums;
// - AVX2: two vpshufb for the levels and two for their magnitudes, the sign trick (|level| x
//   q with level's sign, maddubs: pairs of at most 2 x 127 x 127, no saturation) and a madd to
//   int32 per nibble half and token (~17 instructions per 32 bytes instead of the plain trait's
//   ~50).
// Then times the sub-block scale (vpmulld). Every block's integer sum stays in its own int32
// lane, as in q4_K_r8, and is the same integer on both paths; the f32 combine is one FMA per
// group, so the two give the same bits.
//
// Other instruction sets run the reference (plain iq4_xs is not repacked there: quant.h).
//
// A row's last group may hold fewer than 8 blocks: its rows are 4 * nb bytes apart and read
// with masked loads, the missing lanes zero, and the activation's zero there too, so they add
// exactly nothing. Each (token, row) accumulator sees the same steps whatever T is, so gemm_q
// and matvec give identical sums.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arch.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/iq4_xs_r8.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/repacked_tiles.h"  // RowPasses
#include "kernels/formats/traits_avx2.h"

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

struct IQ4XSR8Tile : RowPasses<IQ4XSR8Tile> {
  // One row a pass: the T int32 sums, T zmm dots and T f32 accumulators of 4 tokens fit.
  template <int T>
  static constexpr int kRowsPerPass = 1;

  struct Constants {
    __m256i low4_32 = _mm256_set1_epi32(0xF), low2_32 = _mm256_set1_epi32(3);
    __m256i bias = _mm256_set1_epi32(32), lo16 = _mm256_set1_epi32(0xFFFF);
#if defined(OXI_ARCH_AVX512)
    __m512i low4 = _mm512_set1_epi8(0x0F);
    // the 16 levels + 128 in every 16-byte lane
    __m512i levels = _mm512_maskz_broadcast_i32x4(0xFFFF, table([](int v) { return v + 128; }));
#else
    __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    // the levels and their magnitudes in both 16-byte lanes
    __m256i levels = _mm256_broadcastsi128_si256(table([](int v) { return v; }));
    __m256i magnitudes = _mm256_broadcastsi128_si256(table([](int v) { return v < 0 ? -v : v; }));
#endif
    template <class F>
    static __m128i table(F f) noexcept {
      alignas(16) uint8_t t[16];
      for (int k = 0; k < 16; ++k) t[k] = static_cast<uint8_t>(f(kIq4Values[k]));
      return _mm_load_si128(reinterpret_cast<const __m128i*>(t));
    }
  };

  // Row r of a group: whole (rows 32 bytes apart) or the row's short last group (rows 4 * nb
  // bytes apart, masked loads: the lanes past nb read as zero, nothing past the group touched).
  template <bool kShort>
  struct GroupRows {
    const uint8_t* base;
    size_t stride;
    uint8_t lane_bits;  // lanes < nb
    __m256i lane_mask;  // the same as all-ones int32 lanes
    __m256i row(size_t r) const noexcept {
#if defined(OXI_ARCH_AVX512)
      if constexpr (kShort) return _mm256_maskz_loadu_epi32(lane_bits, base + r * stride);
#else
      if constexpr (kShort)
        return _mm256_maskload_epi32(reinterpret_cast<const int*>(base + r * stride), lane_mask);
#endif
      else
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + r * 32));
    }
#if defined(OXI_ARCH_AVX512)
    __m512i both_halves(size_t r) const noexcept {
      return _mm512_maskz_broadcast_i64x4(0xFF, row(r));
    }
#endif
  };

  // Each token's dot products sum(level * q) of sub-block j in the 8 blocks' lanes; on avx512
  // of level + 128 (the caller subtracts 128 * sum(q) from the group's sum).
  template <int T, bool kShort>
  [[gnu::always_inline]] static void sub_block_dots(const GroupRows<kShort>& g,
                                                    const ActGroupK8* const* a, int j,
                                                    const Constants& c,
                                                    __m256i (&dots)[T]) noexcept {
#if defined(OXI_ARCH_AVX512)
    __m512i d[T];
    for (int t = 0; t < T; ++t) d[t] = _mm512_setzero_si512();
    for (int i = 0; i < 4; ++i) {
      const __m512i q = g.both_halves(xs8_qs_row(j, i));
      const __m512i index = _mm512_and_si512(_mm512_mask_srli_epi16(q, 0xFFFF0000u, q, 4), c.low4);
      const __m512i levels = _mm512_shuffle_epi8(c.levels, index);
      for (int t = 0; t < T; ++t)
        d[t] = _mm512_dpbusd_epi32(d[t], levels, _mm512_loadu_si512(a[t]->q[j][i][0]));
    }
    for (int t = 0; t < T; ++t)
      dots[t] = _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, d[t], 0),
                                 _mm512_maskz_extracti64x4_epi64(0xF, d[t], 1));
#else
    for (int t = 0; t < T; ++t) dots[t] = _mm256_setzero_si256();
    for (int i = 0; i < 4; ++i) {
      const __m256i q = g.row(xs8_qs_row(j, i));
      const __m256i index[2] = {_mm256_and_si256(q, c.low4),
                                _mm256_and_si256(_mm256_srli_epi16(q, 4), c.low4)};
      for (int h = 0; h < 2; ++h) {
        const __m256i level = _mm256_shuffle_epi8(c.levels, index[h]);
        const __m256i magnitude = _mm256_shuffle_epi8(c.magnitudes, index[h]);
        for (int t = 0; t < T; ++t) {
          const __m256i x = _mm256_sign_epi8(simd::load256(a[t]->q[j][i][h]), level);
          dots[t] = _mm256_add_epi32(dots[t],
                                     _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, x), c.ones));
        }
      }
    }
#endif
  }

  // acc[t] += the group's sums for T tokens.
  template <int T, bool kShort>
  [[gnu::always_inline]] static void group(const GroupRows<kShort>& g, const ActGroupK8* const* a,
                                           const Constants& c, __m256 (&acc)[T]) noexcept {
    const __m256i dh = g.row(kXS8RowDScalesH), sl = g.row(kXS8RowScalesL);
    const __m256i sh = _mm256_srli_epi32(dh, 16);
    // the low halves (d) packed to 8 f16, in order, then f32
    const __m256i halves =
        _mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_and_si256(dh, c.lo16), sh), 0xD8);
    const __m256 dw = _mm256_cvtph_ps(_mm256_castsi256_si128(halves));
    // s_j = ls_j - 32 in every lane
    __m256i s[8];
    for (int j = 0; j < 8; ++j) {
      const __m256i low = _mm256_and_si256(_mm256_srli_epi32(sl, 4 * j), c.low4_32);
      const __m256i high = _mm256_and_si256(_mm256_srli_epi32(sh, 2 * j), c.low2_32);
      s[j] = _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), c.bias);
    }
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
#if defined(OXI_ARCH_AVX512)
    // sum_j s_j * bsum_j: the scales of sub-blocks 2p and 2p + 1 as an int16 pair per lane,
    // against the activation's pair of sums
    __m256i corr[T];
    for (int t = 0; t < T; ++t) corr[t] = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i pair =
          _mm256_or_si256(_mm256_and_si256(s[2 * p], c.lo16), _mm256_slli_epi32(s[2 * p + 1], 16));
      for (int t = 0; t < T; ++t)
        corr[t] = _mm256_add_epi32(corr[t], _mm256_madd_epi16(pair, simd::load256(a[t]->sums[p])));
    }
#endif
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      if constexpr (T == 1) {  // an eighth of the group's lines per sub-block (q4_k_r8_tiles.h)
        if constexpr (kShort)
          prefetch_stream_part(g.base + kPrefetchBytes, kXS8Rows * g.stride, j, 8);
        else
          prefetch_stream_part<kXS8GroupBytes, 8>(g.base + kPrefetchBytes, j);
      }
      __m256i dots[T];
      sub_block_dots<T>(g, a, j, c, dots);
      for (int t = 0; t < T; ++t)
        isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(dots[t], s[j]));
    }
    for (int t = 0; t < T; ++t) {
#if defined(OXI_ARCH_AVX512)
      const __m256i total = _mm256_sub_epi32(isum[t], _mm256_slli_epi32(corr[t], 7));
#else
      const __m256i total = isum[t];
#endif
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_loadu_ps(a[t]->d)),
                               _mm256_cvtepi32_ps(total), acc[t]);
    }
  }

  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    static_assert(P == 1);
    (void)w_row_bytes;
    // made once: matvec runs a pass per row, and a 2048-wide row is a single group, so
    // constants made per pass cost TinyLlama-shaped IQ4_XS decode 5-10 points of the limit
    // (three alternating pairs, forty-fourth session)
    static const Constants c;
    const size_t blocks = n / QK_K, groups = blocks / kK8Blocks, rest = blocks % kK8Blocks;
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    const ActGroupK8* a[T];
    for (size_t gi = 0; gi < groups; ++gi) {
      for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const ActGroupK8*>(x + t * x_stride) + gi;
      group<T, false>({w + gi * kXS8GroupBytes, 32, 0xFF, _mm256_set1_epi32(-1)}, a, c, acc);
    }
    if (rest > 0) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupK8*>(x + t * x_stride) + groups;
      const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      group<T, true>(
          {w + groups * kXS8GroupBytes, k8_row_bytes(rest), static_cast<uint8_t>((1u << rest) - 1),
           _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)), lanes)},
          a, c, acc);
    }
    for (int t = 0; t < T; ++t) y[t * y_stride] = simd::hsum(acc[t]);
  }
};

#else

// The reference: one f32 sum per (token, row), block after block: each block's integer sum
// (sum_j s_j * sum of level * q) times its two scales.
struct IQ4XSR8Tile : K8ReferenceTile<IQ4XSR8Tile, BlockIQ4_XS> {
  static float block_sum(const uint8_t* g, size_t nb, size_t b, const ActGroupK8& a) noexcept {
    const size_t row = k8_row_bytes(nb);
    uint32_t dh, sl;
    std::memcpy(&dh, g + kXS8RowDScalesH * row + 4 * b, 4);
    std::memcpy(&sl, g + kXS8RowScalesL * row + 4 * b, 4);
    int32_t isum = 0;
    for (size_t j = 0; j < 8; ++j) {
      const int ls = static_cast<int>(((sl >> (4 * j)) & 0xF) | ((dh >> (16 + 2 * j)) & 3) << 4);
      int32_t dot = 0;
      for (size_t i = 0; i < 4; ++i) {
        const uint8_t* qs = g + xs8_qs_row(j, i) * row;
        for (size_t m = 4 * b; m < 4 * b + 4; ++m)
          dot +=
              kIq4Values[qs[m] & 0xF] * a.q[j][i][0][m] + kIq4Values[qs[m] >> 4] * a.q[j][i][1][m];
      }
      isum += (ls - 32) * dot;
    }
    return (a.d[b] * f16_to_f32(static_cast<uint16_t>(dh))) * static_cast<float>(isum);
  }
};

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
