// Scaled dot-product attention over a KV cache with online softmax (one pass over the keys,
// no score matrix): grouped-query heads, causal mask at a position offset, sliding window.
// The cache is f32, or f16 (half the memory per stream, as whisper.cpp and llama.cpp keep it):
// an f16 cache gives exactly the f32 result on its values widened to f32.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oxi::kernels {

struct AttentionParams {
  // Queries: q[t * q_token_stride + h * head_dim + d] for t < n_q, h < n_heads.
  const float* q = nullptr;
  size_t q_token_stride = 0;
  // Cache: k[p * kv_token_stride + g * kv_head_stride + d] for p < kv_len, g < n_kv_heads (same
  // for v); kv_head_stride 0 means head_dim (a position's heads side by side).
  const float* k = nullptr;
  const float* v = nullptr;
  // Set instead of k / v: an f16 cache (IEEE half bits), same layout and strides.
  const uint16_t* k_f16 = nullptr;
  const uint16_t* v_f16 = nullptr;
  size_t kv_token_stride = 0;
  size_t kv_head_stride = 0;
  // Output: out[t * out_token_stride + h * head_dim + d].
  float* out = nullptr;
  size_t out_token_stride = 0;

  size_t n_q = 0;
  size_t n_heads = 0;
  size_t n_kv_heads = 0;  // divides n_heads; head h reads kv head h / (n_heads / n_kv_heads)
  size_t head_dim = 0;
  size_t kv_len = 0;   // cache positions [0, kv_len) hold keys
  size_t q_pos0 = 0;   // cache position of query token 0 (token t sits at q_pos0 + t)
  bool causal = true;  // token at position p sees keys at positions <= p
  size_t window = 0;   // when > 0, it also sees only keys at positions > p - window
  float scale = 1.0f;  // usually 1 / sqrt(head_dim)
};

// Longest head an f16 cache may have (the kernel widens a row at a time on its stack).
inline constexpr size_t kMaxF16HeadDim = 512;

// Computes heads [head_begin, head_end) for query tokens [q_begin, q_end). Single-threaded;
// the backend splits heads (and query blocks) over threads. A query that sees no key gets 0.
// A (query, head)'s result does not depend on the ranges it is computed in (nor on kv_len past
// the keys it sees), so a batch split differently gives the same bits.
void attention(const AttentionParams& p, size_t head_begin, size_t head_end, size_t q_begin,
               size_t q_end) noexcept;

}  // namespace oxi::kernels
