#include "lib/llm/eval_batcher.h"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "lib/core/error.h"

namespace oxi::llm {

struct EvalBatcher::Request {
  ForwardState* state = nullptr;
  std::span<const int32_t> tokens{};
  size_t pos0 = 0;
  bool all_logits = false;
  bool done = false;
  std::span<const float> logits{};
  std::exception_ptr error{};
};

EvalBatcher::EvalBatcher(std::shared_ptr<const Model> model, backends::Backend& backend,
                         size_t max_rows, std::chrono::microseconds gather)
    : model_(std::move(model)),
      backend_(backend),
      max_rows_(max_rows),
      gather_(gather),
      act_((model_ ? model_ : throw Error("eval batcher", "no model"))->config(), max_rows),
      rope_(*model_) {
  if (max_rows == 0) throw Error("eval batcher", "max_rows must be 1 or more");
}

EvalBatcher::~EvalBatcher() = default;

EvalBatcher::Activity::Activity(EvalBatcher& batcher) : batcher_(batcher) {
  std::lock_guard lock(batcher_.mutex_);
  ++batcher_.active_;
}

EvalBatcher::Activity::~Activity() {
  std::lock_guard lock(batcher_.mutex_);
  --batcher_.active_;
  batcher_.changed_.notify_all();  // a gathering pass may wait for this session no more
}

EvalBatcher::Stats EvalBatcher::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::span<const float> EvalBatcher::eval(ForwardState& state, std::span<const int32_t> tokens,
                                         size_t pos0, bool all_logits) {
  if (tokens.empty() || tokens.size() > state.act.capacity)
    throw Error("eval batcher", std::to_string(tokens.size()) +
                                    " tokens do not fit the session's batch of " +
                                    std::to_string(state.act.capacity));
  // Checked here, so that one session's bad request fails it alone and not the shared pass.
  check_sequence(model_->config(), state.cache, tokens, pos0);
  Request request{&state, tokens, pos0, all_logits};
  std::unique_lock lock(mutex_);
  queue_.push_back(&request);
  changed_.notify_all();
  while (!request.done) {
    if (running_) {
      changed_.wait(lock, [&] { return request.done || !running_; });
      continue;
    }
    // This thread runs the next pass, once every active session has a request in (or the
    // gather time is up).
    running_ = true;
    changed_.wait_for(lock, gather_, [&] { return queue_.size() >= active_; });
    run_pass(lock);
  }
  if (request.error) std::rethrow_exception(request.error);
  return request.logits;
}

void EvalBatcher::run_pass(std::unique_lock<std::mutex>& lock) {
  // The first request always; then those that fit, in the order they came.
  std::vector<Request*> pass;
  size_t rows = 0;
  const size_t capacity = std::max(max_rows_, queue_.front()->tokens.size());
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (rows + (*it)->tokens.size() > capacity) {
      ++it;
      continue;
    }
    rows += (*it)->tokens.size();
    pass.push_back(*it);
    it = queue_.erase(it);
  }
  lock.unlock();

  std::exception_ptr error;
  try {
    if (act_.capacity < rows) act_ = Activations(model_->config(), rows);
    std::vector<BatchSegment> segments;
    std::vector<int32_t> tokens;
    tokens.reserve(rows);
    for (Request* r : pass) {
      segments.push_back(
          {&r->state->cache, tokens.size(), r->pos0, r->tokens.size(), r->all_logits});
      tokens.insert(tokens.end(), r->tokens.begin(), r->tokens.end());
    }
    const std::span<const float> logits =
        forward_segments(*model_, backend_, act_, rope_, segments, tokens);
    // Each session's logits into its own state: they stay valid until its next eval.
    const size_t n_vocab = static_cast<size_t>(model_->config().n_vocab);
    size_t at = 0;
    for (Request* r : pass) {
      const size_t count = (r->all_logits ? r->tokens.size() : 1) * n_vocab;
      std::vector<float>& own = r->state->act.logits;
      if (own.size() < count) own.resize(count);
      std::copy_n(logits.begin() + static_cast<std::ptrdiff_t>(at), count, own.begin());
      r->logits = std::span<const float>(own).first(count);
      at += count;
    }
  } catch (...) {
    error = std::current_exception();
  }

  lock.lock();
  for (Request* r : pass) {
    r->error = error;
    r->done = true;
  }
  ++stats_.passes;
  stats_.requests += pass.size();
  stats_.rows += rows;
  stats_.most_shared = std::max(stats_.most_shared, pass.size());
  running_ = false;
  changed_.notify_all();
}

}  // namespace oxi::llm
