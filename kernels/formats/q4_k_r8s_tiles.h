// Products of Q4_K_R8S weights (q4_k_r8s.h): a set of rows is a run of whole q4_K_r8 groups,
// each computed by Q4KR8Tile::group as in rows of whole groups, its 8 lanes' sums then added
// into the accumulator of its row (a row group) or of the rows its lanes belong to (a tail
// group). The one-token product reads the matrix as one run of groups with one code, every load
// instruction at one stride (docs/benchmarks.md, thirty-seventh session: what keeps a stream at
// speed here). Each (token, row) accumulator sees the same steps in matvec and gemm_q, and
// hsum8 adds as hsum does, so both give identical sums.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/arch.h"
#include "kernels/formats/q4_k_r8_tiles.h"
#include "kernels/formats/q4_k_r8s.h"

namespace oxi::kernels::OXI_ARCH_NS {

// Tokens whose activations a set's weights meet before the next set is read (a token's
// activation: 5 groups of 2240 bytes for rows of 5632).
inline constexpr size_t kQ4KR8STokenChunk = 16;

#if defined(OXI_ARCH_AVX2)

struct Q4KR8STile {
  using K8 = Q4KR8Tile;

  // acc[i][t] = token t's sums of row i of the set at `set`; act[t]: the token's activation (its
  // first group). A row group's sums go to a register accumulator of its row, stored once the
  // row's groups are done; a tail group's lanes are added into the rows they belong to.
  template <int T, bool kLines>
  [[gnu::always_inline]] static void set_sums(const uint8_t* set, const K8Sets& s,
                                              const ActGroupK8* const* act, const K8::Constants& c,
                                              __m256 (&acc)[kK8Blocks][T]) noexcept {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 row_acc[T];
    for (int t = 0; t < T; ++t) row_acc[t] = _mm256_setzero_ps();
    // the row of a row group and its whole group in that row
    size_t row = 0, in_row = 0;
    for (size_t g = 0; g < s.groups; ++g) {
      const bool row_group = g < s.row_groups;
      const size_t act_group = row_group ? in_row : s.q + (g - s.row_groups);
      const ActGroupK8* a[T];
      for (int t = 0; t < T; ++t) a[t] = act[t] + act_group;
      // one copy of the group's code for every group, so that each load keeps one stride
      __m256 v[T][1];
      for (int t = 0; t < T; ++t) v[t][0] = _mm256_setzero_ps();
      K8::group<T, 1, false, kLines>(set + g * kK8GroupBytes, 0, 0, __m256i{}, a, c, v);
      if (row_group) {
        for (int t = 0; t < T; ++t) row_acc[t] = _mm256_add_ps(row_acc[t], v[t][0]);
        if (++in_row == s.q) {
          for (int t = 0; t < T; ++t) {
            acc[row][t] = row_acc[t];
            row_acc[t] = _mm256_setzero_ps();
          }
          in_row = 0;
          ++row;
        }
        continue;
      }
      // tail lanes 8h + k, k0 <= k < k1, belong to row i
      const size_t first = kK8Blocks * (g - s.row_groups);
      size_t k0 = 0, i = first / s.tail;
      while (k0 < kK8Blocks) {
        const size_t k1 = std::min(kK8Blocks, (i + 1) * s.tail - first);
        const __m256 in_row_i = _mm256_castsi256_ps(_mm256_and_si256(
            _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(k1)), lane),
            _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(static_cast<int>(k0) - 1))));
        for (int t = 0; t < T; ++t)
          acc[i][t] = _mm256_add_ps(acc[i][t], _mm256_and_ps(v[t][0], in_row_i));
        k0 = k1;
        ++i;
      }
    }
  }

  template <bool kLines>
  static void matvec_sets(const uint8_t* w, size_t w_row_bytes, size_t rows, size_t n,
                          const uint8_t* x, float* y, const K8::Constants& c) noexcept {
    const K8Sets s(n);
    const size_t set_rows = s.set_rows;
    const ActGroupK8* act[1] = {reinterpret_cast<const ActGroupK8*>(x)};
    for (size_t r = 0; r + set_rows <= rows; r += set_rows) {
      __m256 acc[kK8Blocks][1];
      for (auto& a : acc) a[0] = _mm256_setzero_ps();
      set_sums<1, kLines>(w + r * w_row_bytes, s, act, c, acc);
      if (set_rows == kK8Blocks) {
        const __m256 all[kK8Blocks] = {acc[0][0], acc[1][0], acc[2][0], acc[3][0],
                                       acc[4][0], acc[5][0], acc[6][0], acc[7][0]};
        _mm256_storeu_ps(y + r, simd::hsum8(all));
      } else {
        for (size_t i = 0; i < set_rows; ++i) y[r + i] = simd::hsum(acc[i][0]);
      }
    }
  }

  // One token; rows a multiple of K8Sets(n).set_rows, w at a set's start.
  static void matvec(const void* w, size_t w_row_bytes, size_t rows, size_t n, const void* x,
                     float* y) noexcept {
    const K8::Constants c;
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* xb = static_cast<const uint8_t*>(x);
    if (K8::batched_row_lines())
      matvec_sets<true>(wb, w_row_bytes, rows, n, xb, y, c);
    else
      matvec_sets<false>(wb, w_row_bytes, rows, n, xb, y, c);
  }

  template <int T>
  static void set_tokens(const uint8_t* set, const K8Sets& s, const uint8_t* x, size_t x_stride,
                         float* y, size_t y_stride, const K8::Constants& c) noexcept {
    const ActGroupK8* act[T];
    for (int t = 0; t < T; ++t) act[t] = reinterpret_cast<const ActGroupK8*>(x + t * x_stride);
    __m256 acc[kK8Blocks][T];
    for (auto& row : acc)
      for (auto& a : row) a = _mm256_setzero_ps();
    set_sums<T, false>(set, s, act, c, acc);
    for (int t = 0; t < T; ++t)
      for (size_t i = 0; i < s.set_rows; ++i) y[t * y_stride + i] = simd::hsum(acc[i][t]);
  }

  static void gemm(const void* w, size_t w_row_bytes, size_t rows, size_t n, const void* x_act,
                   size_t x_stride, size_t tokens, float* y, size_t y_stride) noexcept {
    const K8::Constants c;
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* xb = static_cast<const uint8_t*>(x_act);
    const K8Sets s(n);
    const size_t set_rows = s.set_rows;
    for (size_t t0 = 0; t0 < tokens; t0 += kQ4KR8STokenChunk) {
      const size_t t1 = std::min(tokens, t0 + kQ4KR8STokenChunk);
      for (size_t r = 0; r + set_rows <= rows; r += set_rows) {
        const uint8_t* set = wb + r * w_row_bytes;
        size_t t = t0;
        for (; t + 4 <= t1; t += 4)
          set_tokens<4>(set, s, xb + t * x_stride, x_stride, y + t * y_stride + r, y_stride, c);
        const uint8_t* xt = xb + t * x_stride;
        float* yt = y + t * y_stride + r;
        switch (t1 - t) {
          case 3:
            set_tokens<3>(set, s, xt, x_stride, yt, y_stride, c);
            break;
          case 2:
            set_tokens<2>(set, s, xt, x_stride, yt, y_stride, c);
            break;
          case 1:
            set_tokens<1>(set, s, xt, x_stride, yt, y_stride, c);
            break;
          default:
            break;
        }
      }
    }
  }
};

#else

// The reference: each row's blocks in lane order, one f32 sum per (token, row).
struct Q4KR8STile {
  static void gemm(const void* w, size_t w_row_bytes, size_t rows, size_t n, const void* x_act,
                   size_t x_stride, size_t tokens, float* y, size_t y_stride) noexcept {
    const K8Sets s(n);
    const auto* wb = static_cast<const uint8_t*>(w);
    for (size_t t = 0; t < tokens; ++t) {
      const auto* act =
          reinterpret_cast<const ActGroupK8*>(static_cast<const uint8_t*>(x_act) + t * x_stride);
      for (size_t r = 0; r + s.set_rows <= rows; r += s.set_rows) {
        float acc[kK8Blocks]{};
        for (size_t g = 0; g < s.groups; ++g) {
          const uint8_t* group = wb + r * w_row_bytes + g * kK8GroupBytes;
          const ActGroupK8& a = act[s.act_group(g)];
          for (size_t k = 0; k < kK8Blocks; ++k)
            acc[s.lane(g, k).row] += Q4KR8Tile::block_sum(group, kK8Blocks, k, a);
        }
        for (size_t i = 0; i < s.set_rows; ++i) y[t * y_stride + r + i] = acc[i];
      }
    }
  }
  static void matvec(const void* w, size_t w_row_bytes, size_t rows, size_t n, const void* x,
                     float* y) noexcept {
    gemm(w, w_row_bytes, rows, n, x, 0, 1, y, 0);
  }
};

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
