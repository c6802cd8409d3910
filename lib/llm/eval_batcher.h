// EvalBatcher: continuous batching. Sessions of one model that run at the same time (the slots
// of `oxinfer serve --parallel N`, each in a thread of its own) hand their evaluations to a
// shared batcher, which runs what they submit together as one forward pass: one read of the
// weights for every conversation's next token instead of one each, which is what decode is
// bound by (llama.cpp's server batches its slots the same way). Each sequence keeps its own
// cache and positions (BatchSegment); a prompt's batch and other sessions' decode steps share
// a pass too.
//
// Any thread may call eval(); the first to find the batcher idle runs the next pass for
// everyone waiting. It waits for the sessions that are active (Activity: a send() in progress)
// to submit, up to `gather` after the first request, so that a session busy elsewhere (a slow
// client's socket) delays the others by no more than that.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>

#include "backends/backend.h"
#include "lib/llm/forward.h"
#include "lib/llm/model.h"

namespace oxi::llm {

class EvalBatcher {
 public:
  // max_rows: the rows of one pass (a request larger than that runs alone).
  EvalBatcher(std::shared_ptr<const Model> model, backends::Backend& backend, size_t max_rows = 512,
              std::chrono::microseconds gather = std::chrono::microseconds(2000));
  ~EvalBatcher();
  EvalBatcher(const EvalBatcher&) = delete;
  EvalBatcher& operator=(const EvalBatcher&) = delete;

  // forward() for one session's state, in a pass shared with what other threads submit
  // meanwhile: tokens at pos0.. go into state.cache; the logits (the last token's, or every
  // token's) are copied into state.act.logits and returned. Blocks until done; rethrows the
  // pass's error. tokens.size() <= state.act.capacity.
  std::span<const float> eval(ForwardState& state, std::span<const int32_t> tokens, size_t pos0,
                              bool all_logits);
  const Model& model() const { return *model_; }

  // While one lives, a session counts as active: a pass waits (up to `gather`) until every
  // active session has a request in.
  class Activity {
   public:
    explicit Activity(EvalBatcher& batcher);
    ~Activity();
    Activity(const Activity&) = delete;
    Activity& operator=(const Activity&) = delete;

   private:
    EvalBatcher& batcher_;
  };

  struct Stats {
    size_t passes = 0;       // forward passes run
    size_t requests = 0;     // evaluations they served
    size_t rows = 0;         // tokens they evaluated
    size_t most_shared = 0;  // the most requests one pass served
  };
  Stats stats() const;

 private:
  struct Request;
  // Under mutex_: takes the requests of the next pass off the queue (the first always, then
  // those that fit max_rows), runs it unlocked, and marks them done.
  void run_pass(std::unique_lock<std::mutex>& lock);

  std::shared_ptr<const Model> model_;
  backends::Backend& backend_;
  size_t max_rows_;
  std::chrono::microseconds gather_;
  Activations act_;
  RopeAngles rope_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Request*> queue_;
  size_t active_ = 0;
  bool running_ = false;
  Stats stats_;
};

}  // namespace oxi::llm
