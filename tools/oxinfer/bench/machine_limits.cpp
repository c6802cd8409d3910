#include "tools/oxinfer/bench/machine_limits.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

namespace oxi::bench {
namespace {

constexpr size_t kBufferBytes = size_t{512} << 20;
constexpr int kRuns = 16;  // best of many: single runs on a shared VM vary by +-15 %

// Sum with several independent accumulators so the loop is limited by loads, not by adds.
uint64_t sum_words(const uint64_t* p, size_t n) noexcept {
  uint64_t s[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) s[k] += p[i + k];
  }
  for (; i < n; ++i) s[0] += p[i];
  uint64_t total = 0;
  for (uint64_t v : s) total += v;
  return total;
}

}  // namespace

double measure_read_bandwidth_gbs(int threads) {
  threads = std::max(threads, 1);
  const size_t words = kBufferBytes / sizeof(uint64_t);
  const auto buffer = std::make_unique_for_overwrite<uint64_t[]>(words);
  tbb::task_arena arena(threads);
  // Chunks of 1 MiB: small enough to balance, large enough to stream.
  const size_t chunk = (size_t{1} << 20) / sizeof(uint64_t);
  const tbb::blocked_range<size_t> range(0, words / chunk);
  // Touch every page from the threads that read it later (first-touch NUMA placement).
  arena.execute([&] {
    tbb::parallel_for(
        range,
        [&](const tbb::blocked_range<size_t>& r) {
          for (size_t c = r.begin(); c != r.end(); ++c) {
            for (size_t i = c * chunk; i < (c + 1) * chunk; ++i) buffer[i] = i;
          }
        },
        tbb::static_partitioner());
  });
  double best = 0;
  volatile uint64_t sink = 0;
  for (int run = 0; run < kRuns; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    arena.execute([&] {
      tbb::parallel_for(
          range,
          [&](const tbb::blocked_range<size_t>& r) {
            const uint64_t s = sum_words(buffer.get() + r.begin() * chunk, r.size() * chunk);
            sink = sink + s;
          },
          tbb::static_partitioner());
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(kBufferBytes) / seconds / 1e9);
  }
  return best;
}

double measure_regions_read_gbs(const std::vector<ReadRegion>& regions, int threads, int runs) {
  constexpr size_t kPieceBytes = 32 * 1024;
  struct Piece {
    const std::byte* begin;
    size_t bytes;
  };
  std::vector<std::vector<Piece>> pieces;  // per region
  double total_bytes = 0;
  for (const ReadRegion& region : regions) {
    std::vector<Piece>& p = pieces.emplace_back();
    for (const std::span<const std::byte> range : region) {
      // From the first 8-byte aligned word: the pieces are read as uint64_t.
      const size_t skip = (8 - reinterpret_cast<uintptr_t>(range.data()) % 8) % 8;
      for (size_t at = skip; at < range.size(); at += kPieceBytes)
        p.push_back({range.data() + at, std::min(kPieceBytes, range.size() - at)});
      total_bytes += static_cast<double>(range.size());
    }
  }
  tbb::task_arena arena(std::max(threads, 1));
  double best = 0;
  // Each piece's sum goes to its own slot (no shared counter between the threads); the sums
  // are added afterwards so that the reads cannot be optimised away.
  std::vector<std::vector<uint64_t>> sums(pieces.size());
  for (size_t k = 0; k < pieces.size(); ++k) sums[k].resize(pieces[k].size());
  volatile uint64_t sink = 0;
  for (int run = 0; run < std::max(runs, 1); ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    arena.execute([&] {
      for (size_t k = 0; k < pieces.size(); ++k) {
        const std::vector<Piece>& p = pieces[k];
        tbb::parallel_for(
            tbb::blocked_range<size_t>(0, p.size(), 1),
            [&](const tbb::blocked_range<size_t>& r) {
              for (size_t i = r.begin(); i != r.end(); ++i) {
                // Whole words only: the few tail bytes of a range do not change the rate.
                const auto* words = reinterpret_cast<const uint64_t*>(p[i].begin);
                sums[k][i] = sum_words(words, p[i].bytes / sizeof(uint64_t));
              }
            },
            tbb::simple_partitioner());
      }
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, total_bytes / seconds / 1e9);
    for (const std::vector<uint64_t>& region_sums : sums)
      for (uint64_t v : region_sums) sink = sink + v;
  }
  return best;
}

}  // namespace oxi::bench
