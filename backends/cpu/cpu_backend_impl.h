// The CPU backend's class, shared by its source files (cpu_backend.cpp: arena and loops;
// cpu_attention.cpp: attention; cpu_matmul.cpp: matrix products). Not for use outside backends/cpu.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <vector>

#include <tbb/enumerable_thread_specific.h>
#include <tbb/task_arena.h>

#include "backends/backend.h"
#include "backends/cpu/piece_ranges.h"
#include "backends/cpu/stream_calibration.h"
#include "backends/cpu/worker_team.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/prefetch.h"
#include "lib/core/error.h"

namespace oxi::backends {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads);

  std::string_view name() const override { return "cpu"; }
  int threads() const override { return threads_; }

  void matmul(const WeightMatrix& w, std::span<const float> x, size_t m, std::span<float> y,
              const float* bias) override;
  void matmul_shared_input(std::span<const float> x, size_t m,
                           std::span<const SharedInputProduct> products) override;
  void attention(const AttentionArgs& args) override;
  void parallel_for(size_t n, size_t grain,
                    const std::function<void(size_t begin, size_t end)>& fn) override;
  void release_scratch() override;

 private:
  // Runs body(piece) for every piece < count on this thread and the team's helpers; inline
  // when there is one.
  template <typename Body>
  void run_pieces(size_t count, const Body& body);

  void matvec_path(const WeightMatrix& w, std::span<const float> x, size_t m, std::span<float> y,
                   const float* bias);
  void gemm_q_path(const WeightMatrix& w, std::span<const float> x, size_t m, std::span<float> y,
                   const float* bias);
  void gemm_f32_path(const WeightMatrix& w, std::span<const float> x, size_t m, std::span<float> y,
                     const float* bias);
  // Long non-causal attention through the GEMM (cpu_attention.cpp).
  void attention_by_gemm(const AttentionArgs& a, float scale);
  // The activations of the current call, quantized: grows to the largest call, then stays.
  std::byte* activation_buffer(size_t bytes);
  // Runs a one-token quantized product over `weights` of type `dtype` (the weights are its key
  // for the calibration of that type's stream layout): in the stream mode the calibration asks
  // for, timed, while the process's mode for the layout is not settled.
  template <typename Product>
  void run_matvec(const void* weights, kernels::DType dtype, const Product& product);

  int threads_;
  tbb::task_arena arena_;  // the helper threads come from here
  WorkerTeam team_;
  std::vector<std::byte> activations_;
  // GEMM packing scratch of each worker thread, grown once to the largest tile it has seen.
  tbb::enumerable_thread_specific<std::vector<float>> gemm_scratch_;
  // attention_by_gemm's V, transposed per kv head.
  std::vector<float> attention_vt_;
  // One per stream layout (kernels::StreamLayout): each decides its own mode.
  std::array<StreamCalibration, kernels::kStreamLayouts> calibrations_;
};

template <typename Body>
inline void CpuBackend::run_pieces(size_t count, const Body& body) {
  if (count == 0) return;
  if (count == 1 || threads_ == 1) {
    for (size_t piece = 0; piece < count; ++piece) body(piece);
    return;
  }
  if (count >= (size_t{1} << 32)) throw Error("cpu backend", "too many pieces in one region");
  // Every participant works through its share of the pieces and then the others'
  // (piece_ranges.h); the first exception stops the others' claims and is rethrown here.
  const size_t ranges = std::min(count, static_cast<size_t>(threads_));
  PieceRanges pieces(count, ranges);
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  team_.run([&](size_t participant) {
    try {
      pieces.run(participant % ranges, body, stop);
    } catch (...) {
      stop.store(true, std::memory_order_relaxed);
      const std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
}

}  // namespace oxi::backends
