// Benchmarks of kernels/math against the machine's measured f32 FMA peak.
#pragma once

#include <vector>

#include "tools/oxinfer/bench/bench_report.h"

namespace oxi::bench {

// Peak f32 multiply-add throughput (GFLOP/s, 2 flops per lane per FMA) on `threads` threads:
// independent register-resident FMA chains, AVX2+FMA when the CPU has it, best of a few runs.
double measure_fma_peak_gflops(int threads);

// f32 GEMM (threads split the output columns), RMSNorm and the Whisper-sized real FFT.
// GFLOP/s rows carry fma_peak_gflops as their limit.
std::vector<BenchRow> bench_math_kernels(int threads, double fma_peak_gflops);

}  // namespace oxi::bench
