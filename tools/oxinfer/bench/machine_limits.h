// The machine's measured limits that kernel benchmarks are compared with.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace oxi::bench {

// A buffer far larger than the caches, allocated and touched once, that `threads` threads read
// in whole passes (each sums its share): the streaming read, timed one pass at a time so that
// passes can be interleaved with other work. Given a backend, its parallel_for runs the passes:
// a benchmark that interleaves passes with that backend's work (bench llm) keeps the same
// threads for both, instead of handing TBB's workers between two arenas at every switch.
//
// Or passes over existing memory (a model's weights), in address order: the read rate of those
// very pages. Where memory sits matters on the development VM: in bench llm, passes over the
// weights read at 85-106 % of a separate buffer's rate in the same seconds, and over a fresh
// copy of the weights at 86-109 % (docs/benchmarks.md, twenty-fourth session). A limit measured
// on other pages is off by up to ~10 %, either way, from run to run.
class ReadPass {
 public:
  explicit ReadPass(int threads, size_t bytes = size_t{512} << 20);
  explicit ReadPass(backends::Backend& backend, size_t bytes = size_t{512} << 20);
  // `memory` must outlive the object; overlapping ranges are read once.
  ReadPass(backends::Backend& backend, std::vector<std::span<const std::byte>> memory);
  ReadPass(int threads, std::vector<std::span<const std::byte>> memory);
  ~ReadPass();
  ReadPass(const ReadPass&) = delete;
  ReadPass& operator=(const ReadPass&) = delete;

  size_t bytes() const;
  double seconds();  // one pass over the whole buffer (or memory)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Streaming read bandwidth from memory (GB/s, 1e9 bytes): the best of 16 passes of `pass`, or
// of a ReadPass over 512 MiB with `threads` threads.
double measure_read_bandwidth_gbs(ReadPass& pass);
double measure_read_bandwidth_gbs(int threads);

// A parallel region's byte ranges: read together, cut into 32 KB pieces as a matvec cuts its
// weight rows (backends/cpu/cpu_matmul.cpp).
using ReadRegion = std::vector<std::span<const std::byte>>;

// Passes over a sequence of parallel regions of existing memory (a model's weights, in the
// order decode reads them), each region one backend.parallel_for over its pieces: the same
// loads and threads as decode without its arithmetic. The memory the regions name must outlive
// the object.
class RegionsRead {
 public:
  RegionsRead(const std::vector<ReadRegion>& regions, backends::Backend& backend);
  ~RegionsRead();
  RegionsRead(const RegionsRead&) = delete;
  RegionsRead& operator=(const RegionsRead&) = delete;

  double bytes() const;  // of one pass
  double seconds();      // one pass over every region, in order

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oxi::bench
