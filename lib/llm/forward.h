// The forward pass of a batch of tokens: shared state and building blocks, and the entry point
// that picks the architecture's layer (llama_forward.cpp, gemma3_forward.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "kernels/math/rope.h"
#include "lib/llm/kv_cache.h"
#include "lib/llm/model.h"

namespace oxi::llm {

// Activations of one batch of up to `capacity` tokens, row-major (token, width); made once.
struct Activations {
  Activations(const ModelConfig& c, size_t capacity);
  size_t capacity;
  std::vector<float> x;       // (capacity, n_embd)  the residual stream
  std::vector<float> h;       // (capacity, n_embd)  normed input of a block / its output
  std::vector<float> q;       // (capacity, q_dim)   queries
  std::vector<float> k;       // (capacity, kv_dim)  new keys, stored into the cache once rotated
  std::vector<float> v;       // (capacity, kv_dim)  new values
  std::vector<float> attn;    // (capacity, q_dim)   attention output, before wo
  std::vector<float> gate;    // (capacity, n_ff)    MLP gate, then the gated product
  std::vector<float> up;      // (capacity, n_ff)
  std::vector<float> logits;  // (n_vocab), or (rows, n_vocab) once all logits were asked for
};

// Everything a forward pass writes: cache, activations, and the RoPE angles of the batch.
struct ForwardState {
  ForwardState(const Model& model, size_t n_ctx, size_t batch_capacity, kernels::DType kv_type);
  KvCache cache;
  Activations act;
  // The distinct RoPE frequency sets of the layers (one for most models; Gemma 3's local and
  // global layers two), each set's cos / sin for the current batch, and each layer's set.
  std::vector<std::vector<float>> inv_freq;
  std::vector<kernels::RopeTable> rope_tables;
  std::vector<size_t> rope_set_of_layer;
  const kernels::RopeTable& rope_table(size_t layer) const {
    return rope_tables[rope_set_of_layer[layer]];
  }
};

// Runs tokens at positions pos0 .. pos0 + n - 1 (n <= act.capacity, pos0 + n <= n_ctx),
// writes their keys and values into the cache, and returns the logits of the last token, or
// of all n when all_logits ((n, n_vocab), inside state.act.logits).
std::span<const float> forward(const Model& model, backends::Backend& backend, ForwardState& state,
                               std::span<const int32_t> tokens, size_t pos0, bool all_logits);
// The same pass without the output projection: the n tokens' final-normed hidden states
// ((n, n_embd), inside state.act.h), what embeddings pool (embeddings.h).
std::span<const float> forward_hidden(const Model& model, backends::Backend& backend,
                                      ForwardState& state, std::span<const int32_t> tokens,
                                      size_t pos0);

// ---- building blocks (layers.cpp) ----

// x[t] = token_embd[tokens[t]] * scale.
void embed_tokens(const ModelWeights& w, std::span<const int32_t> tokens, size_t n_embd,
                  float scale, std::span<float> x);
// RMSNorm of each width-long row of x into y (y may alias x).
void rms_norm_rows(backends::Backend& backend, std::span<const float> x, size_t n_rows,
                   size_t width, std::span<const float> weight, float eps, std::span<float> y);
// Grouped-query causal attention of n new queries (at pos0..) over cache rows [0, pos0 + n).
void cached_attention(backends::Backend& backend, const ModelConfig& c, const KvCache& cache,
                      size_t layer, std::span<const float> q, size_t n, size_t pos0,
                      std::span<float> out);
// Final norm and output projection of rows [first, n) of x; the logits go to act.logits.
std::span<const float> output_logits(backends::Backend& backend, const Model& model,
                                     Activations& act, size_t n, bool all_logits);

// One architecture's pass over the layers (x in, x out).
void llama_layers(const Model& model, backends::Backend& backend, ForwardState& state, size_t n,
                  size_t pos0);
void gemma3_layers(const Model& model, backends::Backend& backend, ForwardState& state, size_t n,
                   size_t pos0);

}  // namespace oxi::llm
