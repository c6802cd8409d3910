// The machine's measured limits that kernel benchmarks are compared with.
#pragma once

namespace oxi::bench {

// Streaming read bandwidth from memory (GB/s, 1e9 bytes) with `threads` threads: each sums its
// share of a buffer far larger than the caches (512 MiB); best of a few runs.
double measure_read_bandwidth_gbs(int threads);

}  // namespace oxi::bench
