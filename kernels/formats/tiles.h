// The tile loop of quantized formats and the matvec / gemm_q drivers shared by every format.
//
// A tile computes T tokens x R weight rows: each weight block is unpacked once and met by T
// activation blocks, and each activation block is prepared once and met by R rows. Every
// (token, row) pair sees the same sequence of steps whatever T and R are, so gemm_q and matvec
// give identical sums.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/arch.h"
#include "kernels/formats/prefetch.h"

namespace oxi::kernels::OXI_ARCH_NS {

// Rows per matvec tile of a plain format's trait F: F::kMatvecRows where F sets it, else one
// row, so that one token's weights are a single sequential stream (prefetch.h).
template <class F>
constexpr int trait_matvec_rows() {
  if constexpr (requires { F::kMatvecRows; })
    return F::kMatvecRows;
  else
    return 1;
}

// What F's one-row matvec requests ahead (prefetch.h): F::kStreamRequests where F says, else
// its lines.
template <class F>
constexpr StreamRequests trait_stream_requests() {
  if constexpr (requires { F::kStreamRequests; })
    return F::kStreamRequests;
  else
    return StreamRequests::kLines;
}

// Tokens per gemm tile: X::kGemmTokens where X (a plain format's trait, or a tile) sets it,
// else kGemmTokens.
inline constexpr int kGemmTokens = 4;
template <class X>
constexpr int gemm_tokens() {
  if constexpr (requires { X::kGemmTokens; })
    return X::kGemmTokens;
  else
    return kGemmTokens;
}

template <class F>
struct QuantTile {
  static constexpr int kMatvecRows = trait_matvec_rows<F>();
  static constexpr int kGemmTokens = gemm_tokens<F>();

  template <int T, int R>
  static void tile(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    using WBlock = typename F::WBlock;
    using ABlock = typename F::ABlock;
    const size_t blocks = n / F::kElems;
    typename F::Acc acc[T][R]{};
    const WBlock* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = reinterpret_cast<const WBlock*>(w + r * w_row_bytes);
    const ABlock* acts[T];
    for (int t = 0; t < T; ++t) acts[t] = reinterpret_cast<const ABlock*>(x + t * x_stride);
    for (size_t b = 0; b < blocks; ++b) {
      typename F::Act a[T];
      for (int t = 0; t < T; ++t) a[t] = F::load_act(acts[t][b]);
      for (int r = 0; r < R; ++r) {
        if constexpr (T == 1) {
          // One row: the bytes kPrefetchBytes on; interleaved rows: the same position of the
          // rows kPrefetchTiles tiles on (prefetch.h).
          const uint8_t* ahead = reinterpret_cast<const uint8_t*>(rows[r] + b) +
                                 (R == 1 ? kPrefetchBytes : kPrefetchTiles * R * w_row_bytes);
          if constexpr (R > 1)
            prefetch_lines<sizeof(WBlock)>(ahead);
          else
            prefetch_stream_step<trait_stream_requests<F>(), sizeof(WBlock)>(ahead);
        }
        const typename F::W wb = F::load_w(rows[r][b]);
        for (int t = 0; t < T; ++t) F::step(acc[t][r], wb, a[t]);
      }
    }
    for (int t = 0; t < T; ++t) {
      for (int r = 0; r < R; ++r) y[t * y_stride + r] = F::finish(acc[t][r]);
    }
  }
};

inline constexpr int kGemmRows = 4;
// Tokens whose activations a weight row tile meets before the next row tile is loaded.
inline constexpr size_t kGemmTokenChunk = 64;

template <class K>
void matvec_driver(const void* w, size_t w_row_bytes, size_t rows, size_t n, const void* x_act,
                   float* y) noexcept {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(x_act);
  if constexpr (requires { K::matvec(wb, w_row_bytes, rows, n, xb, y); }) {
    K::matvec(wb, w_row_bytes, rows, n, xb, y);  // a tile's own one-token loop (Q4KR8Tile)
    return;
  }
  constexpr int R = K::kMatvecRows;
  size_t r = 0;
  for (; r + R <= rows; r += R)
    K::template tile<1, R>(wb + r * w_row_bytes, w_row_bytes, xb, 0, n, y + r, 0);
  for (; r < rows; ++r)
    K::template tile<1, 1>(wb + r * w_row_bytes, w_row_bytes, xb, 0, n, y + r, 0);
}

template <class K, int T>
void gemm_rows(const uint8_t* w, size_t w_row_bytes, size_t rows, size_t n, const uint8_t* x,
               size_t x_stride, float* y, size_t y_stride) noexcept {
  if (rows == kGemmRows) {
    K::template tile<T, kGemmRows>(w, w_row_bytes, x, x_stride, n, y, y_stride);
    return;
  }
  for (size_t r = 0; r < rows; ++r) {
    K::template tile<T, 1>(w + r * w_row_bytes, w_row_bytes, x, x_stride, n, y + r, y_stride);
  }
}

// gemm_rows for the last `left` tokens of a chunk, fewer than the tile's: kGemmTokens at a time,
// then a tile of the 1-3 left (so that a format with larger tiles adds no other sizes).
template <class K>
void gemm_rows_rest(size_t left, const uint8_t* w, size_t w_row_bytes, size_t rows, size_t n,
                    const uint8_t* x, size_t x_stride, float* y, size_t y_stride) noexcept {
  static_assert(kGemmTokens == 4);
  for (; left >= kGemmTokens; left -= kGemmTokens) {
    gemm_rows<K, kGemmTokens>(w, w_row_bytes, rows, n, x, x_stride, y, y_stride);
    x += kGemmTokens * x_stride;
    y += kGemmTokens * y_stride;
  }
  switch (left) {
    case 3:
      gemm_rows<K, 3>(w, w_row_bytes, rows, n, x, x_stride, y, y_stride);
      break;
    case 2:
      gemm_rows<K, 2>(w, w_row_bytes, rows, n, x, x_stride, y, y_stride);
      break;
    case 1:
      gemm_rows<K, 1>(w, w_row_bytes, rows, n, x, x_stride, y, y_stride);
      break;
    default:
      break;
  }
}

template <class K>
void gemm_driver(const void* w, size_t w_row_bytes, size_t rows, size_t n, const void* x_act,
                 size_t x_stride, size_t tokens, float* y, size_t y_stride) noexcept {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(x_act);
  constexpr int T = gemm_tokens<K>();
  for (size_t t0 = 0; t0 < tokens; t0 += kGemmTokenChunk) {
    const size_t t1 = std::min(tokens, t0 + kGemmTokenChunk);
    for (size_t r = 0; r < rows; r += kGemmRows) {
      const size_t nr = std::min<size_t>(kGemmRows, rows - r);
      const uint8_t* wr = wb + r * w_row_bytes;
      size_t t = t0;
      for (; t + T <= t1; t += T) {
        gemm_rows<K, T>(wr, w_row_bytes, nr, n, xb + t * x_stride, x_stride, y + t * y_stride + r,
                        y_stride);
      }
      gemm_rows_rest<K>(t1 - t, wr, w_row_bytes, nr, n, xb + t * x_stride, x_stride,
                        y + t * y_stride + r, y_stride);
    }
  }
}

}  // namespace oxi::kernels::OXI_ARCH_NS
