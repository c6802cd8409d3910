// Session: one conversation with a Model — its KV cache, activations and cached tokens.
// Not thread-safe; many sessions may share one Model (each with a Backend of its own when they
// run concurrently).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "kernels/formats/dtype.h"
#include "lib/llm/model.h"

namespace oxi::llm {

struct ForwardState;
class EvalBatcher;

class Session {
 public:
  // n_ctx: positions the cache holds; 0 = the model's training context, capped at
  // kDefaultMaxContext to keep the cache's memory modest. kv_type: the cache's elements, F16
  // or F32; default_kv_type() when not given.
  static constexpr size_t kDefaultMaxContext = 4096;
  // Tokens per forward pass; longer evals run in batches of this many.
  static constexpr size_t kMaxBatch = 256;

  Session(std::shared_ptr<const Model> model, backends::Backend& backend, size_t n_ctx = 0,
          std::optional<kernels::DType> kv_type = std::nullopt);

  // F16 (llama.cpp's cache: half the memory, and half the bytes decode's attention reads) when
  // any layer matrix is quantized; F32 when they are all float, whose logits are held to exact
  // arithmetic within 1e-3 (rounding keys and values to f16 moves them by up to ~2e-3; against
  // quantized weights' ~1e-2 it is noise).
  static kernels::DType default_kv_type(const Model& model);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Evaluates `tokens` at positions n_past() .. n_past() + n - 1 in batched passes (one matmul
  // over all tokens of a batch), appends them to the cache, and returns the logits of the last
  // token (n_vocab floats), or of every token when all_logits (n * n_vocab). The span stays
  // valid until the next call. Throws oxi::Error when the context would overflow.
  std::span<const float> eval(std::span<const int32_t> tokens, bool all_logits = false);
  // As eval, but returns every token's final-normed hidden state (n * n_embd floats, what
  // embeddings pool) instead of logits.
  std::span<const float> hidden(std::span<const int32_t> tokens);

  // From now on eval() runs in passes shared with the other sessions of `batcher` that evaluate
  // at the same time (continuous batching; hidden() stays on this session's backend). The
  // batcher's model must be this session's. nullptr: back to passes of its own.
  void use_batcher(std::shared_ptr<EvalBatcher> batcher);

  size_t n_past() const { return tokens_.size(); }
  // Forward passes this session has run (each eval batch; with a batcher, the passes it took
  // part in).
  uint64_t passes() const { return passes_.load(std::memory_order_relaxed); }
  size_t n_ctx() const;
  size_t kv_cache_bytes() const;
  const std::vector<int32_t>& tokens() const { return tokens_; }
  const Model& model() const { return *model_; }

  // Drops cached positions >= n_past (no-op when n_past >= n_past()).
  void truncate(size_t n_past);

  // A versioned little-endian file: tokens, n_past and the cache rows in use. load_state
  // restores exactly, so continuing gives bit-identical logits to the session that saved it.
  // Both throw oxi::Error naming the file (I/O, another model's shape or cache type, version,
  // a token outside the vocabulary, a size that does not match). A failed load leaves the
  // session as it was, but for an I/O error while reading the cache rows, which empties it.
  void save_state(const std::filesystem::path& file) const;
  void load_state(const std::filesystem::path& file);
  // What save_state then load_state would give, without the file: `from`'s tokens and cache
  // rows (a session of the same model and cache type, at most n_ctx() positions). Throws
  // oxi::Error otherwise, this session unchanged.
  void copy_context(const Session& from);

 private:
  // Throws unless n > 0 more tokens fit the context.
  void check_room(size_t n) const;

  std::shared_ptr<const Model> model_;
  backends::Backend& backend_;
  std::unique_ptr<ForwardState> state_;
  std::shared_ptr<EvalBatcher> batcher_;
  std::vector<int32_t> tokens_;
  std::atomic<uint64_t> passes_{0};  // read by other threads (a server's metrics)
  std::vector<float> all_logits_;  // eval(all_logits) over several batches
  std::vector<float> hidden_;      // hidden() over several batches
};

}  // namespace oxi::llm
