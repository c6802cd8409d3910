// Building blocks shared by the architectures, and the forward() entry point: embed, run the
// architecture's layers, final norm and output projection.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/math/norm.h"
#include "lib/core/error.h"
#include "lib/llm/forward.h"

namespace oxi::llm {

Activations::Activations(const ModelConfig& c, size_t cap)
    : capacity(cap),
      x(cap * c.n_embd),
      h(cap * c.n_embd),
      q(cap * c.q_dim()),
      k(cap * c.kv_dim()),
      v(cap * c.kv_dim()),
      attn(cap * c.q_dim()),
      gate(cap * c.n_ff),
      up(cap * c.n_ff),
      logits(c.n_vocab) {}

RopeAngles::RopeAngles(const Model& model) {
  const ModelConfig& c = model.config();
  for (int il = 0; il < c.n_layer; ++il) {
    const kernels::RopeScaling none;
    std::vector<float> f = kernels::rope_inv_freq(c.rope_dims, c.rope_base_of_layer(il),
                                                  c.rope_scaled_layer(il) ? c.rope_scaling : none,
                                                  model.weights().rope_freq_factors);
    const auto same = std::find(inv_freq.begin(), inv_freq.end(), f);
    set_of_layer.push_back(static_cast<size_t>(same - inv_freq.begin()));
    if (same == inv_freq.end()) inv_freq.push_back(std::move(f));
  }
  tables.resize(inv_freq.size());
}

void RopeAngles::compute(std::span<const int64_t> positions) {
  for (size_t set = 0; set < inv_freq.size(); ++set)
    kernels::rope_table(inv_freq[set], positions, 1.0f, tables[set]);
}

ForwardState::ForwardState(const Model& model, size_t n_ctx, size_t batch_capacity,
                           kernels::DType kv_type)
    : cache(model.config().n_layer, n_ctx, model.config().n_head_kv, model.config().head_dim,
            kv_type),
      act(model.config(), batch_capacity),
      rope(model) {}

void check_sequence(const ModelConfig& c, const KvCache& cache, std::span<const int32_t> tokens,
                    size_t pos0) {
  if (tokens.empty() || pos0 + tokens.size() > cache.n_ctx())
    throw Error("llm forward", std::to_string(tokens.size()) + " tokens at position " +
                                   std::to_string(pos0) + " do not fit (context " +
                                   std::to_string(cache.n_ctx()) + ")");
  for (int32_t t : tokens)
    if (t < 0 || t >= c.n_vocab)
      throw Error("llm forward", "token id " + std::to_string(t) + " outside the vocabulary of " +
                                     std::to_string(c.n_vocab));
}

namespace {

// Checks the batch, embeds its tokens and runs the layers: the residual stream in act.x.
void run_layers(const Model& model, backends::Backend& backend, Activations& act, RopeAngles& rope,
                std::span<const BatchSegment> segments, std::span<const int32_t> tokens) {
  const ModelConfig& c = model.config();
  const size_t n = tokens.size();
  if (n == 0 || n > act.capacity)
    throw Error("llm forward", std::to_string(n) + " tokens do not fit a batch of " +
                                   std::to_string(act.capacity));
  std::vector<int64_t> positions;
  positions.reserve(n);
  for (const BatchSegment& seg : segments) {
    if (seg.first_row != positions.size() || seg.n > n - positions.size())
      throw Error("llm forward", "the batch's segments do not follow each other over its " +
                                     std::to_string(n) + " tokens");
    check_sequence(c, *seg.cache, tokens.subspan(seg.first_row, seg.n), seg.pos0);
    for (size_t t = 0; t < seg.n; ++t) positions.push_back(static_cast<int64_t>(seg.pos0 + t));
  }
  if (positions.size() != n)
    throw Error("llm forward",
                "the batch's segments do not cover its " + std::to_string(n) + " tokens");
  // Gemma scales embeddings by sqrt(n_embd) (HF Gemma3TextScaledWordEmbedding).
  const float embed_scale = c.arch == "gemma3" ? std::sqrt(static_cast<float>(c.n_embd)) : 1.0f;
  embed_tokens(model.weights(), tokens, c.n_embd, embed_scale, act.x);
  rope.compute(positions);
  const ForwardBatch batch{act, rope, segments, n};
  if (c.arch == "gemma3")
    gemma3_layers(model, backend, batch);
  else
    llama_layers(model, backend, batch);
}

}  // namespace

std::span<const float> forward(const Model& model, backends::Backend& backend, ForwardState& state,
                               std::span<const int32_t> tokens, size_t pos0, bool all_logits) {
  const BatchSegment one{&state.cache, 0, pos0, tokens.size(), all_logits};
  return forward_segments(model, backend, state.act, state.rope, {&one, 1}, tokens);
}

std::span<const float> forward_segments(const Model& model, backends::Backend& backend,
                                        Activations& act, RopeAngles& rope,
                                        std::span<const BatchSegment> segments,
                                        std::span<const int32_t> tokens) {
  run_layers(model, backend, act, rope, segments, tokens);
  return output_logits(backend, model, act, segments);
}

std::span<const float> forward_hidden(const Model& model, backends::Backend& backend,
                                      ForwardState& state, std::span<const int32_t> tokens,
                                      size_t pos0) {
  const BatchSegment one{&state.cache, 0, pos0, tokens.size(), true};
  run_layers(model, backend, state.act, state.rope, {&one, 1}, tokens);
  const ModelConfig& c = model.config();
  const size_t n = tokens.size(), width = static_cast<size_t>(c.n_embd);
  rms_norm_rows(backend, std::span<const float>(state.act.x).first(n * width), n, width,
                model.weights().output_norm, c.rms_eps, state.act.h);
  return std::span<const float>(state.act.h).first(n * width);
}

void embed_tokens(const ModelWeights& w, std::span<const int32_t> tokens, size_t n_embd,
                  float scale, std::span<float> x) {
  for (size_t t = 0; t < tokens.size(); ++t) {
    std::span<float> row = x.subspan(t * n_embd, n_embd);
    dequantize_matrix_row(w.token_embd, static_cast<size_t>(tokens[t]), row);
    if (scale != 1.0f)
      for (float& v : row) v *= scale;
  }
}

void rms_norm_rows(backends::Backend& backend, std::span<const float> x, size_t n_rows,
                   size_t width, std::span<const float> weight, float eps, std::span<float> y) {
  backend.parallel_for(n_rows, 16, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r)
      kernels::rms_norm(x.subspan(r * width, width), weight, eps, y.subspan(r * width, width));
  });
}

void cached_attention(backends::Backend& backend, const ModelConfig& c, const KvCache& cache,
                      size_t layer, std::span<const float> q, size_t n, size_t pos0,
                      std::span<float> out) {
  const size_t n_kv = pos0 + n;
  backends::AttentionArgs a;
  a.q = q.first(n * c.q_dim());
  cache.attend_rows(layer, n_kv, a);  // and its strides
  a.out = out.first(n * c.q_dim());
  a.q_stride = a.out_stride = c.q_dim();
  a.n_queries = n;
  a.n_kv = n_kv;
  a.n_heads = c.n_head;
  a.n_kv_heads = c.n_head_kv;
  a.head_dim = c.head_dim;
  a.first_query_pos = pos0;
  a.causal = true;
  a.window = static_cast<size_t>(c.window_of_layer(static_cast<int>(layer)));
  a.scale = c.attn_scale;  // 0: 1 / sqrt(head_dim)
  backend.attention(a);
}

void store_and_attend(backends::Backend& backend, const ModelConfig& c, const ForwardBatch& batch,
                      size_t layer) {
  Activations& a = batch.act;
  const size_t kv_dim = c.kv_dim(), q_dim = c.q_dim();
  for (const BatchSegment& seg : batch.segments) {
    seg.cache->store(layer, seg.pos0,
                     std::span(a.k).subspan(seg.first_row * kv_dim, seg.n * kv_dim),
                     std::span(a.v).subspan(seg.first_row * kv_dim, seg.n * kv_dim));
    cached_attention(backend, c, *seg.cache, layer,
                     std::span<const float>(a.q).subspan(seg.first_row * q_dim), seg.n, seg.pos0,
                     std::span(a.attn).subspan(seg.first_row * q_dim));
  }
}

std::span<const float> output_logits(backends::Backend& backend, const Model& model,
                                     Activations& act, std::span<const BatchSegment> segments) {
  const ModelConfig& c = model.config();
  const size_t width = static_cast<size_t>(c.n_embd);
  // The rows that get logits, normed into h side by side.
  size_t rows = 0;
  for (const BatchSegment& seg : segments) {
    const size_t first = seg.all_logits ? seg.first_row : seg.first_row + seg.n - 1;
    const size_t count = seg.first_row + seg.n - first;
    rms_norm_rows(backend, std::span<const float>(act.x).subspan(first * width, count * width),
                  count, width, model.weights().output_norm, c.rms_eps,
                  std::span(act.h).subspan(rows * width, count * width));
    rows += count;
  }
  // Grown only when a caller asks for every token's logits: a whole batch's (256 x 32k
  // vocabulary = 33 MB) would otherwise stay resident for nothing.
  if (act.logits.size() < rows * c.n_vocab) act.logits.resize(rows * c.n_vocab);
  const std::span<float> logits = std::span(act.logits).first(rows * c.n_vocab);
  backend.matmul(model.weights().output, act.h, rows, logits);
  // Gemma-style final soft-capping: cap * tanh(logits / cap).
  if (const float cap = c.final_logit_softcap; cap > 0.0f)
    for (float& v : logits) v = cap * std::tanh(v / cap);
  return logits;
}

}  // namespace oxi::llm
