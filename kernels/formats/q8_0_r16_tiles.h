// Tiles of Q8_0_R16 weights (q8_0_r16.h) against their activation layout: T tokens x R rows,
// the QuantTile interface (tiles.h), so matvec_driver / gemm_driver run them unchanged.
//
// Per group of 16 blocks, token and row, the AVX2 version does for each half (8 blocks, one
// int32 lane each): 8 loads of 32 quant bytes, each with the sign trick of plain q8_0 (|w| as
// the unsigned operand of maddubs, w's sign moved onto the activation), maddubs, madd with
// ones and an int32 add; then one convert and one FMA with the 8 scales converted by one
// vcvtph2ps: about 6.5 instructions per block instead of plain q8_0's ~12. On avx512 maddubs,
// madd and add are one VNNI vpdpbusd (same sums): in cache, one core, 70 -> 87-91 GB/s. Since the
// thirty-sixth session the VNNI tiles skip the sign trick: the weight byte flipped to w + 128 is
// the unsigned operand, and the activation's 128 x block sum (ActGroupQ8R16::sum128) comes off
// each block's int32 once a group half; the same integers, three instructions per 32 bytes and
// token instead of five. TinyLlama-shaped Q8_0 decode, three copies of each binary, two rounds
// (scripts/ab-decode.py): 79.9 % of the limit against 77.5 %, higher in 5 of 6 pairs.
//
// Each k goes to int32 on its own: a maddubs lane is |w0| * a0 + |w1| * a1 with |w| <= 128 (a
// weight of -128 reads as unsigned 128) and |a| <= 127 (q8_0 activations never hold -128), so
// one lane stays within 2 * 128 * 127 = 32512 (no saturation), but the sum of two could reach
// 65024 and overflow int16. The int32 lanes hold at most 32 * 128 * 127 per block.
//
// Each (token, row) accumulator sees the same steps whatever T and R are, the short group's
// last (its lanes past m add 0 x 0), so gemm_q and matvec give identical sums here too.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arch.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/q8_0_r16.h"
#include "kernels/formats/repacked_tiles.h"
#include "kernels/formats/traits_avx2.h"
#include "kernels/formats/traits_scalar.h"

namespace oxi::kernels::OXI_ARCH_NS {

#if defined(OXI_ARCH_AVX2)

struct Q8_0R16Tile : RowPasses<Q8_0R16Tile> {
  // Rows P at a time, as q4_0_r16's tile (q4_0_r16_tiles.h).
  template <int T>
  static constexpr int kRowsPerPass = T >= 2 ? 1 : 4;

  // acc[t][p] += the dots of blocks 8c .. 8c + 7 of row p's group, times their two scales.
  template <int T, int P, class Group>
  [[gnu::always_inline]] static void add_half(const Group& group, int c, int p,
                                              const ActGroupQ8R16* const (&a)[T],
                                              __m256 (&acc)[T][P]) noexcept {
    const __m256 dw = group.scales(c);
    __m256i s32[T];
    for (int t = 0; t < T; ++t) s32[t] = _mm256_setzero_si256();
    if constexpr (simd::kVnni) {
      // w + 128 as the unsigned operand, then 128 x the activation's sum subtracted: the same
      // integers as the sign trick's, two instructions fewer per 32 bytes (a lane holds at most
      // 32 * 255 * 127 before the subtraction)
      const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
      for (int k = 0; k < 8; ++k) {
        const __m256i u = _mm256_xor_si256(group.quants(k, c), flip);
        for (int t = 0; t < T; ++t)
          s32[t] = _mm256_dpbusd_epi32(s32[t], u, simd::load256(a[t]->q[k] + 32 * c));
      }
      for (int t = 0; t < T; ++t)
        s32[t] = _mm256_sub_epi32(s32[t], simd::load256(a[t]->sum128 + 8 * c));
    } else {
      for (int k = 0; k < 8; ++k) {
        const __m256i q = group.quants(k, c);
        const __m256i u = _mm256_sign_epi8(q, q);
        for (int t = 0; t < T; ++t) {
          const __m256i s = _mm256_sign_epi8(simd::load256(a[t]->q[k] + 32 * c), q);
          s32[t] = simd::add_dot_u8s8(s32[t], u, s);
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      const __m256 scale = _mm256_mul_ps(dw, _mm256_loadu_ps(a[t]->d + 8 * c));
      acc[t][p] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(s32[t]), acc[t][p]);
    }
  }

  // A few tokens (kStreamTokens) request their lines ahead (kLines) on AVX2, and on avx512 where
  // a row ends in a short group (ends_in_short_group) or stream_lines(kQ8_0R16) says so
  // (prefetch.h); else only the page starts.
  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
#if defined(OXI_ARCH_AVX512)
    if constexpr (T < kStreamTokens) {
      if (!ends_in_short_group(n / QK) && !stream_lines(StreamLayout::kQ8_0R16))
        return pass_with<T, P, false>(w, w_row_bytes, x, x_stride, n, y, y_stride);
    }
#endif
    pass_with<T, P, true>(w, w_row_bytes, x, x_stride, n, y, y_stride);
  }
  template <int T, int P, bool kLines>
  static void pass_with(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                        size_t n, float* y, size_t y_stride) noexcept {
    const size_t blocks = n / QK, groups = blocks / kR16Blocks, m = blocks % kR16Blocks;
    __m256 acc[T][P];
    for (int t = 0; t < T; ++t)
      for (int p = 0; p < P; ++p) acc[t][p] = _mm256_setzero_ps();
    // A few tokens, page starts only: those of each row's groups, kPrefetchBytes ahead, requested
    // here once per row and not looked for in every group (prefetch.h, thirty-sixth session).
    if constexpr (T < kStreamTokens && !kLines)
      for (int p = 0; p < P; ++p)
        prefetch_page_starts(w + p * w_row_bytes + kPrefetchBytes,
                             groups * sizeof(WeightGroupQ8R16));
    const ActGroupQ8R16* a[T];
    for (size_t g = 0; g < groups; ++g) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupQ8R16*>(x + t * x_stride) + g;
      const WeightGroupQ8R16* wg[P];
      for (int p = 0; p < P; ++p)
        wg[p] = reinterpret_cast<const WeightGroupQ8R16*>(w + p * w_row_bytes) + g;
        // c unrolled, each half asking for its half of the group kPrefetchBytes ahead beside
        // the row's own loads: otherwise GCC kept a pointer per (row, k) and per prefetched line
        // on the stack (in-cache matvec, one core: 58 -> 63-66 GB/s).
#pragma GCC unroll 2
      for (int c = 0; c < 2; ++c) {  // blocks 8c .. 8c + 7
        for (int p = 0; p < P; ++p) {
          // kLines: its lines and the page starts among them (prefetch.h). AVX2: at 16 KB ahead
          // the page starts alone had read faster; at 8 KB the lines as well: Q8_0 decode /
          // weights read higher in 9 of 10 alternating pairs, +1.5 to +8 points
          // (docs/benchmarks.md, twenty-fifth session). avx512, whose loop is shorter, may
          // request the page starts alone, once per row (above; pass).
          if constexpr (T < kStreamTokens && kLines) {
            constexpr size_t kHalf = sizeof(WeightGroupQ8R16) / 2;
            prefetch_stream_part<kHalf>(reinterpret_cast<const uint8_t*>(wg[p]) + kPrefetchBytes +
                                        kHalf * c);
          }
          add_half<T, P>(WholeR16Group<WeightGroupQ8R16, false>{wg[p]}, c, p, a, acc);
        }
      }
    }
    if (m > 0) {
      for (int t = 0; t < T; ++t)
        a[t] = reinterpret_cast<const ActGroupQ8R16*>(x + t * x_stride) + groups;
      const size_t offset = groups * sizeof(WeightGroupQ8R16);
      if constexpr (T < kStreamTokens &&
                    kLines) {  // the short groups' lines too (the groups' stop short)
        for (int p = 0; p < P; ++p)
          prefetch_stream_part(w + p * w_row_bytes + offset + kPrefetchBytes, m * sizeof(BlockQ8_0),
                               0, 1);
      }
      for (int c = 0; c < (m > 8 ? 2 : 1); ++c)
        for (int p = 0; p < P; ++p)
          add_half<T, P>(ShortR16Group{w + p * w_row_bytes + offset, m}, c, p, a, acc);
    }
    for (int t = 0; t < T; ++t)
      for (int p = 0; p < P; ++p) y[t * y_stride + p] = simd::hsum(acc[t][p]);
  }
};

#else

// The reference (R16ReferenceTile) with this layout's block term.
struct Q8_0R16Tile : R16ReferenceTile<Q8_0R16Tile, WeightGroupQ8R16, ActGroupQ8R16> {
  // Block b's integer dot against the activation group, times its two scales: `group` holds m
  // blocks (q8_0_r16.h).
  static float block_term(const uint8_t* group, size_t m, const ActGroupQ8R16& a,
                          size_t b) noexcept {
    int32_t s = 0;
    for (size_t k = 0; k < 8; ++k) {
      const uint8_t* qs = r16_quants(group, m, k);
      for (size_t j = 4 * b; j < 4 * b + 4; ++j) s += static_cast<int8_t>(qs[j]) * a.q[k][j];
    }
    uint16_t d;
    std::memcpy(&d, r16_scales(group) + 2 * b, 2);
    return f16_to_f32(d) * a.d[b] * static_cast<float>(s);
  }
};

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
