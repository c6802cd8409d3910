// Tiles of Q4_K_R8 weights (q4_k_r8.h) against their activation layout: T tokens x R rows, the
// QuantTile interface (tiles.h), so matvec_driver / gemm_driver run them unchanged.
//
// Per group of 8 super-blocks, token and row, the AVX2 version decodes the 8 blocks' scales and
// mins with ~20 vector ops, then for each of the 8 sub-blocks: 4 loads of 32 quant bytes, 3 ops
// each to split nibbles, 8 maddubs summed in int16, one shuffle for the scales and one madd:
// every block's integer sum stays in its own int32 lane, and the f32 combine is two FMAs per
// group. About 35 instructions per block and row instead of ~60 for plain q4_K. On avx512 the
// int16 sums become VNNI dot products into int32 and the scale a vpmulld (simd::ByteDots), and
// the high nibbles enter as byte & 0xF0 into their own sums, divided by 16 once per sub-block
// (simd::NibbleDots): one op per 32 bytes instead of three; in cache (2048-wide rows,
// one core) 47 -> 50-51 GB/s, same sums.
//
// A row's last group may hold fewer than 8 blocks: its rows are 4 * nb bytes apart and read
// with masked loads, the missing lanes zero (and the activation's zero there too), so they add
// exactly nothing. Each (token, row) accumulator sees the same steps whatever T and R are, so
// gemm_q and matvec give identical sums here too.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/arch.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/q4_k_r8.h"
#include "kernels/formats/repacked_tiles.h"  // RowPasses
#include "kernels/formats/traits_avx2.h"
#include "kernels/formats/traits_scalar.h"

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

struct Q4KR8Tile : RowPasses<Q4KR8Tile> {
  // Rows P at a time so that the T x P accumulators, T int16 and T int32 sums and the unpacked
  // weights fit the 16 ymm registers.
  template <int T>
  static constexpr int kRowsPerPass = T >= 2 ? 1 : 4;

  // k2 for lane_bytes: a zero high int16
  static constexpr int kNoByte = -1;

  // Whether matvec's batched rows of whole groups request their lines ahead, or only the page
  // starts: with the avx512 kernel as stream_lines(kQ4KR8) says (prefetch.h; the thirty-fifth
  // session's VM decoded faster on page starts, the thirty-eighth's with the lines:
  // TinyLlama-shaped Q4_K_M 80.6 against 76.4 % of the limit, 6 of 6 pairs), with the AVX2 one
  // always (on the thirty-fifth session's machine forced to AVX2, Q4_K_M decode 74-76 % of the
  // limit with the lines against 69-73 % without, four runs each).
  static bool batched_row_lines() noexcept {
#if defined(OXI_ARCH_AVX512)
    return stream_lines(StreamLayout::kQ4KR8);
#else
    return true;
#endif
  }

  // pshufb control: in every int32 lane (one block), byte k of that lane's 4 zero-extended to
  // both int16 halves (k2 == k), bytes k and k2 to the low and high int16, or byte k
  // zero-extended to the int32 (k2 == kNoByte).
  static __m256i lane_bytes(int k, int k2) noexcept {
    const auto c = [&](int d) {
      const uint32_t high = k2 == kNoByte ? 0x8080u : 0x8000u | static_cast<uint32_t>(4 * d + k2);
      return static_cast<int>(0x8000u | static_cast<uint32_t>(4 * d + k) | high << 16);
    };
    return _mm256_setr_epi32(c(0), c(1), c(2), c(3), c(0), c(1), c(2), c(3));
  }

  // The constant vectors of group(), made once per call before its loops (matvec: once for its
  // rows of whole groups; a row with a short group still goes through its own pass); made inside
  // group(), GCC made them again for every row, ~30 instructions beside a group's ~210, and a
  // 2048-wide row is a single group.
  struct Constants {
    __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i lo16 = _mm256_set1_epi32(0xFFFF);
    // the top bits of each scale / min in the row of high bits (q4_k_r8.h)
    __m256i hi_s03 = _mm256_set1_epi8(0x03), hi_s47 = _mm256_set1_epi8(0x0C);
    __m256i hi_m = _mm256_set1_epi8(0x30);
    // pairs of mins as int16 (lane_bytes(0, 1), lane_bytes(2, 3))
    __m256i min_pairs[2] = {lane_bytes(0, 1), lane_bytes(2, 3)};
#if defined(OXI_ARCH_AVX512)
    // sub_block_dots: the low nibbles of the lower half, the high ones (x 16) of the upper
    __m512i nibble_mask = _mm512_mask_set1_epi8(_mm512_set1_epi8(0x0F), 0xFFFFFFFF00000000ull,
                                                static_cast<char>(0xF0));
    // ScaledSums::add: byte k of each lane zero-extended to the int32, in both halves
    __m512i scale_of[4] = {broadcast(lane_bytes(0, kNoByte)), broadcast(lane_bytes(1, kNoByte)),
                           broadcast(lane_bytes(2, kNoByte)), broadcast(lane_bytes(3, kNoByte))};
    static __m512i broadcast(__m256i v) noexcept {
      return _mm512_maskz_broadcast_i64x4(0xFF, v);
    }
#else
    // ScaledSums::add: byte k of each lane as ByteDots::times takes it
    static __m256i scale_control(int k) noexcept {
      return lane_bytes(k, simd::ByteDots::kInt32 ? kNoByte : k);
    }
    __m256i scale_of[4] = {scale_control(0), scale_control(1), scale_control(2), scale_control(3)};
#endif
  };

  // The rows of one group of one weight row: whole (8 blocks, rows 32 bytes apart, plain loads)
  // or the row's short last group (nb blocks, rows 4 * nb bytes apart, masked loads: the lanes
  // past nb read as zero and nothing past the group is touched).
  template <bool kShort>
  struct GroupRows {
    const uint8_t* base;
    size_t stride;
    __m256i mask;
    __m256i row(size_t r) const noexcept {
      if constexpr (kShort) {
#if defined(OXI_ARCH_AVX512)
        return _mm256_maskz_loadu_epi32(_mm256_movemask_ps(_mm256_castsi256_ps(mask)),
                                        base + r * stride);
#else
        return _mm256_maskload_epi32(reinterpret_cast<const int*>(base + r * stride), mask);
#endif
      } else
        return simd::load256_once(base + r * k8_row_bytes(kK8Blocks));
    }
#if defined(OXI_ARCH_AVX512)
    // Row r in both halves of a zmm. A whole group's is one broadcast load; through row() it
    // was a load and a shuffle (the load kept apart from its uses), 32 more shuffles a group:
    // one core in L2, 2048-wide rows 51.2-52.2 -> 54.8-57.5 GB/s (5632-wide, a quarter of
    // their bytes in masked short groups, 51.2 -> 52.0).
    __m512i both_halves(size_t r) const noexcept {
      if constexpr (kShort)
        return _mm512_maskz_broadcast_i64x4(0xFF, row(r));
      else
        return _mm512_maskz_broadcast_i64x4(
            0xFF, _mm256_loadu_si256(
                      reinterpret_cast<const __m256i*>(base + r * k8_row_bytes(kK8Blocks))));
    }
#endif
  };

  // Each token's dot products of sub-block j (its 4 x 32 weight bytes) in the 8 blocks' lanes:
  // on avx512 unfolded (below), else as one ByteDots (simd::NibbleDots::sum()).
  template <int T>
  struct SubBlockDots {
#if defined(OXI_ARCH_AVX512)
    __m512i v[T];
#else
    simd::ByteDots v[T];
#endif
  };
  template <int T, bool kShort>
  static SubBlockDots<T> sub_block_dots(const GroupRows<kShort>& g, const ActGroupK8* const* a,
                                        int j, const Constants& c) noexcept {
    SubBlockDots<T> out;
#if defined(OXI_ARCH_AVX512)
    // 512 bits (Zen 5 runs them at full width): the 32 weight bytes in both halves, the low
    // nibbles kept in the lower half and the high ones, as 16 x their value, in the upper,
    // against the activation's low- and high-nibble bytes, which lie side by side (q[j][i][0],
    // q[j][i][1]): one mask, one load and one VNNI op per 32 bytes and token instead of two
    // of each; gemm_q's tiles: Q4_K_M pp512 +12 %. Left unfolded: ScaledSums divides the upper
    // half by 16, scales both halves and folds them once a group (lower + upper), so each lane
    // is NibbleDots' integer times the scale: the same sums. The 64 activation bytes start a cache
    // line (ActGroupK8's pad), so one load takes them for every T: in L2, one core, 2048 /
    // 5632-wide rows 45.7 / 42.4 -> 52.6 / 57.3 GB/s (before, one token loaded two 32-byte halves,
    // which had beaten one load across two lines: twenty-fourth session); Q4_K_M pp512 174-183 ->
    // 188-192 tok/s; decode within the noise (twenty-seventh session, docs/benchmarks.md).
    __m512i d[T];
    for (int t = 0; t < T; ++t) d[t] = _mm512_setzero_si512();
    for (int i = 0; i < 4; ++i) {
      const __m512i q = _mm512_and_si512(g.both_halves(k8_qs_row(j, i)), c.nibble_mask);
      for (int t = 0; t < T; ++t) {
        const __m512i x = _mm512_loadu_si512(a[t]->q[j][i][0]);
        d[t] = _mm512_dpbusd_epi32(d[t], q, x);
      }
    }
    for (int t = 0; t < T; ++t) out.v[t] = d[t];
#else
    simd::NibbleDots dots[T];
    for (int i = 0; i < 4; ++i) {
      const auto q = simd::NibbleDots::split(g.row(k8_qs_row(j, i)));
      for (int t = 0; t < T; ++t)
        dots[t].add(q, simd::load256(a[t]->q[j][i][0]), simd::load256(a[t]->q[j][i][1]));
    }
    for (int t = 0; t < T; ++t) out.v[t] = dots[t].sum();
#endif
    return out;
  }

  // Each token's integer sum over the group's 8 sub-blocks of dot products times sub-block
  // scales, one int32 lane per block. s03 / s47: byte k of lane b = the scale of sub-block k /
  // k + 4 of block b. Its members are always inlined: left to GCC, 5632-wide rows (a short
  // group each) ran ~4 % slower in L2.
  template <int T>
  struct ScaledSums {
#if defined(OXI_ARCH_AVX512)
    // The unfolded 512-bit dots (sub_block_dots) are scaled as they are and folded once a group
    // instead of once a sub-block. The upper (high-nibble) half is first divided by 16 (exact:
    // its products are of byte & 0xF0); then every lane is at most 16 products of 15 x 127 =
    // 30480 in magnitude, an int16, so one vpmaddwd against the scale (an int16 pair (sc, 0)
    // per lane) multiplies it: 3 cycles against vpmulld's 10, and the group's instructions
    // retire sooner, so more of the stream's loads stay in flight (a probe without the
    // multiply: the matvec from memory at 98-103 % of read_sum's rate against 81-90 %).
    __m512i sc03, sc47, v[T];
    [[gnu::always_inline]] ScaledSums(__m256i s03, __m256i s47) noexcept
        : sc03(_mm512_maskz_broadcast_i64x4(0xFF, s03)),
          sc47(_mm512_maskz_broadcast_i64x4(0xFF, s47)) {
      for (int t = 0; t < T; ++t) v[t] = _mm512_setzero_si512();
    }
    [[gnu::always_inline]] void add(int j, const SubBlockDots<T>& dots,
                                    const Constants& c) noexcept {
      // the sub-block's scale in every lane, zero-extended to int32
      const __m512i sc = _mm512_shuffle_epi8(j < 4 ? sc03 : sc47, c.scale_of[j % 4]);
      for (int t = 0; t < T; ++t) {
        const __m512i d = _mm512_mask_srai_epi32(dots.v[t], 0xFF00, dots.v[t], 4);
        v[t] = _mm512_add_epi32(v[t], _mm512_madd_epi16(d, sc));
      }
    }
    // lower half + upper half
    [[gnu::always_inline]] __m256i lanes(int t) const noexcept {
      return _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, v[t], 0),
                              _mm512_maskz_extracti64x4_epi64(0xF, v[t], 1));
    }
#else
    __m256i s03, s47, v[T];
    [[gnu::always_inline]] ScaledSums(__m256i s03_, __m256i s47_) noexcept : s03(s03_), s47(s47_) {
      for (int t = 0; t < T; ++t) v[t] = _mm256_setzero_si256();
    }
    [[gnu::always_inline]] void add(int j, const SubBlockDots<T>& dots,
                                    const Constants& c) noexcept {
      // the sub-block's scale in every lane, as ByteDots::times takes it
      const __m256i sc = _mm256_shuffle_epi8(j < 4 ? s03 : s47, c.scale_of[j % 4]);
      for (int t = 0; t < T; ++t) v[t] = _mm256_add_epi32(v[t], dots.v[t].times(sc));
    }
    [[gnu::always_inline]] __m256i lanes(int t) const noexcept {
      return v[t];
    }
#endif
  };

  // A group's 8 blocks' scales: s03 / s47, byte k of lane b = the scale of sub-block k / k + 4
  // of block b; the blocks' d and dmin as f32; the mins as int16 pairs of sub-blocks for the
  // activation's sums (q5_k_r8_tiles.h shares them).
  struct GroupScales {
    __m256i s03, s47;
    __m256 dw, dmin;
    __m256i mn[4];
  };
  template <bool kShort>
  [[gnu::always_inline]] static GroupScales group_scales(const GroupRows<kShort>& g,
                                                         const Constants& c) noexcept {
    const __m256i low4 = c.low4;
    GroupScales s;
    const __m256i lo_s = g.row(kK8RowScLo), lo_m = g.row(kK8RowMnLo), hi = g.row(kK8RowHi);
    s.s03 = _mm256_or_si256(_mm256_and_si256(lo_s, low4),
                            _mm256_slli_epi16(_mm256_and_si256(hi, c.hi_s03), 4));
    s.s47 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo_s, 4), low4),
                            _mm256_slli_epi16(_mm256_and_si256(hi, c.hi_s47), 2));
    const __m256i m03 = _mm256_or_si256(_mm256_and_si256(lo_m, low4), _mm256_and_si256(hi, c.hi_m));
    const __m256i m47 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo_m, 4), low4),
                                        _mm256_and_si256(_mm256_srli_epi16(hi, 2), c.hi_m));
    // d | dmin << 16 per lane -> the 8 d and the 8 dmin as f16 halves -> f32
    const __m256i dm = g.row(kK8RowDm);
    const __m256i halves = _mm256_permute4x64_epi64(
        _mm256_packus_epi32(_mm256_and_si256(dm, c.lo16), _mm256_srli_epi32(dm, 16)), 0xD8);
    s.dw = _mm256_cvtph_ps(_mm256_castsi256_si128(halves));
    s.dmin = _mm256_cvtph_ps(_mm256_extracti128_si256(halves, 1));
    s.mn[0] = _mm256_shuffle_epi8(m03, c.min_pairs[0]);
    s.mn[1] = _mm256_shuffle_epi8(m03, c.min_pairs[1]);
    s.mn[2] = _mm256_shuffle_epi8(m47, c.min_pairs[0]);
    s.mn[3] = _mm256_shuffle_epi8(m47, c.min_pairs[1]);
    return s;
  }
  // acc - the mins' term of one token: dmin x its d x the mins against its sub-block sums, pairs
  // of sub-blocks per madd.
  [[gnu::always_inline]] static __m256 minus_mins(const GroupScales& s, const ActGroupK8* a,
                                                  __m256 acc) noexcept {
    __m256i m = _mm256_madd_epi16(s.mn[0], simd::load256(a->sums[0]));
    for (int k = 1; k < 4; ++k) m = simd::add_madd_i16(m, s.mn[k], simd::load256(a->sums[k]));
    return _mm256_fnmadd_ps(_mm256_mul_ps(s.dmin, _mm256_loadu_ps(a->d)), _mm256_cvtepi32_ps(m),
                            acc);
  }

  // acc[t][p] += the group's sums for T tokens x P rows (the group at w + p * w_row_bytes).
  // kLines: whether one token's whole groups request their lines ahead (matvec below) or only
  // the page starts.
  template <int T, int P, bool kShort, bool kLines = true>
  [[gnu::always_inline]] static void group(const uint8_t* w, size_t w_row_bytes, size_t stride,
                                           __m256i mask, const ActGroupK8* const* a,
                                           const Constants& c, __m256 (&acc)[T][P]) noexcept {
    for (int p = 0; p < P; ++p) {
      const GroupRows<kShort> g{w + p * w_row_bytes, stride, mask};
      const GroupScales s = group_scales(g, c);
      for (int t = 0; t < T; ++t) acc[t][p] = minus_mins(s, a[t], acc[t][p]);
      ScaledSums<T> sums(s.s03, s.s47);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        // One token streams its row (prefetch.h): an eighth of a group's lines requested per
        // sub-block, not all 18 lines at the group's start, so that the requests go out as
        // evenly as the loads (TinyLlama-shaped Q4_K_M decode, 6 alternating pairs: decode /
        // weights read alone +0.9 to +3.6 points, mean +2.0; in L2 unchanged). Each line once
        // and the page start looked for once a group (prefetch_stream_part), with the weights'
        // broadcast loads (both_halves): decode +3 to +6 points of the limit, four pairs.
        if constexpr (T == 1) {
          if constexpr (kShort)
            prefetch_stream_part(g.base + kPrefetchBytes, kK8Rows * g.stride, j, 8);
          else if constexpr (kLines)
            prefetch_stream_part<kK8GroupBytes, 8>(g.base + kPrefetchBytes, j);
          else if (j == 0)
            prefetch_page_starts<kK8GroupBytes>(g.base + kPrefetchBytes);
        }
        sums.add(j, sub_block_dots<T>(g, a, j, c), c);
      }
      for (int t = 0; t < T; ++t) {
        const __m256 ad = _mm256_loadu_ps(a[t]->d);
        acc[t][p] =
            _mm256_fmadd_ps(_mm256_mul_ps(s.dw, ad), _mm256_cvtepi32_ps(sums.lanes(t)), acc[t][p]);
      }
    }
  }

  // acc[t][p] += the sums of every group of the T x P rows (whole groups, then the short one).
  template <int T, int P, bool kLines = true>
  [[gnu::always_inline]] static void row_sums(const uint8_t* w, size_t w_row_bytes,
                                              const uint8_t* x, size_t x_stride, size_t n,
                                              const Constants& c, __m256 (&acc)[T][P]) noexcept {
    const size_t blocks = n / QK_K, groups = blocks / kK8Blocks, rest = blocks % kK8Blocks;
    const ActGroupK8* a[T];
    for (size_t g = 0; g < groups; ++g) {
      for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const ActGroupK8*>(x + t * x_stride) + g;
      group<T, P, false, kLines>(w + g * kK8GroupBytes, w_row_bytes, 0, __m256i{}, a, c, acc);
    }
    if (rest > 0) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupK8*>(x + t * x_stride) + groups;
      const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)), lanes);
      group<T, P, true>(w + groups * kK8GroupBytes, w_row_bytes, k8_row_bytes(rest), mask, a, c,
                        acc);
    }
  }

  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    pass<T, P>(w, w_row_bytes, x, x_stride, n, y, y_stride, Constants{});
  }
  // The same with the constants made by the caller (matvec: once per call).
  template <int T, int P>
  [[gnu::always_inline]] static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x,
                                          size_t x_stride, size_t n, float* y, size_t y_stride,
                                          const Constants& c) noexcept {
    __m256 acc[T][P];
    for (int t = 0; t < T; ++t)
      for (int p = 0; p < P; ++p) acc[t][p] = _mm256_setzero_ps();
    row_sums<T, P>(w, w_row_bytes, x, x_stride, n, c, acc);
    for (int t = 0; t < T; ++t)
      for (int p = 0; p < P; ++p) y[t * y_stride + p] = simd::hsum(acc[t][p]);
  }

  // One token (matvec_driver calls this instead of its tile loop). Rows of whole groups go 8 at
  // a time, their sums finished together by hsum8 (the same additions as hsum, bit for bit):
  // each row's own hsum and store had cost ~9 cycles a row, a seventh of a 2048-wide row's
  // time. One core in L2, rows of 2048: 63 -> 74 GB/s (`bench kernels`); TinyLlama-shaped Q4_K_M
  // decode, 8 alternating pairs: tg128 +1 to +6 % (8 of 8), decode +2.2 points of the limit on
  // average (7 of 8; thirty-first session, docs/benchmarks.md). Rows with a short last group
  // stay one row at a time: batched the same way, they ran 3 % slower in L2 and TinyLlama's down
  // product (rows of 5632) fell from ~68 to ~53 GB/s in decode. Most likely because a 32 KB
  // piece of them is 12 rows, 8 batched and 4 not, so the loads of both codes jump in their
  // strides, which the core's per-instruction prefetcher does not follow (q4_0_r16 showed it:
  // its ffn_down batched so at 67-72 % of the limit, at 87-94 % with pieces of 16 rows;
  // docs/benchmarks.md, thirty-seventh session). The rows with a short group request their
  // lines ahead (their whole-group loads step by 1152 and 2016 bytes in turn), the batched
  // rows as batched_row_lines() says.
  template <bool kLines>
  static void batched_rows(const uint8_t* w, size_t w_row_bytes, size_t rows, size_t n,
                           const uint8_t* x, float* y, const Constants& c) noexcept {
    for (size_t r = 0; r + 8 <= rows; r += 8) {
      __m256 acc[8];
      for (int i = 0; i < 8; ++i) {
        __m256 a[1][1] = {{_mm256_setzero_ps()}};
        row_sums<1, 1, kLines>(w + (r + i) * w_row_bytes, w_row_bytes, x, 0, n, c, a);
        acc[i] = a[0][0];
      }
      _mm256_storeu_ps(y + r, simd::hsum8(acc));
    }
  }

  static void matvec(const uint8_t* w, size_t w_row_bytes, size_t rows, size_t n, const uint8_t* x,
                     float* y) noexcept {
    const Constants c;
    size_t r = 0;
    // Batches only when they take all the rows: a piece of 8 batched rows and 4 others would
    // give both codes' loads jumps in their strides (above).
    if ((n / QK_K) % kK8Blocks == 0 && rows % 8 == 0) {
      if (batched_row_lines())
        batched_rows<true>(w, w_row_bytes, rows, n, x, y, c);
      else
        batched_rows<false>(w, w_row_bytes, rows, n, x, y, c);
      r = rows;
    }
    // The rest one at a time (every row with a short group), with the constants made above:
    // through the pass<1, 1> that makes its own, each row made them again, ~30 of a 5632-wide
    // row's ~600 instructions.
    // TinyLlama's q4_K_r8 ffn_down in Q4_K_M decode (one binary, the two paths switched at run
    // time, 12 alternating pairs): 75.8 against 69.9 % of the read limit, 11 of 12 higher;
    // decode 79.6 against 78.4 % (thirty-seventh session).
    for (; r < rows; ++r) pass<1, 1>(w + r * w_row_bytes, w_row_bytes, x, 0, n, y + r, 0, c);
  }
};

#else

// The reference (K8ScaleMinReferenceTile) with this layout's levels: the nibbles.
struct Q4KR8Tile : K8ScaleMinReferenceTile<Q4KR8Tile, BlockQ4_K> {
  static std::pair<int, int> levels(const uint8_t* g, size_t nb, size_t b, size_t j, size_t i,
                                    size_t m) noexcept {
    const uint8_t q = g[k8_qs_row(j, i) * k8_row_bytes(nb) + 4 * b + m];
    return {q & 0xF, q >> 4};
  }
};

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
