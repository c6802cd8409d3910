// Benchmarks of kernels/formats: multi-threaded matvec over weight matrices far larger than the
// caches, in GB/s of weight bytes read, against the measured read bandwidth; and one core's
// matvec over cache-resident weights, against that core's share of the bandwidth.
#pragma once

#include <vector>

#include "tools/oxinfer/bench/bench_report.h"

namespace oxi::bench {

// matvec of q4_0 (repacked and plain), q8_0, q4_K, q6_K and f16 matrices of 256 MiB on
// `threads` threads (rows split evenly); each row's limit is the read bandwidth measured just
// before it. Then the same formats (in the layout decode multiplies) on one thread over a
// 128 KiB matrix that stays in L2, against one core's share of the read bandwidth.
std::vector<BenchRow> bench_format_kernels(int threads);

}  // namespace oxi::bench
