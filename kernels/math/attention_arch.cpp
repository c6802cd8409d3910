// Attention with online softmax for one instruction set (arch source).
//
// For each (head, query) the keys it may see are scored in chunks; a running maximum m and
// running sum l let the output accumulate sum_j e^(s_j - m) v_j in one pass, rescaling what is
// already there by e^(m_old - m_new) whenever the maximum grows (flash-attention style).
// An f16 cache is widened a row at a time into a small buffer, then scored and summed by the
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
  const float* base;
  const float* row(size_t offset, float*) const noexcept { return base + offset; }
  simd::F lanes(size_t offset, size_t i) const noexcept { return simd::load(base + offset + i); }
  const void* address(size_t offset) const noexcept { return base + offset; }
  static constexpr size_t kElemBytes = sizeof(float);
};

// Rows of an f16 cache are widened into the caller's buffer (head_dim floats), or a vector at
// a time.
struct F16Rows {
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

// out[d, d + kVectors * kLanes) += sum_j p[j] * v_j there, those kVectors vectors of out held
// in registers across the rows; each element's sum still key after key.
template <size_t kVectors, class Rows>
[[gnu::always_inline]] inline void accumulate_block(const Rows& rows, size_t first, size_t stride,
                                                    const float* p, size_t count, float* out,
                                                    size_t d) noexcept {
  using simd::F;
  constexpr size_t kLanes = simd::kLanes;
  F o[kVectors];
  for (size_t b = 0; b < kVectors; ++b) o[b] = simd::load(out + d + b * kLanes);
  for (size_t j = 0; j < count; ++j) {
    const F pj = simd::splat(p[j]);
    const size_t offset = first + j * stride;
    for (size_t b = 0; b < kVectors; ++b)
      o[b] = simd::fma(pj, rows.lanes(offset, d + b * kLanes), o[b]);
  }
  for (size_t b = 0; b < kVectors; ++b) simd::store(out + d + b * kLanes, o[b]);
}

// accumulate_block over the `vectors` (at most kMaxVectors) whole vectors from d on: the block
// size is a template argument, picked here at run time.
template <size_t kMaxVectors, class Rows>
[[gnu::always_inline]] inline void accumulate_rest(size_t vectors, const Rows& rows, size_t first,
                                                   size_t stride, const float* p, size_t count,
                                                   float* out, size_t d) noexcept {
  if constexpr (kMaxVectors > 0) {
    if (vectors == kMaxVectors)
      accumulate_block<kMaxVectors>(rows, first, stride, p, count, out, d);
    else
      accumulate_rest<kMaxVectors - 1>(vectors, rows, first, stride, p, count, out, d);
  }
}

// out[0, hd) += sum_j p[j] * v_j over `count` value rows (row j at offset first + j * stride),
// key after key for every element, as an axpy per row would do, so the sums are the same; but
// blocks of up to 8 vectors of out stay in registers across the rows instead of being loaded
// and stored once per row. The whole vectors past the last block of 8 form one more block:
// taken a vector at a time, each was a chain of dependent FMAs, one a key (Phi-3's 96 dims
// on 8-lane vectors, 32 heads of 256 keys, one thread: 211-250 -> 166-195 us). Dims past the
// last whole vector take the axpy.
template <class Rows>
void accumulate_values(const Rows& rows, size_t first, size_t stride, const float* p, size_t count,
                       float* out, size_t hd, float* buffer) noexcept {
  constexpr size_t kBlockVectors = 8, kLanes = simd::kLanes;
  size_t d = 0;
  for (; d + kBlockVectors * kLanes <= hd; d += kBlockVectors * kLanes)
    accumulate_block<kBlockVectors>(rows, first, stride, p, count, out, d);
  accumulate_rest<kBlockVectors - 1>((hd - d) / kLanes, rows, first, stride, p, count, out, d);
  d = hd / kLanes * kLanes;
  if (d < hd) {
    for (size_t j = 0; j < count; ++j)
      simd::axpy(p[j], rows.row(first + j * stride, buffer) + d, out + d, hd - d);
  }
}

// scores[j] = scale * q . k_j for `count` key rows (row j at offset first + j * stride). With
// head_dim a whole number of vectors, kLanes keys at a time: one accumulator per key, each q
// vector loaded once for all of them, and one transposing reduction for their sums instead of
// a horizontal sum per key (32 heads x 512 keys of 64 dims, one thread: 120 -> 94 us).
template <class Rows>
void score_keys(const Rows& rows, size_t first, size_t stride, const float* q, size_t hd,
                float scale, size_t count, float* scores, float* buffer) noexcept {
  using simd::F;
  constexpr size_t kLanes = simd::kLanes;
  size_t j = 0;
  if (hd % kLanes == 0) {
    for (; j + kLanes <= count; j += kLanes) {
      F acc[kLanes];
      for (size_t r = 0; r < kLanes; ++r) acc[r] = simd::splat(0.0f);
      for (size_t d = 0; d < hd; d += kLanes) {
        const F qd = simd::load(q + d);
        for (size_t r = 0; r < kLanes; ++r)
          acc[r] = simd::fma(qd, rows.lanes(first + (j + r) * stride, d), acc[r]);
      }
      simd::store(scores + j, simd::sums(acc) * simd::splat(scale));
    }
  }
  for (; j < count; ++j) scores[j] = simd::dot(q, rows.row(first + j * stride, buffer), hd) * scale;
}

// One (head, query)'s online softmax state: out (in place) and the running maximum and sum.
struct HeadState {
  const float* q;
  float* out;
  float m, l;
};

// Scores and weighs `count` keys for one head (the step of the online softmax): key j's K and V
// rows at offset first + j * stride of k_rows and v_rows.
template <class Rows>
void attend_chunk(const AttentionParams& p, const Rows& k_rows, const Rows& v_rows, size_t first,
                  size_t stride, size_t count, HeadState& st, float* scores, float* k_buffer,
                  float* v_buffer) noexcept {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t hd = p.head_dim;
  score_keys(k_rows, first, stride, st.q, hd, p.scale, count, scores, k_buffer);
  // The maximum and the sum in vectors: a scalar loop is one dependent max or add a key.
  // Padding to whole vectors with -inf gives the missing lanes no weight in either.
  const size_t padded = (count + simd::kLanes - 1) / simd::kLanes * simd::kLanes;
  std::fill(scores + count, scores + padded, kNegInf);
  simd::F lane_max = simd::splat(kNegInf);
  for (size_t j = 0; j < padded; j += simd::kLanes)
    lane_max = simd::max(lane_max, simd::load_aligned(scores + j));
  const float m_new = std::max(st.m, simd::max_lane(lane_max));
  if (m_new == kNegInf) return;  // every score -inf so far: nothing to weigh yet
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
  accumulate_values(v_rows, first, stride, scores, count, st.out, hd, v_buffer);
  st.m = m_new;
}

// Copies `count` rows of hd elements (row j at offset first + j * stride) to dst, row j at
// j * hd, as f32 (an f16 cache widened exactly). The heads of a kv head then read a chunk's K
// and V side by side from L1. In place, the rows stand kv_dim floats apart (1 KB in TinyLlama's
// shape), so they fall into a quarter of L1's sets and every head read them again from L2.
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

// The heads of one kv head take each chunk of keys in turn, so the chunk's K and V rows come
// from memory once for all of them and from L1 / L2 for the rest (a grouped-query model has
// 4-8 query heads per kv head; decode's K / V are not in cache, the weights stream between).
// Each head's steps are those it would take alone, so the result does not depend on how
// heads are grouped. TinyLlama-shaped decode attention (32 / 4 heads of 64): at 512 keys one
// thread 231-242 -> 180-184 us a layer; at 64-128 keys no change (docs/benchmarks.md,
// nineteenth session).
template <class Rows>
void attention_rows(const AttentionParams& p, Rows k_rows, Rows v_rows, size_t head_begin,
                    size_t head_end, size_t q_begin, size_t q_end) noexcept {
  constexpr size_t kChunk = 64, kMaxHeads = 16;  // heads that share a pass over the keys
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t hd = p.head_dim;
  const size_t group = p.n_heads / p.n_kv_heads;
  alignas(64) float scores[kChunk];
  alignas(64) float k_buffer[kMaxF16HeadDim], v_buffer[kMaxF16HeadDim];
  // The chunk's K and V rows of one kv head, side by side, for the heads that share them.
  constexpr size_t kLocalHeadDim = 128;
  alignas(64) float k_local[kChunk * kLocalHeadDim], v_local[kChunk * kLocalHeadDim];
  HeadState st[kMaxHeads];

  // Query outer within a run of heads of one kv head: consecutive queries reuse its K / V rows
  // from cache too.
  for (size_t h0 = head_begin; h0 < head_end;) {
    const size_t g = h0 / group;
    const size_t h1 = std::min({head_end, (g + 1) * group, h0 + kMaxHeads});
    const size_t head_offset = g * (p.kv_head_stride != 0 ? p.kv_head_stride : hd);
    for (size_t t = q_begin; t < q_end; ++t) {
      const size_t pos = p.q_pos0 + t;
      const size_t hi = p.causal ? std::min(p.kv_len, pos + 1) : p.kv_len;
      const size_t lo = (p.window > 0 && pos + 1 > p.window) ? pos + 1 - p.window : 0;
      for (size_t h = h0; h < h1; ++h) {
        HeadState& s = st[h - h0];
        s = {p.q + t * p.q_token_stride + h * hd, p.out + t * p.out_token_stride + h * hd, kNegInf,
             0.0f};
        std::fill(s.out, s.out + hd, 0.0f);
      }
      // Decode's K / V are in memory, the weights having streamed through the caches since
      // the token before: each chunk is requested while the heads work on the one before.
      if (lo < hi) prefetch_keys(p, k_rows, v_rows, head_offset, lo, std::min(kChunk, hi - lo));
      for (size_t c0 = lo; c0 < hi; c0 += kChunk) {
        const size_t count = std::min(kChunk, hi - c0);
        if (c0 + kChunk < hi)
          prefetch_keys(p, k_rows, v_rows, head_offset, c0 + kChunk,
                        std::min(kChunk, hi - c0 - kChunk));
        const size_t first = head_offset + c0 * p.kv_token_stride;
        if (h1 - h0 >= 2 && hd <= kLocalHeadDim) {
          copy_rows(k_rows, first, p.kv_token_stride, count, hd, k_local);
          copy_rows(v_rows, first, p.kv_token_stride, count, hd, v_local);
          for (size_t h = h0; h < h1; ++h)
            attend_chunk(p, F32Rows{k_local}, F32Rows{v_local}, 0, hd, count, st[h - h0], scores,
                         k_buffer, v_buffer);
        } else {
          for (size_t h = h0; h < h1; ++h)
            attend_chunk(p, k_rows, v_rows, first, p.kv_token_stride, count, st[h - h0], scores,
                         k_buffer, v_buffer);
        }
      }
      for (size_t h = h0; h < h1; ++h) {
        const HeadState& s = st[h - h0];
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
