#include "backends/cpu/worker_team.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace oxi::backends {
namespace {

using Clock = std::chrono::steady_clock;

// How long a helper waits for the next job before it leaves: longer than the serial gaps
// between the regions of a decode step (1-20 us), short enough that an idle backend gives its
// TBB worker back to other arenas (another model's backend, a benchmark's read pass) at once.
constexpr auto kSpin = std::chrono::microseconds(100);

// The job slot, one 64-bit word so that opening, joining and closing are single atomic steps:
//   bits 63..32  generation: odd while a job is open, even once closed
//   bits 31..16  helpers that joined the open job (its participants 1..)
//   bits 15..0   helpers still inside it
constexpr uint64_t kActiveOne = 1, kJoinedOne = uint64_t{1} << 16;
uint32_t generation(uint64_t slot) {
  return static_cast<uint32_t>(slot >> 32);
}
uint32_t joined(uint64_t slot) {
  return static_cast<uint32_t>(slot >> 16) & 0xFFFF;
}
uint32_t active(uint64_t slot) {
  return static_cast<uint32_t>(slot) & 0xFFFF;
}
bool is_open(uint64_t slot) {
  return (generation(slot) & 1) != 0;
}
uint64_t with_generation(uint32_t gen, uint32_t active_helpers) {
  return uint64_t{gen} << 32 | active_helpers;
}

void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Set while this thread runs a job: a region started from inside one runs alone.
thread_local bool t_in_job = false;

}  // namespace

struct WorkerTeam::State {
  std::atomic<uint64_t> slot{0};
  const std::function<void(size_t)>* job = nullptr;  // valid while a job is open or active
  size_t helpers = 0;
  std::atomic<size_t> alive{0};  // helper tasks enqueued that have not left
  std::atomic<bool> quit{false};
};

WorkerTeam::WorkerTeam(tbb::task_arena& arena, size_t helpers)
    : arena_(arena), state_(std::make_unique<State>()) {
  state_->helpers = std::min<size_t>(helpers, 0xFFFF);  // the slot counts joins in 16 bits
}

size_t WorkerTeam::helpers() const {
  return state_->helpers;
}

WorkerTeam::~WorkerTeam() noexcept {
  state_->quit.store(true);
  arena_.execute([this] { helper_tasks_.wait(); });
}

void WorkerTeam::ensure_helpers() {
  State& s = *state_;
  for (size_t alive = s.alive.load(); alive < s.helpers; alive = s.alive.load()) {
    if (s.alive.compare_exchange_strong(alive, alive + 1))
      arena_.enqueue(helper_tasks_.defer([state = state_.get()] { helper_loop(*state); }));
  }
}

void WorkerTeam::run(const std::function<void(size_t participant)>& job) {
  if (state_->helpers == 0 || t_in_job) {
    job(0);
    return;
  }
  State& s = *state_;
  // Open: no helper is inside a job now (the last run waited for them), so job can be set.
  s.job = &job;
  const uint32_t gen = generation(s.slot.load(std::memory_order_relaxed)) + 1;
  s.slot.store(with_generation(gen, 0));
  // After opening (both seq_cst): a helper leaving at this moment either sees the open job or
  // is seen as gone and replaced.
  ensure_helpers();
  t_in_job = true;
  job(0);
  t_in_job = false;
  // Close (no more joins), then wait for the helpers inside.
  uint64_t v = s.slot.load(std::memory_order_relaxed);
  while (!s.slot.compare_exchange_weak(v, with_generation(gen + 1, active(v)),
                                       std::memory_order_acq_rel)) {
  }
  while (active(s.slot.load(std::memory_order_acquire)) != 0) cpu_pause();
}

void WorkerTeam::helper_loop(State& s) {
  // A helper joins the job open when it starts, if any; after that, each new one once.
  const uint64_t start = s.slot.load(std::memory_order_acquire);
  uint32_t seen = is_open(start) ? generation(start) - 1 : generation(start);
  Clock::time_point idle_since = Clock::now();
  for (unsigned spins = 0;; ++spins) {
    if (s.quit.load(std::memory_order_relaxed)) break;
    uint64_t v = s.slot.load(std::memory_order_acquire);
    if (is_open(v) && generation(v) != seen) {
      if (joined(v) >= s.helpers) {
        seen = generation(v);  // every participant index is taken
      } else if (s.slot.compare_exchange_weak(v, v + kJoinedOne + kActiveOne,
                                              std::memory_order_acquire)) {
        seen = generation(v);
        t_in_job = true;
        (*s.job)(1 + joined(v));
        t_in_job = false;
        s.slot.fetch_sub(kActiveOne, std::memory_order_release);
        idle_since = Clock::now();
      }
      continue;
    }
    cpu_pause();
    if (spins % 64 != 0) continue;
    // Idle means no job open: while the caller still works on one, the next is near.
    if (is_open(v)) idle_since = Clock::now();
    if (Clock::now() - idle_since < kSpin) continue;
    // Leave; but a job opened meanwhile that this helper was counted for is joined first.
    s.alive.fetch_sub(1);
    v = s.slot.load();
    if (!is_open(v) || generation(v) == seen || s.quit.load()) break;
    s.alive.fetch_add(1);
    idle_since = Clock::now();
  }
}

}  // namespace oxi::backends
