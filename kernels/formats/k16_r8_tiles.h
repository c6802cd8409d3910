// The tiles of the K-quant layouts with 16-element groups (q3_K_r8, q2_K_r8: q3_k_r8.h, q2_k_r8.h)
// against their activation layout (ActGroupK16): T tokens x 1 row a pass, the QuantTile interface
// (tiles.h), so matvec_driver / gemm_driver run them unchanged. The layout's policy F
// (q3_k_r8_tiles.h, q2_k_r8_tiles.h) gives its scale unpacking (K16Scales), what the level needs
// beyond its two low bits, and how the sums meet the f32 scales.
//
// avx512: per group of 8 super-blocks and row, F unpacks the blocks' scales into byte vectors
// (~10-20 ops for the 8 blocks). Then per pair of element groups, for each of its 4 chunks: the
// quants row broadcast to both halves of a zmm, one variable shift and one and (two bits a byte),
// what F adds (q3_K: the third bit, one masked add of 4), one vpdpbusd per token against the
// activation's 64 bytes of the same elements; the pair's sums (at most 16 x 7 x 127 a lane, an
// int16) meet its two scales (A's in the lower half, B's in the upper: one pshufb) in one
// vpdpwssd, and the activation's group sums meet the second term's (q3_K: the same scales, the
// - 4 of every level; q2_K: the mins) in another. Per group the halves are folded once.
//
// AVX2 (below): the same steps on 256 bits, each chunk's halves apart.
//
// A row's last group may hold fewer than 8 blocks: its rows are 4 * nb bytes apart and read with
// masked loads, the missing lanes zero (and the activation's zero there too), so they add exactly
// nothing. Each (token, row) accumulator sees the same steps whatever T is, so gemm_q and matvec
// give identical sums.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/arch.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/q3_k_r8.h"
#include "kernels/formats/repacked_tiles.h"

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

// What the layouts' scale unpacking uses (q3_k_r8_tiles.h, q2_k_r8_tiles.h).
struct K16ScaleConstants {
  __m256i low4 = _mm256_set1_epi8(0x0F), top2_01 = _mm256_set1_epi8(0x03);
  __m256i top2_23 = _mm256_set1_epi8(0x0C), top2_45 = _mm256_set1_epi8(0x30);
  __m256i bias = _mm256_set1_epi8(32), lo16 = _mm256_set1_epi32(0xFFFF);
};

// A group's scales as F unpacks them: per pair 2q + e, the operands of its sums come from sc[q]
// (byte 4b + m: group 4q + m of block b) and those of the activation's group sums from mn[q];
// the blocks' f32 factors.
struct K16Scales {
  __m256i sc[4], mn[4];
  __m256 d, dmin;
};

// The K16 tiles' rows (both instruction sets): Tile::group<T, kShort> over each whole group of
// the row at w, then its short one, as Tile::Group<kShort>{base, nb}, with the tokens'
// activation groups; pass and matvec from K8RowPasses.
template <class Tile, class Block>
struct K16RowSums : K8RowPasses<Tile> {
  // acc[t] += the sums of every group of the row at w.
  template <int T, class Constants>
  [[gnu::always_inline]] static void row_sums(const uint8_t* w, const uint8_t* x, size_t x_stride,
                                              size_t n, const Constants& c,
                                              __m256 (&acc)[T]) noexcept {
    constexpr size_t kGroupBytes = kK8Blocks * sizeof(Block);
    const size_t blocks = n / QK_K, groups = blocks / kK8Blocks, rest = blocks % kK8Blocks;
    const ActGroupK16* a[T];
    for (size_t gi = 0; gi < groups; ++gi) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupK16*>(x + t * x_stride) + gi;
      Tile::template group<T, false>(
          typename Tile::template Group<false>{w + gi * kGroupBytes, kK8Blocks}, a, c, acc);
    }
    if (rest > 0) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupK16*>(x + t * x_stride) + groups;
      Tile::template group<T, true>(
          typename Tile::template Group<true>{w + groups * kGroupBytes, rest}, a, c, acc);
    }
  }
};

#endif

#if defined(OXI_ARCH_AVX512)

struct K16R8Constants : K16ScaleConstants {
  __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
  // chunk 2h + k: shift by 4k in the lower half (group A's bits), 4k + 2 in the upper (B's)
  __m512i shift[2] = {halves_epi16(0, 2), halves_epi16(4, 6)};

  static __m512i halves_epi16(int lower, int upper) noexcept {
    return _mm512_mask_set1_epi16(_mm512_set1_epi16(static_cast<int16_t>(lower)), 0xFFFF0000u,
                                  static_cast<int16_t>(upper));
  }
  // pshufb control for pair 2q + e: the scale of group 4q + 2e (lower half) or 4q + 2e + 1
  // (upper) of each lane's block, from byte 4b + 2e (+ 1) of a scale vector (byte 4b + m: group
  // 4q + m of block b), into byte `to` of the lane, zero around.
  static __m512i scale_control(int e, int to) noexcept {
    alignas(64) uint32_t c[16];
    for (int l = 0; l < 16; ++l) {
      const uint32_t byte = 4u * static_cast<uint32_t>(l % 4) + 2u * e + (l >= 8 ? 1u : 0u);
      c[l] = (0x80808080u & ~(0xFFu << (8 * to))) | byte << (8 * to);
    }
    return _mm512_load_si512(c);
  }
};

// The rows of one group: whole (8 blocks, plain loads) or a row's short last group (nb blocks,
// masked loads: the lanes past nb read as zero and nothing past the group is touched).
template <bool kShort>
struct K16Group {
  const uint8_t* base;
  size_t nb;
  __mmask8 lanes() const noexcept { return static_cast<__mmask8>((1u << nb) - 1); }
  // 4 bytes a block at offset
  __m256i row(size_t offset) const noexcept {
    if constexpr (kShort)
      return _mm256_maskz_loadu_epi32(lanes(), base + offset);
    else
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + offset));
  }
  __m512i both_halves(size_t offset) const noexcept {
    return _mm512_maskz_broadcast_i64x4(0xFF, row(offset));
  }
  // 2 bytes a block at offset: f16 -> f32
  __m256 f16_lanes(size_t offset) const noexcept {
    if constexpr (kShort)
      return _mm256_cvtph_ps(_mm_maskz_loadu_epi16(lanes(), base + offset));
    else
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(base + offset)));
  }
};

// The two halves of a group's int32 sums added: each block's.
[[gnu::always_inline]] inline __m256i fold_halves(__m512i v) noexcept {
  return _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, v, 0),
                          _mm512_maskz_extracti64x4_epi64(0xF, v, 1));
}

// One row a pass (K8RowPasses): 4 tokens' dots and two accumulators each fit the 32 zmm registers.
template <class F>
struct K16R8Tile : K16RowSums<K16R8Tile<F>, typename F::Block> {
  template <bool kShort>
  using Group = K16Group<kShort>;

  struct Constants : K16R8Constants {
    __m512i scale_of[2] = {scale_control(0, F::kScaleByte), scale_control(1, F::kScaleByte)};
  };

  // acc[t] += the group's sums for T tokens.
  template <int T, bool kShort>
  [[gnu::always_inline]] static void group(const K16Group<kShort>& g, const ActGroupK16* const* a,
                                           const Constants& c, __m256 (&acc)[T]) noexcept {
    const size_t nb = g.nb;
    const K16Scales s = F::scales(g, c);
    __m512i sc[4], mn[4];  // in both halves
    for (int q = 0; q < 4; ++q) {
      sc[q] = _mm512_maskz_broadcast_i64x4(0xFF, s.sc[q]);
      mn[q] = _mm512_maskz_broadcast_i64x4(0xFF, s.mn[q]);
    }
    __m512i sums[T], corr[T];
    for (int t = 0; t < T; ++t) sums[t] = corr[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int p = 0; p < static_cast<int>(kK16Pairs); ++p) {
      if constexpr (T == 1)  // an eighth of the group's lines per pair
        prefetch_group_part<typename F::Block, kShort, kK16Pairs>(g.base, nb, p);
      __m512i dots[T];
      for (int t = 0; t < T; ++t) dots[t] = _mm512_setzero_si512();
      for (int h = 0; h < 2; ++h) {
        const __m512i q = g.both_halves(F::quants_row(nb, p, h));
        for (int k = 0; k < 2; ++k) {
          const int chunk = 2 * h + k;
          const __m512i v = F::levels(g, p, chunk, c,
                                      _mm512_and_si512(_mm512_srlv_epi16(q, c.shift[k]), c.three));
          for (int t = 0; t < T; ++t)
            dots[t] = _mm512_dpbusd_epi32(dots[t], v, _mm512_loadu_si512(a[t]->q[p][chunk]));
        }
      }
      const __m512i sp = _mm512_shuffle_epi8(sc[p / 2], c.scale_of[p % 2]);
      const __m512i mp = _mm512_shuffle_epi8(mn[p / 2], c.scale_of[p % 2]);
      for (int t = 0; t < T; ++t) {
        sums[t] = _mm512_dpwssd_epi32(sums[t], dots[t], sp);
        corr[t] = _mm512_dpwssd_epi32(corr[t], _mm512_loadu_si512(a[t]->sums4[p]), mp);
      }
    }
    for (int t = 0; t < T; ++t)
      acc[t] = F::finish(s, fold_halves(sums[t]), fold_halves(corr[t]), a[t]->d, acc[t]);
  }
};

#elif defined(OXI_ARCH_AVX2)

// AVX2: the same steps on 256 bits, each chunk's halves apart (group A's elements against the
// activation's lower 32 bytes, B's against the upper): per half an immediate shift, an and, what
// F adds (q3_K: the third bits, spread from the field's 32 bits to bytes by a pshufb, an and, a
// compare, an and of 4 and an or), and one maddubs per token, summed over the pair's four chunks
// in int16 (at most 4 x 2 x 7 x 127); then per half one madd against the group's scale (an int16
// pair (scale, scale) a lane, the byte placed as F says) and one against its second term (the
// pair (scale or min, 0), against the activation's int32 group sums). Two tokens a pass at most:
// four tokens' int16 and int32 sums alone would take AVX2's 16 registers.
struct K16R8Avx2Constants : K16ScaleConstants {
  __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
  // third bits: byte k of a broadcast 32-bit field's bits takes byte k / 8, and keeps bit k % 8
  __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2,
                                    2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  __m256i bit_of = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));

  // pshufb control for pair 2q + e, group A (upper == 0) or B: byte 4b + 2e + upper of a scale
  // vector (byte 4b + m: group 4q + m of block b) into byte `to` of both int16 halves of lane b
  // (both) or of its low one, zero around.
  static __m256i control(int e, int upper, bool both, int to) noexcept {
    alignas(32) uint32_t c[8];
    for (int l = 0; l < 8; ++l) {
      const uint32_t byte = 4u * static_cast<uint32_t>(l % 4) + 2u * static_cast<uint32_t>(e) +
                            static_cast<uint32_t>(upper);
      const uint32_t half = to == 0 ? (0x8000u | byte) : (byte << 8 | 0x80u);
      c[l] = half | (both ? half : 0x8080u) << 16;
    }
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(c));
  }
};

// The rows of one group: whole (8 blocks, plain loads) or a row's short last group (nb blocks,
// masked loads: the lanes past nb read as zero and nothing past the group is touched).
template <bool kShort>
struct K16Avx2Group {
  const uint8_t* base;
  size_t nb;
  __m256i lanes;  // kShort: the lanes below nb
  K16Avx2Group(const uint8_t* base_, size_t nb_) noexcept : base(base_), nb(nb_) {
    if constexpr (kShort)
      lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nb)),
                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // 4 bytes a block at offset
  __m256i row(size_t offset) const noexcept {
    if constexpr (kShort)
      return _mm256_maskload_epi32(reinterpret_cast<const int*>(base + offset), lanes);
    else
      return simd::load256(base + offset);
  }
  // 2 bytes a block at offset: f16 -> f32 (a short group's 16-byte load stays inside the group,
  // which is 84 or more bytes a block; the lanes past nb are cleared)
  __m256 f16_lanes(size_t offset) const noexcept {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + offset));
    if constexpr (kShort)
      v = _mm_and_si128(v, _mm_cmpgt_epi16(_mm_set1_epi16(static_cast<short>(nb)),
                                           _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7)));
    return _mm256_cvtph_ps(v);
  }
};

template <class F>
struct K16R8Tile : K16RowSums<K16R8Tile<F>, typename F::Block> {
  template <bool kShort>
  using Group = K16Avx2Group<kShort>;

  struct Constants : K16R8Avx2Constants {
    __m256i scale_of[2][2] = {
        {control(0, 0, true, F::kScaleByte), control(0, 1, true, F::kScaleByte)},
        {control(1, 0, true, F::kScaleByte), control(1, 1, true, F::kScaleByte)}};
    __m256i second_of[2][2] = {
        {control(0, 0, false, F::kScaleByte), control(0, 1, false, F::kScaleByte)},
        {control(1, 0, false, F::kScaleByte), control(1, 1, false, F::kScaleByte)}};
  };

  // Two tokens a pass at most (above). Each token's accumulator sees the same steps either way.
  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    using Base = K8RowPasses<K16R8Tile<F>>;
    if constexpr (T > 2) {
      Base::template pass<2, P>(w, w_row_bytes, x, x_stride, n, y, y_stride);
      pass<T - 2, P>(w, w_row_bytes, x + 2 * x_stride, x_stride, n, y + 2 * y_stride, y_stride);
    } else {
      Base::template pass<T, P>(w, w_row_bytes, x, x_stride, n, y, y_stride);
    }
  }

  // acc[t] += the group's sums for T tokens.
  template <int T, bool kShort>
  [[gnu::always_inline]] static void group(const K16Avx2Group<kShort>& g,
                                           const ActGroupK16* const* a, const Constants& c,
                                           __m256 (&acc)[T]) noexcept {
    const size_t nb = g.nb;
    const K16Scales s = F::scales(g, c);
    __m256i sums[T], corr[T];
    for (int t = 0; t < T; ++t) sums[t] = corr[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int p = 0; p < static_cast<int>(kK16Pairs); ++p) {
      if constexpr (T == 1)  // an eighth of the group's lines per pair
        prefetch_group_part<typename F::Block, kShort, kK16Pairs>(g.base, nb, p);
      __m256i da[T], db[T];
      for (int t = 0; t < T; ++t) da[t] = db[t] = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h) {
        const __m256i q = g.row(F::quants_row(nb, p, h));
        for (int k = 0; k < 2; ++k) {
          const int chunk = 2 * h + k;
          __m256i lo = _mm256_and_si256(_mm256_srli_epi16(q, 4 * k), c.three);
          __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4 * k + 2), c.three);
          F::levels(g, p, chunk, c, lo, hi);
          for (int t = 0; t < T; ++t) {
            const int8_t* x = a[t]->q[p][chunk];
            da[t] = _mm256_add_epi16(da[t], _mm256_maddubs_epi16(lo, simd::load256(x)));
            db[t] = _mm256_add_epi16(db[t], _mm256_maddubs_epi16(hi, simd::load256(x + 32)));
          }
        }
      }
      const int e = p % 2;
      const __m256i sv = s.sc[p / 2], mv = s.mn[p / 2];
      const __m256i sa = _mm256_shuffle_epi8(sv, c.scale_of[e][0]);
      const __m256i sb = _mm256_shuffle_epi8(sv, c.scale_of[e][1]);
      const __m256i ma = _mm256_shuffle_epi8(mv, c.second_of[e][0]);
      const __m256i mb = _mm256_shuffle_epi8(mv, c.second_of[e][1]);
      for (int t = 0; t < T; ++t) {
        sums[t] = simd::add_madd_i16(simd::add_madd_i16(sums[t], da[t], sa), db[t], sb);
        corr[t] = simd::add_madd_i16(simd::add_madd_i16(corr[t], simd::load256(a[t]->sums4[p]), ma),
                                     simd::load256(a[t]->sums4[p] + kK8Blocks), mb);
      }
    }
    for (int t = 0; t < T; ++t) acc[t] = F::finish(s, sums[t], corr[t], a[t]->d, acc[t]);
  }
};

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
