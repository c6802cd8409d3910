// Attention with online softmax for one instruction set (arch source).
//
// For each (head, query) the keys it may see are scored in chunks; a running maximum m and
// running sum l let the output accumulate sum_j e^(s_j - m) v_j in one pass, rescaling what is
// already there by e^(m_old - m_new) whenever the maximum grows (flash-attention style).
#include <cmath>
#include <limits>

#include "kernels/arch.h"
#include "kernels/math/arch_math.h"
#include "kernels/math/simd.h"

namespace oxi::kernels::OXI_ARCH_NS {

void attention(const AttentionParams& p, size_t head_begin, size_t head_end, size_t q_begin,
               size_t q_end) noexcept {
  constexpr size_t kChunk = 64;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t hd = p.head_dim;
  const size_t group = p.n_heads / p.n_kv_heads;
  alignas(64) float scores[kChunk];

  // Heads outer: consecutive queries of one head reuse the same K / V rows from cache.
  for (size_t h = head_begin; h < head_end; ++h) {
    const size_t g = h / group;
    const float* k_head = p.k + g * hd;
    const float* v_head = p.v + g * hd;
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
          scores[j] = simd::dot(q, k_head + (c0 + j) * p.kv_token_stride, hd) * p.scale;
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
          simd::axpy(scores[j], v_head + (c0 + j) * p.kv_token_stride, out, hd);
        }
        m = m_new;
      }
      if (l > 0.0f) simd::affine(out, 1.0f / l, 0.0f, out, hd);
    }
  }
}

}  // namespace oxi::kernels::OXI_ARCH_NS
