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
// Each (token, row) accumulator sees the same steps whatever T and R are, and the blocks of a
// row that do not fill a group (stored as plain q4_K) go through the q4_K trait and are added
// at the end, so gemm_q and matvec give identical sums here too.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/arch.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/q4_k_r8.h"
#include "kernels/formats/repacked_tiles.h"
#include "kernels/formats/traits_avx2.h"
#include "kernels/formats/traits_scalar.h"

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

struct Q4KR8Tile : RowPasses<Q4KR8Tile> {
  using Tail = simd::Q4_K;
  using Rows = RepackedRows<Tail, WeightGroupK8, ActGroupK8, kK8Blocks>;

  // Rows P at a time so that the T x P accumulators, T int16 and T int32 sums and the unpacked
  // weights fit the 16 ymm registers.
  template <int T>
  static constexpr int kRowsPerPass = T >= 2 ? 1 : 4;

  // The bytes of a group one sub-block's step requests ahead of itself.
  static constexpr size_t kPrefetchSlice = sizeof(WeightGroupK8) / 8;

  // k2 for lane_bytes: a zero high int16
  static constexpr int kNoByte = -1;

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

  // Each token's dot products of sub-block j (its 4 x 32 weight bytes qs) in the 8 blocks'
  // lanes, as one ByteDots (simd::NibbleDots::sum()).
  template <int T>
  struct SubBlockDots {
    simd::ByteDots v[T];
  };
  template <int T>
  static SubBlockDots<T> sub_block_dots(const uint8_t (*qs)[4 * kK8Blocks],
                                        const ActGroupK8* const* a, int j) noexcept {
    SubBlockDots<T> out;
#if defined(OXI_ARCH_AVX512)
    // 512 bits (Zen 5 runs them at full width): the 32 weight bytes in both halves, the low
    // nibbles kept in the lower half and the high ones, as 16 x their value, in the upper,
    // against the activation's low- and high-nibble bytes, which lie side by side (q[j][i][0],
    // q[j][i][1]): one mask, one load and one VNNI op per 32 bytes and token instead of two
    // of each. Folded, each lane is NibbleDots' integer: the same sums. gemm_q's tiles: Q4_K_M
    // pp512 +12 %. One token's matvec loads the activation as two 32-byte halves (the 64 bytes
    // start 32 bytes into a line, q at offset 160 of ActGroupK8): Q4_K_M decode, tokens back
    // to back, 51.5-64.2 -> 52.6-66.1 GB/s, higher in all nine alternating pairs (decode /
    // weights read +0.8 to +7 points; docs/benchmarks.md, twenty-fourth session). With a
    // pass after every token, as the bench timed decode before, it had looked slower.
    const __m512i nibble_mask = _mm512_mask_set1_epi8(_mm512_set1_epi8(0x0F), 0xFFFFFFFF00000000ull,
                                                      static_cast<char>(0xF0));
    __m512i d[T];
    for (int t = 0; t < T; ++t) d[t] = _mm512_setzero_si512();
    for (int i = 0; i < 4; ++i) {
      const __m512i q =
          _mm512_and_si512(_mm512_maskz_broadcast_i64x4(0xFF, simd::load256(qs[i])), nibble_mask);
      for (int t = 0; t < T; ++t) {
        const __m512i x =
            T == 1 ? _mm512_mask_broadcast_i64x4(
                         _mm512_maskz_broadcast_i64x4(0x0F, simd::load256(a[t]->q[j][i][0])), 0xF0,
                         simd::load256(a[t]->q[j][i][1]))
                   : _mm512_loadu_si512(a[t]->q[j][i][0]);
        d[t] = _mm512_dpbusd_epi32(d[t], q, x);
      }
    }
    for (int t = 0; t < T; ++t) {
      out.v[t].v =
          _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, d[t], 0),
                           _mm256_srai_epi32(_mm512_maskz_extracti64x4_epi64(0xF, d[t], 1), 4));
    }
#else
    simd::NibbleDots dots[T];
    for (int i = 0; i < 4; ++i) {
      const auto q = simd::NibbleDots::split(simd::load256_once(qs[i]));
      for (int t = 0; t < T; ++t)
        dots[t].add(q, simd::load256(a[t]->q[j][i][0]), simd::load256(a[t]->q[j][i][1]));
    }
    for (int t = 0; t < T; ++t) out.v[t] = dots[t].sum();
#endif
    return out;
  }

  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    const size_t blocks = n / QK_K, groups = blocks / kK8Blocks;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256 acc[T][P];
    for (int t = 0; t < T; ++t)
      for (int p = 0; p < P; ++p) acc[t][p] = _mm256_setzero_ps();
    for (size_t g = 0; g < groups; ++g) {
      const ActGroupK8* a[T];
      for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const ActGroupK8*>(x + t * x_stride) + g;
      for (int p = 0; p < P; ++p) {
        const WeightGroupK8* wg = reinterpret_cast<const WeightGroupK8*>(w + p * w_row_bytes) + g;
        // Scales and mins of the 8 blocks: byte k of lane b = sub-block k (s03, m03) or k + 4.
        const __m256i lo_s = simd::load256(wg->sc_lo), lo_m = simd::load256(wg->mn_lo);
        const __m256i hi = simd::load256(wg->hi);
        const __m256i s03 =
            _mm256_or_si256(_mm256_and_si256(lo_s, low4),
                            _mm256_slli_epi16(_mm256_and_si256(hi, _mm256_set1_epi8(0x03)), 4));
        const __m256i s47 =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo_s, 4), low4),
                            _mm256_slli_epi16(_mm256_and_si256(hi, _mm256_set1_epi8(0x0C)), 2));
        const __m256i m03 = _mm256_or_si256(_mm256_and_si256(lo_m, low4),
                                            _mm256_and_si256(hi, _mm256_set1_epi8(0x30)));
        const __m256i m47 =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo_m, 4), low4),
                            _mm256_and_si256(_mm256_srli_epi16(hi, 2), _mm256_set1_epi8(0x30)));
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wg->d)));
        const __m256 dm =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wg->dmin)));
        // The mins against the activation's sub-block sums, pairs of sub-blocks per madd.
        const __m256i mn[4] = {
            _mm256_shuffle_epi8(m03, lane_bytes(0, 1)), _mm256_shuffle_epi8(m03, lane_bytes(2, 3)),
            _mm256_shuffle_epi8(m47, lane_bytes(0, 1)), _mm256_shuffle_epi8(m47, lane_bytes(2, 3))};
        for (int t = 0; t < T; ++t) {
          __m256i m = _mm256_madd_epi16(mn[0], simd::load256(a[t]->sums[0]));
          for (int k = 1; k < 4; ++k)
            m = simd::add_madd_i16(m, mn[k], simd::load256(a[t]->sums[k]));
          const __m256 ad = _mm256_loadu_ps(a[t]->d);
          acc[t][p] = _mm256_fnmadd_ps(_mm256_mul_ps(dm, ad), _mm256_cvtepi32_ps(m), acc[t][p]);
        }
        __m256i sum[T];
        for (int t = 0; t < T; ++t) sum[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
          // One token streams its row (prefetch.h): an eighth of the group's bytes requested
          // per sub-block, not all 18 lines at the group's start, so that the requests go out
          // as evenly as the loads (TinyLlama-shaped Q4_K_M decode, 6 alternating pairs: decode
          // / weights read alone +0.9 to +3.6 points, mean +2.0; in L2 unchanged).
          if constexpr (T == 1) {  // and the page starts among them
            const uint8_t* ahead =
                reinterpret_cast<const uint8_t*>(wg) + kPrefetchBytes + j * kPrefetchSlice;
            prefetch_lines_and_page_starts<kPrefetchSlice>(ahead);
          }
          const SubBlockDots<T> dots = sub_block_dots<T>(wg->qs[j], a, j);
          // the sub-block's scale in every lane, as ByteDots::times takes it
          const int k = j % 4, k2 = simd::ByteDots::kInt32 ? kNoByte : k;
          const __m256i sc = _mm256_shuffle_epi8(j < 4 ? s03 : s47, lane_bytes(k, k2));
          for (int t = 0; t < T; ++t) sum[t] = _mm256_add_epi32(sum[t], dots.v[t].times(sc));
        }
        for (int t = 0; t < T; ++t) {
          const __m256 ad = _mm256_loadu_ps(a[t]->d);
          acc[t][p] = _mm256_fmadd_ps(_mm256_mul_ps(dw, ad), _mm256_cvtepi32_ps(sum[t]), acc[t][p]);
        }
      }
    }
    Rows::finish<T, P>(w, w_row_bytes, x, x_stride, blocks, y, y_stride,
                       [&](int t, int p) { return simd::hsum(acc[t][p]); });
  }
};

#else

// The reference: one f32 sum per (token, row), block after block, as ref::KQuant combines them.
struct Q4KR8Tile {
  static constexpr int kMatvecRows = 1;
  using Tail = ref::Q4_K;
  using Rows = RepackedRows<Tail, WeightGroupK8, ActGroupK8, kK8Blocks>;

  template <int T, int R>
  static void tile(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    const size_t blocks = n / QK_K, groups = blocks / kK8Blocks;
    float acc[T][R]{};
    for (size_t g = 0; g < groups; ++g) {
      for (int r = 0; r < R; ++r) {
        const WeightGroupK8& wg = reinterpret_cast<const WeightGroupK8*>(w + r * w_row_bytes)[g];
        for (int t = 0; t < T; ++t) {
          const ActGroupK8& a = reinterpret_cast<const ActGroupK8*>(x + t * x_stride)[g];
          for (size_t b = 0; b < kK8Blocks; ++b) {
            int32_t isum = 0, mins = 0;
            for (size_t j = 0; j < 8; ++j) {
              const size_t k = j % 4;
              const int hi = wg.hi[4 * b + k];
              const int sc = j < 4 ? (wg.sc_lo[4 * b + k] & 0xF) | (hi & 3) << 4
                                   : (wg.sc_lo[4 * b + k] >> 4) | ((hi >> 2) & 3) << 4;
              const int mn = j < 4 ? (wg.mn_lo[4 * b + k] & 0xF) | ((hi >> 4) & 3) << 4
                                   : (wg.mn_lo[4 * b + k] >> 4) | (hi >> 6) << 4;
              int32_t s = 0;
              for (size_t i = 0; i < 4; ++i) {
                for (size_t m = 4 * b; m < 4 * b + 4; ++m) {
                  s += (wg.qs[j][i][m] & 0xF) * a.q[j][i][0][m] +
                       (wg.qs[j][i][m] >> 4) * a.q[j][i][1][m];
                }
              }
              isum += sc * s;
              mins += mn * a.sums[j / 2][2 * b + j % 2];
            }
            acc[t][r] += (a.d[b] * f16_to_f32(wg.d[b])) * static_cast<float>(isum) -
                         (a.d[b] * f16_to_f32(wg.dmin[b])) * static_cast<float>(mins);
          }
        }
      }
    }
    Rows::finish<T, R>(w, w_row_bytes, x, x_stride, blocks, y, y_stride,
                       [&](int t, int r) { return acc[t][r]; });
  }
};

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
