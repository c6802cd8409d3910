#include "tools/oxinfer/bench/bench_formats.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "kernels/formats/quant.h"
#include "tools/oxinfer/bench/machine_limits.h"

namespace oxi::bench {
namespace {

using kernels::DType;

constexpr size_t kCols = 8192;
// Rows: as many as make the matrix this large, far beyond the last-level cache (with an
// 8192 x 8192 q4_0 / q8_0 matrix of 38 / 71 MB, runs partly hit a 32 MB L3 and exceeded the
// measured read bandwidth).
constexpr size_t kMatrixBytes = size_t{256} << 20;
constexpr int kRuns = 12;  // best of many: a loaded machine steals time from single runs
// Distinct rows quantized from real-looking data, then tiled over the matrix (quantizing all
// 67M weights would take longer than the benchmark).
constexpr size_t kDistinctRows = 16;

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// `rows` rows of `cols` gaussian values quantized to t, then repacked to `layout` (row r from
// seed r).
std::vector<uint8_t> quantized_rows(DType t, DType layout, size_t rows, size_t cols = kCols) {
  const size_t row_bytes = kernels::row_bytes(t, cols);
  std::vector<uint8_t> out(row_bytes * rows);
  for (size_t r = 0; r < rows; ++r) {
    const std::vector<float> x = gaussian(cols, static_cast<uint32_t>(r));
    uint8_t* row = out.data() + r * row_bytes;
    kernels::quantize_row(t, x.data(), row, cols);
    if (layout != t) {
      const std::vector<uint8_t> plain(row, row + row_bytes);
      kernels::repack_row(t, layout, plain.data(), row, cols);
    }
  }
  return out;
}

// x quantized to `layout`'s activation, at the start of a kActivationAlign-aligned buffer as
// decode's (CpuBackend::activation_buffer). In a std::vector (16 mod 64 here) the 64-byte
// activation loads of q4_K_r8 and q4_0_r16 straddled cache lines, so the kernels ran slower than
// in decode: in L2, q4_K 59.2 -> 75.0 GB/s, q4_0 55.4 -> 76.5 (twenty-ninth session).
class QuantizedActivation {
 public:
  QuantizedActivation(DType layout, std::span<const float> x)
      : bytes_(kernels::activation_bytes(layout, x.size()) + kernels::kActivationAlign),
        data_(kernels::align_activation_start(bytes_.data())) {
    kernels::quantize_activation(layout, x.data(), data_, x.size());
  }
  QuantizedActivation(const QuantizedActivation&) = delete;  // data_ points into bytes_
  QuantizedActivation& operator=(const QuantizedActivation&) = delete;
  const uint8_t* data() const { return data_; }

 private:
  std::vector<uint8_t> bytes_;
  uint8_t* data_;
};

// Weights of type t, multiplied in `layout`: t itself, or the repacked layout decode holds t in
// (Q4_0 -> Q4_0_R16, Q8_0 -> Q8_0_R16, Q4_K -> Q4_K_R8, IQ4_XS -> IQ4_XS_R8, IQ4_NL -> IQ4_NL_R16,
// Q5_0 -> Q5_0_R16, Q5_1 -> Q5_1_R16, Q4_1 -> Q4_1_R16, Q5_K -> Q5_K_R8, Q3_K -> Q3_K_R8,
// Q2_K -> Q2_K_R8;
// same bytes per row, so GB/s count the same t bytes). The limit: read passes over the matrix
// itself, one after each run, the best of them (where memory sits changes its read rate,
// machine_limits.h; and a VM's bandwidth moves within minutes, so the passes share the kernel's
// seconds).
BenchRow bench_matvec(DType t, DType layout, const std::string& label, tbb::task_arena& arena,
                      int threads) {
  const size_t row_bytes = kernels::row_bytes(t, kCols);
  const size_t n_rows = (kMatrixBytes + row_bytes - 1) / row_bytes;
  const auto w_data = std::make_unique_for_overwrite<uint8_t[]>(row_bytes * n_rows);
  const std::span<uint8_t> w(w_data.get(), row_bytes * n_rows);
  const std::vector<uint8_t> seed_rows = quantized_rows(t, layout, kDistinctRows);
  // Written by the threads that later read each part (first-touch NUMA placement).
  const size_t grain = std::max<size_t>(n_rows / (16 * static_cast<size_t>(threads)), 16);
  const tbb::blocked_range<size_t> rows(0, n_rows, grain);
  arena.execute([&] {
    tbb::parallel_for(
        rows,
        [&](const tbb::blocked_range<size_t>& r) {
          for (size_t i = r.begin(); i != r.end(); ++i) {
            std::memcpy(w.data() + i * row_bytes,
                        seed_rows.data() + (i % kDistinctRows) * row_bytes, row_bytes);
          }
        },
        tbb::static_partitioner());
  });

  const std::vector<float> x = gaussian(kCols, 99);
  const QuantizedActivation act(layout, x);
  std::vector<float> y(n_rows);
  const kernels::MatvecFn matvec = kernels::format_kernels().matvec_for(layout);

  ReadPass read_pass(threads, {std::as_bytes(w)});
  double best = 0, read_bw = 0;
  for (int run = 0; run <= kRuns; ++run) {  // run 0 warms up
    const double read_seconds = read_pass.seconds();
    if (run > 0)
      read_bw = std::max(read_bw, static_cast<double>(read_pass.bytes()) / read_seconds / 1e9);
    const auto t0 = std::chrono::steady_clock::now();
    arena.execute([&] {
      tbb::parallel_for(
          rows,
          [&](const tbb::blocked_range<size_t>& r) {
            matvec(w.data() + r.begin() * row_bytes, row_bytes, r.size(), kCols, act.data(),
                   y.data() + r.begin());
          },
          tbb::static_partitioner());
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (run > 0) best = std::max(best, static_cast<double>(w.size()) / seconds / 1e9);
  }
  BenchRow row;
  row.kernel = "matvec " + label + " " + std::to_string(n_rows) + "x" + std::to_string(kCols) +
               " (" + std::to_string(w.size() >> 20) + " MiB)";
  row.unit = "GB/s";
  row.value = best;
  row.limit = read_bw;
  return row;
}

// The same product on one thread over a matrix that stays in the core's L2 (128 KiB), run over
// and over: what the kernel's arithmetic allows a core, with memory out of the way. Its limit is
// the share of the read bandwidth one of `threads` cores has to stream during decode: a kernel
// near or below 100 % of it sets decode's pace, not the memory. Rows `cols` wide: besides
// kCols, the 2048 of a TinyLlama-sized model's q/k/v/o and gate/up rows, where what a kernel
// spends once a row shows (a 2048-wide q4_K_r8 row is a single group: 63 against 73 GB/s at
// 8192, thirty-first session).
BenchRow bench_matvec_in_cache(DType t, DType layout, const std::string& label,
                               double core_share_gbs, size_t cols = kCols) {
  constexpr size_t kCacheBytes = size_t{128} << 10;
  constexpr size_t kBytesPerRun = size_t{512} << 20;
  const size_t row_bytes = kernels::row_bytes(t, cols);
  const size_t n_rows = std::max<size_t>(kCacheBytes / row_bytes / 4 * 4, 4);
  const std::vector<uint8_t> w = quantized_rows(t, layout, n_rows, cols);
  const std::vector<float> x = gaussian(cols, 99);
  const QuantizedActivation act(layout, x);
  std::vector<float> y(n_rows);
  const kernels::MatvecFn matvec = kernels::format_kernels().matvec_for(layout);
  const size_t reps = std::max<size_t>(kBytesPerRun / w.size(), 1);
  double best = 0;
  for (int run = 0; run <= kRuns; ++run) {  // run 0 warms up
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < reps; ++i)
      matvec(w.data(), row_bytes, n_rows, cols, act.data(), y.data());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (run > 0) best = std::max(best, static_cast<double>(w.size() * reps) / seconds / 1e9);
  }
  BenchRow row;
  row.kernel = "matvec " + label + " in L2, 1 thread (" + std::to_string(w.size() >> 10) + " KiB" +
               (cols == kCols ? "" : ", rows of " + std::to_string(cols)) + ")";
  row.unit = "GB/s";
  row.value = best;
  row.limit = core_share_gbs;
  return row;
}

}  // namespace

// The weight types whose matvec is measured, streamed and in cache.
constexpr DType kMatvecTypes[] = {
    DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q6_K, DType::IQ4_XS, DType::IQ4_NL, DType::Q5_0,
    DType::Q5_1, DType::Q4_1, DType::Q2_K, DType::Q3_K, DType::Q5_K,   DType::F16};

std::vector<BenchRow> bench_format_kernels(int threads) {
  threads = std::max(threads, 1);
  tbb::task_arena arena(threads);
  std::vector<BenchRow> out;
  const kernels::FormatKernels& k = kernels::format_kernels();
  const auto matvec_row = [&](DType t, DType layout, const std::string& label) {
    out.push_back(bench_matvec(t, layout, label, arena, threads));
  };
  for (DType t : kMatvecTypes) {
    // The layout decode multiplies (what lib/llm repacks to), named by the stored type; then
    // the file layout as its own row when they differ.
    const std::string name(kernels::name(t));
    const DType layout = k.preferred_layout(t);
    matvec_row(t, layout, name);
    if (layout != t) matvec_row(t, t, name + " (plain)");
  }
  // The arithmetic's ceiling on one core, for the layouts decode multiplies.
  const double core_share = measure_read_bandwidth_gbs(threads) / threads;
  for (DType t : kMatvecTypes)
    out.push_back(
        bench_matvec_in_cache(t, k.preferred_layout(t), std::string(kernels::name(t)), core_share));
  for (DType t : {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q6_K}) {
    out.push_back(bench_matvec_in_cache(t, k.preferred_layout(t), std::string(kernels::name(t)),
                                        core_share, 2048));
  }
  return out;
}

}  // namespace oxi::bench
