// What the tiles of the repacked layouts share (q4_0_r16_tiles.h, q8_0_r16_tiles.h; RowPasses
// also q4_k_r8_tiles.h). A q4_0_r16 / q8_0_r16 row is whole groups of blocks in the layout's own
// arrangement, then the blocks that do not fill a group, left in the plain format and
// multiplied by that format's trait (its "tail"); the activation is laid out the same way.
// (q4_K_r8 puts those blocks into a short group of its own layout instead: q4_k_r8.h.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/arch.h"
#include "kernels/formats/prefetch.h"

namespace oxi::kernels::OXI_ARCH_NS {

// The plain blocks at the end of a row (the plain format's Trait): `blocks` of them at
// w + w_offset, against the plain activation blocks at x + x_offset.
template <class Trait, int T, int P>
inline void plain_tail(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                       size_t w_offset, size_t x_offset, size_t blocks,
                       typename Trait::Acc (&acc)[T][P]) noexcept {
  using WBlock = typename Trait::WBlock;
  using ABlock = typename Trait::ABlock;
  for (size_t b = 0; b < blocks; ++b) {
    typename Trait::Act a[T];
    for (int t = 0; t < T; ++t) {
      a[t] = Trait::load_act(reinterpret_cast<const ABlock*>(x + t * x_stride + x_offset)[b]);
    }
    for (int p = 0; p < P; ++p) {
      const WBlock* block = reinterpret_cast<const WBlock*>(w + p * w_row_bytes + w_offset) + b;
      // One token streams its row (prefetch.h); the groups' requests stop short of the tail.
      if constexpr (T == 1)
        prefetch_stream_lines<sizeof(WBlock)>(reinterpret_cast<const uint8_t*>(block) +
                                              kPrefetchBytes);
      const typename Trait::W wb = Trait::load_w(*block);
      for (int t = 0; t < T; ++t) Trait::step(acc[t][p], wb, a[t]);
    }
  }
}

// Rows of `blocks` blocks: groups of kGroupBlocks (WGroup bytes of weights, AGroup bytes of
// activation each), then the plain tail.
template <class Tail, class WGroup, class AGroup, size_t kGroupBlocks>
struct RepackedRows {
  // Whether rows of `blocks` blocks end in plain ones. A one-token pass over such rows requests
  // its lines ahead, not only the page starts: the plain blocks stand between one row's groups
  // and the next, so each group load's stride jumps there, which the core's per-instruction
  // prefetcher does not follow. Qwen2.5-0.5B-shaped decode (rows of 896 and 4864: 12 and 8
  // plain blocks), fast-memory minutes: Q8_0 84.4 against 73.7 % of the read limit; Q4_0's
  // ffn_down 81-88 against 63-71 %, its decode 0-4 points higher (thirty-seventh session,
  // docs/benchmarks.md).
  static constexpr bool ends_in_plain_blocks(size_t blocks) noexcept {
    return blocks % kGroupBlocks != 0;
  }

  // Writes y for T tokens x P rows: group_sum(t, p), the (token, row)'s f32 sum over the
  // groups, plus its tail blocks' sum.
  template <int T, int P, class GroupSum>
  static void finish(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                     size_t blocks, float* y, size_t y_stride, const GroupSum& group_sum) noexcept {
    const size_t groups = blocks / kGroupBlocks;
    typename Tail::Acc tail[T][P]{};
    plain_tail<Tail, T, P>(w, w_row_bytes, x, x_stride, groups * sizeof(WGroup),
                           groups * sizeof(AGroup), blocks - groups * kGroupBlocks, tail);
    for (int t = 0; t < T; ++t) {
      for (int p = 0; p < P; ++p) y[t * y_stride + p] = group_sum(t, p) + Tail::finish(tail[t][p]);
    }
  }
};

// The QuantTile interface (tiles.h) over a tile that computes P rows per pass
// (Tile::pass<T, P>, P = Tile::kRowsPerPass<T>, so its accumulators fit the registers).
template <class Tile>
struct RowPasses {
  // matvec: one row per tile, so one token's weights are a single sequential stream.
  static constexpr int kMatvecRows = 1;

  template <int T, int R>
  static void tile(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    constexpr int P = std::min(R, Tile::template kRowsPerPass<T>);
    static_assert(R % P == 0);
    for (int r = 0; r < R; r += P) {
      Tile::template pass<T, P>(w + r * w_row_bytes, w_row_bytes, x, x_stride, n, y + r, y_stride);
    }
  }
};

}  // namespace oxi::kernels::OXI_ARCH_NS
