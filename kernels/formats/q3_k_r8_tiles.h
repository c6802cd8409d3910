// Tiles of Q3_K_R8 weights (q3_k_r8.h) against their activation layout (ActGroupK16): T tokens x
// 1 row a pass, the QuantTile interface (tiles.h), so matvec_driver / gemm_driver run them
// unchanged.
//
// avx512 (VNNI): per group of 8 super-blocks and row, the 16 scales of each block are unpacked
// from the three scale rows into four byte vectors (scale - 32, signed), ~20 ops for the 8
// blocks. Then per pair of element groups, for each of its 4 chunks: the quants row broadcast to
// both halves of a zmm, one variable shift and one and (two bits a byte), one masked add of 4
// where the field's 64-bit mask has the third bit, one vpdpbusd per token against the
// activation's 64 bytes of the same elements; the pair's sums (|16 x 7 x 127| a lane, an int16)
// meet its two scales in one vpdpwssd, the scale as an int16 of 256 x (scale - 32) (one pshufb
// puts the byte in the high half, which sign-extends it for free), and the activation's group
// sums (times 4) the same scales in a second vpdpwssd (the - 4 of every level). Per group the halves are
// folded and the 256 divided out exactly. About 5 ops per 64 elements and token against ~13 for
// plain q3_K.
//
// Other instruction sets run the reference (plain q3_K is not repacked there: quant.h). AVX2
// alone has no mask registers to add the third bits with.
//
// A row's last group may hold fewer than 8 blocks: its rows are 4 * nb bytes apart and read with
// masked loads, the missing lanes zero (and the activation's zero there too), so they add exactly
// nothing. Each (token, row) accumulator sees the same steps whatever T is, so gemm_q and matvec
// give identical sums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arch.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/q3_k_r8.h"
#include "kernels/formats/repacked_tiles.h"

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX512)

struct Q3KR8Tile : RowPasses<Q3KR8Tile> {
  // One row a pass: 4 tokens' dots and two accumulators each fit the 32 zmm registers.
  template <int T>
  static constexpr int kRowsPerPass = 1;

  struct Constants {
    __m256i low4 = _mm256_set1_epi8(0x0F), top2_01 = _mm256_set1_epi8(0x03);
    __m256i top2_23 = _mm256_set1_epi8(0x0C), top2_45 = _mm256_set1_epi8(0x30);
    __m256i bias = _mm256_set1_epi8(32);
    __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    // chunk 2h + k: shift by 4k in the lower half (group A's bits), 4k + 2 in the upper (B's)
    __m512i shift[2] = {halves_epi16(0, 2), halves_epi16(4, 6)};
    // pair 2q + e: the scale of group 4q + 2e (lower half) or 4q + 2e + 1 (upper) of each lane's
    // block, from byte 4b + 2e (+ 1) of the scale vector, into byte 1 of the lane (zero around)
    __m512i scale_of[2] = {scale_control(0), scale_control(1)};

    static __m512i halves_epi16(int lower, int upper) noexcept {
      return _mm512_mask_set1_epi16(_mm512_set1_epi16(static_cast<int16_t>(lower)), 0xFFFF0000u,
                                    static_cast<int16_t>(upper));
    }
    static __m512i scale_control(int e) noexcept {
      alignas(64) int32_t c[16];
      for (int l = 0; l < 16; ++l) {
        const uint32_t byte = 4u * static_cast<uint32_t>(l % 4) + 2u * e + (l >= 8 ? 1u : 0u);
        c[l] = static_cast<int32_t>(0x80808080u ^ (0x80u << 8) ^ (byte << 8));
      }
      return _mm512_load_si512(c);
    }
  };

  // The rows of one group: whole (8 blocks, plain loads) or a row's short last group (nb blocks,
  // masked loads: the lanes past nb read as zero and nothing past the group is touched).
  template <bool kShort>
  struct Group {
    const uint8_t* base;
    size_t nb;
    __mmask8 lanes() const noexcept { return static_cast<__mmask8>((1u << nb) - 1); }
    __m256i row(size_t offset) const noexcept {
      if constexpr (kShort)
        return _mm256_maskz_loadu_epi32(lanes(), base + offset);
      else
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + offset));
    }
    __m512i both_halves(size_t offset) const noexcept {
      return _mm512_maskz_broadcast_i64x4(0xFF, row(offset));
    }
    __m256 d() const noexcept {
      if constexpr (kShort)
        return _mm256_cvtph_ps(_mm_maskz_loadu_epi16(lanes(), base));
      else
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(base)));
    }
  };

  // The scale vectors: byte 4b + m of v[q] = scale 4q + m of block b, less 32 (q3_k_r8.h), in
  // both halves.
  template <bool kShort>
  [[gnu::always_inline]] static void group_scales(const Group<kShort>& g, const Constants& c,
                                                  __m512i (&v)[4]) noexcept {
    const __m256i r0 = g.row(k3_scale_row(g.nb, 0)), r1 = g.row(k3_scale_row(g.nb, 1));
    const __m256i hi = g.row(k3_scale_row(g.nb, 2));
    const __m256i low4 = c.low4;
    const __m256i s[4] = {
        _mm256_or_si256(_mm256_and_si256(r0, low4),
                        _mm256_slli_epi16(_mm256_and_si256(hi, c.top2_01), 4)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(r0, 4), low4),
                        _mm256_slli_epi16(_mm256_and_si256(hi, c.top2_23), 2)),
        _mm256_or_si256(_mm256_and_si256(r1, low4), _mm256_and_si256(hi, c.top2_45)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(r1, 4), low4),
                        _mm256_and_si256(_mm256_srli_epi16(hi, 2), c.top2_45)),
    };
    for (int q = 0; q < 4; ++q)
      v[q] = _mm512_maskz_broadcast_i64x4(0xFF, _mm256_sub_epi8(s[q], c.bias));
  }

  // acc[t] += the group's sums for T tokens.
  template <int T, bool kShort>
  [[gnu::always_inline]] static void group(const Group<kShort>& g, const ActGroupK16* const* a,
                                           const Constants& c, __m256 (&acc)[T]) noexcept {
    const size_t nb = g.nb;
    __m512i scales[4];
    group_scales(g, c, scales);
    // per lane: sum over the half's groups of 256 (scale - 32) x (level + 4) . q, and of
    // 256 (scale - 32) x 4 x the group's q sum
    __m512i sums[T], corr[T];
    for (int t = 0; t < T; ++t) sums[t] = corr[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int p = 0; p < static_cast<int>(kK16Pairs); ++p) {
      if constexpr (T == 1) {  // an eighth of the group's lines per pair (q4_k_r8_tiles.h)
        if constexpr (kShort)
          prefetch_stream_part(g.base + kPrefetchBytes, nb * sizeof(BlockQ3_K), p, kK16Pairs);
        else
          prefetch_stream_part<kK3GroupBytes, kK16Pairs>(g.base + kPrefetchBytes, p);
      }
      __m512i dots[T];
      for (int t = 0; t < T; ++t) dots[t] = _mm512_setzero_si512();
      for (int h = 0; h < 2; ++h) {
        const __m512i q = g.both_halves(k3_quants_row(nb, p, h));
        for (int k = 0; k < 2; ++k) {
          const int chunk = 2 * h + k;
          __m512i v = _mm512_and_si512(_mm512_srlv_epi16(q, c.shift[k]), c.three);
          v = _mm512_mask_add_epi8(
              v, half_lanes_mask<kShort>(g.base + k3_high_field(nb, p, chunk), nb), v, c.four);
          for (int t = 0; t < T; ++t)
            dots[t] = _mm512_dpbusd_epi32(dots[t], v, _mm512_loadu_si512(a[t]->q[p][chunk]));
        }
      }
      const __m512i sc = _mm512_shuffle_epi8(scales[p / 2], c.scale_of[p % 2]);
      for (int t = 0; t < T; ++t) {
        sums[t] = _mm512_dpwssd_epi32(sums[t], dots[t], sc);
        corr[t] = _mm512_dpwssd_epi32(corr[t], _mm512_loadu_si512(a[t]->sums4[p]), sc);
      }
    }
    const __m256 dw = g.d();
    for (int t = 0; t < T; ++t) {
      // level = (level + 4) - 4; each half at most 8 groups x 256 x 32 x 16 x 4 x 127 in
      // magnitude, their sum below 2^31
      const __m512i v = _mm512_sub_epi32(sums[t], corr[t]);
      const __m256i lanes = _mm256_srai_epi32(
          _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, v, 0),
                           _mm512_maskz_extracti64x4_epi64(0xF, v, 1)),
          8);
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_loadu_ps(a[t]->d)),
                               _mm256_cvtepi32_ps(lanes), acc[t]);
    }
  }

  // acc[t] += the sums of every group of the row at w (whole groups, then the short one).
  template <int T>
  [[gnu::always_inline]] static void row_sums(const uint8_t* w, const uint8_t* x, size_t x_stride,
                                              size_t n, const Constants& c,
                                              __m256 (&acc)[T]) noexcept {
    const size_t blocks = n / QK_K, groups = blocks / kK8Blocks, rest = blocks % kK8Blocks;
    const ActGroupK16* a[T];
    for (size_t gi = 0; gi < groups; ++gi) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupK16*>(x + t * x_stride) + gi;
      group<T, false>({w + gi * kK3GroupBytes, kK8Blocks}, a, c, acc);
    }
    if (rest > 0) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupK16*>(x + t * x_stride) + groups;
      group<T, true>({w + groups * kK3GroupBytes, rest}, a, c, acc);
    }
  }

  // Made once: matvec runs a pass per row, and a 2048-wide row is a single group.
  static const Constants& constants() noexcept {
    static const Constants c;
    return c;
  }

  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    static_assert(P == 1);
    (void)w_row_bytes;
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    row_sums<T>(w, x, x_stride, n, constants(), acc);
    for (int t = 0; t < T; ++t) y[t * y_stride] = simd::hsum(acc[t]);
  }

  // One token (matvec_driver calls this instead of its tile loop): as q4_K_r8's matvec, rows of
  // whole groups 8 at a time when the rows are a multiple of 8, their sums finished together by
  // hsum8 (the same additions as hsum, bit for bit); every other row alone.
  static void matvec(const uint8_t* w, size_t w_row_bytes, size_t rows, size_t n, const uint8_t* x,
                     float* y) noexcept {
    const Constants& c = constants();
    size_t r = 0;
    if ((n / QK_K) % kK8Blocks == 0 && rows % 8 == 0) {
      for (; r < rows; r += 8) {
        __m256 acc[8];
        for (int i = 0; i < 8; ++i) {
          __m256 a[1] = {_mm256_setzero_ps()};
          row_sums<1>(w + (r + i) * w_row_bytes, x, 0, n, c, a);
          acc[i] = a[0];
        }
        _mm256_storeu_ps(y + r, simd::hsum8(acc));
      }
    }
    for (; r < rows; ++r) pass<1, 1>(w + r * w_row_bytes, w_row_bytes, x, 0, n, y + r, 0);
  }
};

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
            const uint8_t bits = g[k3_quants_row(nb, p, c / 2) + 4 * b + e];
            const int low = bits >> (2 * (2 * (c % 2) + static_cast<size_t>(upper))) & 3;
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
