// Attention with online softmax for one instruction set (arch source).
//
// For each (head, query) the keys it may see are scored in chunks; a running maximum m and
// running sum l let the output accumulate sum_j e^(s_j - m) v_j in one pass, rescaling what is
// already there by e^(m_old - m_new) whenever the maximum grows (flash-attention style).
// An f16 cache is widened a row at a time into a small buffer, then scored and summed by the
// same f32 code, so it gives the f32 result on the widened values exactly.
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/arch.h"
#include "kernels/formats/float_tiles.h"
#include "kernels/math/arch_math.h"
#include "kernels/math/simd.h"

namespace oxi::kernels::OXI_ARCH_NS {
namespace {

// Rows of an f32 cache are used in place.
struct F32Rows {
  const float* base;
  const float* row(size_t offset, float*) const noexcept { return base + offset; }
};

// Rows of an f16 cache are widened into the caller's buffer (head_dim floats).
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
};

template <class Rows>
void attention_rows(const AttentionParams& p, Rows k_rows, Rows v_rows, size_t head_begin,
                    size_t head_end, size_t q_begin, size_t q_end) noexcept {
  constexpr size_t kChunk = 64;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t hd = p.head_dim;
  const size_t group = p.n_heads / p.n_kv_heads;
  alignas(64) float scores[kChunk];
  alignas(64) float k_buffer[kMaxF16HeadDim], v_buffer[kMaxF16HeadDim];

  // Heads outer: consecutive queries of one head reuse the same K / V rows from cache.
  for (size_t h = head_begin; h < head_end; ++h) {
    const size_t g = h / group;
    const size_t head_offset = g * hd;
    for (size_t t = q_begin; t < q_end; ++t) {
      const float* q = p.q + t * p.q_token_stride + h * hd;
      float* out = p.out + t * p.out_token_stride + h * hd;
      const size_t pos = p.q_pos0 + t;
      const size_t hi = p.causal ? std::min(p.kv_len, pos + 1) : p.kv_len;
      const size_t lo = (p.window > 0 && pos + 1 > p.window) ? pos + 1 - p.window : 0;

      std::fill(out, out + hd, 0.0f);
      float m = kNegInf, l = 0.0f;
      for (size_t c0 = lo; c0 < hi; c0 += kChunk) {
        const size_t count = std::min(kChunk, hi - c0);
        float chunk_max = kNegInf;
        for (size_t j = 0; j < count; ++j) {
          const float* k = k_rows.row(head_offset + (c0 + j) * p.kv_token_stride, k_buffer);
          scores[j] = simd::dot(q, k, hd) * p.scale;
          chunk_max = std::max(chunk_max, scores[j]);
        }
        const float m_new = std::max(m, chunk_max);
        if (m_new == kNegInf) continue;  // every score -inf so far: nothing to weigh yet
        if (m != kNegInf && m_new > m) {
          const float alpha = std::exp(m - m_new);
          simd::affine(out, alpha, 0.0f, out, hd);
          l *= alpha;
        }
        const simd::F shift = simd::splat(m_new);
        simd::map_unary(scores, scores, count, [&](simd::F s) { return simd::exp(s - shift); });
        for (size_t j = 0; j < count; ++j) {
          l += scores[j];
          const float* v = v_rows.row(head_offset + (c0 + j) * p.kv_token_stride, v_buffer);
          simd::axpy(scores[j], v, out, hd);
        }
        m = m_new;
      }
      if (l > 0.0f) simd::affine(out, 1.0f / l, 0.0f, out, hd);
    }
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
