// The Llama decoder layer, also run by Mistral, Qwen2 (q/k/v biases), Qwen3 (per-head q/k
// RMSNorm) and Phi-3 (fused qkv / gate_up, split into views at load):
//
//   h = x + Attention(RMSNorm(x))        pre-norm residual attention with RoPE and GQA
//   x = h + MLP(RMSNorm(h))              MLP(x) = down(silu(gate(x)) * up(x))   (SwiGLU)
//
// ref: transformers models/llama/modeling_llama.py (LlamaDecoderLayer), qwen3 (Qwen3Attention)
#include "kernels/math/activation.h"
#include "kernels/math/norm.h"
#include "kernels/math/rope.h"
#include "lib/core/span_math.h"
#include "lib/llm/forward.h"

namespace oxi::llm {
namespace {

void forward_layer(const Model& model, backends::Backend& backend, const ForwardBatch& b,
                   size_t il) {
  const ModelConfig& c = model.config();
  const LayerWeights& w = model.weights().layers[il];
  Activations& a = b.act;
  const size_t n = b.n;
  const size_t embd = c.n_embd, q_dim = c.q_dim(), kv_dim = c.kv_dim(), ff = c.n_ff;
  const std::span<float> k = std::span(a.k).first(n * kv_dim), v = std::span(a.v).first(n * kv_dim);
  const std::span<float> x = std::span(a.x).first(n * embd), h = std::span(a.h).first(n * embd);

  // 1. h = RMSNorm(x) * attn_norm
  rms_norm_rows(backend, x, n, embd, w.attn_norm, c.rms_eps, h);
  // 2. q, k, v = h Wq^T (+ bq), h Wk^T (+ bk), h Wv^T (+ bv)
  backend.matmul_shared_input(h, n,
                              {{{&w.wq, a.q, optional_bias(w.bq)},
                                {&w.wk, k, optional_bias(w.bk)},
                                {&w.wv, v, optional_bias(w.bv)}}});
  // 3. Qwen3: RMSNorm over each head of q and k
  if (!w.q_norm.empty()) {
    rms_norm_rows(backend, a.q, n * c.n_head, c.head_dim, w.q_norm, c.rms_eps, a.q);
    rms_norm_rows(backend, k, n * c.n_head_kv, c.head_dim, w.k_norm, c.rms_eps, k);
  }
  // 4. rotate q and k by their positions
  kernels::rope(a.q, n, q_dim, c.n_head, c.head_dim, b.rope.of_layer(il), c.rope_layout);
  kernels::rope(k, n, kv_dim, c.n_head_kv, c.head_dim, b.rope.of_layer(il), c.rope_layout);
  // 5. attn = softmax(q k^T / sqrt(head_dim) + causal mask) v, over the whole cache with the
  //    new rows stored
  store_and_attend(backend, c, b, il);
  // 6. x = x + attn Wo^T
  backend.matmul(w.wo, a.attn, n, h);
  add_in_place(x, h);
  // 7. h = RMSNorm(x) * ffn_norm
  rms_norm_rows(backend, x, n, embd, w.ffn_norm, c.rms_eps, h);
  // 8. g = silu(h Wgate^T) * (h Wup^T)
  const std::span<float> g = std::span(a.gate).first(n * ff), u = std::span(a.up).first(n * ff);
  backend.matmul_shared_input(h, n, {{{&w.w_gate, g}, {&w.w_up, u}}});
  kernels::swiglu(g, u, g);
  // 9. x = x + g Wdown^T
  backend.matmul(w.w_down, g, n, h);
  add_in_place(x, h);
}

}  // namespace

void llama_layers(const Model& model, backends::Backend& backend, const ForwardBatch& batch) {
  for (size_t il = 0; il < model.weights().layers.size(); ++il)
    forward_layer(model, backend, batch, il);
}

}  // namespace oxi::llm
