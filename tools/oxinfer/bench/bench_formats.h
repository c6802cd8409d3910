// Benchmarks of kernels/formats: multi-threaded matvec over weight matrices far larger than the
// caches, in GB/s of weight bytes read, against the measured read bandwidth.
#pragma once

#include <vector>

#include "tools/oxinfer/bench/bench_report.h"

namespace oxi::bench {

// matvec of q4_0, q8_0, q4_K, q6_K and f16 8192 x 8192 matrices on `threads` threads (rows
// split evenly); read_bw_gbs is the limit of every row.
std::vector<BenchRow> bench_format_kernels(int threads, double read_bw_gbs);

}  // namespace oxi::bench
