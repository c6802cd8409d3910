#include "tools/oxinfer/serve_slots.h"

#include <algorithm>
#include <string>
#include <utility>

#include "lib/core/error.h"

namespace oxi::cli {

ServeSlots::ServeSlots(std::vector<std::unique_ptr<llm::Engine>> engines) {
  if (engines.empty()) throw Error("serve", "no slots");
  for (auto& engine : engines) slots_.push_back({std::move(engine)});
}

ServeSlots::Lease::~Lease() {
  if (slots_) slots_->release(id_);
}

void ServeSlots::Lease::set_prompt(std::string prompt) const {
  std::lock_guard lock(slots_->mutex_);
  slots_->slots_[id_].prompt = std::move(prompt);
}

// Waits (counted in waiting()) until `ready` holds or the server stops, then leases the slot
// `pick` names.
template <class Ready, class Pick>
ServeSlots::Lease ServeSlots::take(const Ready& ready, const Pick& pick) {
  std::unique_lock lock(mutex_);
  ++waiting_;
  freed_.wait(lock, [&] { return stopping_ || ready(); });
  --waiting_;
  if (stopping_) throw Error("serve", "the server is stopping");
  const size_t id = pick();
  slots_[id].busy = true;
  slots_[id].last_use = ++clock_;
  return Lease(*this, id);
}

ServeSlots::Lease ServeSlots::lease(std::string_view prompt) {
  const auto any_free = [&] {
    return std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy; });
  };
  const auto shared_start = [&](const Slot& s) {
    return static_cast<size_t>(
        std::mismatch(s.prompt.begin(), s.prompt.end(), prompt.begin(), prompt.end()).first -
        s.prompt.begin());
  };
  return take(any_free, [&] {
    size_t best = slots_.size();
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].busy) continue;
      if (best == slots_.size()) {
        best = i;
        continue;
      }
      const size_t mine = shared_start(slots_[i]), theirs = shared_start(slots_[best]);
      if (mine > theirs || (mine == theirs && slots_[i].last_use < slots_[best].last_use)) best = i;
    }
    return best;
  });
}

ServeSlots::Lease ServeSlots::lease_slot(size_t id) {
  if (id >= slots_.size())
    throw Error("serve", "no slot " + std::to_string(id) + " (there are " +
                             std::to_string(slots_.size()) + ")");
  return take([&] { return !slots_[id].busy; }, [id] { return id; });
}

void ServeSlots::release(size_t id) {
  std::lock_guard lock(mutex_);
  slots_[id].busy = false;
  freed_.notify_all();
}

void ServeSlots::stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  for (Slot& s : slots_) s.engine->cancel();
  freed_.notify_all();
}

size_t ServeSlots::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

std::vector<ServeSlots::SlotInfo> ServeSlots::info() const {
  std::lock_guard lock(mutex_);
  std::vector<SlotInfo> out;
  for (size_t i = 0; i < slots_.size(); ++i)
    out.push_back({i, slots_[i].engine->session().n_ctx(), slots_[i].busy,
                   slots_[i].engine->session().passes()});
  return out;
}

}  // namespace oxi::cli
