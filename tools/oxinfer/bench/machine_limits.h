// The machine's measured limits that kernel benchmarks are compared with.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace oxi::bench {

// Streaming read bandwidth from memory (GB/s, 1e9 bytes) with `threads` threads: each sums its
// share of a buffer far larger than the caches (512 MiB); best of a few runs.
double measure_read_bandwidth_gbs(int threads);

// A parallel region's byte ranges: read together, cut into 32 KB pieces as a matvec cuts its
// weight rows (backends/cpu/cpu_matmul.cpp).
using ReadRegion = std::vector<std::span<const std::byte>>;

// Read bandwidth (GB/s) of a sequence of parallel regions over existing memory (a model's
// weights, in the order decode reads them): the same loads as decode without its arithmetic.
// Best of `runs` passes over all regions.
double measure_regions_read_gbs(const std::vector<ReadRegion>& regions, int threads, int runs);

}  // namespace oxi::bench
