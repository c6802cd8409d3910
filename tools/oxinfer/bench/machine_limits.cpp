#include "tools/oxinfer/bench/machine_limits.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>

#include <sys/mman.h>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "kernels/math/read_sum.h"

namespace oxi::bench {
namespace {

constexpr int kRuns = 16;  // best of many: single runs on a shared VM vary by +-15 %

// The whole 8-byte words in [begin, end), which both kinds of pass read as uint64_t: the few
// bytes at either edge do not change the rate.
std::span<const uint64_t> whole_words(const std::byte* begin, const std::byte* end) {
  const auto first = (reinterpret_cast<uintptr_t>(begin) + 7) & ~uintptr_t{7};
  const auto last = reinterpret_cast<uintptr_t>(end) & ~uintptr_t{7};
  if (last <= first) return {};
  return {reinterpret_cast<const uint64_t*>(first), (last - first) / sizeof(uint64_t)};
}

// `words` cut into pieces of `piece_words` (the last one shorter), appended to `out`.
void append_pieces(std::span<const uint64_t> words, size_t piece_words,
                   std::vector<std::span<const uint64_t>>& out) {
  for (size_t at = 0; at < words.size(); at += piece_words)
    out.push_back(words.subspan(at, std::min(piece_words, words.size() - at)));
}

}  // namespace

struct ReadPass::Impl {
  // On transparent huge pages where the system gives them, as the LLM engine keeps its
  // repacked weights (lib/llm/weights.h): with 4 KB pages the TLB misses alone made the passes
  // 10-20 % slower than decode's own weight reads on the development VM.
  static constexpr size_t kHugePage = size_t{2} << 20;
  struct Free {
    void operator()(uint64_t* p) const noexcept {
      ::operator delete[](p, std::align_val_t{kHugePage});
    }
  };
  static std::unique_ptr<uint64_t[], Free> allocate(size_t words) {
    const size_t bytes = words * sizeof(uint64_t);
    std::unique_ptr<uint64_t[], Free> p(
        static_cast<uint64_t*>(::operator new[](bytes, std::align_val_t{kHugePage})));
    ::madvise(p.get(), bytes, MADV_HUGEPAGE);  // a hint: ignored where unsupported
    return p;
  }

  // Chunks of 1 MiB: small enough to balance, large enough to stream.
  static constexpr size_t kChunkWords = (size_t{1} << 20) / sizeof(uint64_t);

  std::unique_ptr<uint64_t[], Free> buffer;       // empty when the passes read existing memory
  std::vector<std::span<const uint64_t>> chunks;  // in address order
  size_t total_bytes = 0;
  backends::Backend* backend = nullptr;  // runs the passes when set
  std::optional<tbb::task_arena> arena;  // runs them otherwise
  std::atomic<uint64_t> sink{0};         // the sums, so that the reads cannot be optimised away

  Impl(int threads, size_t bytes, backends::Backend* on) : backend(on) {
    if (backend == nullptr) arena.emplace(std::max(threads, 1));
    const size_t words = std::max(bytes / sizeof(uint64_t) / kChunkWords, size_t{1}) * kChunkWords;
    buffer = allocate(words);
    add_chunks({buffer.get(), words});
    // Touch every page from the threads that read it later (first-touch NUMA placement).
    for_chunks([&](size_t begin, size_t end) {
      for (size_t i = begin * kChunkWords; i < end * kChunkWords; ++i) buffer[i] = i;
    });
  }

  Impl(int threads, backends::Backend* on, std::vector<std::span<const std::byte>> ranges)
      : backend(on) {
    if (backend == nullptr) arena.emplace(std::max(threads, 1));
    // In address order, touching ranges merged: each thread's share is one stream.
    std::sort(ranges.begin(), ranges.end(),
              [](const auto& a, const auto& b) { return a.data() < b.data(); });
    const std::byte* begin = nullptr;
    const std::byte* end = nullptr;
    const auto flush = [&] { add_chunks(whole_words(begin, end)); };
    for (const std::span<const std::byte> r : ranges) {
      if (r.empty()) continue;
      if (begin != nullptr && r.data() <= end) {
        end = std::max(end, r.data() + r.size());
        continue;
      }
      if (begin != nullptr) flush();
      begin = r.data();
      end = r.data() + r.size();
    }
    if (begin != nullptr) flush();
  }

  void add_chunks(std::span<const uint64_t> words) {
    append_pieces(words, kChunkWords, chunks);
    total_bytes += words.size() * sizeof(uint64_t);
  }

  // fn(begin, end) over the chunks, each thread a contiguous share.
  template <typename Fn>
  void for_chunks(const Fn& fn) {
    if (backend != nullptr) {
      backend->parallel_for(chunks.size(), 1, fn);
      return;
    }
    arena->execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<size_t>(0, chunks.size()),
          [&](const tbb::blocked_range<size_t>& r) { fn(r.begin(), r.end()); },
          tbb::static_partitioner());
    });
  }
};

ReadPass::ReadPass(int threads, size_t bytes)
    : impl_(std::make_unique<Impl>(threads, bytes, nullptr)) {}
ReadPass::ReadPass(backends::Backend& backend, size_t bytes)
    : impl_(std::make_unique<Impl>(backend.threads(), bytes, &backend)) {}
ReadPass::ReadPass(backends::Backend& backend, std::vector<std::span<const std::byte>> memory)
    : impl_(std::make_unique<Impl>(backend.threads(), &backend, std::move(memory))) {}
ReadPass::ReadPass(int threads, std::vector<std::span<const std::byte>> memory)
    : impl_(std::make_unique<Impl>(threads, nullptr, std::move(memory))) {}
ReadPass::~ReadPass() = default;

size_t ReadPass::bytes() const {
  return impl_->total_bytes;
}

double ReadPass::seconds() {
  Impl& m = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  m.for_chunks([&](size_t begin, size_t end) {
    // the kernels' read probe (kernels/math/read_sum.h says how it reads and why)
    uint64_t s = 0;
    for (size_t c = begin; c < end; ++c) s += kernels::read_sum(m.chunks[c]);
    m.sink.fetch_add(s, std::memory_order_relaxed);
  });
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double measure_read_bandwidth_gbs(ReadPass& pass) {
  double best = 0;
  for (int run = 0; run < kRuns; ++run)
    best = std::max(best, static_cast<double>(pass.bytes()) / pass.seconds() / 1e9);
  return best;
}

double measure_read_bandwidth_gbs(int threads) {
  ReadPass pass(threads);
  return measure_read_bandwidth_gbs(pass);
}

struct RegionsRead::Impl {
  static constexpr size_t kPieceWords = 32 * 1024 / sizeof(uint64_t);
  backends::Backend& backend;
  std::vector<std::vector<std::span<const uint64_t>>> pieces;  // per region
  // Each piece's sum goes to its own slot (no shared counter between the threads); the sums
  // are added afterwards so that the reads cannot be optimised away.
  std::vector<std::vector<uint64_t>> sums;
  double total_bytes = 0;
  std::atomic<uint64_t> sink{0};

  Impl(const std::vector<ReadRegion>& regions, backends::Backend& on) : backend(on) {
    for (const ReadRegion& region : regions) {
      std::vector<std::span<const uint64_t>>& p = pieces.emplace_back();
      for (const std::span<const std::byte> range : region) {
        append_pieces(whole_words(range.data(), range.data() + range.size()), kPieceWords, p);
        total_bytes += static_cast<double>(range.size());
      }
      sums.emplace_back(p.size());
    }
  }
};

RegionsRead::RegionsRead(const std::vector<ReadRegion>& regions, backends::Backend& backend)
    : impl_(std::make_unique<Impl>(regions, backend)) {}
RegionsRead::~RegionsRead() = default;

double RegionsRead::bytes() const {
  return impl_->total_bytes;
}

double RegionsRead::seconds() {
  Impl& m = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t k = 0; k < m.pieces.size(); ++k) {
    const std::vector<std::span<const uint64_t>>& p = m.pieces[k];
    std::vector<uint64_t>& sums = m.sums[k];
    m.backend.parallel_for(p.size(), 1,
                           [&](size_t i, size_t) { sums[i] = kernels::read_sum(p[i]); });
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t total = 0;
  for (const std::vector<uint64_t>& region_sums : m.sums)
    for (uint64_t v : region_sums) total += v;
  m.sink.fetch_add(total, std::memory_order_relaxed);
  return seconds;
}

}  // namespace oxi::bench
