#include "tools/oxinfer/bench/bench_math.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <string>

#include "kernels/cpu_features.h"
#include "kernels/math/fft.h"
#include "kernels/math/gemm.h"
#include "kernels/math/math_kernels.h"
#include "tools/oxinfer/bench/stopwatch.h"

namespace oxi::bench {
namespace {

// Runs body(thread_index) once on each of `threads` threads at the same time; returns seconds.
template <class Body>
double time_parallel(int threads, Body&& body) {
  tbb::task_arena arena(threads);
  double elapsed = 0;
  arena.execute([&] {
    const auto t0 = Clock::now();
    tbb::parallel_for(
        0, threads, 1, [&](int t) { body(t); }, tbb::static_partitioner());
    elapsed = seconds_since(t0);
  });
  return elapsed;
}

template <class Fn>
double best_of(int runs, Fn&& fn) {
  double best = 1e300;
  for (int r = 0; r < runs; ++r) best = std::min(best, fn());
  return best;
}

constexpr int kChains = 12;  // > FMA latency x pipes (4 x 2), so every pipe issues each cycle
constexpr long kFmaIterations = 20'000'000;

#if defined(__x86_64__)
using V8 = float __attribute__((vector_size(32)));
__attribute__((target("avx2,fma"))) float fma_chains_avx2(long iterations) {
  V8 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = V8{} + 0.001f * static_cast<float>(c);
  const V8 mul = V8{} + 0.999999f, add = V8{} + 1e-7f;
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = __builtin_ia32_vfmaddps256(acc[c], mul, add);
  }
  V8 total = V8{};
  for (int c = 0; c < kChains; ++c) total += acc[c];
  return total[0] + total[7];
}
#endif

// Portable fallback: 4-lane vectors the compiler maps onto whatever SIMD the target has.
using V4 = float __attribute__((vector_size(16)));
float mul_add_chains(long iterations) {
  V4 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = V4{} + 0.001f * static_cast<float>(c);
  const V4 mul = V4{} + 0.999999f, add = V4{} + 1e-7f;
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * mul + add;
  }
  V4 total = V4{};
  for (int c = 0; c < kChains; ++c) total += acc[c];
  return total[0] + total[3];
}

volatile float g_sink = 0;  // keeps the chains' results alive

std::string dims(size_t m, size_t k, size_t n) {
  return std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
}

}  // namespace

double measure_fma_peak_gflops(int threads) {
  threads = std::max(threads, 1);
  const auto& cpu = kernels::cpu_features();
#if defined(__x86_64__)
  const bool avx2 = cpu.avx2 && cpu.fma;
#else
  const bool avx2 = false;
#endif
  const double flops_per_iter = kChains * (avx2 ? 8 : 4) * 2.0;
  const double seconds = best_of(3, [&] {
    return time_parallel(threads, [&](int) {
#if defined(__x86_64__)
      g_sink = avx2 ? fma_chains_avx2(kFmaIterations) : mul_add_chains(kFmaIterations);
#else
      g_sink = mul_add_chains(kFmaIterations);
#endif
    });
  });
  (void)cpu;
  return flops_per_iter * kFmaIterations * threads / seconds / 1e9;
}

std::vector<BenchRow> bench_math_kernels(int threads, double fma_peak_gflops) {
  threads = std::max(threads, 1);
  const auto& mk = kernels::math_kernels();
  std::vector<BenchRow> rows;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto random_vector = [&](size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = dist(rng);
    return v;
  };

  {  // GEMM: each thread takes a 16-aligned run of output columns, with its own scratch.
    const size_t m = 512, k = 2048, n = 2048;
    const auto x = random_vector(m * k), w = random_vector(n * k), bias = random_vector(n);
    std::vector<float> y(m * n);
    const size_t per_thread = (n / threads + 15) / 16 * 16;
    std::vector<std::vector<float>> scratch(threads);
    for (auto& s : scratch) s.resize(kernels::gemm_scratch_floats(m, k, per_thread));
    const double seconds = best_of(3, [&] {
      return time_parallel(threads, [&](int t) {
        const size_t begin = std::min(n, t * per_thread), end = std::min(n, begin + per_thread);
        mk.gemm_f32(x.data(), k, m, k, w.data(), k * sizeof(float), &kernels::decode_f32_row, begin,
                    end, bias.data(), y.data(), n, scratch[t]);
      });
    });
    rows.push_back(
        {"gemm f32 " + dims(m, k, n) + " (" + std::string(kernels::isa_name(mk.isa)) + ")",
         "GFLOP/s", 2.0 * m * k * n / seconds / 1e9, fma_peak_gflops});
  }

  {  // RMSNorm over rows of 4096 (16 MiB in, 16 MiB out): a streaming kernel, so GB/s.
    const size_t cols = 4096, n_rows = 1024;
    const auto x = random_vector(cols * n_rows), weight = random_vector(cols);
    std::vector<float> y(x.size());
    const double seconds = best_of(5, [&] {
      return time_parallel(threads, [&](int t) {
        for (size_t r = t; r < n_rows; r += threads) {
          mk.rms_norm({x.data() + r * cols, cols}, weight, 1e-6f, {y.data() + r * cols, cols});
        }
      });
    });
    rows.push_back({"rmsnorm f32 " + std::to_string(n_rows) + "x" + std::to_string(cols), "GB/s",
                    2.0 * x.size() * sizeof(float) / seconds / 1e9, 0});
  }

  {  // Whisper's STFT frame: a 400-point real FFT, 3000 frames (30 s of audio).
    const size_t n = 400, frames = 3000;
    const kernels::RealFft fft(n);
    const auto x = random_vector(n * frames);
    std::vector<std::vector<std::complex<float>>> out(threads,
                                                      std::vector<std::complex<float>>(n / 2 + 1));
    const double seconds = best_of(5, [&] {
      return time_parallel(threads, [&](int t) {
        for (size_t f = t; f < frames; f += threads) fft.forward({x.data() + f * n, n}, out[t]);
      });
    });
    // The customary 2.5 n log2 n flop count of a real FFT.
    const double flops = 2.5 * n * std::log2(static_cast<double>(n)) * frames;
    rows.push_back({"real fft n=400 x3000", "GFLOP/s", flops / seconds / 1e9, fma_peak_gflops});
  }
  return rows;
}

}  // namespace oxi::bench
