// Backend::parallel_for: covers the range once, in pieces at multiples of the grain, with any
// thread count; exceptions reach the caller. PieceRanges (how the CPU backend hands out a
// region's pieces): every piece once, each run in order, late threads' ranges taken by others.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/piece_ranges.h"
#include "lib/core/error.h"

namespace oxi::backends {
namespace {

TEST(CpuParallelFor, CoversRangeInFixedPieces) {
  for (int threads : {1, 2, 3, 16}) {
    const auto backend = make_cpu_backend(threads);
    EXPECT_EQ(backend->threads(), threads);
    EXPECT_EQ(backend->name(), "cpu");
    for (auto [n, grain] : {std::pair<size_t, size_t>{1000, 7}, {5, 10}, {64, 1}, {10, 0}}) {
      std::vector<std::atomic<int>> hits(n);
      std::mutex mutex;
      std::set<std::pair<size_t, size_t>> pieces;
      backend->parallel_for(n, grain, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) hits[i]++;
        std::lock_guard lock(mutex);
        pieces.emplace(begin, end);
      });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
      const size_t g = grain == 0 ? 1 : grain;
      EXPECT_EQ(pieces.size(), (n + g - 1) / g);
      for (auto [begin, end] : pieces) {
        EXPECT_EQ(begin % g, 0u);
        EXPECT_EQ(end, std::min(n, begin + g));
      }
    }
    backend->parallel_for(0, 4, [](size_t, size_t) { FAIL() << "called for an empty range"; });
  }
}

TEST(CpuParallelFor, RethrowsExceptions) {
  const auto backend = make_cpu_backend(2);
  EXPECT_THROW(backend->parallel_for(100, 1,
                                     [](size_t begin, size_t) {
                                       if (begin == 57) throw std::runtime_error("piece 57");
                                     }),
               std::runtime_error);
}

TEST(PieceRanges, OneThreadTakesEveryRange) {
  const std::atomic<bool> stop{false};
  for (auto [count, ranges] : {std::pair<size_t, size_t>{10, 3}, {3, 3}, {1000, 7}, {5, 1}}) {
    PieceRanges pieces(count, ranges);
    std::vector<size_t> order;
    pieces.run(
        1 % ranges, [&](size_t piece) { order.push_back(piece); }, stop);
    ASSERT_EQ(order.size(), count);
    std::vector<int> hits(count);
    for (size_t piece : order) hits[piece]++;
    for (size_t i = 0; i < count; ++i) EXPECT_EQ(hits[i], 1) << i;
    // Its own range first, front to back: [count * self / ranges, count * (self + 1) / ranges).
    const size_t self = 1 % ranges, own = count * (self + 1) / ranges - count * self / ranges;
    for (size_t k = 0; k < own; ++k) EXPECT_EQ(order[k], count * self / ranges + k);
    // Then the back half of the next range, front to back.
    if (ranges > 1 && own < count) {
      const size_t next = (self + 1) % ranges;
      const size_t begin = count * next / ranges, end = count * (next + 1) / ranges;
      const size_t mid = begin + (end - begin) / 2;
      for (size_t k = 0; k < end - mid; ++k) EXPECT_EQ(order[own + k], mid + k);
    }
  }
}

TEST(PieceRanges, ConcurrentThreadsTakeEachPieceOnce) {
  constexpr size_t kCount = 20000, kThreads = 4;
  const std::atomic<bool> stop{false};
  for (int round = 0; round < 20; ++round) {
    PieceRanges pieces(kCount, kThreads);
    std::vector<std::atomic<int>> hits(kCount);
    std::vector<std::vector<size_t>> taken(kThreads);
    std::vector<std::thread> threads;
    // The last thread starts only once the others are done: all its pieces were taken by then.
    for (size_t t = 0; t + 1 < kThreads; ++t)
      threads.emplace_back([&, t] {
        pieces.run(
            t, [&](size_t piece) { hits[piece]++, taken[t].push_back(piece); }, stop);
      });
    for (std::thread& thread : threads) thread.join();
    pieces.run(
        kThreads - 1, [&](size_t piece) { hits[piece]++, taken.back().push_back(piece); }, stop);
    EXPECT_TRUE(taken.back().empty());
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
    // Each thread's own pieces come in increasing order.
    for (size_t t = 0; t + 1 < kThreads; ++t) {
      const size_t begin = kCount * t / kThreads, end = kCount * (t + 1) / kThreads;
      size_t last = 0;
      bool first = true;
      for (size_t piece : taken[t]) {
        if (piece < begin || piece >= end) continue;
        if (!first) {
          EXPECT_GT(piece, last);
        }
        last = piece, first = false;
      }
    }
  }
}

TEST(PieceRanges, StopEndsClaims) {
  std::atomic<bool> stop{false};
  PieceRanges pieces(100, 2);
  size_t calls = 0;
  pieces.run(
      0, [&](size_t) { stop = ++calls == 10; }, stop);
  EXPECT_EQ(calls, 10u);
}

TEST(CpuBackend, DefaultThreadsAndBadCount) {
  EXPECT_GE(make_cpu_backend(0)->threads(), 1);
  EXPECT_THROW(make_cpu_backend(-1), Error);
}

}  // namespace
}  // namespace oxi::backends
