// The helper threads of the CPU backend's parallel regions (CpuBackend::run_pieces).
//
// A decode step is ~100 short regions in a row (a matvec of 50-300 us, attention of ~10 us),
// with a few microseconds of serial work between them. Through tbb::parallel_for a region's
// second thread had to be brought back into the arena each time. Here the helpers are tasks
// enqueued in the backend's arena that, once a region is done, spin for a short while (kSpin)
// waiting for the next one, so they join it about a microsecond after it opens (this VM's
// cross-core latency); then they leave, and the TBB worker is free for other arenas. Decode
// +2-3 % on the short Q4_0 / Q4_K_M tokens, Q8_0 unchanged (docs/benchmarks.md, sixteenth
// session).
//
// The calling thread always takes part, and a job must be correct with any number of helpers
// joining (0..helpers), at any time while it is open: a helper that comes late or not at all
// only costs speed. PieceRanges jobs are: whatever a missing thread would have taken is taken
// by the others.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include <tbb/task_arena.h>
#include <tbb/task_group.h>

namespace oxi::backends {

class WorkerTeam {
 public:
  // Up to `helpers` helper threads from `arena` (which must outlive the team).
  WorkerTeam(tbb::task_arena& arena, size_t helpers);
  // Tells the helpers to leave and waits until every helper task has run, running those still
  // queued on this thread (they see the team gone and return at once).
  ~WorkerTeam() noexcept;
  WorkerTeam(const WorkerTeam&) = delete;
  WorkerTeam& operator=(const WorkerTeam&) = delete;

  // Calls job(0) on this thread and job(i), 1 <= i <= helpers, on each helper that joins while
  // job(0) runs; returns once every call has returned. job must not throw. Called from inside
  // a job (nested), it runs job(0) alone. One caller at a time.
  void run(const std::function<void(size_t participant)>& job);

  size_t helpers() const;

 private:
  struct State;
  static void helper_loop(State& s);
  void ensure_helpers();

  tbb::task_arena& arena_;
  std::unique_ptr<State> state_;
  // The helper tasks, which use state_: the destructor waits for them (one still queued when
  // the process exited would also be a leak to LeakSanitizer).
  tbb::task_group helper_tasks_;
};

}  // namespace oxi::backends
