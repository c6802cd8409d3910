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

// The RoPE angles of a batch: the distinct frequency sets of the layers (one for most models;
// Gemma 3's local and global layers two), each set's cos / sin for the batch's rows, and each
// layer's set.
struct RopeAngles {
  explicit RopeAngles(const Model& model);
  std::vector<std::vector<float>> inv_freq;
  std::vector<kernels::RopeTable> tables;
  std::vector<size_t> set_of_layer;
  const kernels::RopeTable& of_layer(size_t layer) const { return tables[set_of_layer[layer]]; }
  // Each set's angles for rows at these positions.
  void compute(std::span<const int64_t> positions);
};

// One sequence's rows in a batch: rows [first_row, first_row + n) at positions pos0 .. pos0 +
// n - 1 of `cache`, where their keys and values go and whose rows their attention reads.
// Several sequences (each with a cache of its own) share one batch's matrix products; that is
// what batches the decode steps of concurrent conversations (EvalBatcher).
struct BatchSegment {
  KvCache* cache = nullptr;
  size_t first_row = 0;
  size_t pos0 = 0;
  size_t n = 0;
  bool all_logits = false;  // logits of every row, else of the last
};

// A batch in flight: its rows' activations and angles, and the sequences they belong to.
struct ForwardBatch {
  Activations& act;
  const RopeAngles& rope;
  std::span<const BatchSegment> segments;
  size_t n = 0;  // rows in all
};

// Everything a single sequence's forward pass writes: cache, activations and angles.
struct ForwardState {
  ForwardState(const Model& model, size_t n_ctx, size_t batch_capacity, kernels::DType kv_type);
  KvCache cache;
  Activations act;
  RopeAngles rope;
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
// Several sequences in one pass: tokens[segment.first_row ...] of each segment (the segments
// cover the rows in order, each at its own positions of its own cache). Returns the logits of
// each segment's last row, or of all its rows when it asks for them, segment after segment
// ((rows, n_vocab), inside act.logits). Throws oxi::Error for segments that do not fit.
std::span<const float> forward_segments(const Model& model, backends::Backend& backend,
                                        Activations& act, RopeAngles& rope,
                                        std::span<const BatchSegment> segments,
                                        std::span<const int32_t> tokens);

// ---- building blocks (layers.cpp) ----

// Throws oxi::Error unless `tokens` (one or more) fit `cache` from pos0 and are all in the
// vocabulary: what a sequence of a pass must be.
void check_sequence(const ModelConfig& c, const KvCache& cache, std::span<const int32_t> tokens,
                    size_t pos0);

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
// Stores the batch's new keys and values (rows of act.k / act.v) in each segment's cache and
// runs each segment's attention over its cache into act.attn.
void store_and_attend(backends::Backend& backend, const ModelConfig& c, const ForwardBatch& batch,
                      size_t layer);
// Final norm and output projection of the rows each segment asks logits for (its last, or
// all); the logits go to act.logits, row after row.
std::span<const float> output_logits(backends::Backend& backend, const Model& model,
                                     Activations& act, std::span<const BatchSegment> segments);

// One architecture's pass over the layers (x in, x out).
void llama_layers(const Model& model, backends::Backend& backend, const ForwardBatch& batch);
void gemma3_layers(const Model& model, backends::Backend& backend, const ForwardBatch& batch);

}  // namespace oxi::llm
