// The Gemma 3 decoder layer (text): sandwich norms around both blocks, per-head q/k RMSNorm,
// GeGLU, and sliding-window attention on all but every Nth (global) layer, whose RoPE has its
// own base and scaling:
//
//   x = x + PostAttnNorm(Attention(InputNorm(x)))
//   x = x + PostFFNorm(MLP(PreFFNorm(x)))        MLP(x) = down(gelu_tanh(gate(x)) * up(x))
//
// Norm weights are (1 + w) (pre-added by llama.cpp's converter, added at load for HF); the
// embedding is scaled by sqrt(n_embd) in forward(); queries by query_pre_attn_scalar^-0.5.
// ref: transformers models/gemma3/modeling_gemma3.py (Gemma3DecoderLayer)
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

  // 1. h = InputNorm(x)
  rms_norm_rows(backend, x, n, embd, w.attn_norm, c.rms_eps, h);
  // 2. q, k, v projections
  backend.matmul_shared_input(h, n, {{{&w.wq, a.q}, {&w.wk, k}, {&w.wv, v}}});
  // 3. RMSNorm over each head of q and k
  rms_norm_rows(backend, a.q, n * c.n_head, c.head_dim, w.q_norm, c.rms_eps, a.q);
  rms_norm_rows(backend, k, n * c.n_head_kv, c.head_dim, w.k_norm, c.rms_eps, k);
  // 4. RoPE: local layers base 10000, global layers rope_theta (and scaling)
  kernels::rope(a.q, n, q_dim, c.n_head, c.head_dim, b.rope.of_layer(il), c.rope_layout);
  kernels::rope(k, n, kv_dim, c.n_head_kv, c.head_dim, b.rope.of_layer(il), c.rope_layout);
  // 5. attention over the cache with the new rows stored (sliding window on local layers)
  store_and_attend(backend, c, b, il);
  // 6. x = x + PostAttnNorm(attn Wo^T)
  backend.matmul(w.wo, a.attn, n, h);
  rms_norm_rows(backend, h, n, embd, w.post_attn_norm, c.rms_eps, h);
  add_in_place(x, h);
  // 7. h = PreFFNorm(x)
  rms_norm_rows(backend, x, n, embd, w.ffn_norm, c.rms_eps, h);
  // 8. g = gelu_tanh(h Wgate^T) * (h Wup^T)
  const std::span<float> g = std::span(a.gate).first(n * ff), u = std::span(a.up).first(n * ff);
  backend.matmul_shared_input(h, n, {{{&w.w_gate, g}, {&w.w_up, u}}});
  kernels::geglu(g, u, g, kernels::GeluForm::tanh);
  // 9. x = x + PostFFNorm(g Wdown^T)
  backend.matmul(w.w_down, g, n, h);
  rms_norm_rows(backend, h, n, embd, w.post_ffn_norm, c.rms_eps, h);
  add_in_place(x, h);
}

}  // namespace

void gemma3_layers(const Model& model, backends::Backend& backend, const ForwardBatch& batch) {
  for (size_t il = 0; il < model.weights().layers.size(); ++il)
    forward_layer(model, backend, batch, il);
}

}  // namespace oxi::llm
