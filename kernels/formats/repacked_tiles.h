// What the tiles of the repacked layouts share (q4_0_r16_tiles.h, q5_r16_tiles.h,
// q8_0_r16_tiles.h; RowPasses also q4_k_r8_tiles.h). A q4_0_r16 / q8_0_r16 row is whole groups of
// 16 blocks in the layout's own arrangement, then a short group of the m = blocks % 16 blocks left,
// in the same arrangement for m blocks (q4_0_r16.h); the activation is whole groups, the last one's
// lanes past m zero. (q4_K_r8 has short groups of its own: q4_k_r8.h.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/arch.h"
#include "kernels/formats/fp16.h"
#include "kernels/formats/prefetch.h"
#include "kernels/formats/q4_0_r16.h"
#include "kernels/formats/q4_k_r8.h"
#include "kernels/formats/traits_avx2.h"

namespace oxi::kernels::OXI_ARCH_NS {

// Whether rows of `blocks` blocks end in a short group. A one-token pass over such rows
// requests its lines ahead, not only the page starts: the group loop does not read the whole
// stream, its loads' strides jump over the short group between one row and the next, which the
// core's per-instruction prefetcher does not follow. Qwen2.5-0.5B-shaped decode (rows of 896
// and 4864: 12 and 8 blocks past the groups, plain q8_0 / q4_0 blocks then), fast-memory
// minutes: Q8_0 84.4 against 73.7 % of the read limit; Q4_0's ffn_down 81-88 against 63-71 %
// (thirty-seventh session, docs/benchmarks.md).
constexpr bool ends_in_short_group(size_t blocks) noexcept {
  return blocks % kR16Blocks != 0;
}

// Passes of fewer tokens than this stream their weights from memory (the decode steps of one or
// a few conversations, a speculative draft) and request them ahead as a one-token pass does;
// gemm tiles of this many tokens meet weights that earlier tiles left in cache.
inline constexpr int kStreamTokens = 4;

#if defined(OXI_ARCH_AVX2)

// A row's whole group (WGroup: d[16], then qs[k][64]) as the 256-bit passes read it: the
// scales of blocks [8c, 8c + 8), and their 32 bytes of chunk k.
template <class WGroup, bool kLoadOnce>
struct WholeR16Group {
  const WGroup* g;
  static int halves() noexcept { return 2; }
  __m256 scales(int c) const noexcept {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g->d + 8 * c)));
  }
  __m256i quants(int k, int c) const noexcept {
    if constexpr (kLoadOnce)
      return simd::load256_once(g->qs[k] + 32 * c);
    else
      return simd::load256(g->qs[k] + 32 * c);
  }
};

// A row's short group of m < 16 blocks, the same way: lanes past m read as zero (no byte past
// the row is touched), and blocks 8-15 only when there are any. f16_lanes and int32_lanes read
// half c of any per-block field of the group (q5_r16_tiles.h reads its other fields with them).
struct ShortR16Group {
  const uint8_t* g;
  size_t m;
  int halves() const noexcept { return m > 8 ? 2 : 1; }
  // Blocks of half c present.
  size_t count(int c) const noexcept { return std::min<size_t>(8, m - 8 * c); }
#if defined(OXI_ARCH_AVX512)
  __mmask8 mask(int c) const noexcept {
    return static_cast<__mmask8>((1u << count(c)) - 1);
  }
  // 8 f16 values of half c of a field of 2 bytes a block starting at p, those past m as 0
  __m256 f16_lanes(const uint8_t* p, int c) const noexcept {
    return _mm256_cvtph_ps(_mm_maskz_loadu_epi16(mask(c), p + 16 * c));
  }
  // 8 int32 lanes of half c of a field of 4 bytes a block starting at p, those past m as 0
  __m256i int32_lanes(const uint8_t* p, int c) const noexcept {
    return _mm256_maskz_loadu_epi32(mask(c), p + 32 * c);
  }
#else
  // A plain 16-byte load stays inside the group (it ends at most 2m + 32 bytes into it, and
  // every group has 18m or more: more fields follow the scales and q5_1's mins), then the lanes
  // past m are cleared; not a copy through a stack buffer (a memcpy call and a store-forwarding
  // stall per half had held Whisper tiny's 384-wide rows, all short groups, at the plain
  // layout's speed: docs/benchmarks.md, forty-seventh session).
  __m256 f16_lanes(const uint8_t* p, int c) const noexcept {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * c));
    const __m128i keep = _mm_cmpgt_epi16(_mm_set1_epi16(static_cast<short>(count(c))),
                                         _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_cvtph_ps(_mm_and_si128(v, keep));
  }
  __m256i int32_lanes(const uint8_t* p, int c) const noexcept {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count(c))), lanes);
    return _mm256_maskload_epi32(reinterpret_cast<const int*>(p + 32 * c), mask);
  }
#endif
  __m256 scales(int c) const noexcept {
    return f16_lanes(r16_scales(g), c);
  }
  __m256i quants(int k, int c) const noexcept {
    return int32_lanes(r16_quants(g, m, k), c);
  }
};

// The loop of an r16 pass over T tokens x P rows: acc[t][p] = 0, then whole(g, a, acc) for each
// whole group g (a: the T tokens' activation groups g), then short_group(groups, m, a, acc) for
// the rows' short group of m blocks if there is one, then y[t * y_stride + p] = the sums.
template <class AGroup, int T, int P, class Whole, class Short>
[[gnu::always_inline]] inline void r16_group_loop(const uint8_t* x, size_t x_stride, size_t n,
                                                  float* y, size_t y_stride, const Whole& whole,
                                                  const Short& short_group) noexcept {
  const size_t blocks = n / QK, groups = blocks / kR16Blocks, m = blocks % kR16Blocks;
  __m256 acc[T][P];
  for (int t = 0; t < T; ++t)
    for (int p = 0; p < P; ++p) acc[t][p] = _mm256_setzero_ps();
  const AGroup* a[T];
  for (size_t g = 0; g < groups; ++g) {
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const AGroup*>(x + t * x_stride) + g;
    whole(g, a, acc);
  }
  if (m > 0) {
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const AGroup*>(x + t * x_stride) + groups;
    short_group(groups, m, a, acc);
  }
  for (int t = 0; t < T; ++t)
    for (int p = 0; p < P; ++p) y[t * y_stride + p] = simd::hsum(acc[t][p]);
}

// Tile::pass<T, P> of an r16 layout (q4_0_r16_tiles.h, q5_r16_tiles.h) on 256-bit vectors: T
// tokens x P rows over a row's whole groups (WholeGroup), then its short group of m blocks of
// kBlockBytes (ShortGroup), each through Tile::add_groups<T, P>, so every (token, row)
// accumulator sees the same steps whatever T and P are. Fewer than kStreamTokens tokens request
// their lines ahead (prefetch.h).
template <class Tile, class AGroup, class WholeGroup, class ShortGroup, size_t kBlockBytes, int T,
          int P>
[[gnu::always_inline]] inline void r16_pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x,
                                            size_t x_stride, size_t n, float* y,
                                            size_t y_stride) noexcept {
  using WGroup = std::remove_cvref_t<decltype(*WholeGroup::g)>;
  const auto whole = [&](size_t g, const AGroup* const(&a)[T], __m256(&acc)[T][P]) {
    WholeGroup wg[P];
    for (int p = 0; p < P; ++p) {
      wg[p].g = reinterpret_cast<const WGroup*>(w + p * w_row_bytes) + g;
      if constexpr (T < kStreamTokens)  // its lines and the page start among them (prefetch.h)
        prefetch_stream_part<sizeof(WGroup)>(reinterpret_cast<const uint8_t*>(wg[p].g) +
                                             kPrefetchBytes);
    }
    Tile::template add_groups<T, P>(wg, a, acc);
  };
  const auto short_group = [&](size_t groups, size_t m, const AGroup* const(&a)[T],
                               __m256(&acc)[T][P]) {
    ShortGroup sg[P];
    for (int p = 0; p < P; ++p) {
      sg[p].g = w + p * w_row_bytes + groups * sizeof(WGroup);
      sg[p].m = m;
      if constexpr (T < kStreamTokens)  // the short groups' lines too (the groups' stop short)
        prefetch_stream_part(sg[p].g + kPrefetchBytes, m * kBlockBytes, 0, 1);
    }
    Tile::template add_groups<T, P>(sg, a, acc);
  };
  r16_group_loop<AGroup, T, P>(x, x_stride, n, y, y_stride, whole, short_group);
}

#if defined(OXI_ARCH_AVX512)
// Tile::pass<T, P> of an r16 layout on avx512 (q4_0_r16_tiles.h, q5_r16_tiles.h): a group's 16
// blocks in the 16 int32 lanes of 512-bit vectors, for any T. Tile::add_group_512<T, P>(acc, p,
// a, group, m) adds row p's group of m blocks (16 for a whole one) against the T tokens' groups
// a, in the 256-bit passes' f32 order (add_r16_group_sums_512), so the same bits.
//
// Fewer than kStreamTokens tokens request the weights ahead: the lines (kLines) where the rows
// end in a short group or stream_lines(kQ4_0R16) says so, else the page starts (prefetch.h).
template <class Tile, class AGroup, class WGroup, size_t kBlockBytes, int T, int P, bool kLines>
void r16_pass_512(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride, size_t n,
                  float* y, size_t y_stride) noexcept {
  const auto whole = [&](size_t g, const AGroup* const(&a)[T], __m256(&acc)[T][P]) {
    for (int p = 0; p < P; ++p) {
      const uint8_t* wg = w + p * w_row_bytes + g * sizeof(WGroup);
      if constexpr (T < kStreamTokens) {
        if constexpr (kLines)
          prefetch_stream_part<sizeof(WGroup)>(wg + kPrefetchBytes);
        else
          prefetch_page_starts<sizeof(WGroup)>(wg + kPrefetchBytes);
      }
      Tile::template add_group_512<T, P>(acc, p, a, wg, kR16Blocks);
    }
  };
  const auto short_group = [&](size_t groups, size_t m, const AGroup* const(&a)[T],
                               __m256(&acc)[T][P]) {
    for (int p = 0; p < P; ++p) {
      const uint8_t* sg = w + p * w_row_bytes + groups * sizeof(WGroup);
      if constexpr (T < kStreamTokens && kLines)  // the short groups' lines too
        prefetch_stream_part(sg + kPrefetchBytes, m * kBlockBytes, 0, 1);
      Tile::template add_group_512<T, P>(acc, p, a, sg, m);
    }
  };
  r16_group_loop<AGroup, T, P>(x, x_stride, n, y, y_stride, whole, short_group);
}

template <class Tile, class AGroup, class WGroup, size_t kBlockBytes, int T, int P>
void r16_pass_512(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride, size_t n,
                  float* y, size_t y_stride) noexcept {
  if (ends_in_short_group(n / QK) || stream_lines(StreamLayout::kQ4_0R16))
    r16_pass_512<Tile, AGroup, WGroup, kBlockBytes, T, P, true>(w, w_row_bytes, x, x_stride, n, y,
                                                                y_stride);
  else
    r16_pass_512<Tile, AGroup, WGroup, kBlockBytes, T, P, false>(w, w_row_bytes, x, x_stride, n, y,
                                                                 y_stride);
}

// A whole group's 64-byte field at p as two 32-byte halves: a whole group's fields start 32
// bytes into a line in every other group, and one load across two lines had halved the stream
// (docs/benchmarks.md, twenty-fourth session).
inline __m512i load_halves_512(const uint8_t* p) noexcept {
  const __m512i first = _mm512_castsi256_si512(simd::load256(p));
  return _mm512_mask_inserti64x4(first, 0xFF, first, simd::load256(p + 32), 1);
}
#endif

#endif

#if !defined(OXI_ARCH_AVX2)

// The r16 layouts' reference tile: one f32 sum per (token, row), block after block, the short
// group's last. Tile::block_term(group, m, a, b) is block b's integer dot against the
// activation group a, times its two scales, for a group of m blocks (q4_0_r16.h).
template <class Tile, class WGroup, class AGroup>
struct R16ReferenceTile {
  static constexpr int kMatvecRows = 1;

  template <int T, int R>
  static void tile(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    const size_t blocks = n / QK;
    float acc[T][R]{};
    for (size_t first = 0; first < blocks; first += kR16Blocks) {
      const size_t g = first / kR16Blocks, m = std::min(kR16Blocks, blocks - first);
      for (int r = 0; r < R; ++r) {
        const uint8_t* group = w + r * w_row_bytes + g * sizeof(WGroup);
        for (int t = 0; t < T; ++t) {
          const AGroup& a = reinterpret_cast<const AGroup*>(x + t * x_stride)[g];
          for (size_t b = 0; b < m; ++b) acc[t][r] += Tile::block_term(group, m, a, b);
        }
      }
    }
    for (int t = 0; t < T; ++t)
      for (int r = 0; r < R; ++r) y[t * y_stride + r] = acc[t][r];
  }
};

#endif

// The reference tile of the layouts in groups of 8 super-blocks (q4_K_r8, iq4_xs_r8, q5_K_r8,
// q3_K_r8, q2_K_r8; the builds without AVX2): one f32
// sum per (token, row), block after block. Tile::block_sum(group, nb, b, a) is block b's sum
// against lane b of its activation group (AGroup: q4_K_r8's, or q3_K_r8's ActGroupK16), for a
// group of nb blocks of type Block.
template <class Tile, class Block, class AGroup = ActGroupK8>
struct K8ReferenceTile {
  static constexpr int kMatvecRows = 1;

  template <int T, int R>
  static void tile(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    const size_t blocks = n / QK_K;
    float acc[T][R]{};
    for (size_t first = 0; first < blocks; first += kK8Blocks) {
      const size_t nb = k8_group_blocks(blocks, first);
      for (int r = 0; r < R; ++r) {
        const uint8_t* g = w + r * w_row_bytes + first * sizeof(Block);
        for (int t = 0; t < T; ++t) {
          const AGroup& a = reinterpret_cast<const AGroup*>(x + t * x_stride)[first / kK8Blocks];
          for (size_t b = 0; b < nb; ++b) acc[t][r] += Tile::block_sum(g, nb, b, a);
        }
      }
    }
    for (int t = 0; t < T; ++t)
      for (int r = 0; r < R; ++r) y[t * y_stride + r] = acc[t][r];
  }
};

// The reference of the layouts with q4_K_r8's scale rows (q4_K_r8, q5_K_r8): block b's sum of
// level x q over each sub-block times its 6-bit scale, less its mins against the activation's
// sub-block sums, times the two f16 scales, as ref::KQuant combines them.
// Tile::levels(g, nb, b, j, i, m) gives the levels of the two elements of quants row (j, i),
// byte 4b + m (q4_k_r8.h: the low nibble's element and the high one's).
template <class Tile, class Block>
struct K8ScaleMinReferenceTile : K8ReferenceTile<Tile, Block> {
  static float block_sum(const uint8_t* g, size_t nb, size_t b, const ActGroupK8& a) noexcept {
    const size_t row = k8_row_bytes(nb);
    int32_t isum = 0, mins = 0;
    for (size_t j = 0; j < 8; ++j) {
      const size_t k = j % 4;
      const int lo_s = g[kK8RowScLo * row + 4 * b + k];
      const int lo_m = g[kK8RowMnLo * row + 4 * b + k];
      const int hi = g[kK8RowHi * row + 4 * b + k];
      const int sc = j < 4 ? (lo_s & 0xF) | (hi & 3) << 4 : (lo_s >> 4) | ((hi >> 2) & 3) << 4;
      const int mn = j < 4 ? (lo_m & 0xF) | ((hi >> 4) & 3) << 4 : (lo_m >> 4) | (hi >> 6) << 4;
      int32_t s = 0;
      for (size_t i = 0; i < 4; ++i) {
        for (size_t m = 0; m < 4; ++m) {
          const auto [low, high] = Tile::levels(g, nb, b, j, i, m);
          s += low * a.q[j][i][0][4 * b + m] + high * a.q[j][i][1][4 * b + m];
        }
      }
      isum += sc * s;
      mins += mn * a.sums[j / 2][2 * b + j % 2];
    }
    uint32_t dm;
    std::memcpy(&dm, g + kK8RowDm * row + 4 * b, 4);
    const float d = f16_to_f32(static_cast<uint16_t>(dm));
    const float dmin = f16_to_f32(static_cast<uint16_t>(dm >> 16));
    return (a.d[b] * d) * static_cast<float>(isum) - (a.d[b] * dmin) * static_cast<float>(mins);
  }
};

// A field of nb bytes whose bit 4b + m belongs to byte 4b + m of the lower half of a 512-bit
// value and bit 4nb + 4b + m to byte 4b + m of the upper half (q5_k_r8.h, q3_k_r8.h), as the
// 64 bits of those bytes: a whole group's field (nb = 8) is that as it is; a short one's halves
// are spread 32 bits apart (spread_halves). Nothing past the field is read; a short field is read
// as the 8 bytes that end with it (one load, not a copy of nb bytes: every such field lies more
// than 8 bytes into its group).
[[gnu::always_inline]] inline uint64_t spread_halves(uint64_t v, size_t nb) noexcept {
  const uint64_t low = (uint64_t{1} << (4 * nb)) - 1;
  return (v & low) | ((v >> (4 * nb)) & low) << 32;
}
template <bool kShort>
[[gnu::always_inline]] inline uint64_t half_lanes_bits(const uint8_t* field, size_t nb) noexcept {
  uint64_t v;
  if constexpr (kShort) {
    std::memcpy(&v, field + nb - 8, 8);
    return spread_halves(v >> (64 - 8 * nb), nb);
  } else {
    std::memcpy(&v, field, 8);
    return v;
  }
}

#if defined(OXI_ARCH_AVX512)

// The same as a mask register (a short field by a masked load).
template <bool kShort>
[[gnu::always_inline]] inline __mmask64 half_lanes_mask(const uint8_t* field, size_t nb) noexcept {
  if constexpr (kShort)
    return _cvtu64_mask64(spread_halves(
        static_cast<uint64_t>(
            _mm_cvtsi128_si64(_mm_maskz_loadu_epi8(static_cast<__mmask16>((1u << nb) - 1), field))),
        nb));
  else
    return _cvtu64_mask64(half_lanes_bits<false>(field, nb));
}

#endif

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

// One token's requests for part `part` of `kParts` of a group of nb blocks of Block at g (whole:
// 8 blocks; kShort: a row's short last group), kPrefetchBytes ahead: the layouts in groups of 8
// super-blocks request their lines a sub-block or pair at a time (q4_k_r8_tiles.h).
template <class Block, bool kShort, size_t kParts>
[[gnu::always_inline]] inline void prefetch_group_part(const uint8_t* g, size_t nb,
                                                       size_t part) noexcept {
  if constexpr (kShort)
    prefetch_stream_part(g + kPrefetchBytes, nb * sizeof(Block), part, kParts);
  else
    prefetch_stream_part<kK8Blocks * sizeof(Block), kParts>(g + kPrefetchBytes, part);
}

#if defined(OXI_ARCH_AVX2)

// pass and matvec of the tiles in groups of 8 super-blocks that take one row a pass
// (q5_k_r8_tiles.h, k16_r8_tiles.h): Tile::row_sums<T>(w, x, x_stride, n, c, acc) adds the sums of
// a row's groups to T accumulators, with the constants c (Tile::Constants) that constants() makes
// once (matvec runs a pass per row with a short group, and a 2048-wide row is a single group).
template <class Tile>
struct K8RowPasses : RowPasses<Tile> {
  static const auto& constants() noexcept {
    static const typename Tile::Constants c;
    return c;
  }

  template <int T>
  static constexpr int kRowsPerPass = 1;

  template <int T, int P>
  static void pass(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_stride,
                   size_t n, float* y, size_t y_stride) noexcept {
    static_assert(P == 1);
    (void)w_row_bytes;
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    Tile::template row_sums<T>(w, x, x_stride, n, constants(), acc);
    for (int t = 0; t < T; ++t) y[t * y_stride] = simd::hsum(acc[t]);
  }

  // One token (matvec_driver calls this instead of its tile loop): as q4_K_r8's matvec, rows of
  // whole groups 8 at a time when the rows are a multiple of 8, their sums finished together by
  // hsum8 (the same additions as hsum, bit for bit); every other row alone.
  static void matvec(const uint8_t* w, size_t w_row_bytes, size_t rows, size_t n, const uint8_t* x,
                     float* y) noexcept {
    const auto& c = constants();
    size_t r = 0;
    if ((n / QK_K) % kK8Blocks == 0 && rows % 8 == 0) {
      for (; r < rows; r += 8) {
        __m256 acc[8];
        for (int i = 0; i < 8; ++i) {
          __m256 a[1] = {_mm256_setzero_ps()};
          Tile::template row_sums<1>(w + (r + i) * w_row_bytes, x, 0, n, c, a);
          acc[i] = a[0];
        }
        _mm256_storeu_ps(y + r, simd::hsum8(acc));
      }
    }
    for (; r < rows; ++r) pass<1, 1>(w + r * w_row_bytes, w_row_bytes, x, 0, n, y + r, 0);
  }
};

#endif

}  // namespace oxi::kernels::OXI_ARCH_NS
