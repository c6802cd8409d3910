#include "lib/llm/session.h"

#include <algorithm>
#include <string>

#include "kernels/formats/dtype.h"
#include "lib/core/error.h"
#include "lib/llm/eval_batcher.h"
#include "lib/llm/forward.h"

namespace oxi::llm {

Session::Session(std::shared_ptr<const Model> model, backends::Backend& backend, size_t n_ctx,
                 std::optional<kernels::DType> kv_type)
    : model_(std::move(model)), backend_(backend) {
  if (!model_) throw Error("llm session", "no model");
  const ModelConfig& c = model_->config();
  if (n_ctx == 0)
    n_ctx = std::min(static_cast<size_t>(std::max(c.n_ctx_train, 1)), kDefaultMaxContext);
  state_ = std::make_unique<ForwardState>(*model_, n_ctx, std::min(kMaxBatch, n_ctx),
                                          kv_type.value_or(default_kv_type(*model_)));
}

Session::~Session() = default;

kernels::DType Session::default_kv_type(const Model& model) {
  for (const LayerWeights& l : model.weights().layers)
    for (const backends::WeightMatrix* m :
         {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      if (kernels::info(m->dtype).quantized) return kernels::DType::F16;
  return kernels::DType::F32;
}

void Session::use_batcher(std::shared_ptr<EvalBatcher> batcher) {
  if (batcher && &batcher->model() != model_.get())
    throw Error("llm session", "the eval batcher runs another model");
  batcher_ = std::move(batcher);
}

size_t Session::n_ctx() const {
  return state_->cache.n_ctx();
}

size_t Session::kv_cache_bytes() const {
  return state_->cache.bytes();
}

void Session::check_room(size_t n) const {
  if (n == 0) throw Error("llm session", "eval of no tokens");
  if (n_past() + n > n_ctx())
    throw Error("llm session", "context full: " + std::to_string(n_past()) + " cached + " +
                                   std::to_string(n) + " new > n_ctx " + std::to_string(n_ctx()));
}

std::span<const float> Session::eval(std::span<const int32_t> tokens, bool all_logits) {
  const size_t n_vocab = model_->config().n_vocab;
  check_room(tokens.size());
  const size_t batch = state_->act.capacity;
  const bool one_batch = tokens.size() <= batch;
  if (all_logits && !one_batch) all_logits_.resize(tokens.size() * n_vocab);
  std::span<const float> logits;
  for (size_t done = 0; done < tokens.size(); done += batch) {
    const auto chunk = tokens.subspan(done, std::min(batch, tokens.size() - done));
    logits = batcher_ ? batcher_->eval(*state_, chunk, n_past(), all_logits)
                      : forward(*model_, backend_, *state_, chunk, n_past(), all_logits);
    tokens_.insert(tokens_.end(), chunk.begin(), chunk.end());
    passes_.fetch_add(1, std::memory_order_relaxed);
    if (all_logits && !one_batch)
      std::copy(logits.begin(), logits.end(), all_logits_.begin() + done * n_vocab);
  }
  return all_logits && !one_batch ? std::span<const float>(all_logits_) : logits;
}

std::span<const float> Session::hidden(std::span<const int32_t> tokens) {
  const size_t width = static_cast<size_t>(model_->config().n_embd);
  check_room(tokens.size());
  hidden_.resize(tokens.size() * width);
  const size_t batch = state_->act.capacity;
  for (size_t done = 0; done < tokens.size(); done += batch) {
    const auto chunk = tokens.subspan(done, std::min(batch, tokens.size() - done));
    const std::span<const float> h = forward_hidden(*model_, backend_, *state_, chunk, n_past());
    tokens_.insert(tokens_.end(), chunk.begin(), chunk.end());
    passes_.fetch_add(1, std::memory_order_relaxed);
    std::copy(h.begin(), h.end(), hidden_.begin() + static_cast<std::ptrdiff_t>(done * width));
  }
  return hidden_;
}

void Session::truncate(size_t n_past) {
  // Rows past n_past are simply overwritten by the next eval.
  if (n_past < tokens_.size()) tokens_.resize(n_past);
}

}  // namespace oxi::llm
