// Benchmarks of kernels/formats: multi-threaded matvec over weight matrices far larger than the
// caches, in GB/s of weight bytes read, against the measured read bandwidth.
#pragma once

#include <vector>

#include "tools/oxinfer/bench/bench_report.h"

namespace oxi::bench {

// matvec of q4_0 (repacked and plain), q8_0, q4_K, q6_K and f16 matrices of 256 MiB on
// `threads` threads (rows split evenly); each row's limit is the read bandwidth measured just
// before it.
std::vector<BenchRow> bench_format_kernels(int threads);

}  // namespace oxi::bench
