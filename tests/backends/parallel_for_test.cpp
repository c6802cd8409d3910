// Backend::parallel_for: covers the range once, in pieces at multiples of the grain, with any
// thread count; exceptions reach the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "lib/core/error.h"

namespace oxi::backends {
namespace {

TEST(CpuParallelFor, CoversRangeInFixedPieces) {
  for (int threads : {1, 2, 3}) {
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

TEST(CpuBackend, DefaultThreadsAndBadCount) {
  EXPECT_GE(make_cpu_backend(0)->threads(), 1);
  EXPECT_THROW(make_cpu_backend(-1), Error);
}

}  // namespace
}  // namespace oxi::backends
