// Attention with online softmax for one instruction set (arch source).
//
// For each (head, query) the keys it may see are scored in chunks; a running maximum m and
// running sum l let the output accumulate sum_j e^(s_j - m) v_j in one pass, rescaling what is
// already there by e^(m_old - m_new) whenever the maximum grows (flash-attention style).
// An f16 cache is widened a vector (or a chunk) at a time to f32, then scored and summed by the
// same f32 code, so it gives the f32 result on the widened values exactly.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/arch.h"
#include "kernels/formats/float_tiles.h"
#include "kernels/formats/prefetch.h"
#include "kernels/math/arch_math.h"
#include "kernels/math/simd.h"

namespace oxi::kernels::OXI_ARCH_NS {
namespace {

// Rows of an f32 cache are used in place.
struct F32Rows {
  // Whether the heads that share a chunk read it from a widened copy (copy_rows) rather than
  // in place: f32 rows only when they stand apart (rows_apart: a position's heads side by side).
  static constexpr bool copy_shared_chunk(bool rows_apart) noexcept { return rows_apart; }
  const float* base;
  const float* row(size_t offset, float*) const noexcept { return base + offset; }
  simd::F lanes(size_t offset, size_t i) const noexcept { return simd::load(base + offset + i); }
  const void* address(size_t offset) const noexcept { return base + offset; }
  static constexpr size_t kElemBytes = sizeof(float);
};

// Rows of an f16 cache are widened into the caller's buffer (head_dim floats), or a vector at
// a time.
struct F16Rows {
  // With conversion instructions (F16C, NEON) each vector is widened as it is loaded, the
  // conversion beside the FMAs, again for every head (pair) that reads it, and that is cheaper
  // than one copy to f32 rows (a store per vector, then loads); without them (SSE4.2, scalar:
  // a conversion in software) the chunk is widened once. TinyLlama-shaped decode attention, 22
  // layers, two threads, avx512 build: 256 positions from L3 0.49-0.50 -> 0.34 ms a token, 4096
  // from memory 11.6-14.2 -> 9.0-11.5 ms, 128 prefill queries at 4096 736-756 -> 618-633 ms
  // (same results: the same f32 values in the same order); AVX2 level or faster.
  static constexpr bool copy_shared_chunk(bool) noexcept {
#if defined(OXI_ARCH_AVX2) || defined(OXI_ARCH_NEON)
    return false;
#else
    return true;
#endif
  }
  const uint16_t* base;
  size_t n;
  const float* row(size_t offset, float* buffer) const noexcept {
    const auto* src = reinterpret_cast<const uint8_t*>(base + offset);
    size_t i = 0;
#if OXI_ARCH_SIMD
    using B = xsimd::batch<float, Arch>;
    for (; i + B::size <= n; i += B::size) LoadF16::batch(src, i).store_unaligned(buffer + i);
#endif
    for (; i < n; ++i) buffer[i] = LoadF16::one(src, i);
    return buffer;
  }
  simd::F lanes(size_t offset, size_t i) const noexcept {
    const auto* src = reinterpret_cast<const uint8_t*>(base + offset);
#if OXI_ARCH_SIMD
    return LoadF16::batch(src, i);
#else
    return simd::F(LoadF16::one(src, i));
#endif
  }
  const void* address(size_t offset) const noexcept {
    return base + offset;
  }
  static constexpr size_t kElemBytes = sizeof(uint16_t);
};

// Requests the K and V rows of keys [c0, c0 + count) of one kv head into the cache.
template <class Rows>
void prefetch_keys(const AttentionParams& p, const Rows& k_rows, const Rows& v_rows,
                   size_t head_offset, size_t c0, size_t count) noexcept {
  const size_t row_bytes = p.head_dim * Rows::kElemBytes;
  for (size_t j = c0; j < c0 + count; ++j) {
    const size_t offset = head_offset + j * p.kv_token_stride;
    const auto* k = static_cast<const char*>(k_rows.address(offset));
    const auto* v = static_cast<const char*>(v_rows.address(offset));
    for (size_t b = 0; b < row_bytes; b += kCacheLine) {
      __builtin_prefetch(k + b);
      __builtin_prefetch(v + b);
    }
  }
}

// out_h[d, d + kVectors * kLanes) += sum_j p_h[j] * v_j there for H heads that share the value
// rows, those H x kVectors vectors held in registers across the rows (each row's vectors loaded
// once for the H heads); each element's sum still key after key, so a head's sums are the same
// whatever H.
template <size_t kVectors, size_t H, class Rows>
[[gnu::always_inline]] inline void accumulate_block(const Rows& rows, size_t first, size_t stride,
                                                    const float* const (&p)[H],
                                                    float* const (&out)[H], size_t count,
                                                    size_t d) noexcept {
  using simd::F;
  constexpr size_t kLanes = simd::kLanes;
  F o[H][kVectors];
  for (size_t h = 0; h < H; ++h)
    for (size_t b = 0; b < kVectors; ++b) o[h][b] = simd::load(out[h] + d + b * kLanes);
  for (size_t j = 0; j < count; ++j) {
    F pj[H];
    for (size_t h = 0; h < H; ++h) pj[h] = simd::splat(p[h][j]);
    const size_t offset = first + j * stride;
    for (size_t b = 0; b < kVectors; ++b) {
      const F v = rows.lanes(offset, d + b * kLanes);
      for (size_t h = 0; h < H; ++h) o[h][b] = simd::fma(pj[h], v, o[h][b]);
    }
  }
  for (size_t h = 0; h < H; ++h)
    for (size_t b = 0; b < kVectors; ++b) simd::store(out[h] + d + b * kLanes, o[h][b]);
}

// accumulate_block over the `vectors` (at most kMaxVectors) whole vectors from d on: the block
// size is a template argument, picked here at run time.
template <size_t kMaxVectors, size_t H, class Rows>
[[gnu::always_inline]] inline void accumulate_rest(size_t vectors, const Rows& rows, size_t first,
                                                   size_t stride, const float* const (&p)[H],
                                                   float* const (&out)[H], size_t count,
                                                   size_t d) noexcept {
  if constexpr (kMaxVectors > 0) {
    if (vectors == kMaxVectors)
      accumulate_block<kMaxVectors>(rows, first, stride, p, out, count, d);
    else
      accumulate_rest<kMaxVectors - 1>(vectors, rows, first, stride, p, out, count, d);
  }
}

// out_h[0, hd) += sum_j p_h[j] * v_j over `count` value rows (row j at offset first + j * stride)
// for H heads, key after key for every element, as an axpy per row would do, so the sums are
// the same; but blocks of up to 8 vectors of out stay in registers across the rows instead of
// being loaded and stored once per row. The whole vectors past the last block of 8 form one
// more block: taken a vector at a time, each was a chain of dependent FMAs, one a key (Phi-3's
// 96 dims on 8-lane vectors, 32 heads of 256 keys, one thread: 211-250 -> 166-195 us). Dims past
// the last whole vector take the axpy.
template <size_t H, class Rows>
void accumulate_values(const Rows& rows, size_t first, size_t stride, const float* const (&p)[H],
                       float* const (&out)[H], size_t count, size_t hd, float* buffer) noexcept {
  constexpr size_t kBlockVectors = 8, kLanes = simd::kLanes;
  size_t d = 0;
  for (; d + kBlockVectors * kLanes <= hd; d += kBlockVectors * kLanes)
    accumulate_block<kBlockVectors>(rows, first, stride, p, out, count, d);
  accumulate_rest<kBlockVectors - 1>((hd - d) / kLanes, rows, first, stride, p, out, count, d);
  d = hd / kLanes * kLanes;
  if (d < hd) {
    for (size_t j = 0; j < count; ++j) {
      const float* v = rows.row(first + j * stride, buffer) + d;
      for (size_t h = 0; h < H; ++h) simd::axpy(p[h][j], v, out[h] + d, hd - d);
    }
  }
}

// scores_h[j] = scale * q_h . k_j for `count` key rows (row j at offset first + j * stride) and H
// heads that share them. With head_dim a whole number of vectors, kLanes keys at a time: one
// accumulator per key and head, each key vector loaded once for the H heads and each q vector
// once for the keys, and one transposing reduction for a head's kLanes sums instead of a
// horizontal sum per key (32 heads x 512 keys of 64 dims, one thread: 120 -> 94 us). A head's
// steps are the same whatever H.
template <size_t H, class Rows>
void score_keys(const Rows& rows, size_t first, size_t stride, const float* const (&q)[H],
                size_t hd, float scale, size_t count, float* const (&scores)[H],
                float* buffer) noexcept {
  using simd::F;
  constexpr size_t kLanes = simd::kLanes;
  size_t j = 0;
  if (hd % kLanes == 0) {
    for (; j + kLanes <= count; j += kLanes) {
      F acc[H][kLanes];
      for (size_t h = 0; h < H; ++h)
        for (size_t r = 0; r < kLanes; ++r) acc[h][r] = simd::splat(0.0f);
      for (size_t d = 0; d < hd; d += kLanes) {
        F qd[H];
        for (size_t h = 0; h < H; ++h) qd[h] = simd::load(q[h] + d);
        for (size_t r = 0; r < kLanes; ++r) {
          const F k = rows.lanes(first + (j + r) * stride, d);
          for (size_t h = 0; h < H; ++h) acc[h][r] = simd::fma(qd[h], k, acc[h][r]);
        }
      }
      for (size_t h = 0; h < H; ++h)
        simd::store(scores[h] + j, simd::sums(acc[h]) * simd::splat(scale));
    }
  }
  for (; j < count; ++j) {
    const float* k = rows.row(first + j * stride, buffer);
    for (size_t h = 0; h < H; ++h) scores[h][j] = simd::dot(q[h], k, hd) * scale;
  }
}

// One (head, query)'s online softmax state: out (in place) and the running maximum and sum.
struct HeadState {
  const float* q;
  float* out;
  float m, l;
};

// The online softmax's step for one head over `count` scores: rescales what st holds when the
// maximum grows, turns the scores into weights e^(s_j - m) (in place) and adds them to st.l.
// False when every score so far is -inf: nothing to weigh yet (st unchanged).
inline bool softmax_step(HeadState& st, float* scores, size_t count, size_t hd) noexcept {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // The maximum and the sum in vectors: a scalar loop is one dependent max or add a key.
  // Padding to whole vectors with -inf gives the missing lanes no weight in either.
  const size_t padded = (count + simd::kLanes - 1) / simd::kLanes * simd::kLanes;
  std::fill(scores + count, scores + padded, kNegInf);
  simd::F lane_max = simd::splat(kNegInf);
  for (size_t j = 0; j < padded; j += simd::kLanes)
    lane_max = simd::max(lane_max, simd::load_aligned(scores + j));
  const float m_new = std::max(st.m, simd::max_lane(lane_max));
  if (m_new == kNegInf) return false;
  if (st.m != kNegInf && m_new > st.m) {
    const float alpha = std::exp(st.m - m_new);
    simd::affine(st.out, alpha, 0.0f, st.out, hd);
    st.l *= alpha;
  }
  const simd::F shift = simd::splat(m_new);
  simd::F lane_sum = simd::splat(0.0f);
  for (size_t j = 0; j < padded; j += simd::kLanes) {
    const simd::F e = simd::exp(simd::load_aligned(scores + j) - shift);
    simd::store(scores + j, e);
    lane_sum = lane_sum + e;
  }
  st.l += simd::sum(lane_sum);
  st.m = m_new;
  return true;
}

// The step of the online softmax over `count` keys for H heads that share them (key j's K and V
// rows at offset first + j * stride of k_rows and v_rows): scores, weights, the weighted values.
// scores holds H rows of kChunkScores floats.
inline constexpr size_t kChunkScores = 64;
template <size_t H, class Rows>
void attend_chunk(const AttentionParams& p, const Rows& k_rows, const Rows& v_rows, size_t first,
                  size_t stride, size_t count, HeadState* const (&st)[H], float* scores,
                  float* k_buffer, float* v_buffer) noexcept {
  const size_t hd = p.head_dim;
  const float* q[H];
  float* s[H];
  for (size_t h = 0; h < H; ++h) q[h] = st[h]->q, s[h] = scores + h * kChunkScores;
  score_keys(k_rows, first, stride, q, hd, p.scale, count, s, k_buffer);
  bool weigh[H], all = true;
  for (size_t h = 0; h < H; ++h) all &= weigh[h] = softmax_step(*st[h], s[h], count, hd);
  if (all) {
    float* out[H];
    for (size_t h = 0; h < H; ++h) out[h] = st[h]->out;
    accumulate_values(v_rows, first, stride, s, out, count, hd, v_buffer);
    return;
  }
  for (size_t h = 0; h < H; ++h) {  // a head whose scores are all -inf so far weighs nothing
    if (!weigh[h]) continue;
    const float* const ph[1] = {s[h]};
    float* const oh[1] = {st[h]->out};
    accumulate_values(v_rows, first, stride, ph, oh, count, hd, v_buffer);
  }
}

// attend_chunk for heads st[0, n), two at a time where the instruction set has 32 vector
// registers (avx512: the pair's 16 accumulators and the shared row held in registers; the pair
// shares each K and V row load), else one at a time (with 16 registers the pair's accumulators
// spilled: in L1, 8 heads x 64 keys of 64 dims, scores 1.29 -> 1.42 us, values 0.72 -> 0.97).
// A head's steps are those it takes alone, so the results do not depend on the pairing. One
// core, TinyLlama-shaped decode attention at 256 positions, warm: 1.03 -> 0.94 ms a token.
#if defined(OXI_ARCH_AVX512)
inline constexpr size_t kHeadsAtATime = 2;
#else
inline constexpr size_t kHeadsAtATime = 1;
#endif
template <class Rows>
void attend_heads(const AttentionParams& p, const Rows& k_rows, const Rows& v_rows, size_t first,
                  size_t stride, size_t count, HeadState* st, size_t n, float* scores,
                  float* k_buffer, float* v_buffer) noexcept {
  size_t h = 0;
  for (; kHeadsAtATime == 2 && h + 2 <= n; h += 2) {
    HeadState* const pair[2] = {&st[h], &st[h + 1]};
    attend_chunk(p, k_rows, v_rows, first, stride, count, pair, scores, k_buffer, v_buffer);
  }
  for (; h < n; ++h) {
    HeadState* const one[1] = {&st[h]};
    attend_chunk(p, k_rows, v_rows, first, stride, count, one, scores, k_buffer, v_buffer);
  }
}

// Copies `count` rows of hd elements (row j at offset first + j * stride) to dst, row j at
// j * hd, as f32 (an f16 cache widened exactly). The heads of a kv head then read a chunk's K
// and V side by side from L1. In place, position-major rows stand kv_dim floats apart (1 KB in
// TinyLlama's shape), so they fall into a quarter of L1's sets and every head read them again
// from L2 (the LLM's head-major cache has each kv head's rows side by side already).
// TinyLlama-shaped decode attention (32 / 4 heads of 64, one thread, warm): 64 keys 12.3 -> 9.8
// us, 512 keys 110 -> 83 us; in decode, from cold caches, no change at 64 keys and ~-10 % at 512
// (noisy). Same arithmetic as in place, so the same results.
template <class Rows>
void copy_rows(const Rows& rows, size_t first, size_t stride, size_t count, size_t hd,
               float* dst) noexcept {
  for (size_t j = 0; j < count; ++j) {
    float* to = dst + j * hd;
    const float* from = rows.row(first + j * stride, to);
    if (from != to) std::copy(from, from + hd, to);
  }
}

// The heads of one kv head and a block of queries take each chunk of keys in turn, so the
// chunk's K and V rows come from memory once for all of them and from L1 / L2 for the rest (a
// grouped-query model has 4-8 query heads per kv head; decode's K / V are not in cache, the
// weights stream between; a prefill block's queries share every chunk below the diagonal).
// The chunks are the 64-key runs at multiples of 64, each query taking the keys of a chunk it
// sees (causal, window); a (query, head)'s steps are those it would take alone, chunk after
// chunk, so the result depends neither on how heads nor on how queries are grouped: a prompt
// evaluated in one batch and continued in another give the same bits. TinyLlama-shaped decode
// attention (32 / 4 heads of 64): at 512 keys one thread 231-242 -> 180-184 us a layer
// (nineteenth session, heads sharing chunks); prefill at 4096 positions: docs/benchmarks.md,
// fifty-fifth session (queries sharing them).
template <class Rows>
void attention_rows(const AttentionParams& p, Rows k_rows, Rows v_rows, size_t head_begin,
                    size_t head_end, size_t q_begin, size_t q_end) noexcept {
  constexpr size_t kChunk = kChunkScores, kMaxHeads = 16;  // heads that share a pass over the keys
  constexpr size_t kMaxQueries = 32;                       // queries that share it
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t hd = p.head_dim;
  const size_t group = p.n_heads / p.n_kv_heads;
  alignas(64) float scores[2 * kChunk];
  alignas(64) float k_buffer[kMaxF16HeadDim], v_buffer[kMaxF16HeadDim];
  // The chunk's K and V rows of one kv head, side by side, for the heads that share them.
  constexpr size_t kLocalHeadDim = 128;
  alignas(64) float k_local[kChunk * kLocalHeadDim], v_local[kChunk * kLocalHeadDim];
  HeadState st[kMaxQueries][kMaxHeads];
  size_t lo[kMaxQueries], hi[kMaxQueries];  // the keys [lo, hi) each query sees
  // Position-major rows (a position's kv heads side by side) stand apart; the LLM's head-major
  // cache has each kv head's rows side by side.
  const bool rows_apart = p.kv_token_stride != hd;

  for (size_t h0 = head_begin; h0 < head_end;) {
    const size_t g = h0 / group;
    const size_t h1 = std::min({head_end, (g + 1) * group, h0 + kMaxHeads}), n_heads = h1 - h0;
    const size_t head_offset = g * (p.kv_head_stride != 0 ? p.kv_head_stride : hd);
    for (size_t t0 = q_begin; t0 < q_end; t0 += kMaxQueries) {
      const size_t n_queries = std::min(kMaxQueries, q_end - t0);
      size_t first_key = SIZE_MAX, end_key = 0;
      for (size_t i = 0; i < n_queries; ++i) {
        const size_t t = t0 + i, pos = p.q_pos0 + t;
        hi[i] = p.causal ? std::min(p.kv_len, pos + 1) : p.kv_len;
        lo[i] = (p.window > 0 && pos + 1 > p.window) ? pos + 1 - p.window : 0;
        if (lo[i] < hi[i])
          first_key = std::min(first_key, lo[i]), end_key = std::max(end_key, hi[i]);
        for (size_t h = h0; h < h1; ++h) {
          HeadState& s = st[i][h - h0];
          s = {p.q + t * p.q_token_stride + h * hd, p.out + t * p.out_token_stride + h * hd,
               kNegInf, 0.0f};
          std::fill(s.out, s.out + hd, 0.0f);
        }
      }
      // Widened / gathered once when more than one (query, head) reads the chunk and the rows
      // need it (Rows::copy_shared_chunk).
      const bool local =
          n_heads * n_queries >= 2 && hd <= kLocalHeadDim && Rows::copy_shared_chunk(rows_apart);
      const size_t c_begin = first_key == SIZE_MAX ? end_key : first_key / kChunk * kChunk;
      // Decode's K / V are in memory, the weights having streamed through the caches since
      // the token before. Rows that stand apart (position-major) are requested a chunk ahead,
      // while the heads work on the one before; a kv head's rows side by side (the LLM's
      // head-major cache) are one sequential stream, which the hardware prefetcher follows
      // better without the requests: TinyLlama-shaped decode attention at 4096 positions, f16,
      // 22 layers, two threads, 8.5-9.0 -> 7.3-7.5 ms a token (5 alternating pairs; f32 level).
      if (rows_apart && c_begin < end_key) {
        const size_t a = std::max(c_begin, first_key);
        prefetch_keys(p, k_rows, v_rows, head_offset, a, std::min(c_begin + kChunk, end_key) - a);
      }
      for (size_t c0 = c_begin; c0 < end_key; c0 += kChunk) {
        // the chunk's keys that some query sees: [a, b)
        const size_t a = std::max(c0, first_key), b = std::min(c0 + kChunk, end_key);
        if (rows_apart && b < end_key)
          prefetch_keys(p, k_rows, v_rows, head_offset, b, std::min(b + kChunk, end_key) - b);
        if (local) {
          const size_t first = head_offset + a * p.kv_token_stride;
          copy_rows(k_rows, first, p.kv_token_stride, b - a, hd, k_local);
          copy_rows(v_rows, first, p.kv_token_stride, b - a, hd, v_local);
        }
        for (size_t i = 0; i < n_queries; ++i) {
          const size_t ka = std::max(a, lo[i]), kb = std::min(b, hi[i]);
          if (ka >= kb) continue;
          if (local)
            attend_heads(p, F32Rows{k_local}, F32Rows{v_local}, (ka - a) * hd, hd, kb - ka, st[i],
                         n_heads, scores, k_buffer, v_buffer);
          else
            attend_heads(p, k_rows, v_rows, head_offset + ka * p.kv_token_stride, p.kv_token_stride,
                         kb - ka, st[i], n_heads, scores, k_buffer, v_buffer);
        }
      }
      for (size_t i = 0; i < n_queries; ++i)
        for (size_t h = 0; h < n_heads; ++h) {
          const HeadState& s = st[i][h];
          if (s.l > 0.0f) simd::affine(s.out, 1.0f / s.l, 0.0f, s.out, hd);
        }
    }
    h0 = h1;
  }
}

}  // namespace

void attention(const AttentionParams& p, size_t head_begin, size_t head_end, size_t q_begin,
               size_t q_end) noexcept {
  if (p.k_f16 != nullptr)
    attention_rows(p, F16Rows{p.k_f16, p.head_dim}, F16Rows{p.v_f16, p.head_dim}, head_begin,
                   head_end, q_begin, q_end);
  else
    attention_rows(p, F32Rows{p.k}, F32Rows{p.v}, head_begin, head_end, q_begin, q_end);
}

}  // namespace oxi::kernels::OXI_ARCH_NS
