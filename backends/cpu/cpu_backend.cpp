#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <tbb/info.h>

#include "backends/cpu/cpu_backend_impl.h"
#include "lib/core/error.h"

namespace oxi::backends {
namespace {

int resolve_threads(int threads) {
  if (threads < 0)
    throw Error("cpu backend", "thread count must be >= 0, got " + std::to_string(threads));
  return threads == 0 ? tbb::info::default_concurrency() : threads;
}

// Helpers beyond the cores TBB runs workers on would only take turns spinning on them.
size_t helper_count(int threads) {
  return static_cast<size_t>(std::min(threads, tbb::info::default_concurrency()) - 1);
}

}  // namespace

CpuBackend::CpuBackend(int threads)
    : threads_(resolve_threads(threads)), arena_(threads_), team_(arena_, helper_count(threads_)) {
  arena_.initialize();
}

void CpuBackend::parallel_for(size_t n, size_t grain,
                              const std::function<void(size_t begin, size_t end)>& fn) {
  grain = std::max<size_t>(grain, 1);
  const size_t pieces = (n + grain - 1) / grain;
  run_pieces(pieces, [&](size_t piece) {
    const size_t begin = piece * grain;
    fn(begin, std::min(n, begin + grain));
  });
}

void CpuBackend::release_scratch() {
  std::vector<std::byte>().swap(activations_);
  gemm_scratch_.clear();
  std::vector<float>().swap(attention_vt_);
}

std::unique_ptr<Backend> make_cpu_backend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace oxi::backends
