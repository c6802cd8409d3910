// The slots of `oxinfer serve --parallel N`, as llama-server's: N engines of one model, each a
// conversation with a KV cache of its own, which requests lease one at a time. With more than
// one, their evaluations share forward passes (llm::EvalBatcher: continuous batching). A request
// gets the free slot whose last prompt shares the longest start with its own (the most of its
// prompt already cached, as llama-server's --slot-prompt-similarity), the least recently used
// among equals; it waits while every slot is busy.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lib/llm/engine.h"

namespace oxi::cli {

class ServeSlots {
 public:
  explicit ServeSlots(std::vector<std::unique_ptr<llm::Engine>> engines);

  size_t size() const { return slots_.size(); }
  // What every slot shares: the model, its template, the context size.
  const llm::Engine& first() const { return *slots_.front().engine; }

  // One slot's engine, held for a request; freed when the lease ends.
  class Lease {
   public:
    Lease(ServeSlots& slots, size_t id) : slots_(&slots), id_(id) {}
    Lease(Lease&& other) noexcept : slots_(other.slots_), id_(other.id_) { other.slots_ = nullptr; }
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    llm::Engine& engine() const { return *slots_->slots_[id_].engine; }
    size_t id() const { return id_; }
    // The prompt the slot's cache now starts with (what later leases are matched against).
    void set_prompt(std::string prompt) const;

   private:
    ServeSlots* slots_;
    size_t id_;
  };

  // Waits for a free slot (the best for `prompt`, see above). Throws oxi::Error once stop()
  // was called.
  Lease lease(std::string_view prompt);
  // Waits for slot `id` (< size()) to be free (a request's id_slot, the /slots actions).
  Lease lease_slot(size_t id);
  // Cancels the running requests and refuses the waiting and later ones.
  void stop();

  struct SlotInfo {
    size_t id = 0;
    size_t n_ctx = 0;
    bool busy = false;
    uint64_t passes = 0;  // the slot's forward passes (Session::passes)
  };
  std::vector<SlotInfo> info() const;
  // Requests waiting for a slot.
  size_t waiting() const;

 private:
  struct Slot {
    std::unique_ptr<llm::Engine> engine;
    bool busy = false;
    std::string prompt{};   // the last prompt it evaluated
    uint64_t last_use = 0;  // when it was last leased (a counter)
  };
  template <class Ready, class Pick>
  Lease take(const Ready& ready, const Pick& pick);
  void release(size_t id);

  std::vector<Slot> slots_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  uint64_t clock_ = 0;
  size_t waiting_ = 0;
  bool stopping_ = false;
};

}  // namespace oxi::cli
