// How the CPU backend hands out the pieces of one parallel region (CpuBackend::run_pieces).
//
// The pieces 0..count are split into one contiguous range per thread. Each thread takes its own
// range front to back, so its weight reads stay one sequential stream (what the matvec
// prefetch assumes), then takes the back half of what another range has left, again front to
// back, until none is left: balanced at the end whatever a slow or late thread does. A claim
// is one compare-and-swap on the range's (front, back) pair.
//
// Why not a task per piece: a decode matvec piece is ~32 KB, 1.2-1.6 us of work. A
// simple_partitioner task per piece left ~0.3 us between pieces (splitting, spawning,
// stealing); the kernels ran 81-85 % of the threads' time in a region, 88-92 % now
// (docs/benchmarks.md, sixteenth session).
//
// Which thread runs a piece is the only thing that changes with the thread count: piece
// boundaries are the caller's, so results do not depend on it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

namespace oxi::backends {

class PieceRanges {
 public:
  // count < 2^32 pieces over `ranges` >= 1 ranges.
  PieceRanges(size_t count, size_t ranges)
      : ranges_(std::make_unique<Range[]>(ranges)), n_ranges_(ranges) {
    for (size_t i = 0; i < ranges; ++i)
      ranges_[i].front_back.store(pack(count * i / ranges, count * (i + 1) / ranges),
                                  std::memory_order_relaxed);
  }

  // Runs body(piece) on the pieces range `self` claims: its own from the front, then the back
  // half of what another range has left, front to back, until no range has any.
  // Stops claiming once `stop` is set (another thread threw).
  template <typename Body>
  void run(size_t self, const Body& body, const std::atomic<bool>& stop) {
    while (const auto piece = claim_front(ranges_[self])) {
      if (stop.load(std::memory_order_relaxed)) return;
      body(*piece);
    }
    for (size_t k = 1; k < n_ranges_;) {
      const auto [begin, end] = claim_back_half(ranges_[(self + k) % n_ranges_]);
      if (begin == end) {
        ++k;  // that range is done
        continue;
      }
      for (size_t piece = begin; piece < end; ++piece) {
        if (stop.load(std::memory_order_relaxed)) return;
        body(piece);
      }
    }
  }

 private:
  // [front, back) still unclaimed, packed in one word so that both ends move atomically.
  struct alignas(64) Range {
    std::atomic<uint64_t> front_back{0};
  };

  static uint64_t pack(uint64_t front, uint64_t back) { return front | back << 32; }

  static std::optional<size_t> claim_front(Range& r) {
    uint64_t v = r.front_back.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t front = v & 0xFFFFFFFFu, back = v >> 32;
      if (front >= back) return std::nullopt;
      if (r.front_back.compare_exchange_weak(v, pack(front + 1, back), std::memory_order_relaxed))
        return front;
    }
  }

  // The back half of what is left, rounded up ([front, back) -> [mid, back)): its owner keeps
  // streaming the front half while the thief streams this one, each in order.
  static std::pair<size_t, size_t> claim_back_half(Range& r) {
    uint64_t v = r.front_back.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t front = v & 0xFFFFFFFFu, back = v >> 32;
      if (front >= back) return {0, 0};
      const uint64_t mid = front + (back - front) / 2;
      if (r.front_back.compare_exchange_weak(v, pack(front, mid), std::memory_order_relaxed))
        return {mid, back};
    }
  }

  std::unique_ptr<Range[]> ranges_;
  size_t n_ranges_;
};

}  // namespace oxi::backends
