// Tiles of Q6_K_R8 weights (q6_k_r8.h) against their activation layout (ActGroupQ6K8): T tokens x
// 1 row a pass, the QuantTile interface (tiles.h), so matvec_driver / gemm_driver run them
// unchanged.
//
// Per group of 8 super-blocks and row: the 16 scales of the 8 blocks widened once (4 ops), the
// -32 offset as sum_s sc_s * bsum_s from the activation's sums (4 madds a token), then per
// sub-block s (16 elements of each block: 128 weights, 96 bytes):
// - avx512: ql rows 2s and 2s + 1 as one 512-bit load, their high nibbles by one shift, qh's row
//   in both halves rotated (vprolvd) so that each half's two bits land on bits 4-5 for the low
//   and the high nibbles, one ternary op each to merge (q6_K's plain avx512 trait does the same
//   per 128 elements); per token two maddubs (level 0..63 x q: pairs of at most 16002), their
//   int16 sum (at most 32004) and one vpdpwssd against the sub-block's scale, an int16 pair per
//   lane by one vpermw;
// - AVX2: the same per 256-bit row, qh's fields by shifts, the scale by a pshufb and a shift,
//   madd and add for vpdpwssd.
// Every block's integer sum stays in int32 lanes (on avx512 in two, one per half, folded once
// a group), is exact and the same on both paths; the f32 combine is one FMA per group, so the
// two give the same bits.
//
// Other instruction sets run the reference (plain q6_K is not repacked there: quant.h).
//
// A row's last group may hold fewer than 8 blocks: its rows are 4 * nb bytes apart and read with
// masked loads, the missing lanes zero, and the activation's zero there too, so they add exactly
// nothing. Each (token, row) accumulator sees the same steps whatever T is, so gemm_q and matvec
// give identical sums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arch.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/q6_k_r8.h"
#include "kernels/formats/repacked_tiles.h"  // RowPasses, K8ReferenceTile
#include "kernels/formats/traits_avx2.h"

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

struct Q6KR8Tile : RowPasses<Q6KR8Tile> {
  // One row a pass: with 4 tokens the sums, offsets and accumulators take 12 registers.
  template <int T>
  static constexpr int kRowsPerPass = 1;

  struct Constants {
#if defined(OXI_ARCH_AVX512)
    __m512i low4 = _mm512_set1_epi8(0x0F), top2 = _mm512_set1_epi8(0x30);
    // vprolvd counts that bring qh's bits for the low / high nibbles to bits 4-5: fields 0 / 1
    // in the lower half (ql row 2s), 2 / 3 in the upper (row 2s + 1); a rotation by 30 is a
    // shift right by 2 within each byte's field, and the & top2 after it drops the rest
    __m512i rotate_low = half_counts(4, 0), rotate_high = half_counts(2, 30);
    // vpermw controls: sub-block 4r + k's scale (int16 4b + k of the widened scale row r) as
    // both int16 of int32 lane L, block L % 8, in both halves
    __m512i scale_of[4] = {scale_control(0), scale_control(1), scale_control(2), scale_control(3)};
    static __m512i half_counts(int lower, int upper) noexcept {
      return _mm512_mask_set1_epi32(_mm512_set1_epi32(lower), 0xFF00, upper);
    }
    static __m512i scale_control(int k) noexcept {
      alignas(64) int16_t c[32];
      for (int i = 0; i < 32; ++i) c[i] = static_cast<int16_t>(4 * (i / 2 % 8) + k);
      return _mm512_load_si512(c);
    }
#else
    __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30);
    // pshufb controls: byte k of each int32 lane into the high byte of both its int16 (then an
    // arithmetic shift by 8 gives the scale sign-extended, twice)
    __m256i scale_of[4] = {scale_control(0), scale_control(1), scale_control(2), scale_control(3)};
    static __m256i scale_control(int k) noexcept {
      const auto c = [&](int d) {
        const uint32_t byte = static_cast<uint32_t>(4 * d + k);
        return static_cast<int>(0x80u | byte << 8 | 0x80u << 16 | byte << 24);
      };
      return _mm256_setr_epi32(c(0), c(1), c(2), c(3), c(0), c(1), c(2), c(3));
    }
#endif
  };

  // Rows of a group: whole (rows 32 bytes apart) or the row's short last group (rows 4 * nb
  // bytes apart, masked loads: the lanes past nb read as zero, nothing past the group touched).
  template <bool kShort>
  struct GroupRows {
    const uint8_t* base;
    size_t nb;
    uint8_t lane_bits;  // lanes < nb
    __m256i lane_mask;  // the same as all-ones int32 lanes
    size_t stride() const noexcept { return kShort ? k8_row_bytes(nb) : 32; }
    __m256i row(size_t r) const noexcept {
      const uint8_t* p = base + r * stride();
#if defined(OXI_ARCH_AVX512)
      if constexpr (kShort) return _mm256_maskz_loadu_epi32(lane_bits, p);
#else
      if constexpr (kShort)
        return _mm256_maskload_epi32(reinterpret_cast<const int*>(p), lane_mask);
#endif
      else
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    }
    // The blocks' f16 scales as f32.
    __m256 d() const noexcept {
      const uint8_t* p = base + q6k8_d_offset(kShort ? nb : kK8Blocks);
#if defined(OXI_ARCH_AVX512)
      if constexpr (kShort) return _mm256_cvtph_ps(_mm_maskz_loadu_epi16(lane_bits, p));
#else
      if constexpr (kShort) {
        alignas(16) uint16_t h[kK8Blocks] = {};
        std::memcpy(h, p, 2 * nb);
        return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
      }
#endif
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
#if defined(OXI_ARCH_AVX512)
    __m512i both_halves(size_t r) const noexcept {
      return _mm512_maskz_broadcast_i64x4(0xFF, row(r));
    }
    // Sub-block s's ql rows p = 0 (lower half) and 1 (upper): adjacent in a whole group, one
    // load; in a short one two masked loads, each into its half. (One vpexpandd of the 2 * nb
    // int32 beside the short group's line requests: one core in L2, rows of 6 blocks, 18 GB/s
    // against 33-35 for either without the other.)
    __m512i ql_rows(size_t s) const noexcept {
      if constexpr (kShort)
        return _mm512_mask_broadcast_i64x4(
            _mm512_maskz_broadcast_i64x4(0xF, row(q6k8_ql_row(s, 0))), 0xF0,
            row(q6k8_ql_row(s, 1)));
      else
        return _mm512_loadu_si512(base + q6k8_ql_row(s, 0) * 32);
    }
#endif
  };

  // acc[t] += the group's sums for T tokens.
  template <int T, bool kShort>
  [[gnu::always_inline]] static void group(const GroupRows<kShort>& g, const ActGroupQ6K8* const* a,
                                           const Constants& c, __m256 (&acc)[T]) noexcept {
    __m256i total[T];
#if defined(OXI_ARCH_AVX512)
    // int16 4b + k of row r: the scale of sub-block 4r + k of block b
    __m512i scales[4];
    for (int r = 0; r < 4; ++r) scales[r] = _mm512_cvtepi8_epi16(g.row(q6k8_scale_row(r)));
    // sum_s sc_s * bsum_s, block b's in int32 lanes 2b and 2b + 1
    __m512i offset[T], sums[T];
    for (int t = 0; t < T; ++t) {
      offset[t] = _mm512_setzero_si512();
      sums[t] = _mm512_setzero_si512();
      for (int r = 0; r < 4; ++r)
        offset[t] = _mm512_dpwssd_epi32(offset[t], scales[r], _mm512_loadu_si512(a[t]->sums[r]));
    }
    constexpr int kAOrB = 0xEC;  // ternary logic: (a & c) | b
#pragma GCC unroll 16
    for (int s = 0; s < 16; ++s) {
      prefetch<T>(g, s);
      const __m512i ql = g.ql_rows(s), qh = g.both_halves(q6k8_qh_row(s));
      const __m512i q_low = _mm512_ternarylogic_epi32(
          ql, _mm512_and_si512(_mm512_maskz_rolv_epi32(0xFFFF, qh, c.rotate_low), c.top2), c.low4,
          kAOrB);
      const __m512i q_high = _mm512_ternarylogic_epi32(
          _mm512_srli_epi16(ql, 4),
          _mm512_and_si512(_mm512_maskz_rolv_epi32(0xFFFF, qh, c.rotate_high), c.top2), c.low4,
          kAOrB);
      const __m512i sc = _mm512_permutexvar_epi16(c.scale_of[s % 4], scales[s / 4]);
      for (int t = 0; t < T; ++t) {
        const __m512i pairs =
            _mm512_add_epi16(_mm512_maddubs_epi16(q_low, _mm512_loadu_si512(a[t]->q[s][0][0])),
                             _mm512_maddubs_epi16(q_high, _mm512_loadu_si512(a[t]->q[s][1][0])));
        sums[t] = _mm512_dpwssd_epi32(sums[t], pairs, sc);
      }
    }
    for (int t = 0; t < T; ++t) {
      const __m256i lanes = _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, sums[t], 0),
                                             _mm512_maskz_extracti64x4_epi64(0xF, sums[t], 1));
      // lanes 2b + 2b + 1 in the low int32 of each int64, then those 8 (masked forms: GCC 12
      // warns about the undefined source of the plain rotate, shift and narrowing intrinsics)
      const __m256i off = _mm512_maskz_cvtepi64_epi32(
          0xFF, _mm512_add_epi32(offset[t], _mm512_maskz_srli_epi64(0xFF, offset[t], 32)));
      total[t] = _mm256_sub_epi32(lanes, _mm256_slli_epi32(off, 5));
    }
#else
    __m256i scale_rows[4];
    for (int r = 0; r < 4; ++r) scale_rows[r] = g.row(q6k8_scale_row(r));
    __m256i sums[T];
    for (int t = 0; t < T; ++t) {
      // sum_s sc_s * bsum_s: blocks 0-3 (int32 lanes 2b, 2b + 1) and 4-7, paired by one hadd
      __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
      for (int r = 0; r < 4; ++r) {
        lo = _mm256_add_epi32(
            lo, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(scale_rows[r])),
                                  simd::load256(a[t]->sums[r])));
        hi = _mm256_add_epi32(
            hi, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(scale_rows[r], 1)),
                                  simd::load256(a[t]->sums[r] + 16)));
      }
      // [0 1 4 5 | 2 3 6 7] -> [0 1 2 3 | 4 5 6 7]
      const __m256i off = _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo, hi), 0xD8);
      total[t] = _mm256_slli_epi32(off, 5);
      sums[t] = _mm256_setzero_si256();
    }
#pragma GCC unroll 16
    for (int s = 0; s < 16; ++s) {
      prefetch<T>(g, s);
      const __m256i qh = g.row(q6k8_qh_row(s));
      // field k of qh at bits 4-5: k = 2p + h (ql row 2s + p, nibble h)
      const __m256i top[4] = {_mm256_and_si256(_mm256_slli_epi16(qh, 4), c.top2),
                              _mm256_and_si256(_mm256_slli_epi16(qh, 2), c.top2),
                              _mm256_and_si256(qh, c.top2),
                              _mm256_and_si256(_mm256_srli_epi16(qh, 2), c.top2)};
      const __m256i sc =
          _mm256_srai_epi16(_mm256_shuffle_epi8(scale_rows[s / 4], c.scale_of[s % 4]), 8);
      for (int p = 0; p < 2; ++p) {
        const __m256i ql = g.row(q6k8_ql_row(s, p));
        const __m256i q_low = _mm256_or_si256(_mm256_and_si256(ql, c.low4), top[2 * p]);
        const __m256i q_high =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql, 4), c.low4), top[2 * p + 1]);
        for (int t = 0; t < T; ++t) {
          const __m256i pairs =
              _mm256_add_epi16(_mm256_maddubs_epi16(q_low, simd::load256(a[t]->q[s][0][p])),
                               _mm256_maddubs_epi16(q_high, simd::load256(a[t]->q[s][1][p])));
          sums[t] = _mm256_add_epi32(sums[t], _mm256_madd_epi16(pairs, sc));
        }
      }
    }
    for (int t = 0; t < T; ++t) total[t] = _mm256_sub_epi32(sums[t], total[t]);
#endif
    const __m256 dw = g.d();
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_loadu_ps(a[t]->d)),
                               _mm256_cvtepi32_ps(total[t]), acc[t]);
    }
  }

  // One token streams its row (prefetch.h): a sixteenth of the group's lines per sub-block. A
  // short group (at most 7 * 210 bytes, 23 lines) asks for lines 2s and 2s + 1 of its span at
  // sub-block s, and for the page start with the first: prefetch_stream_part's shares of a span
  // known at run time cost as much as the group's arithmetic here (one core in L2, rows of 6
  // blocks: 22 GB/s with them, 42 without any requests).
  template <int T, bool kShort>
  [[gnu::always_inline]] static void prefetch(const GroupRows<kShort>& g, int s) noexcept {
    if constexpr (T == 1) {
      if constexpr (kShort) {
        const uint8_t* p = g.base + kPrefetchBytes;
        const size_t bytes = g.nb * sizeof(BlockQ6_K);
        for (size_t line = 2 * static_cast<size_t>(s); line < 2 * static_cast<size_t>(s) + 2;
             ++line)
          if (line * kCacheLine < bytes) __builtin_prefetch(p + line * kCacheLine, 0, 0);
        if (s == 0) prefetch_page_starts(p, bytes);
      } else
        prefetch_stream_part<kQ6K8GroupBytes, 16>(g.base + kPrefetchBytes, s);
    }
  }

  // The constants, made once (matvec runs a pass per row, and a 2048-wide row is a single
  // group: iq4_xs_r8_tiles.h).
  static const Constants& constants() noexcept {
    static const Constants c;
    return c;
  }

  // acc[t] += the sums of every group of the row (whole groups, then the short one).
  template <int T>
  [[gnu::always_inline]] static void row_sums(const uint8_t* w, const uint8_t* x, size_t x_stride,
                                              size_t n, const Constants& c,
                                              __m256 (&acc)[T]) noexcept {
    const size_t blocks = n / QK_K, groups = blocks / kK8Blocks, rest = blocks % kK8Blocks;
    const ActGroupQ6K8* a[T];
    for (size_t gi = 0; gi < groups; ++gi) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupQ6K8*>(x + t * x_stride) + gi;
      group<T, false>({w + gi * kQ6K8GroupBytes, kK8Blocks, 0xFF, _mm256_set1_epi32(-1)}, a, c,
                      acc);
    }
    if (rest > 0) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupQ6K8*>(x + t * x_stride) + groups;
      const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      group<T, true>({w + groups * kQ6K8GroupBytes, rest, static_cast<uint8_t>((1u << rest) - 1),
                      _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)), lanes)},
                     a, c, acc);
    }
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

  // One token (matvec_driver calls this instead of its tile loop): rows of whole groups 8 at a
  // time, their sums finished together by hsum8 (the same additions as hsum, bit for bit), as
  // q4_K_r8's (q4_k_r8_tiles.h); rows with a short group one at a time.
  static void matvec(const uint8_t* w, size_t w_row_bytes, size_t rows, size_t n, const uint8_t* x,
                     float* y) noexcept {
    const Constants& c = constants();
    size_t r = 0;
    if ((n / QK_K) % kK8Blocks == 0) {
      for (; r + 8 <= rows; r += 8) {
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

// The reference: one f32 sum per (token, row), block after block: each block's integer sum
// sum_s sc_s * (sum of level * q - 32 * bsum_s) times its two scales.
struct Q6KR8Tile : K8ReferenceTile<Q6KR8Tile, BlockQ6_K, ActGroupQ6K8> {
  static float block_sum(const uint8_t* g, size_t nb, size_t b, const ActGroupQ6K8& a) noexcept {
    const size_t row = k8_row_bytes(nb);
    int32_t isum = 0, offset = 0;
    for (size_t s = 0; s < 16; ++s) {
      const int sc = static_cast<int8_t>(g[q6k8_scale_row(s / 4) * row + 4 * b + s % 4]);
      const uint8_t* qh = g + q6k8_qh_row(s) * row + 4 * b;
      int32_t dot = 0;
      for (size_t p = 0; p < 2; ++p) {
        const uint8_t* ql = g + q6k8_ql_row(s, p) * row + 4 * b;
        for (size_t h = 0; h < 2; ++h) {
          for (size_t m = 0; m < 4; ++m) {
            const int level = ((ql[m] >> (4 * h)) & 0xF) | ((qh[m] >> (2 * (2 * p + h))) & 3) << 4;
            dot += level * a.q[s][h][p][4 * b + m];
          }
        }
      }
      isum += sc * dot;
      offset += sc * a.sums[s / 4][4 * b + s % 4];
    }
    uint16_t d;
    std::memcpy(&d, g + q6k8_d_offset(nb) + 2 * b, 2);
    return (a.d[b] * f16_to_f32(d)) * static_cast<float>(isum - 32 * offset);
  }
};

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
